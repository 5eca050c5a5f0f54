"""The GCP VpcPeering plan (pure): every state of the original's flow (notes §8,
``pkg/kcp/provider/gcp/vpcpeering``), its messages and requeues, and the fixes."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud.gcp.client import GcpApiError
from tasks.cloud.gcp.vpcpeering_plan import Call, Network, Plan, Read, plan_create, plan_delete, tagged

NOW = "2026-11-26T01:00:00Z"
LOCAL = Network("kyma-project", "shoot--kyma--c-1")
REMOTE = Network("customer", "customer-vpc")
SCOPE = {"spec": {"shootName": "c-1"}}
FIN = "cloud-manager.kyma-project.io/deletion-hook"


def t(seconds: float) -> float:
    return seconds


def obj(status: dict[str, Any] | None = None, import_routes: bool = False, delete_remote: bool = False,
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p-1", "namespace": "kcp-system"}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"details": {"peeringName": "to-kyma", "importCustomRoutes": import_routes,
                                                   "deleteRemotePeering": delete_remote}},
            "status": dict(status or {})}


def create(found: Read, status: dict[str, Any] | None = None, network_tag: str = "", **kw: Any) -> Plan:
    return plan_create(obj(status, **kw), SCOPE, LOCAL, REMOTE, found, t, network_tag, now=NOW)


def conds(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions", [])]


TAGGED = ["customer/c-1"]
PEER_ACTIVE = {"name": "to-kyma", "state": "ACTIVE"}
LOCAL_ACTIVE = {"name": "cm-p-1", "state": "ACTIVE"}
FAILED_OP = {"status": "DONE", "error": {"errors": [{"code": "QUOTA_EXCEEDED", "message": "quota"}]}}


@pytest.mark.parametrize(("keys", "shoot", "tag", "ok"), [
    (["customer/c-1"], "c-1", "", True),
    (["customer/my-c-1-key"], "c-1", "", True),  # the original's Contains
    (["customer/kyma-peering"], "c-1", "kyma-peering", True),
    (["customer/other"], "c-1", "", False),  # fix: an empty network tag matches nothing
    ([], "c-1", "kyma-peering", False),
])
def test_tagged(keys: list[str], shoot: str, tag: str, ok: bool) -> None:
    assert tagged(keys, shoot, tag) is ok


def test_network_of_prefers_status_and_needs_project_and_name() -> None:
    ref = {"gcp": {"gcpProject": "p", "networkName": "n"}}
    assert Network.of({"status": {"network": ref}}) == Network("p", "n")
    assert Network.of({"spec": {"network": {"reference": ref}}}) == Network("p", "n")
    assert Network.of({"spec": {}}) is None and Network.of(None) is None


@pytest.mark.parametrize(("err", "reason", "message", "requeue", "exclusive"), [
    (GcpApiError(403, "denied"), "Unauthorized", "Error fetching GCP remote peering operation due to insufficient "
     "permissions, please check the documentation for more details", 300, True),
    (GcpApiError(500, "boom"), "Error", "Error loading Remote Vpc Peering Operation: op-r", 60, False),
])
def test_remote_operation_not_loadable(err: GcpApiError, reason: str, message: str, requeue: float,
                                       exclusive: bool) -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "x", "lastTransitionTime": NOW}
    plan = create(Read(remote_op_error=err), {"remotePeeringOperation": "op-r", "conditions": [ready]})
    step = plan.done()
    assert plan.call is None and step.requeue_after == requeue
    assert ("Error", reason, message) in conds(step)
    assert (("Ready", "Ready", "x") in conds(step)) is not exclusive


def test_running_operations_wait_10_s_remote_and_60_s_local() -> None:
    step = create(Read(remote_op={"status": "RUNNING"}), {"remotePeeringOperation": "op-r"}).done()
    assert (step.status, step.requeue_after) == (None, 10)
    step = create(Read(remote_peering=PEER_ACTIVE, local_op={"status": "PENDING"}),
                  {"localPeeringOperation": "op-l", "remoteId": "to-kyma"}).done()
    assert step.requeue_after == 60 and step.status is None


def test_a_failed_remote_operation_is_reported_and_forgotten() -> None:
    step = create(Read(remote_op=FAILED_OP), {"remotePeeringOperation": "op-r"}).done()
    assert step.status is not None and step.status["state"] == "Disconnected"
    assert step.status["remotePeeringOperation"] is None and step.requeue_after == 300
    assert conds(step) == [("Error", "QuotaExceeded", "Error creating remote Vpc Peering due to quota limits, "
                            "please check if your vpc quota limits are not exceeded.")]
    other = {"status": "DONE", "error": {"errors": [{"code": "INTERNAL", "message": "x"}]}}
    step = create(Read(remote_op=other), {"remotePeeringOperation": "op-r"}).done()
    assert conds(step) == [("Error", "Error", "The cloud provider had an error while creating Vpc Peering ")]


def test_a_failed_local_operation_quota_is_a_quota_exceeded_condition() -> None:
    step = create(Read(remote_peering=PEER_ACTIVE, local_op=FAILED_OP), {"localPeeringOperation": "op-l"}).done()
    assert conds(step) == [("QuotaExceeded", "QuotaExceeded", "Error creating Local Vpc Peering due to quota "
                            "limits, please check if your vpc quota limits are not exceeded.")]
    assert step.status is not None and step.status["localPeeringOperation"] is None
    assert step.status["state"] == "Disconnected" and step.requeue_after == 300
    other = {"status": "DONE", "error": {"errors": [{"code": "X", "message": "x"}]}}
    step = create(Read(remote_peering=PEER_ACTIVE, local_op=other), {"localPeeringOperation": "op-l"}).done()
    assert conds(step) == [("Error", "Error", "The cloud provider had an error while creating Local Vpc Peering")]


@pytest.mark.parametrize(("status", "message"), [
    (404, "Remote VPC Network customer/customer-vpc not found."),
    (403, "Unable to fetch remote VPC network customer/customer-vpc due to insufficient permissions."),
    (500, "Error loading Remote Vpc Peering"),
])
def test_remote_network_not_loadable(status: int, message: str) -> None:
    step = create(Read(remote_error=GcpApiError(status, "x"))).done()
    assert step.status is not None and step.status["state"] == "Disconnected" and step.requeue_after == 60
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", message)]
    assert step.event is not None and step.event.message == message


def test_local_peering_not_loadable() -> None:
    step = create(Read(remote_peering=PEER_ACTIVE, local_error=GcpApiError(500, "x"))).done()
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", "Error loading Local Vpc Peering")]
    assert step.requeue_after == 60


@pytest.mark.parametrize(("err", "message"), [
    (GcpApiError(403, "x"), "Error fetching GCP remote network tags for network customer/customer-vpc, due to "
     "insufficient permissions"),
    (GcpApiError(500, "x"), "Error fetching GCP remote network tags"),
])
def test_tags_not_loadable(err: GcpApiError, message: str) -> None:
    step = create(Read(tags_error=err)).done()
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", message)]
    assert step.requeue_after == 300 and "state" not in (step.status or {})


def test_untagged_remote_network_is_disconnected() -> None:
    plan = create(Read(tag_keys=["customer/other"]))
    step = plan.done()
    assert plan.call is None and step.status is not None and step.status["state"] == "Disconnected"
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection",
                            "Error creating VpcPeering, remote VPC does not have a tag with the key: c-1")]
    assert step.requeue_after == 300
    assert create(Read(tag_keys=["customer/kyma-net"]), network_tag="kyma-net").call is not None


@pytest.mark.parametrize("import_routes", [False, True])
def test_remote_peering_first_exporting_custom_routes_iff_imported(import_routes: bool) -> None:
    plan = create(Read(tag_keys=TAGGED), import_routes=import_routes)
    assert plan.call == Call("remote_add", "add_peering", ("customer", "customer-vpc", "to-kyma", "kyma-project",
                                                           "shoot--kyma--c-1"),
                             {"import_custom_routes": False, "export_custom_routes": import_routes},
                             "remotePeeringOperation")
    step = plan.done("op-remote")
    assert step.status == {"remotePeeringOperation": "op-remote"} and step.requeue_after == 30


def test_remote_peering_exists_then_local_peering_importing_custom_routes() -> None:
    plan = create(Read(remote_peering={"name": "to-kyma", "state": "INACTIVE"}), import_routes=True)
    assert plan.call == Call("local_add", "add_peering", ("kyma-project", "shoot--kyma--c-1", "cm-p-1", "customer",
                                                          "customer-vpc"),
                             {"import_custom_routes": True, "export_custom_routes": False}, "localPeeringOperation")
    step = plan.done("op-local")
    assert step.status == {"remoteId": "to-kyma", "localPeeringOperation": "op-local"} and step.requeue_after == 30
    # the tag is not checked again once the remote peering exists (fix)
    assert create(Read(remote_peering={"name": "to-kyma", "state": "INACTIVE"}, tag_keys=[])).call is not None


def test_waits_until_both_active_then_ready() -> None:
    step = create(Read(remote_peering=PEER_ACTIVE, local_peering={"name": "cm-p-1", "state": "INACTIVE"})).done()
    assert step.requeue_after == 10 and step.status == {"id": "cm-p-1", "remoteId": "to-kyma"}
    step = create(Read(remote_peering=PEER_ACTIVE, local_peering=LOCAL_ACTIVE)).done()
    assert step.status is not None and step.status["state"] == "Ready" and step.requeue_after is None
    assert conds(step) == [("Ready", "Ready", "VpcPeering :to-kyma is provisioned")]
    again = create(Read(remote_peering=PEER_ACTIVE, local_peering=LOCAL_ACTIVE), {**step.status}).done()
    assert again.status is None and again.requeue_after is None


@pytest.mark.parametrize(("kind", "err", "reason", "message", "requeue"), [
    ("remote_add", GcpApiError(403, "x"), "FailedCreatingVpcPeeringConnection",
     "Error creating Remote VpcPeering for network customer/customer-vpc due to insufficient permissions", 60),
    ("remote_add", GcpApiError(400, "x"), "FailedCreatingVpcPeeringConnection", "Error creating Remote VpcPeering", 60),
    ("local_add", GcpApiError(400, "x"), "FailedCreatingVpcPeeringConnection",
     "Error creating local network VpcPeering", 60),
])
def test_refused_adds(kind: str, err: GcpApiError, reason: str, message: str, requeue: float) -> None:
    found = Read(tag_keys=TAGGED) if kind == "remote_add" else Read(remote_peering=PEER_ACTIVE)
    plan = create(found)
    assert plan.call is not None and plan.call.kind == kind
    step = plan.failed(err)
    assert conds(step) == [("Error", reason, message)] and step.requeue_after == requeue
    assert step.status is not None and step.status["state"] == "Disconnected"
    busy = create(found).failed(GcpApiError(400, "There is a peering operation in progress on the local or peer "
                                            "network."))
    assert "conditions" not in (busy.status or {}) and busy.event is None and busy.requeue_after == 10


def delete(found: Read, delete_remote: bool = True, status: dict[str, Any] | None = None) -> Plan:
    return plan_delete(obj(status, delete_remote=delete_remote, deleting=True), LOCAL, REMOTE, found, t, now=NOW)


def test_delete_removes_ready_then_the_local_peering_and_waits() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "x", "lastTransitionTime": NOW}
    plan = delete(Read(local_peering=LOCAL_ACTIVE, remote_peering=PEER_ACTIVE), status={"conditions": [ready]})
    assert plan.call == Call("local_remove", "remove_peering", ("kyma-project", "shoot--kyma--c-1", "cm-p-1"))
    step = plan.done("op")
    assert step.status == {"conditions": []} and step.requeue_after == 10 and not step.remove_finalizer
    assert plan.failed(GcpApiError(400, "There is a peering operation in progress on the local or peer network. "
                                   "Try again later.")).requeue_after == 10
    refused = plan.failed(GcpApiError(500, "x"))
    assert conds(refused)[-1] == ("Error", "Error", "Error deleting local network VpcPeering")
    assert refused.requeue_after == 60


def test_delete_then_the_remote_peering_only_when_asked() -> None:
    plan = delete(Read(remote_peering=PEER_ACTIVE))
    assert plan.call == Call("remote_remove", "remove_peering", ("customer", "customer-vpc", "to-kyma"))
    assert plan.done("op").remove_finalizer == FIN
    assert plan.failed(GcpApiError(429, "x")).requeue_after == 60
    assert plan.failed(GcpApiError(400, "operation in progress")).requeue_after == 10
    assert plan.failed(GcpApiError(403, "x")).remove_finalizer == FIN  # logged and ignored, as the original
    kept = delete(Read(remote_peering=PEER_ACTIVE), delete_remote=False)
    assert kept.call is None and kept.done().remove_finalizer == FIN


def test_delete_with_the_local_network_gone_or_not_loadable() -> None:
    assert delete(Read(local_error=GcpApiError(404, "x")), delete_remote=False).done().remove_finalizer == FIN
    step = delete(Read(local_error=GcpApiError(500, "x"))).done()
    assert not step.remove_finalizer and step.requeue_after == 60
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", "Error loading Local Vpc Peering")]
