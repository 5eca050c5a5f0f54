"""The AWS VPC peering plan (pkg/kcp/provider/aws/vpcpeering), table-driven from the notes (pure): the
create flow's steps, every reason/state/message, the remote route strategies on tagged and untagged
route tables, deletion."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from kube.toolkit import Outcome
from tasks.cloud import names
from tasks.cloud.aws.vpcpeering_plan import (
    Read,
    peering_tags,
    plan_create,
    plan_delete,
    read_failed,
    remote_client_failed,
    should_update,
)
from tests.unit.cloud.outcomes import calls, done, failed

NOW = "2026-01-01T00:00:00Z"
SHOOT = "c-1234567"
PCX = "pcx-1"
SCOPE = {"spec": {"shootName": SHOOT, "scope": {"aws": {"vpcNetwork": "shoot--kyma--c-1234567"}}}}
REMOTE = {"spec": {"network": {"reference": {"aws": {"awsAccountId": "444455556666", "region": "eu-west-1",
                                                      "vpcId": "vpc-r"}}}}}


def t(seconds: float) -> float:
    return seconds


def fail(code: str = "", message: str = "", retryable: bool = False, not_found: bool = False) -> Failure:
    """A refused AWS request as the client layer classifies it (:attr:`AwsError.failure`)."""
    return Failure("retry" if retryable else "not_found" if not_found else "refused", 400, code, message, message,
                   10.0 if retryable else None)


def obj(status: dict[str, Any] | None = None, strategy: str = "AUTO", delete_remote: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": "id-1", "namespace": "kcp-system"},
            "spec": {"scope": {"name": "k"}, "remoteRef": {"namespace": "", "name": "to-customer"},
                     "details": {"remoteRouteTableUpdateStrategy": strategy, "deleteRemotePeering": delete_remote}},
            "status": status if status is not None else {"state": "initiating-request"}}


VPC = {"VpcId": "vpc-l", "CidrBlock": "10.250.0.0/16"}
REMOTE_VPC = {"VpcId": "vpc-r", "OwnerId": "444455556666", "Tags": [{"Key": SHOOT, "Value": ""}],
              "CidrBlockAssociationSet": [{"CidrBlock": "172.16.0.0/16", "CidrBlockState": {"State": "associated"}},
                                          {"CidrBlock": "172.17.0.0/16", "CidrBlockState": {"State": "associated"}},
                                          {"CidrBlock": "172.18.0.0/16", "CidrBlockState": {"State": "disassociated"}}]}


def table(ident: str, tagged: bool = False, routes: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    return {"RouteTableId": ident, "Tags": [{"Key": SHOOT, "Value": "1"}] if tagged else [],
            "Routes": [{"DestinationCidrBlock": c, "VpcPeeringConnectionId": p} for c, p in routes]}


def connection(code: str, message: str = "") -> dict[str, Any]:
    return {"VpcPeeringConnectionId": PCX, "Status": {"Code": code, "Message": message}}


REMOTE_TABLES = [table("rtb-tagged", tagged=True), table("rtb-untagged")]


def peered(code: str = "active", local: list[dict[str, Any]] | None = None,
           remote: list[dict[str, Any]] | None = None) -> Read:
    return Read(VPC, local if local is not None else [table("rtb-l1"), table("rtb-l2")], connection(code), REMOTE_VPC,
                None, remote if remote is not None else REMOTE_TABLES, connection(code))


def create(read: Read, status: dict[str, Any] | None = None, strategy: str = "AUTO", tag: str = "") -> Outcome:
    return plan_create(obj(status, strategy), SCOPE, REMOTE, read, t, tag, NOW)


def conds(step: Any) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions") or []]


STATUS = {"state": "initiating-request", "id": PCX, "remoteId": PCX, "vpcId": "vpc-l"}


@pytest.mark.parametrize(("strategy", "tagged", "untagged"), [
    ("AUTO", True, True), ("NONE", False, False), ("MATCHED", True, False), ("UNMATCHED", False, True),
    ("", True, True)])
def test_should_update_per_strategy_on_tagged_and_untagged_tables(strategy: str, tagged: bool, untagged: bool) -> None:
    assert should_update(table("a", tagged=True), strategy, SHOOT) is tagged
    assert should_update(table("b"), strategy, SHOOT) is untagged


@pytest.mark.parametrize(("strategy", "remote_tables"), [
    ("AUTO", ["rtb-tagged", "rtb-untagged"]), ("NONE", []), ("MATCHED", ["rtb-tagged"]),
    ("UNMATCHED", ["rtb-untagged"])])
def test_routes_local_to_every_remote_block_and_remote_per_strategy(strategy: str, remote_tables: list[str]) -> None:
    plan = create(peered(), STATUS, strategy)
    local = [c.args for c in calls(plan) if c.client != "remote"]
    assert local == [("rtb-l1", "172.16.0.0/16", PCX), ("rtb-l1", "172.17.0.0/16", PCX),
                     ("rtb-l2", "172.16.0.0/16", PCX), ("rtb-l2", "172.17.0.0/16", PCX)]
    remote = [c.args for c in calls(plan) if c.client == "remote"]
    assert remote == [(rt, "10.250.0.0/16", PCX) for rt in remote_tables]
    assert all(c.method == "create_route" for c in calls(plan))
    step = done(plan, [None] * len(calls(plan)))
    assert step.status is not None and step.status["state"] == "active"
    assert conds(step) == [("Ready", "True", "Ready", "Additional VpcPeerings(s) are provisioned")]
    assert step.requeue_after is None


def test_existing_routes_are_kept_and_a_ready_peering_writes_nothing() -> None:
    ready = {**STATUS, "state": "active", "conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
             "message": "Additional VpcPeerings(s) are provisioned", "lastTransitionTime": NOW}]}
    routed = peered(local=[table("rtb-l1", routes=(("172.16.0.0/16", PCX), ("172.17.0.0/16", PCX)))],
                    remote=[table("rtb-tagged", tagged=True, routes=(("10.250.0.0/16", PCX),)), table("rtb-untagged")])
    plan = create(routed, ready, "MATCHED")
    assert calls(plan) == () and done(plan).status is None


def test_the_first_turn_sets_initiating_and_creates_the_tagged_connection() -> None:
    plan = plan_create(obj({}), SCOPE, REMOTE, Read(VPC, [], None, REMOTE_VPC), t, "", NOW)
    [call] = calls(plan)
    assert call.method == "create_peering" and call.client == ""
    assert call.args == ("vpc-l", "vpc-r", "eu-west-1", "444455556666", {
        "Name": "id-1", names.TAG_NAME: "kcp-system/id-1", names.TAG_REMOTE_NAME: "/to-customer",
        names.TAG_SCOPE: "k", names.TAG_SHOOT: SHOOT})
    assert peering_tags(obj(), SCOPE) == call.args[4]
    step = done(plan, [{"VpcPeeringConnectionId": PCX}])
    assert step.status == {"state": "initiating-request", "vpcId": "vpc-l", "id": PCX} and step.requeue_after == 1


@pytest.mark.parametrize("tag", ["", "e2e"])
def test_the_remote_vpc_needs_the_shoot_or_the_network_tag(tag: str) -> None:
    untagged = {**REMOTE_VPC, "Tags": [{"Key": tag or "other", "Value": ""}]}
    plan = plan_create(obj(), SCOPE, REMOTE, Read(VPC, [], None, untagged), t, "", NOW)
    assert calls(plan) == ()
    step = done(plan)
    assert conds(step) == [("Error", "True", "FailedLoadingRemoteVpcNetwork",
                            "Loaded remote Vpc network has no matching tags")]
    assert step.status is not None and "state" not in step.status and step.requeue_after == 60
    assert step.event is not None and step.event.type == "Warning"
    if tag:  # PEERING_NETWORK_TAG instead of the shoot name
        assert plan_create(obj(), SCOPE, REMOTE, Read(VPC, [], None, untagged), t, tag, NOW).writes != ()


def test_local_vpc_missing_and_remote_vpc_refused() -> None:
    missing = done(create(Read(None)))
    assert conds(missing) == [("Error", "True", "VpcNotFound", "AWS VPC shoot--kyma--c-1234567 not found")]
    not_found = done(create(Read(VPC, remote_error=fail("InvalidVpcID.NotFound", "x", not_found=True))))
    assert conds(not_found) == [("Error", "True", "VpcNotFound", "Remote VPC ID vpc-r not found")]
    assert not_found.status["state"] == "Error" and not_found.requeue_after is None
    denied = done(create(Read(VPC, remote_error=fail("UnauthorizedOperation", "no"))))
    assert conds(denied) == [("Error", "True", "VpcNotFound", "Not authorized to perform this operation.")]
    assert denied.status["state"] == "Warning" and denied.requeue_after == 60
    assert done(create(Read(VPC, remote_error=fail("Throttling", retryable=True)))).requeue_after == 10


def test_a_refused_creation_is_a_warning_with_aws_words() -> None:
    plan = plan_create(obj(), SCOPE, REMOTE, Read(VPC, [], None, REMOTE_VPC), t, "", NOW)
    step = failed(plan, calls(plan)[0], fail("InvalidParameterValue", "The peer VPC is in another partition"))
    assert conds(step) == [("Error", "True", "FailedCreatingVpcPeeringConnection",
                            "Failed creating VpcPeerings. The peer VPC is in another partition")]
    assert step.status["state"] == "Warning" and step.requeue_after == 60
    fresh = plan_create(obj(), SCOPE, REMOTE, Read(VPC, [], None, REMOTE_VPC), t, "", NOW)
    assert failed(fresh, calls(fresh)[0], fail("Throttling", retryable=True)).status == {"vpcId": "vpc-l"}


@pytest.mark.parametrize("code", ["initiating-request", "pending-acceptance"])
def test_waits_for_pending_acceptance_then_accepts_from_the_remote_side(code: str) -> None:
    read = Read(VPC, [], connection(code), REMOTE_VPC, None, [], None)
    plan = create(read, {"state": "initiating-request", "id": PCX})
    if code == "initiating-request":
        assert calls(plan) == () and done(plan).requeue_after == 1
        return
    [call] = calls(plan)
    assert (call.method, call.args, call.client) == ("accept_peering", (PCX,), "remote")
    assert done(plan, [connection("active")]).status == {"remoteId": PCX, "vpcId": "vpc-l"}
    refused = failed(plan, call, fail("OperationNotPermitted", "not the accepter"))
    assert conds(refused) == [("Error", "True", "FailedAcceptingVpcPeeringConnection",
                               "Failed accepting VpcPeerings not the accepter")]
    assert refused.status["state"] == "Error" and refused.requeue_after == 60


@pytest.mark.parametrize("code", ["failed", "expired", "rejected", "deleted", "deleting"])
def test_a_terminated_connection_stops_with_its_code(code: str) -> None:
    read = Read(VPC, [], connection(code, f"it is {code}"), REMOTE_VPC, None, [], None)
    step = done(create(read, {"state": "pending-acceptance", "id": PCX}))
    assert step.status["state"] == code
    assert conds(step) == [("Error", "True", "FailedAcceptingVpcPeeringConnection", f"it is {code}")]
    assert step.requeue_after is None and step.error is None


def test_accepted_but_not_active_yet_waits() -> None:
    assert done(create(peered("provisioning"), STATUS)).requeue_after == 1


def test_refused_routes() -> None:
    plan = create(peered(), STATUS, "AUTO")
    local, remote = calls(plan)[0], calls(plan)[-1]
    step = failed(plan, local, fail("InvalidRoute.Malformed", "x"))
    assert conds(step) == [("Error", "True", "FailedCreatingRoutes", "Failed creating route for local route table")]
    assert step.status["state"] == "Error" and step.requeue_after is None
    step = failed(plan, remote, fail("UnauthorizedOperation", "denied"))
    assert conds(step) == [("Error", "True", "FailedCreatingRoutes",
                            "Failed updating routes for remote route table rtb-untagged. "
                            "Not authorized to perform this operation.")]
    assert step.status["state"] == "Warning" and step.requeue_after == 60
    assert failed(plan, remote, fail("RouteNotSupported", "")).requeue_after is None
    assert failed(plan, remote, fail("Throttling", retryable=True)).requeue_after == 10


def test_remote_client_failure() -> None:
    step = remote_client_failed(obj(), "444455556666", t, NOW)
    assert conds(step) == [("Error", "True", "Error", "Failed creating AWS client for account 444455556666")]
    assert step.status["state"] == "Error" and step.requeue_after == 60


@pytest.mark.parametrize(("strategy", "delete_remote", "remote_deletes"), [
    ("AUTO", False, [("rtb-tagged", "10.250.0.0/16"), ("rtb-untagged", "10.250.0.0/16")]),
    ("MATCHED", True, [("rtb-tagged", "10.250.0.0/16"), (PCX,)]),
    ("UNMATCHED", True, [("rtb-untagged", "10.250.0.0/16"), (PCX,)]),
    ("NONE", False, []),
])
def test_deletion_removes_routes_connection_and_the_remote_side_only_when_asked(
        strategy: str, delete_remote: bool, remote_deletes: list[tuple[str, ...]]) -> None:
    routed = [table("rtb-tagged", tagged=True, routes=(("10.250.0.0/16", PCX),)),
              table("rtb-untagged", routes=(("10.250.0.0/16", PCX), ("10.0.0.0/8", "pcx-other")))]
    read = Read(VPC, [table("rtb-l1", routes=(("172.16.0.0/16", PCX),))], connection("active"), REMOTE_VPC, None,
                routed, connection("active"))
    ready = {**STATUS, "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "m"}]}
    plan = plan_delete(obj(ready, strategy, delete_remote), SCOPE, read, t, NOW)
    local = [(c.method, c.args) for c in calls(plan) if c.client != "remote"]
    assert local == [("delete_route", ("rtb-l1", "172.16.0.0/16")), ("delete_peering", (PCX,))]
    assert [c.args for c in calls(plan) if c.client == "remote"] == remote_deletes
    step = done(plan)
    assert step.remove_finalizer == names.FINALIZER and conds(step) == []
    assert failed(plan, calls(plan)[0], fail("Boom", "x")).requeue_after == 60
    assert failed(plan, calls(plan)[0], fail("Throttling", retryable=True)).requeue_after == 10


def test_deletion_of_a_peering_never_created_or_already_deleted() -> None:
    assert plan_delete(obj({}), SCOPE, Read(VPC), t, NOW).writes == ()
    gone = Read(VPC, [], connection("deleted"), REMOTE_VPC, None, [], connection("deleted"))
    plan = plan_delete(obj(STATUS, delete_remote=True), SCOPE, gone, t, NOW)
    assert calls(plan) == () and done(plan).remove_finalizer == names.FINALIZER


def test_the_customers_account_unreachable_or_its_reads_refused() -> None:
    unreachable = plan_create(obj(), SCOPE, REMOTE, Read(VPC, remote_unreachable=True), t, "", NOW)
    assert conds(unreachable) == [("Error", "True", "Error", "Failed creating AWS client for account 444455556666")]
    assert unreachable.writes == () and unreachable.requeue_after == 60
    refused = Read(VPC, remote_read_error=fail("UnauthorizedOperation", "Not authorized to perform this operation."))
    step = plan_create(obj(), SCOPE, REMOTE, refused, t, "", NOW)
    assert step.status is None and step.error == "AWS request refused: Not authorized to perform this operation."
    assert read_failed(fail("Throttling", retryable=True), t) == Outcome(requeue_after=10)
    # deleting: the customer's side is skipped, the local one goes, then the finalizer
    local = Read(VPC, [], connection("active"), remote_unreachable=True)
    plan = plan_delete(obj(STATUS, delete_remote=True), SCOPE, local, t, NOW)
    assert [(c.method, c.client) for c in calls(plan)] == [("delete_peering", "")]
    assert done(plan).remove_finalizer == names.FINALIZER
    skipped = plan_delete(obj(STATUS, delete_remote=True), SCOPE, Read(VPC, remote_read_error=fail("X", "x")), t, NOW)
    assert calls(skipped) == () and done(skipped).remove_finalizer == names.FINALIZER
    again = plan_delete(obj(STATUS), SCOPE, Read(VPC, remote_read_error=fail("Throttling", retryable=True)), t, NOW)
    assert again.writes == () and again.requeue_after == 10 and again.remove_finalizer is None
