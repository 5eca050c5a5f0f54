"""The AWS IpRange flow's pure decisions over EC2 answers, and its plans (table-driven from the notes)."""

from __future__ import annotations

import pytest

from kube.refusal import Failure
from tasks.cloud.aws.iprange_plan import (
    Read,
    association_for,
    missing_subnets,
    plan_create,
    plan_delete,
    read_failed,
    subnet_conflict,
    vpc_overlap,
)
from tests.unit.cloud.outcomes import calls, done, failed


def assoc(cidr: str, state: str = "associated", ident: str = "a") -> dict:
    return {"AssociationId": ident, "CidrBlock": cidr, "CidrBlockState": {"State": state}}


def subnet(cidr: str, zone: str = "z1", cm: bool = False, ident: str = "subnet-1") -> dict:
    tags = [{"Key": "cloud-manager.kyma-project.io/iprange", "Value": "1"}] if cm else []
    return {"SubnetId": ident, "CidrBlock": cidr, "AvailabilityZone": zone, "Tags": tags, "State": "available"}


def test_vpc_overlap_ignores_the_identical_and_disassociated_blocks() -> None:
    blocks = [assoc("10.250.0.0/16"), assoc("10.251.0.0/22"), assoc("10.252.0.0/16", "disassociated")]
    assert vpc_overlap("10.251.0.0/22", blocks) is None
    assert vpc_overlap("10.252.4.0/22", blocks) is None
    assert vpc_overlap("10.250.4.0/22", blocks) == "10.250.0.0/16"


def test_association_for_skips_gone_ones() -> None:
    blocks = [assoc("10.251.0.0/22", "disassociated", "old"), assoc("10.251.0.0/22", "associating", "new")]
    assert association_for("10.251.0.0/22", blocks)["AssociationId"] == "new"
    assert association_for("10.251.0.0/22", blocks[:1]) is None


def test_subnet_conflict_only_with_foreign_subnets() -> None:
    ranges = ["10.251.0.0/24", "10.251.1.0/24"]
    assert subnet_conflict(ranges, [subnet("10.251.0.0/24", cm=True)]) is None
    found = subnet_conflict(ranges, [subnet("10.251.1.128/25", ident="subnet-x")])
    assert found is not None and found[0] == "10.251.1.0/24" and found[1]["SubnetId"] == "subnet-x"


def test_missing_subnets_pairs_zones_and_ranges() -> None:
    ranges, zones = ["r0", "r1", "r2"], ["a", "b", "c"]
    assert missing_subnets(ranges, zones, []) == [(0, "a", "r0"), (1, "b", "r1"), (2, "c", "r2")]
    assert missing_subnets(ranges, zones, [subnet("r1", "b", cm=True)]) == [(0, "a", "r0"), (2, "c", "r2")]
    assert missing_subnets(ranges, zones, [subnet("r1", "a", cm=True)]) == [(0, "a", "r0"), (1, "b", "r1"),
                                                                            (2, "c", "r2")]


# -- the plans: one turn over what EC2 answered (table-driven from the notes) --

NOW = "2026-01-01T00:00:00Z"
SCOPE = {"spec": {"region": "eu-central-1", "scope": {"aws": {
    "vpcNetwork": "shoot--kyma--c", "network": {"zones": [{"name": "z1"}, {"name": "z2"}]}}}}}


def t(seconds: float) -> float:
    return seconds


def refused(status: int, message: str, text: str = "") -> Failure:
    """A refused EC2 request as the client layer classifies it (``message``: the user's words)."""
    return Failure("refused", status, message=message, text=text or message)


def kcp_range(status: dict | None = None, spec_cidr: str = "", deleting: bool = False) -> dict:
    meta: dict = {"name": "id-1", "namespace": "kcp-system"}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"scope": {"name": "k"}, "remoteRef": {"name": "r"},
                                       **({"cidr": spec_cidr} if spec_cidr else {})},
            "status": {"cidr": "10.251.0.0/22", **(status or {})}}


def vpc(*assocs: dict) -> dict:
    return {"VpcId": "vpc-1", "CidrBlockAssociationSet": [assoc("10.250.0.0/16"), *assocs]}


def first_condition(step: object) -> tuple[str, str, str]:
    status = getattr(step, "status", None) or {}
    cond = (status.get("conditions") or [{}])[0]
    return status.get("state"), cond.get("reason"), cond.get("message")


@pytest.mark.parametrize(("obj", "found", "expected"), [
    (kcp_range(), Read(None), ("Error", "VpcNotFound", "AWS VPC shoot--kyma--c not found")),
    (kcp_range({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}]},
               spec_cidr="10.9.0.0/22"), Read(vpc()),
     ("Error", "CidrCanNotChange", "Cidr can not change in Ready condition")),
    (kcp_range({"cidr": "nonsense"}), Read(vpc()), ("Error", "InvalidCidr", "Can not parse CIDR")),
    (kcp_range({"ranges": ["10.251.0.0/23"]}), Read(vpc()),
     ("Error", "ShootAndVpcMismatch", "RangeSubnetCount 1 different then shootZonesCount 2")),
    (kcp_range(), Read(vpc(assoc("10.251.0.0/16"))),
     ("Error", "CidrOverlap", "CIDR overlaps with VPC adress range cidr 10.251.0.0/16")),
    (kcp_range(), Read(vpc(assoc("10.251.0.0/22", "failed"))),
     ("Error", "CidrAssociationFailed", "CIDR block status state is failed")),
    (kcp_range(), Read(vpc(assoc("10.251.0.0/22")), [subnet("10.251.0.0/24", ident="subnet-x")]),
     ("Error", "CidrOverlap", "Range 10.251.0.0/23 overlaps with existing subnet subnet-x with cidr 10.251.0.0/24")),
])
def test_create_refusals(obj: dict, found: Read, expected: tuple[str, str, str]) -> None:
    plan = plan_create(obj, SCOPE, found, t, NOW)
    assert calls(plan) == ()
    step = done(plan)
    assert first_condition(step) == expected
    assert step.event is not None and (step.event.type, step.event.reason) == ("Warning", expected[1])


def test_create_associates_then_makes_the_subnets_then_is_ready() -> None:
    plan = plan_create(kcp_range(), SCOPE, Read(vpc()), t, NOW)
    assert [(c.method, c.args) for c in calls(plan)] == [("associate_cidr", ("vpc-1", "10.251.0.0/22"))]
    step = done(plan, [{"AssociationId": "assoc-9"}])
    assert step.status is not None and step.status["addressSpaceId"] == "assoc-9"
    assert step.status["ranges"] == ["10.251.0.0/23", "10.251.2.0/23"] and step.requeue_after == 1

    made = plan_create(kcp_range(), SCOPE, Read(vpc(assoc("10.251.0.0/22", ident="assoc-9"))), t, NOW)
    assert [c.args[1:3] for c in calls(made)] == [("z1", "10.251.0.0/23"), ("z2", "10.251.2.0/23")]
    tags = calls(made)[0].args[3]
    assert tags["Name"] == "id-1-0" and tags["cloud-manager.kyma-project.io/iprange"] == "1"

    subnets = [subnet("10.251.0.0/23", "z1", cm=True, ident="s-1"), subnet("10.251.2.0/23", "z2", cm=True, ident="s-2")]
    ready = plan_create(kcp_range(), SCOPE, Read(vpc(assoc("10.251.0.0/22", ident="assoc-9")), subnets), t, NOW)
    step = done(ready)
    assert calls(ready) == () and first_condition(step) == ("Ready", "Ready", "Ready")
    assert step.status is not None and [s["id"] for s in step.status["subnets"]] == ["s-1", "s-2"]


@pytest.mark.parametrize(("found", "expected", "gone", "requeue"), [
    (Read(None), [], True, None),
    (Read(vpc(assoc("10.251.0.0/22", ident="assoc-9")), [subnet("10.251.0.0/23", cm=True, ident="s-1")]),
     [("delete_subnet", ("s-1",))], False, 1),
    (Read(vpc(assoc("10.251.0.0/22", ident="assoc-9"))), [("disassociate_cidr", ("assoc-9",))], False, 1),
    (Read(vpc(assoc("10.251.0.0/22", "disassociating"))), [], False, 1),
    (Read(vpc()), [], True, None),
])
def test_delete(found: Read, expected: list, gone: bool, requeue: float | None) -> None:
    plan = plan_delete(kcp_range(deleting=True), found, t, NOW)
    assert [(c.method, c.args) for c in calls(plan)] == expected
    step = done(plan, [None] * len(expected))
    assert bool(step.remove_finalizer) is gone and step.requeue_after == requeue


# -- branches of the plans: waits, refusals, what a deletion leaves alone --

ASSOCIATED = assoc("10.251.0.0/22", ident="assoc-9")
OURS = [subnet("10.251.0.0/23", "z1", cm=True, ident="s-1"), subnet("10.251.2.0/23", "z2", cm=True, ident="s-2")]


def pending(s: dict) -> dict:
    return {**s, "State": "pending"}


@pytest.mark.parametrize(("obj", "found", "requeue"), [
    (kcp_range(), Read(vpc(assoc("10.251.0.0/22", "associating"))), 10),
    (kcp_range(), Read(vpc(ASSOCIATED), [OURS[0], pending(OURS[1])]), 1),
])
def test_create_waits_without_calls_or_conditions(obj: dict, found: Read, requeue: float) -> None:
    plan = plan_create(obj, SCOPE, found, t, NOW)
    step = done(plan)
    assert calls(plan) == () and step.requeue_after == requeue and step.event is None and step.error is None
    assert "conditions" not in (step.status or {})


def test_create_a_cidr_too_small_for_the_zones_can_not_split() -> None:
    step = done(plan_create(kcp_range({"cidr": "10.251.0.0/32"}), SCOPE, Read(vpc()), t, NOW))
    assert first_condition(step) == ("Error", "CidrCanNotSplit", "Can not split CIDR to 2 subnets")


def test_create_keeps_the_vpc_id_and_ranges_already_in_the_status() -> None:
    obj = kcp_range({"ranges": ["10.251.0.0/23", "10.251.2.0/23"], "vpcId": "vpc-1"})
    plan = plan_create(obj, SCOPE, Read(vpc(ASSOCIATED), [OURS[0]]), t, NOW)
    assert [(c.method, c.args[1:3]) for c in calls(plan)] == [("create_subnet", ("z2", "10.251.2.0/23"))]
    assert calls(plan)[0].args[3] == {
        "Name": "id-1-1", "cloud-manager.kyma-project.io/name": "kcp-system/id-1",
        "cloud-manager.kyma-project.io/remote-name": "/r", "cloud-manager.kyma-project.io/scope": "k",
        "cloud-manager.kyma-project.io/iprange": "1"}
    step = done(plan, [OURS[1]])
    assert step.status is not None and "ranges" not in step.status and "vpcId" not in step.status
    assert step.status["addressSpaceId"] == "assoc-9"
    assert step.status["subnets"] == [{"id": "s-2", "zone": "z2", "range": "10.251.2.0/23", "name": ""}]


@pytest.mark.parametrize(("found", "call", "expected"), [
    (Read(vpc()), 0, ("Error", "CidrAssociationFailed", "Error associating VPC CIDR block: bad cidr")),
    (Read(vpc(ASSOCIATED)), 1, ("Error", "CloudProviderError", "Error creating subnet 10.251.2.0/23 in z2: bad cidr")),
])
def test_create_a_refused_call_is_its_error_with_backoff(found: Read, call: int, expected: tuple) -> None:
    plan = plan_create(kcp_range(), SCOPE, found, t, NOW)
    step = failed(plan, calls(plan)[call], refused(400, "bad cidr", "An error occurred (X): bad cidr"))
    assert first_condition(step) == expected and step.error == expected[2] and step.requeue_after is None


@pytest.mark.parametrize("deleting", [False, True])
def test_a_retryable_refusal_comes_back_in_10_s_without_an_error(deleting: bool) -> None:
    slow = Failure("retry", 503, message="slow down")
    obj = kcp_range(deleting=deleting)
    plan = plan_delete(obj, Read(vpc(ASSOCIATED)), t, NOW) if deleting else plan_create(obj, SCOPE, Read(vpc()), t, NOW)
    step = failed(plan, calls(plan)[0], slow)
    assert step.requeue_after == 10 and step.error is None and step.event is None
    assert "conditions" not in (step.status or {})
    read = read_failed(obj, slow, "Unknown", t, NOW)
    assert read.requeue_after == 10 and read.status is None and read.error is None


@pytest.mark.parametrize(("reason", "failure"), [
    ("CloudProviderError", refused(403, "Not authorized to perform this operation.")),
    ("Unknown", refused(400, "no such vpc")),  # a plain refusal is never retried without an Error
])
def test_a_refused_read_is_an_error_with_the_users_words(reason: str, failure: Failure) -> None:
    step = read_failed(kcp_range(), failure, reason, t, NOW)
    assert first_condition(step) == ("Error", reason, failure.message) and step.error == failure.message


@pytest.mark.parametrize(("obj", "found", "made", "expected"), [
    # only Cloud Manager's subnets inside the CIDR go; those not available yet are waited for
    (kcp_range(deleting=True), Read(vpc(ASSOCIATED), [pending(OURS[0]), OURS[1],
                                                       subnet("10.251.0.0/24", ident="foreign"),
                                                       subnet("10.9.0.0/24", cm=True, ident="elsewhere")]),
     [("delete_subnet", ("s-2",))], (False, 1)),
    (kcp_range(deleting=True), Read(vpc(ASSOCIATED), [pending(OURS[0])]), [], (False, 1)),
    # without a CIDR every Cloud Manager subnet goes, then the finalizer (no association to look at)
    (kcp_range({"cidr": ""}, deleting=True), Read(vpc(), [subnet("10.9.0.0/24", cm=True, ident="s-9")]),
     [("delete_subnet", ("s-9",))], (False, 1)),
    (kcp_range({"cidr": ""}, deleting=True), Read(vpc(ASSOCIATED)), [], (True, None)),
    (kcp_range(deleting=True), Read(vpc(assoc("10.251.0.0/22", "associating"))), [], (False, 1)),
])
def test_delete_branches(obj: dict, found: Read, made: list, expected: tuple) -> None:
    plan = plan_delete(obj, found, t, NOW)
    assert [(c.method, c.args) for c in calls(plan)] == made
    step = done(plan, [None] * len(made))
    assert (bool(step.remove_finalizer), step.requeue_after) == expected and step.error is None


def test_delete_an_association_in_another_state_is_an_unknown_error() -> None:
    plan = plan_delete(kcp_range(deleting=True), Read(vpc(assoc("10.251.0.0/22", "failed"))), t, NOW)
    step = done(plan)
    assert calls(plan) == () and not step.remove_finalizer
    assert first_condition(step) == ("Error", "Unknown", "VPC Cidr block is in Failed/Associated state")
    assert step.error == "VPC Cidr block is in Failed/Associated state"


def test_delete_removes_ready_and_a_refused_call_is_unknown() -> None:
    ready = {"state": "Ready", "subnets": [{"id": "s-1"}],
             "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}]}
    plan = plan_delete(kcp_range(ready, deleting=True), Read(vpc(ASSOCIATED)), t, NOW)
    assert [c.method for c in calls(plan)] == ["disassociate_cidr"]
    gone = done(plan, [None])
    assert gone.status is not None and gone.status["conditions"] == [] and gone.status["subnets"] is None
    again = plan_delete(kcp_range(ready, deleting=True), Read(vpc(ASSOCIATED)), t, NOW)
    step = failed(again, calls(again)[0], refused(400, "in use"))
    assert first_condition(step) == ("Error", "Unknown", "in use") and step.error == "in use"
