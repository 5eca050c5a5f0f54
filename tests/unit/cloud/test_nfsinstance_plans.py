"""The KCP NfsInstance plans of AWS (pkg/kcp/provider/aws/nfsinstance) and GCP (.../gcp/nfsinstance/v2),
table-driven from the notes over what the clients read (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.refusal import Failure
from kube.toolkit import Call, Outcome
from tasks.cloud import names
from tasks.cloud.aws import nfsinstance_plan as aws
from tasks.cloud.gcp import nfsinstance_plan as gcp
from tests.unit.cloud.outcomes import answered, refuse

NOW = "2026-01-01T00:00:00Z"
NAME = "0b8e5f4e-3a51-4b7e-9a5b-2f1b6c1d9e70"


def t(seconds: float) -> float:
    return seconds


def nfs(instance: dict[str, Any], status: dict[str, Any] | None = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": NAME, "namespace": "kcp-system"}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"scope": {"name": "k"}, "remoteRef": {"namespace": "ns", "name": "data"},
                                       "instance": instance}, "status": status or {}}


def errors(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions") or []]


def refused_with(plan: Outcome, write: Any, message: str = "boom") -> Outcome:
    """What ``plan`` answers when AWS refuses ``write`` with ``message`` (a definite refusal)."""
    step = refuse(plan, write, message)
    assert step is not None
    return step


# ---- AWS ------------------------------------------------------------------------------------------------

AWS_OBJ = nfs({"aws": {"performanceMode": "maxIO", "throughput": "elastic"}})
AWS_SCOPE = {"spec": {"region": "eu-central-1", "shootName": "shoot",
                      "scope": {"aws": {"network": {"pods": "100.64.0.0/12", "vpc": {"cidr": "10.250.0.0/16"}}}}}}
IPR = {"status": {"vpcId": "vpc-1", "subnets": [{"id": "subnet-a"}, {"id": "subnet-b"}]}}
GROUP = {"GroupId": "sg-1", "IpPermissions": [{"IpProtocol": "tcp", "ToPort": 2049, "IpRanges": [
    {"CidrIp": "100.64.0.0/12"}, {"CidrIp": "10.250.0.0/16"}]}]}
FS = {"FileSystemId": "fs-1", "LifeCycleState": "available", "SizeInBytes": {"Value": 6144}}


def mt(subnet: str, state: str = "available", ident: str = "") -> dict[str, Any]:
    return {"MountTargetId": ident or f"fsmt-{subnet}", "SubnetId": subnet, "LifeCycleState": state,
            "AvailabilityZoneName": "eu-central-1a"}


def aws_plan(found: aws.Read, obj: dict[str, Any] = AWS_OBJ, iprange: dict[str, Any] = IPR) -> Outcome:
    return aws.plan_create(obj, AWS_SCOPE, iprange, found, t, 3600, NOW)


def test_aws_zero_subnets_is_a_validation_error() -> None:
    plan = aws_plan(aws.Read(), iprange={"status": {"vpcId": "vpc-1", "subnets": []}})
    assert errors(plan) == [("Error", "ValidationFailed", "IpRange has zero subnets, and at least one is needed")]
    assert plan.writes == () and plan.requeue_after is None


def test_aws_security_group_then_its_nfs_rules() -> None:
    plan = aws_plan(aws.Read())
    assert [c.describe() for c in plan.writes] == ["create_security_group"]
    assert plan.writes[0].kwargs == {"vpc_id": "vpc-1", "name": NAME, "tags": {  # type: ignore[union-attr]
        "Name": NAME, names.TAG_REMOTE_NAME: "ns/data", names.TAG_NAME: f"kcp-system/{NAME}", names.TAG_SCOPE: "k"}}
    plan = aws_plan(aws.Read(security_group={"GroupId": "sg-1", "IpPermissions": []}))
    assert plan.writes == (Call("authorize_ingress", kwargs={
        "group_id": "sg-1", "cidrs": ["100.64.0.0/12", "10.250.0.0/16"], "port": 2049},
        kind="Error adding security group ingress: "),)
    assert errors(refused_with(plan, plan.writes[0])) == [
        ("Error", "CloudProviderError", "Error adding security group ingress: boom")]
    half = {"GroupId": "sg-1", "IpPermissions": [{"IpProtocol": "tcp", "ToPort": 2049,
                                                  "IpRanges": [{"CidrIp": "100.64.0.0/12"}]}]}
    assert aws_plan(aws.Read(security_group=half)).writes[0].kwargs["cidrs"] == [  # type: ignore[union-attr]
        "10.250.0.0/16"]


def test_aws_file_system_created_with_the_notes_settings_and_its_failure() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP))
    (call,) = plan.writes
    assert isinstance(call, Call) and call.method == "create_file_system"
    assert call.kwargs == {"token": NAME, "performance_mode": "maxIO", "throughput_mode": "elastic", "tags": {
        "Name": NAME, names.TAG_NAME: f"kcp-system/{NAME}", names.TAG_REMOTE_NAME: "ns/data", names.TAG_SCOPE: "k",
        names.TAG_SHOOT: "shoot"}}
    failed = refused_with(plan, call, "no capacity")
    assert errors(failed) == [("Error", "FailedCreatingFileSystem", "Failed creating file system: no capacity")]
    assert failed.requeue_after == 60 and failed.error is None
    plan = aws_plan(aws.Read(security_group=GROUP))  # each refusal on the plan as decided (a plan is used once)
    transient = refuse(plan, plan.writes[0], "slow down", kind="throttled", status=400, delay=10)
    assert transient is not None and transient.requeue_after == 10 and errors(transient) == []


def test_aws_a_refused_call_without_a_retry_fails_with_backoff_and_a_refused_read() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a")]))
    failed = refused_with(plan, plan.writes[0], "subnet full")
    assert errors(failed) == [("Error", "CloudProviderError", "Error creating mount target: subnet full")]
    assert failed.error == "Error creating mount target: subnet full" and failed.requeue_after is None
    read = aws.read_failed(AWS_OBJ, Failure("refused", 403, "UnauthorizedOperation", "Not authorized"), t, NOW)
    assert errors(read) == [("Error", "CloudProviderError", "Not authorized")] and read.error == "Not authorized"
    read = aws.read_failed(AWS_OBJ, Failure("retry", 503, delay=10), t, NOW)
    assert read.requeue_after == 10 and read.status is None and read.error is None


def test_aws_waits_for_available_and_records_id_and_capacity() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system={**FS, "LifeCycleState": "creating"}))
    assert plan.requeue_after == 1 and plan.status == {"capacity": "6Ki", "id": "fs-1"}


def test_aws_mount_targets_one_per_subnet_then_ready() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a")]))
    assert plan.writes == (Call("create_mount_target", kwargs={"fs_id": "fs-1", "subnet_id": "subnet-b",
                                                               "group_ids": ["sg-1"]},
                                kind="Error creating mount target: "),)
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS,
                             mount_targets=[mt("subnet-a"), mt("subnet-b", "creating")]))
    assert plan.writes == () and plan.requeue_after == 0.3
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a"), mt("subnet-b")]))
    host = "fs-1.efs.eu-central-1.amazonaws.com"
    assert plan.status is not None
    assert {k: plan.status[k] for k in ("hosts", "host", "path", "id", "state")} == {
        "hosts": [host], "host": host, "path": "/", "id": "fs-1", "state": "Ready"}
    assert errors(plan) == [("Ready", "Ready", "NFS instance is ready")] and plan.requeue_after == 3600


def test_aws_mount_target_in_error() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS,
                             mount_targets=[mt("subnet-a", "error", "fsmt-1"), mt("subnet-b")]))
    assert errors(plan) == [("Error", "Unknown", "Mount target fsmt-1/eu-central-1a in error state")]


def test_aws_foreign_mount_targets_other_vpc_removed_same_vpc_refused() -> None:
    found = aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-x", ident="fsmt-x")],
                     subnet_vpcs={"subnet-x": "vpc-old"})
    assert aws_plan(found).writes == (Call("delete_mount_target", kwargs={"mount_target_id": "fsmt-x"}),)
    found = aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-x", ident="fsmt-x")],
                     subnet_vpcs={"subnet-x": "vpc-1"})
    plan = aws_plan(found)
    assert errors(plan) == [("Error", "InvalidMountTargetsAlreadyExist",
                             "Invalid mount targets already exist: [fsmt-x]")]
    assert plan.writes == () and plan.requeue_after is None


def test_aws_delete_in_reverse_order() -> None:
    obj = nfs({"aws": {}}, {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]},
              deleting=True)
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a")]), t, NOW)
    assert [c.describe() for c in plan.writes] == ["delete_mount_target"] and errors(plan) == []
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("a", "deleting")]),
                           t, NOW)
    assert plan.writes == () and plan.requeue_after
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP, file_system=FS), t, NOW)
    assert plan.writes == (Call("delete_file_system", kwargs={"fs_id": "fs-1"}),)
    assert errors(refused_with(plan, plan.writes[0])) == [("Error", "Unknown", "boom")]
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP), t, NOW)
    assert plan.writes == (Call("delete_security_group", kwargs={"group_id": "sg-1"}),)
    assert errors(refused_with(plan, plan.writes[0])) == [("Error", "Unknown", "boom")]
    plan = aws.plan_delete(obj, aws.Read(), t, NOW)
    assert plan.remove_finalizer == names.FINALIZER


@given(st.integers(0, 2**62))
def test_binary_quantity_round_trips(size: int) -> None:
    text = aws.binary_quantity(size)
    factor = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
    value = int(text[:-2]) * 1024 ** factor[text[-2:]] if text[-2:] in factor else int(text)
    assert value == size


# ---- GCP ------------------------------------------------------------------------------------------------

GCP_OBJ = nfs({"gcp": {"location": "us-east4-a", "tier": "BASIC_HDD", "fileShareName": "vol1", "capacityGb": 1024,
                       "connectMode": "PRIVATE_SERVICE_ACCESS"}})
GCP_SCOPE = {"spec": {"scope": {"gcp": {"project": "p1", "vpcNetwork": "shoot--kyma--c1"}}}}
GCP_IPR = {"status": {"id": "cm-range"}}
INSTANCE_NAME = f"projects/p1/locations/us-east4-a/instances/cm-{NAME}"


def instance(state: str = "READY", capacity: int = 1024, **extra: Any) -> dict[str, Any]:
    return {"name": INSTANCE_NAME, "state": state, "fileShares": [{"name": "vol1", "capacityGb": str(capacity)}],
            "networks": [{"ipAddresses": ["10.251.0.2"]}], **extra}


def gcp_plan(found: gcp.Read, obj: dict[str, Any] = GCP_OBJ) -> Outcome:
    return gcp.plan_create(obj, GCP_SCOPE, GCP_IPR, found, t, 5, NOW)


def test_gcp_create_instance_with_the_reserved_range() -> None:
    plan = gcp_plan(gcp.Read())
    assert plan.writes == (Call("create_instance", kwargs={
        "parent": "projects/p1/locations/us-east4-a", "instance_id": f"cm-{NAME}", "instance": {
            "tier": "BASIC_HDD", "fileShares": [{"name": "vol1", "capacityGb": 1024}],
            "networks": [{"network": "projects/p1/global/networks/shoot--kyma--c1", "modes": ["MODE_IPV4"],
                          "reservedIpRange": "cm-range", "connectMode": "PRIVATE_SERVICE_ACCESS"}]}}),)
    assert plan.status == {"id": INSTANCE_NAME, "state": "Creating"} and plan.requeue_after == 5
    started = answered(plan, "op-7")  # the operation's name goes to opIdentifier
    assert started.status == {"id": INSTANCE_NAME, "state": "Creating", "opIdentifier": "op-7"}
    assert started.requeue_after == 5


def test_gcp_a_refused_call_or_read() -> None:
    plan = gcp_plan(gcp.Read())
    failed = refused_with(plan, plan.writes[0], "permission denied")
    assert errors(failed) == [("Error", "GCPError", "permission denied")] and failed.error == "permission denied"
    for kind, status in (("throttled", 429), ("retry", 503), ("retry", 0)):
        plan = gcp_plan(gcp.Read())  # each refusal on the plan as decided (a plan is used once)
        later = refuse(plan, plan.writes[0], "later", kind=kind, status=status)  # type: ignore[arg-type]
        assert later is not None and later.requeue_after == 5 and errors(later) == [] and later.error is None
    read = gcp.read_failed(GCP_OBJ, Failure("refused", 403, message="denied"), t, 5, NOW)
    assert errors(read) == [("Error", "GCPError", "denied")] and read.error == "denied"
    read = gcp.read_failed(GCP_OBJ, Failure("retry", 500), t, 5, NOW)
    assert read.requeue_after == 5 and read.status is None and read.error is None


def test_gcp_operation_tracking() -> None:
    running = nfs(GCP_OBJ["spec"]["instance"], {"opIdentifier": "op-1"})
    plan = gcp_plan(gcp.Read(instance("CREATING"), {"name": "op-1", "done": False}), running)
    assert plan.writes == () and plan.requeue_after == 5 and plan.status is None
    plan = gcp_plan(gcp.Read(None, {"name": "op-1", "done": True, "error": {"code": 8, "message": "quota"}}), running)
    assert errors(plan) == [("Error", "GCPError", "quota")] and plan.status is not None
    assert plan.status["opIdentifier"] is None


def test_gcp_states() -> None:
    plan = gcp_plan(gcp.Read(instance("CREATING")))
    assert plan.status is not None and plan.status["state"] == "Creating"
    plan = gcp_plan(gcp.Read(instance("ERROR", statusMessage="disk failure")))
    assert errors(plan) == [("Error", "GCPError", "disk failure")]


def test_gcp_capacity_change_updates_the_instance() -> None:
    plan = gcp_plan(gcp.Read(instance(capacity=2048)))
    assert plan.writes == (Call("update_capacity", kwargs={"name": INSTANCE_NAME, "file_share": "vol1",
                                                           "capacity_gb": 1024}),)
    assert plan.status is not None and plan.status["state"] == "Updating"


def test_gcp_ready() -> None:
    plan = gcp_plan(gcp.Read(instance(protocol="NFS_V4_1")))
    assert plan.writes == () and plan.status is not None
    status = plan.status
    assert {k: status[k] for k in ("hosts", "host", "path", "capacityGb", "capacity", "stateData", "state")} == {
        "hosts": ["10.251.0.2"], "host": "10.251.0.2", "path": "vol1", "capacityGb": 1024, "capacity": "1024Gi",
        "stateData": {"gcpNfsProtocol": "NFS_V4_1"}, "state": "Ready"}
    assert errors(plan) == [("Ready", "Ready", "Filestore instance provisioned in GCP.")]


@pytest.mark.parametrize(("found", "call", "gone"), [
    (gcp.Read(instance()), Call("delete_instance", kwargs={"name": INSTANCE_NAME}), False),
    (gcp.Read(instance("DELETING")), None, False),
    (gcp.Read(), None, True),
])
def test_gcp_delete(found: gcp.Read, call: Call | None, gone: bool) -> None:
    plan = gcp.plan_delete(nfs(GCP_OBJ["spec"]["instance"], deleting=True), GCP_SCOPE, found, t, 5, NOW)
    assert plan.writes == ((call,) if call else ()) and (plan.remove_finalizer == names.FINALIZER) is gone
