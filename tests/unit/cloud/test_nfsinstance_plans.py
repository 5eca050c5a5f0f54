"""The KCP NfsInstance plans of AWS (pkg/kcp/provider/aws/nfsinstance) and GCP (.../gcp/nfsinstance/v2),
table-driven from the notes over what the clients read (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.cloud import names
from tasks.cloud.aws import nfsinstance_plan as aws
from tasks.cloud.gcp import nfsinstance_plan as gcp

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


def aws_plan(found: aws.Read, obj: dict[str, Any] = AWS_OBJ, iprange: dict[str, Any] = IPR) -> aws.Plan:
    return aws.plan_create(obj, AWS_SCOPE, iprange, found, t, 3600, NOW)


def test_aws_zero_subnets_is_a_validation_error() -> None:
    plan = aws_plan(aws.Read(), iprange={"status": {"vpcId": "vpc-1", "subnets": []}})
    assert errors(plan.step) == [("Error", "ValidationFailed", "IpRange has zero subnets, and at least one is needed")]
    assert plan.calls == () and plan.step.requeue_after is None


def test_aws_security_group_then_its_nfs_rules() -> None:
    plan = aws_plan(aws.Read())
    assert [c.method for c in plan.calls] == ["create_security_group"]
    assert plan.calls[0].args == ("vpc-1", NAME, {"Name": NAME, names.TAG_REMOTE_NAME: "ns/data",
                                                  names.TAG_NAME: f"kcp-system/{NAME}", names.TAG_SCOPE: "k"})
    plan = aws_plan(aws.Read(security_group={"GroupId": "sg-1", "IpPermissions": []}))
    assert plan.calls == (aws.Call("authorize_nfs_ingress", ("sg-1", ["100.64.0.0/12", "10.250.0.0/16"]),
                                   prefix="Error adding security group ingress: "),)
    half = {"GroupId": "sg-1", "IpPermissions": [{"IpProtocol": "tcp", "ToPort": 2049,
                                                  "IpRanges": [{"CidrIp": "100.64.0.0/12"}]}]}
    assert aws_plan(aws.Read(security_group=half)).calls[0].args == ("sg-1", ["10.250.0.0/16"])


def test_aws_file_system_created_with_the_notes_settings_and_its_failure() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP))
    (call,) = plan.calls
    assert call.method == "create_file_system"
    assert call.args == (NAME, "maxIO", "elastic", {"Name": NAME, names.TAG_NAME: f"kcp-system/{NAME}",
                                                   names.TAG_REMOTE_NAME: "ns/data", names.TAG_SCOPE: "k",
                                                   names.TAG_SHOOT: "shoot"})
    assert call.reason == "FailedCreatingFileSystem" and call.prefix == "Failed creating file system: "
    assert call.retry == 60


def test_aws_waits_for_available_and_records_id_and_capacity() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system={**FS, "LifeCycleState": "creating"}))
    assert plan.step.requeue_after == 1 and plan.step.status == {"capacity": "6Ki", "id": "fs-1"}


def test_aws_mount_targets_one_per_subnet_then_ready() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a")]))
    assert plan.calls == (aws.Call("create_mount_target", ("fs-1", "subnet-b", ["sg-1"]),
                                   prefix="Error creating mount target: "),)
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS,
                             mount_targets=[mt("subnet-a"), mt("subnet-b", "creating")]))
    assert plan.calls == () and plan.step.requeue_after == 0.3
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a"), mt("subnet-b")]))
    host = "fs-1.efs.eu-central-1.amazonaws.com"
    assert plan.step.status is not None
    assert {k: plan.step.status[k] for k in ("hosts", "host", "path", "id", "state")} == {
        "hosts": [host], "host": host, "path": "/", "id": "fs-1", "state": "Ready"}
    assert errors(plan.step) == [("Ready", "Ready", "NFS instance is ready")] and plan.step.requeue_after == 3600


def test_aws_mount_target_in_error() -> None:
    plan = aws_plan(aws.Read(security_group=GROUP, file_system=FS,
                             mount_targets=[mt("subnet-a", "error", "fsmt-1"), mt("subnet-b")]))
    assert errors(plan.step) == [("Error", "Unknown", "Mount target fsmt-1/eu-central-1a in error state")]


def test_aws_foreign_mount_targets_other_vpc_removed_same_vpc_refused() -> None:
    found = aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-x", ident="fsmt-x")],
                     subnet_vpcs={"subnet-x": "vpc-old"})
    assert aws_plan(found).calls == (aws.Call("delete_mount_target", ("fsmt-x",)),)
    found = aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-x", ident="fsmt-x")],
                     subnet_vpcs={"subnet-x": "vpc-1"})
    plan = aws_plan(found)
    assert errors(plan.step) == [("Error", "InvalidMountTargetsAlreadyExist",
                                  "Invalid mount targets already exist: [fsmt-x]")]
    assert plan.calls == () and plan.step.requeue_after is None


def test_aws_delete_in_reverse_order() -> None:
    obj = nfs({"aws": {}}, {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]},
              deleting=True)
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("subnet-a")]), t, NOW)
    assert [c.method for c in plan.calls] == ["delete_mount_target"] and errors(plan.step) == []
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP, file_system=FS, mount_targets=[mt("a", "deleting")]),
                           t, NOW)
    assert plan.calls == () and plan.step.requeue_after
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP, file_system=FS), t, NOW)
    assert plan.calls == (aws.Call("delete_file_system", ("fs-1",), "Unknown"),)
    plan = aws.plan_delete(obj, aws.Read(security_group=GROUP), t, NOW)
    assert plan.calls == (aws.Call("delete_security_group", ("sg-1",), "Unknown"),)
    plan = aws.plan_delete(obj, aws.Read(), t, NOW)
    assert plan.step.remove_finalizer == names.FINALIZER


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


def gcp_plan(found: gcp.Read, obj: dict[str, Any] = GCP_OBJ) -> gcp.Plan:
    return gcp.plan_create(obj, GCP_SCOPE, GCP_IPR, found, t, 5, NOW)


def test_gcp_create_instance_with_the_reserved_range() -> None:
    plan = gcp_plan(gcp.Read())
    assert plan.call == gcp.Call("create_instance", ("projects/p1/locations/us-east4-a", f"cm-{NAME}", {
        "tier": "BASIC_HDD", "fileShares": [{"name": "vol1", "capacityGb": 1024}],
        "networks": [{"network": "projects/p1/global/networks/shoot--kyma--c1", "modes": ["MODE_IPV4"],
                      "reservedIpRange": "cm-range", "connectMode": "PRIVATE_SERVICE_ACCESS"}]}))
    assert plan.step.status == {"id": INSTANCE_NAME, "state": "Creating"} and plan.step.requeue_after == 5


def test_gcp_operation_tracking() -> None:
    running = nfs(GCP_OBJ["spec"]["instance"], {"opIdentifier": "op-1"})
    plan = gcp_plan(gcp.Read(instance("CREATING"), {"name": "op-1", "done": False}), running)
    assert plan.call is None and plan.step.requeue_after == 5 and plan.step.status is None
    plan = gcp_plan(gcp.Read(None, {"name": "op-1", "done": True, "error": {"code": 8, "message": "quota"}}), running)
    assert errors(plan.step) == [("Error", "GCPError", "quota")] and plan.step.status is not None
    assert plan.step.status["opIdentifier"] is None


def test_gcp_states() -> None:
    plan = gcp_plan(gcp.Read(instance("CREATING")))
    assert plan.step.status is not None and plan.step.status["state"] == "Creating"
    plan = gcp_plan(gcp.Read(instance("ERROR", statusMessage="disk failure")))
    assert errors(plan.step) == [("Error", "GCPError", "disk failure")]


def test_gcp_capacity_change_updates_the_instance() -> None:
    plan = gcp_plan(gcp.Read(instance(capacity=2048)))
    assert plan.call == gcp.Call("update_capacity", (INSTANCE_NAME, "vol1", 1024))
    assert plan.step.status is not None and plan.step.status["state"] == "Updating"


def test_gcp_ready() -> None:
    plan = gcp_plan(gcp.Read(instance(protocol="NFS_V4_1")))
    assert plan.call is None and plan.step.status is not None
    status = plan.step.status
    assert {k: status[k] for k in ("hosts", "host", "path", "capacityGb", "capacity", "stateData", "state")} == {
        "hosts": ["10.251.0.2"], "host": "10.251.0.2", "path": "vol1", "capacityGb": 1024, "capacity": "1024Gi",
        "stateData": {"gcpNfsProtocol": "NFS_V4_1"}, "state": "Ready"}
    assert errors(plan.step) == [("Ready", "Ready", "Filestore instance provisioned in GCP.")]


@pytest.mark.parametrize(("found", "call", "gone"), [
    (gcp.Read(instance()), gcp.Call("delete_instance", (INSTANCE_NAME,)), False),
    (gcp.Read(instance("DELETING")), None, False),
    (gcp.Read(), None, True),
])
def test_gcp_delete(found: gcp.Read, call: gcp.Call | None, gone: bool) -> None:
    plan = gcp.plan_delete(nfs(GCP_OBJ["spec"]["instance"], deleting=True), GCP_SCOPE, found, t, 5, NOW)
    assert plan.call == call and (plan.step.remove_finalizer == names.FINALIZER) is gone
