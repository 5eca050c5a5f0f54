"""The AWS layer's error boundary: every botocore failure of a client method is the layer's own
:class:`AwsError` (a refused call: :class:`AwsRefused`), carrying what the flows read, so they import no
botocore; fencing errors and the layer's own not-found handling are unchanged. A flow hands a refusal to its pure plan
as plain data (the IpRange's :class:`~tasks.cloud.aws.iprange_plan.Failure`)."""

from __future__ import annotations

from typing import Any

import botocore.exceptions
import pytest

import tasks.cloud.aws.iprange_plan as p
from kube.toolkit import execute
from tasks.cloud.aws import client


def refusal(code: str, message: str, status: int) -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message},
                                            "ResponseMetadata": {"HTTPStatusCode": status}}, "DescribeVpcs")


class Boto:
    """A boto3 EC2 client whose ``describe_vpcs`` raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def describe_vpcs(self, **_: Any) -> dict[str, Any]:
        raise self.error


def ec2(error: Exception) -> client.Ec2:
    return client.Ec2(lambda timeout: Boto(error))


@pytest.mark.parametrize(("error", "code", "status", "message", "user", "retryable"), [
    (refusal("UnauthorizedOperation", "You are not authorized", 403), "UnauthorizedOperation", 403,
     "You are not authorized", "Not authorized to perform this operation.", False),
    (refusal("RequestLimitExceeded", "slow down", 503), "RequestLimitExceeded", 503, "slow down", "slow down", True),
    (refusal("InvalidParameterValue", "bad cidr", 400), "InvalidParameterValue", 400, "bad cidr", "bad cidr", False),
])
def test_a_refused_call_is_an_aws_refused(error: Exception, code: str, status: int, message: str, user: str,
                                          retryable: bool) -> None:
    with pytest.raises(client.AwsRefused) as caught:
        ec2(error).vpc_by_name("shoot")
    err = caught.value
    assert (err.code, err.status, err.message, err.user, err.retryable) == (code, status, message, user, retryable)
    assert str(err) == str(error) and err.__cause__ is error
    assert (client.error_code(err), client.user_message(err), client.is_retryable(err)) == (code, user, retryable)


def test_no_answer_is_an_aws_error_that_is_retried() -> None:
    error = botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
    with pytest.raises(client.AwsError) as caught:
        ec2(error).vpc_by_name("shoot")
    assert not isinstance(caught.value, client.AwsRefused)
    assert caught.value.retryable and caught.value.status == 0 and caught.value.code == ""
    assert caught.value.message == str(error)


def test_not_found_is_still_none_inside_and_flagged_outside() -> None:
    gone = refusal("InvalidVpcID.NotFound", "no such vpc", 400)
    assert ec2(gone).vpc("vpc-1") is None  # the layer's own answer for a missing VPC
    with pytest.raises(client.AwsRefused) as caught:
        ec2(gone).vpc_by_name("shoot")
    assert caught.value.not_found and client.is_not_found(caught.value)


def test_other_exceptions_are_not_disguised() -> None:
    with pytest.raises(KeyError):
        ec2(KeyError("Vpcs")).vpc_by_name("shoot")


class Associating:
    """A boto3 EC2 client whose ``associate_vpc_cidr_block`` raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def associate_vpc_cidr_block(self, **_: Any) -> dict[str, Any]:
        raise self.error


IPRANGE = {"metadata": {"name": "id-1", "namespace": "kcp-system"}, "spec": {}, "status": {"cidr": "10.251.0.0/22"}}
SCOPE = {"spec": {"scope": {"aws": {"network": {"zones": [{"name": "z1"}]}}}}}


@pytest.mark.parametrize(("error", "reason", "message", "requeue"), [
    (refusal("UnauthorizedOperation", "You are not authorized", 403), "CidrAssociationFailed",
     "Error associating VPC CIDR block: Not authorized to perform this operation.", None),
    (refusal("RequestLimitExceeded", "slow down", 503), None, None, 10),
])
def test_the_iprange_shell_hands_a_refused_call_to_its_plan(error: Exception, reason: str | None,
                                                            message: str | None, requeue: float | None) -> None:
    found = p.Read({"VpcId": "vpc-1", "CidrBlockAssociationSet": []})
    plan = p.plan_create(IPRANGE, SCOPE, found, lambda s: s)
    step = execute(plan, clients={"": client.Ec2(lambda timeout: Associating(error))}).outcome
    conditions = (step.status or {}).get("conditions") or [{}]
    assert (conditions[0].get("reason"), conditions[0].get("message"), step.requeue_after) == (reason, message, requeue)


def test_an_unanswered_call_comes_back_in_10_s_without_an_error() -> None:
    plan = p.plan_create(IPRANGE, SCOPE, p.Read({"VpcId": "vpc-1"}), lambda s: s)
    no_answer = botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
    step = execute(plan, clients={"": client.Ec2(lambda timeout: Associating(no_answer))}).outcome
    assert (step.requeue_after, step.error, step.event) == (10, None, None)
    failure = client.AwsError("gone", retryable=True).failure
    assert p.read_failed(IPRANGE, failure, "CloudProviderError", lambda s: s).requeue_after == 10
