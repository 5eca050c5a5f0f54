"""The GcpSubnet plans (pure): the SKR plan (id, finalizer, mirror, projection, deletion, ownership), the KCP
plan (Scope, network, finalizer, deletion protection, handoff), the GCP plans (each branch of the
original's ``pkg/kcp/provider/gcp/subnet`` steps, refused calls and reads), the declaration and ``render``."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kube.refusal import Failure
from kube.toolkit import Call
from kube.toolkit.conditions import condition
from reconcilery.cli import app
from tasks.cloud import names, registry
from tasks.cloud.gcp.gcpsubnet_plan import Read, plan_create, plan_delete, read_failed, where
from tasks.cloud.gcpsubnet_render import render_gcpsubnets
from tasks.cloud.kcp import gcpsubnet_plan as kcp_plan
from tasks.cloud.skr import gcpsubnet_plan as skr_plan
from tests.unit.cloud.outcomes import SkrWrites, answered, refuse

ID = "0b0c5bd2-54a4-4a4e-9d4e-3c1f4b2f6a10"
NEW = "7f1de3b0-1c1e-4b5e-9d3a-5b8c9d0e1f2a"
NOW = "2026-01-01T00:00:00Z"
SCOPE = {"metadata": {"name": "k1", "namespace": "kcp-system"},
         "spec": {"kymaName": "k1", "provider": "gcp", "region": "us-east4",
                  "scope": {"gcp": {"project": "p1", "vpcNetwork": "vpc1"}}}}
SUBNETS = "projects/p1/regions/us-east4/subnetworks"
POLICY = "projects/p1/locations/us-east4/serviceConnectionPolicies/cm-vpc1-us-east4-rc"


def t(s: float) -> float:
    return s


def ready(message: str = "Subnet is ready") -> list[dict[str, Any]]:
    return [condition("Ready", True, "Ready", message, NOW)]


def error(message: str) -> list[dict[str, Any]]:
    return [condition("Error", True, "Error", message, NOW)]


# -- the SKR plan ------------------------------------------------------------------------------------

def skr(status: dict[str, Any] | None = None, finalizer: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "my-subnet", "labels": {}}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"cidr": "10.251.0.0/22"}, "status": status or {}}


def kcp(conditions: list[dict[str, Any]] | None = None, kyma: str = "k1", deleting: bool = False,
        **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ID, "namespace": "kcp-system", "labels": {
        names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: "my-subnet", names.LABEL_REMOTE_NAMESPACE: ""}}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "status": {**status, "conditions": conditions or []}}


def skr_turn(obj: dict[str, Any], found: dict[str, Any] | None = None, used_by: tuple[str, ...] = ()) -> SkrWrites:
    seen = skr_plan.Seen(obj=obj, kyma="k1", kcp_namespace="kcp-system", kcp=found, used_by=list(used_by))
    return SkrWrites(skr_plan.plan(seen, NEW, t, NOW), names.GCP_SUBNET)


def test_skr_new_object_gets_id_finalizer_and_mirror_in_one_turn() -> None:
    out = skr_turn(skr(finalizer=False))
    assert out.label_id == NEW and out.step.add_finalizer == names.FINALIZER
    assert out.step.status == {"id": NEW, "state": "Creating"} and out.step.requeue_after == 20
    body = out.create
    assert body is not None and body["metadata"]["name"] == NEW and body["metadata"]["namespace"] == "kcp-system"
    assert body["metadata"]["labels"] == {names.LABEL_KYMA_NAME: "k1", names.LABEL_REMOTE_NAME: "my-subnet",
                                          names.LABEL_REMOTE_NAMESPACE: "", names.LABEL_MODULE: "cloud-manager"}
    assert body["spec"] == {"remoteRef": {"namespace": "", "name": "my-subnet"}, "scope": {"name": "k1"},
                            "network": {"name": "k1--kyma"}, "cidr": "10.251.0.0/22", "purpose": "PRIVATE"}


@pytest.mark.parametrize(("found", "before", "status", "requeue"), [
    (kcp(), {"id": ID, "state": "Creating"}, None, 20),  # no KCP conditions yet: wait
    (kcp(ready("Subnet is ready"), cidr="10.251.0.0/22"), {"id": ID, "state": "Creating"},
     {"state": "Ready", "conditions": ready("Subnet is ready"), "cidr": "10.251.0.0/22"}, None),
    (kcp(error("Failed to create GCP Private Subnet")), {"id": ID, "state": "Ready", "conditions": ready()},
     {"state": "Error", "conditions": [condition("Error", True, "Error", "Failed to create GCP Private Subnet", NOW)]},
     None),
    (kcp(ready()), {"id": ID, "state": "Ready", "conditions": ready()}, None, None),  # nothing changes
    (kcp(error("x")), {"id": ID, "state": "Error", "conditions": error("older")}, None, None),  # an Error shown
])
def test_skr_projects_the_kcp_status(found: dict[str, Any], before: dict[str, Any], status: dict[str, Any] | None,
                                     requeue: float | None) -> None:
    out = skr_turn(skr(before), found)
    assert out.step.status == status and out.step.requeue_after == requeue and out.create is None


@pytest.mark.parametrize(("status", "found", "reason", "message"), [
    ({"id": "not-a-uuid"}, None, "InvalidId", "GcpSubnet id 'not-a-uuid' is not a UUID"),
    ({"id": ID}, kcp(kyma="someone-else"), "NotOwned",
     "GcpSubnet id names a KCP object that does not belong to this object"),
])
def test_skr_ownership_before_action(status: dict[str, Any], found: dict[str, Any] | None, reason: str,
                                     message: str) -> None:
    out = skr_turn(skr(status), found)
    assert out.step.status is not None and out.step.status["state"] == "Error"
    assert [(c["reason"], c["message"]) for c in out.step.status["conditions"]] == [(reason, message)]
    assert out.create is None and out.delete is None and out.label_id is None


def test_skr_deletion_waits_for_users_then_deletes_the_mirror_and_waits() -> None:
    used = skr_turn(skr({"id": ID}, deleting=True), kcp(), used_by=("apps/rc1",))
    assert used.step.status == {"state": "Error", "conditions": [condition(
        "Warning", True, "DeleteWhileUsed", "Can not be deleted while used by: [apps/rc1]", NOW)]}
    assert used.step.requeue_after == 10 and used.delete is None
    out = skr_turn(skr({"id": ID, "state": "Ready", "conditions": ready()}, deleting=True), kcp(ready()))
    assert out.delete == ID and out.step.requeue_after == 60
    assert out.step.status == {"state": "Deleting", "conditions": [
        *ready(), condition("Deleting", True, "DeletingInstance", "Deleting GcpSubnet my-subnet", NOW)]}
    waiting = skr_turn(skr({"id": ID, "state": "Deleting"}, deleting=True), kcp(ready(), deleting=True))
    assert waiting.delete is None and waiting.step.requeue_after == 60
    failed = skr_turn(skr({"id": ID, "state": "Deleting"}, deleting=True),
                      kcp(error("Failed to delete Subnet"), deleting=True))
    assert failed.step.status == {"state": "Error", "conditions": error("Failed to delete Subnet")}
    assert failed.step.requeue_after is None
    gone = skr_turn(skr({"id": ID, "state": "Deleting"}, deleting=True))
    assert gone.step.remove_finalizer == names.FINALIZER and gone.step.writes == ()


def test_skr_deleting_without_finalizer_or_id() -> None:
    assert skr_turn(skr(deleting=True, finalizer=False)).step.remove_finalizer is None
    assert skr_turn(skr(deleting=True)).step.remove_finalizer == names.FINALIZER


# -- the KCP plan --------------------------------------------------------------------------------------

def kcp_obj(finalizer: bool = True, deleting: bool = False, **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ID, "namespace": "kcp-system"}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"scope": {"name": "k1"}, "cidr": "10.251.0.0/22"}, "status": status}


def network(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "k1--kyma"}, "status": {"conditions": list(conditions)}}


NETWORK_READY = network(condition("Ready", True, "Ready", "Ready", NOW))


@pytest.mark.parametrize(("obj", "scope", "net", "expect"), [
    (kcp_obj(finalizer=False), SCOPE, NETWORK_READY, {"add_finalizer": names.FINALIZER, "handoff": "reconcile"}),
    (kcp_obj(), SCOPE, network(), {"requeue_after": 1}),
    (kcp_obj(), SCOPE, network(condition("Error", True, "Error", "x", NOW)), {"requeue_after": 300}),
    (kcp_obj(finalizer=False), SCOPE, None, {"add_finalizer": names.FINALIZER, "requeue_after": 60, "status": {
        "conditions": [condition("Error", True, "Error", "Kyma network does not exist", NOW)], "state": "Error"}}),
    (kcp_obj(), None, None, {"requeue_after": 60, "status": {
        "conditions": [condition("Error", True, "ScopeNoFound", "Scope k1 does not exist", NOW)]}}),
    (kcp_obj(deleting=True), None, None, {"remove_finalizer": names.FINALIZER}),
    (kcp_obj(deleting=True, state="Ready", conditions=ready()), SCOPE, None,
     {"requeue_after": 1, "status": {"conditions": [], "state": "Deleting"}}),
    (kcp_obj(deleting=True), SCOPE, None, {"handoff": "delete"}),
])
def test_kcp_plan(obj: dict[str, Any], scope: dict[str, Any] | None, net: dict[str, Any] | None,
                  expect: dict[str, Any]) -> None:
    out = kcp_plan.plan(kcp_plan.Seen(obj, scope, net), t, NOW)
    got = {k: getattr(out, k) for k in ("add_finalizer", "remove_finalizer", "requeue_after", "handoff", "status")
           if getattr(out, k) is not None}
    assert got == expect


def test_kcp_deletion_waits_while_a_gcp_redis_cluster_uses_it() -> None:
    out = kcp_plan.plan(kcp_plan.Seen(kcp_obj(deleting=True), SCOPE, NETWORK_READY, ["kcp-system/rc1"]), t, NOW)
    assert out.handoff is None and out.requeue_after == 10
    assert out.status == {"state": "Warning", "conditions": [condition(
        "Warning", True, "DeleteWhileUsed", "Can not be deleted while used by GcpRedisCluster: [kcp-system/rc1]",
        NOW)]}


# -- the GCP plans -------------------------------------------------------------------------------------

def gcp_obj(deleting: bool = False, **status: Any) -> dict[str, Any]:
    return kcp_obj(deleting=deleting, **status)


SUBNET = {"name": f"cm-{ID}", "ipCidrRange": "10.251.0.0/22"}


def policy(*subnets: str) -> dict[str, Any]:
    return {"name": POLICY, "pscConfig": {"subnetworks": list(subnets)}}


def only_call(outcome: Any) -> Call:
    (write,) = outcome.writes
    assert isinstance(write, Call)
    return write


def test_where_names_as_the_original() -> None:
    at = where(SCOPE)
    assert (at.network, at.parent, at.policy, at.subnetwork("cm-x")) == (
        "projects/p1/global/networks/vpc1", "projects/p1/locations/us-east4", POLICY, f"{SUBNETS}/cm-x")


def test_create_inserts_the_subnetwork_and_records_the_operation() -> None:
    out = plan_create(gcp_obj(), SCOPE, Read(), t, NOW)
    call = only_call(out)
    assert (call.method, dict(call.kwargs)) == ("insert_subnetwork", {
        "project": "p1", "region": "us-east4", "name": f"cm-{ID}", "network": "projects/p1/global/networks/vpc1",
        "cidr": "10.251.0.0/22", "purpose": "PRIVATE", "private_ip_google_access": True})
    done = answered(out, "operation-1")
    assert done.status == {"subnetCreationOperationName": "operation-1"} and done.requeue_after == 1
    out = plan_create(gcp_obj(), SCOPE, Read(), t, NOW)  # a fresh turn (the answer changed the plan's builder)
    call = only_call(out)
    refused = refuse(out, call, "range overlaps")
    assert refused is not None and refused.requeue_after == 60 and refused.event is not None
    assert refused.status == {"conditions": [condition("Error", True, "CloudProviderError",
                                                       "Failed to create GCP Private Subnet", NOW)], "state": "Error"}
    out = plan_create(gcp_obj(), SCOPE, Read(), t, NOW)
    throttled = refuse(out, only_call(out), "slow down", kind="throttled", status=429)
    assert throttled is not None and throttled.status is None and throttled.requeue_after == 5


@pytest.mark.parametrize(("operation", "status", "expect"), [
    ({"status": "RUNNING"}, {}, {"requeue_after": 5}),
    ({"status": "DONE", "error": {"errors": [{"code": "QUOTA"}]}}, {},
     {"status": {"conditions": [condition("Error", True, "CloudProviderError", "KCP GcpSubnet creation operation "
                                          "failed", NOW)], "state": "Error"}}),
    ({"status": "DONE", "error": {"errors": [{"code": "QUOTA"}]}}, {"conditions": error("older")}, {}),
])
def test_create_waits_for_the_operation_and_a_failed_one_stays(operation: dict[str, Any], status: dict[str, Any],
                                                               expect: dict[str, Any]) -> None:
    out = plan_create(gcp_obj(subnetCreationOperationName="op", **status), SCOPE, Read(operation=operation), t, NOW)
    assert out.writes == ()
    assert {k: v for k in ("status", "requeue_after") if (v := getattr(out, k)) is not None} == expect


def test_create_records_id_and_cidr_then_creates_the_policy() -> None:
    out = plan_create(gcp_obj(), SCOPE, Read(SUBNET, None, {"status": "DONE"}), t, NOW)
    assert out.status == {"id": f"cm-{ID}", "cidr": "10.251.0.0/22"} and out.requeue_after == 1
    call = only_call(out)
    assert (call.method, dict(call.kwargs)) == ("create_connection_policy", {
        "parent": "projects/p1/locations/us-east4", "policy_id": "cm-vpc1-us-east4-rc",
        "network": "projects/p1/global/networks/vpc1", "service_class": "gcp-memorystore-redis",
        "subnetworks": [f"{SUBNETS}/cm-{ID}"], "description": "Managed by cloud-manager. Used for Redis Cluster."})
    refused = refuse(out, call, "no")
    assert refused is not None and refused.status is not None
    assert refused.status["conditions"][0]["message"] == "Failed to create GCP Connection Policy"


def test_create_adds_the_subnetwork_to_a_policy_then_is_ready() -> None:
    status = {"id": f"cm-{ID}", "cidr": "10.251.0.0/22"}
    out = plan_create(gcp_obj(**status), SCOPE, Read(SUBNET, policy(f"{SUBNETS}/other")), t, NOW)
    call = only_call(out)
    assert (call.method, dict(call.kwargs)) == ("update_connection_policy", {
        "name": POLICY, "subnetworks": [f"{SUBNETS}/other", f"{SUBNETS}/cm-{ID}"]})
    refused = refuse(out, call, "no")
    assert refused is not None and refused.status is not None
    assert refused.status["conditions"][0]["message"] == "Failed to update GCP Connection Policy"
    done = plan_create(gcp_obj(**status), SCOPE, Read(SUBNET, policy(f"{SUBNETS}/cm-{ID}")), t, NOW)
    assert done.writes == () and done.requeue_after is None
    assert done.status == {"conditions": ready(), "state": "Ready"}
    again = plan_create(gcp_obj(**status, state="Ready", conditions=ready()), SCOPE,
                        Read(SUBNET, policy(f"{SUBNETS}/cm-{ID}")), t, NOW)
    assert again.status is None and again.writes == ()


def test_create_keeps_a_recorded_cidr_when_the_spec_has_none() -> None:
    obj = gcp_obj(id=f"cm-{ID}", cidr="10.251.0.0/22")
    obj["spec"]["cidr"] = ""
    out = plan_create(obj, SCOPE, Read({**SUBNET, "ipCidrRange": "10.9.0.0/22"}, policy(f"{SUBNETS}/cm-{ID}")), t, NOW)
    assert "cidr" not in (out.status or {})


@pytest.mark.parametrize(("what", "message"), [("subnet", "Failed to load Subnet"),
                                               ("policy", "Failed to load Service Connection Policy"),
                                               ("operation", "Failed to load GCP Subnet Creation Operation")])
def test_a_refused_read_is_its_error_a_transient_one_waits(what: str, message: str) -> None:
    for plan in (plan_create, plan_delete):
        out = plan(gcp_obj(), SCOPE, Read(failed=(what, Failure("refused", 403, message="denied"))), t, NOW)
        assert out.requeue_after == 60 and out.writes == () and out.status is not None
        assert [(c["reason"], c["message"]) for c in out.status["conditions"]] == [("CloudProviderError", message)]
        wait = plan(gcp_obj(), SCOPE, Read(failed=(what, Failure("retry", 503))), t, NOW, retry_wait=5)
        assert wait.status is None and wait.requeue_after == 5


def test_delete_in_the_original_order() -> None:
    mine, other = f"{SUBNETS}/cm-{ID}", f"{SUBNETS}/other"
    status = {"id": f"cm-{ID}"}
    out = plan_delete(gcp_obj(True, **status), SCOPE, Read(SUBNET, policy(other, mine)), t, NOW)
    call = only_call(out)
    assert (call.method, dict(call.kwargs), out.requeue_after) == (
        "update_connection_policy", {"name": POLICY, "subnetworks": [other]}, 1)
    out = plan_delete(gcp_obj(True, **status), SCOPE, Read(SUBNET, policy(mine)), t, NOW)
    call = only_call(out)
    assert (call.method, dict(call.kwargs), out.requeue_after) == ("delete_connection_policy", {"name": POLICY}, 10)
    gone = refuse(out, call, "gone", kind="not_found", status=404)
    assert gone is not None and gone.status is None and gone.requeue_after == 10
    refused = refuse(out, call, "no")  # (each refusal on its own turn: the first changed nothing)
    assert refused is not None and refused.status is not None
    assert refused.status["conditions"][0]["message"] == "Failed to delete Subnet"
    out = plan_delete(gcp_obj(True, **status), SCOPE, Read(SUBNET, policy(other)), t, NOW)
    call = only_call(out)
    assert (call.method, dict(call.kwargs), out.requeue_after) == (
        "delete_subnetwork", {"project": "p1", "region": "us-east4", "name": f"cm-{ID}"}, 10)
    assert plan_delete(gcp_obj(True, **status), SCOPE, Read(), t, NOW).remove_finalizer == names.FINALIZER


def test_clients_that_cannot_be_built() -> None:
    out = read_failed(gcp_obj(), Failure("refused", message="bad key"), t)
    assert out.status is not None and out.status["state"] == "Error" and out.requeue_after is None
    assert out.status["conditions"][0]["message"] == "Failed to create Subnet state"
    assert read_failed(gcp_obj(), Failure("retry"), t, 5).requeue_after == 5


# -- the declaration and render ------------------------------------------------------------------------

def test_declared_in_the_registry() -> None:
    kind = registry.get("gcpsubnet")
    assert kind.controller == "cloud-gcpsubnet" and set(kind.providers) == {"gcp"}
    assert [res.kind for _, res in registry.skr_kinds("gcp")][:2] == ["IpRange", "GcpSubnet"]  # its IpRange first
    assert "GcpSubnet" not in [res.kind for _, res in registry.skr_kinds("aws")]
    nuked = [res.kind for res in registry.nuked()]
    assert nuked.index("IpRange") < nuked.index("GcpSubnet") < nuked.index("Network")
    assert registry.by_kcp_kind("GcpSubnet") is kind


def test_render() -> None:
    [ok, bad] = render_gcpsubnets(SCOPE, [{"kind": "GcpSubnet", "metadata": {"name": "a"},
                                           "spec": {"cidr": "10.251.0.0/22"}},
                                          {"kind": "GcpSubnet", "metadata": {"name": "b"}, "spec": {"cidr": "10.1/8"}}])
    assert (ok.state, ok.cidr, ok.kcp["metadata"]["name"]) == ("Ready", "10.251.0.0/22", "<id>")
    assert ok.plan[0].startswith(f"subnetwork {SUBNETS}/cm-<id>: 10.251.0.0/22, PRIVATE")
    assert POLICY in ok.plan[1] and bad.state == "Error"
    [aws] = render_gcpsubnets({"spec": {"provider": "aws"}}, [{"kind": "GcpSubnet", "metadata": {"name": "a"}}])
    assert aws.outcome == "GcpSubnet is not served in an SKR of provider aws"


def test_render_command(tmp_path: Any) -> None:
    (tmp_path / "scope.yaml").write_text(yaml.safe_dump({"apiVersion": "cloud-control.kyma-project.io/v1beta1",
                                                         "kind": "Scope", **SCOPE}))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"apiVersion": "cloud-resources.kyma-project.io/v1beta1",
                                                     "kind": "GcpSubnet", "metadata": {"name": "a"},
                                                     "spec": {"cidr": "10.251.0.0/22"}}))
    result = CliRunner().invoke(app, ["render", "gcpsubnet", "-f", str(tmp_path / "s.yaml"),
                                      "--scope", str(tmp_path / "scope.yaml")])
    assert result.exit_code == 0, result.output
    assert "10.251.0.0/22" in result.output and "cm-vpc1-us-east4-rc" in result.output
