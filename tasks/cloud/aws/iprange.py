"""The AWS IpRange flow's I/O (``pkg/kcp/provider/aws/iprange/v2``): the EC2 client of a turn and the
reads of :func:`read` (the VPC and its subnets); the decisions are the pure plans of
:mod:`tasks.cloud.aws.iprange_plan`, declared as the IpRange's ``aws`` provider (:data:`SIDE`). The
executor makes the planned EC2 calls; a refused read or call reaches the plan as its
:class:`~kube.refusal.Failure`: retryable ones come back after 10 s without an Error, others write an
Error condition and back off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.toolkit import deleting
from tasks.cloud import names
from tasks.cloud.aws.client import Ec2, ec2_for
from tasks.cloud.aws.iprange_plan import Read, plan_create, plan_delete, read_failed
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "read"]


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """The VPC (by ``status.vpcId``, else by the Scope's VPC name) and its subnets. Raises
    :class:`~tasks.cloud.aws.client.AwsError` (a :class:`~kube.refusal.Refusal`)."""
    ec2: Ec2 = clients[""]
    aws = ((turn.scope.get("spec") or {}).get("scope") or {}).get("aws") or {}
    vpc_id = str((turn.obj.get("status") or {}).get("vpcId") or "")
    vpc = ec2.vpc(vpc_id) if vpc_id else ec2.vpc_by_name(str(aws.get("vpcNetwork") or ""))
    return Read(vpc, ec2.subnets(vpc["VpcId"]) if vpc is not None else [])


def _ec2(turn: Turn) -> Mapping[str, Any]:
    spec = turn.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return {"": ec2_for(turn.settings, account, str(spec.get("region") or ""))}


def _read_failed(failure: Any, turn: Turn) -> Any:
    # the original's reasons: CloudProviderError while provisioning, Unknown while deleting
    reason = names.REASON_UNKNOWN if deleting(turn.obj) else names.REASON_CLOUD_PROVIDER_ERROR
    return read_failed(turn.obj, failure, reason, turn.t)


#: The IpRange's ``aws`` provider.
SIDE = ProviderSide(
    clients=_ec2, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, found, turn.t),
    delete=lambda found, turn: plan_delete(turn.obj, found, turn.t),
    read_failed=_read_failed)
