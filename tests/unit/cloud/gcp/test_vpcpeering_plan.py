"""The GCP VpcPeering plan (pure): every state of the original's flow (notes §8,
``pkg/kcp/provider/gcp/vpcpeering``), its messages and requeues, and the fixes."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from kube.toolkit import Call, Outcome
from tasks.cloud.gcp.client import GcpApiError
from tasks.cloud.gcp.vpcpeering_plan import Network, Read, owned, peer_network, plan_create, plan_delete, tagged

NOW = "2026-11-26T01:00:00Z"
LOCAL = Network("kyma-project", "shoot--kyma--c-1")
REMOTE = Network("customer", "customer-vpc")
SCOPE = {"spec": {"shootName": "c-1"}}
FIN = "cloud-manager.kyma-project.io/deletion-hook"


def t(seconds: float) -> float:
    return seconds


def refused(status: int, message: str) -> Failure:
    """A refused GCP request as the client layer classifies it (:attr:`GcpApiError.failure`)."""
    return GcpApiError(status, message).failure


def call_of(outcome: Outcome) -> Call | None:
    """The plan's one call (``None``: none)."""
    assert len(outcome.writes) <= 1 and all(isinstance(w, Call) for w in outcome.writes)
    return outcome.writes[0] if outcome.writes else None  # type: ignore[return-value]


def done(outcome: Outcome, answer: Any = None) -> Outcome:
    """The Outcome once the call was made (its answer: the operation name), as the executor asks ``then``."""
    return outcome.then((answer,) if outcome.writes else ()) if outcome.then is not None else outcome


def failed(outcome: Outcome, failure: Failure) -> Outcome:
    """The Outcome of the refused call (as the executor asks ``refused``)."""
    assert outcome.refused is not None and outcome.writes
    found = outcome.refused(outcome.writes[0], failure, ())
    assert found is not None
    return found


def obj(status: dict[str, Any] | None = None, import_routes: bool = False, delete_remote: bool = False,
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p-1", "namespace": "kcp-system"}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"details": {"peeringName": "to-kyma", "importCustomRoutes": import_routes,
                                                   "deleteRemotePeering": delete_remote}},
            "status": dict(status or {})}


def create(found: Read, status: dict[str, Any] | None = None, **kw: Any) -> Outcome:
    return plan_create(obj(status, **kw), SCOPE, LOCAL, REMOTE, found, t, now=NOW)


def conds(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions", [])]


TAGGED = ["customer/c-1"]
TO_LOCAL = f"https://www.googleapis.com/compute/v1/projects/{LOCAL.project}/global/networks/{LOCAL.name}"
PEER_ACTIVE = {"name": "to-kyma", "state": "ACTIVE", "network": TO_LOCAL}
PEER_INACTIVE = {**PEER_ACTIVE, "state": "INACTIVE"}
#: the remote peering is this object's once its name is recorded
OWNED = {"remoteId": "to-kyma"}
#: another tenant's remote peering of the same name, to that tenant's shoot network
VICTIMS = {"name": "to-kyma", "state": "ACTIVE",
           "network": "https://www.googleapis.com/compute/v1/projects/victim/global/networks/shoot--kyma--c-9"}
LOCAL_ACTIVE = {"name": "cm-p-1", "state": "ACTIVE"}
FAILED_OP = {"status": "DONE", "error": {"errors": [{"code": "QUOTA_EXCEEDED", "message": "quota"}]}}


@pytest.mark.parametrize(("keys", "shoot", "ok"), [
    (["customer/c-1"], "c-1", True),
    (["123456789012/c-1"], "c-1", True),  # a key of the customer's organization
    (["customer/other", "customer/c-1"], "c-1", True),
    (["customer/my-c-1-key"], "c-1", False),  # fix: the original's Contains accepted it
    (["customer/c-10"], "c-1", False),  # another shoot's name containing this one
    (["customer/kyma-peering"], "c-1", False),  # a generic (landscape-wide) key authorises no tenant
    (["customer/other"], "c-1", False),
    (["customer/c-1"], "", False),
    ([], "c-1", False),
])
def test_tagged_is_an_exact_match_on_the_shoot_name(keys: list[str], shoot: str, ok: bool) -> None:
    assert tagged(keys, shoot) is ok


def test_peer_network_and_ownership() -> None:
    assert peer_network(PEER_ACTIVE) == LOCAL
    assert peer_network({"network": f"projects/{LOCAL.project}/global/networks/{LOCAL.name}"}) == LOCAL
    assert peer_network({"network": "x"}) is None and peer_network(None) is None
    assert owned("to-kyma", PEER_ACTIVE, LOCAL)
    assert not owned("", PEER_ACTIVE, LOCAL)  # not recorded
    assert not owned("other", PEER_ACTIVE, LOCAL)  # recorded for another name
    assert not owned("to-kyma", VICTIMS, LOCAL)  # peers with another network
    assert not owned("to-kyma", PEER_ACTIVE, None) and not owned("to-kyma", None, LOCAL)


def test_network_of_prefers_status_and_needs_project_and_name() -> None:
    ref = {"gcp": {"gcpProject": "p", "networkName": "n"}}
    assert Network.of({"status": {"network": ref}}) == Network("p", "n")
    assert Network.of({"spec": {"network": {"reference": ref}}}) == Network("p", "n")
    assert Network.of({"spec": {}}) is None and Network.of(None) is None


@pytest.mark.parametrize(("err", "reason", "message", "requeue", "exclusive"), [
    (refused(403, "denied"), "Unauthorized", "Error fetching GCP remote peering operation due to insufficient "
     "permissions, please check the documentation for more details", 300, True),
    (refused(500, "boom"), "Error", "Error loading Remote Vpc Peering Operation: op-r", 60, False),
])
def test_remote_operation_not_loadable(err: Failure, reason: str, message: str, requeue: float,
                                       exclusive: bool) -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "x", "lastTransitionTime": NOW}
    plan = create(Read(remote_op_error=err), {"remotePeeringOperation": "op-r", "conditions": [ready]})
    step = done(plan)
    assert call_of(plan) is None and step.requeue_after == requeue
    assert ("Error", reason, message) in conds(step)
    assert (("Ready", "Ready", "x") in conds(step)) is not exclusive


def test_running_operations_wait_10_s_remote_and_60_s_local() -> None:
    step = done(create(Read(remote_op={"status": "RUNNING"}), {"remotePeeringOperation": "op-r"}))
    assert (step.status, step.requeue_after) == (None, 10)
    step = done(create(Read(remote_peering=PEER_ACTIVE, local_op={"status": "PENDING"}),
                       {"localPeeringOperation": "op-l", **OWNED}))
    assert step.requeue_after == 60 and step.status is None


def test_a_failed_remote_operation_is_reported_and_forgotten() -> None:
    step = done(create(Read(remote_op=FAILED_OP), {"remotePeeringOperation": "op-r"}))
    assert step.status is not None and step.status["state"] == "Disconnected"
    assert step.status["remotePeeringOperation"] is None and step.requeue_after == 300
    assert conds(step) == [("Error", "QuotaExceeded", "Error creating remote Vpc Peering due to quota limits, "
                            "please check if your vpc quota limits are not exceeded.")]
    other = {"status": "DONE", "error": {"errors": [{"code": "INTERNAL", "message": "x"}]}}
    step = done(create(Read(remote_op=other), {"remotePeeringOperation": "op-r"}))
    assert conds(step) == [("Error", "Error", "The cloud provider had an error while creating Vpc Peering ")]


def test_a_failed_local_operation_quota_is_a_quota_exceeded_condition() -> None:
    step = done(create(Read(remote_peering=PEER_ACTIVE, local_op=FAILED_OP), {"localPeeringOperation": "op-l"}))
    assert conds(step) == [("QuotaExceeded", "QuotaExceeded", "Error creating Local Vpc Peering due to quota "
                            "limits, please check if your vpc quota limits are not exceeded.")]
    assert step.status is not None and step.status["localPeeringOperation"] is None
    assert step.status["state"] == "Disconnected" and step.requeue_after == 300
    other = {"status": "DONE", "error": {"errors": [{"code": "X", "message": "x"}]}}
    step = done(create(Read(remote_peering=PEER_ACTIVE, local_op=other), {"localPeeringOperation": "op-l"}))
    assert conds(step) == [("Error", "Error", "The cloud provider had an error while creating Local Vpc Peering")]


@pytest.mark.parametrize(("status", "message"), [
    (404, "Remote VPC Network customer/customer-vpc not found."),
    (403, "Unable to fetch remote VPC network customer/customer-vpc due to insufficient permissions."),
    (500, "Error loading Remote Vpc Peering"),
])
def test_remote_network_not_loadable(status: int, message: str) -> None:
    step = done(create(Read(remote_error=GcpApiError(status, "x"))))
    assert step.status is not None and step.status["state"] == "Disconnected" and step.requeue_after == 60
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", message)]
    assert step.event is not None and step.event.message == message


def test_local_peering_not_loadable() -> None:
    step = done(create(Read(remote_peering=PEER_ACTIVE, local_error=refused(500, "x"))))
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", "Error loading Local Vpc Peering")]
    assert step.requeue_after == 60


@pytest.mark.parametrize(("err", "message"), [
    (refused(403, "x"), "Error fetching GCP remote network tags for network customer/customer-vpc, due to "
     "insufficient permissions"),
    (refused(500, "x"), "Error fetching GCP remote network tags"),
])
def test_tags_not_loadable(err: Failure, message: str) -> None:
    step = done(create(Read(tags_error=err)))
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", message)]
    assert step.requeue_after == 300 and "state" not in (step.status or {})


def test_untagged_remote_network_is_disconnected() -> None:
    plan = create(Read(tag_keys=["customer/other"]))
    step = done(plan)
    assert call_of(plan) is None and step.status is not None and step.status["state"] == "Disconnected"
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection",
                            "Error creating VpcPeering, remote VPC does not have a tag with the key: c-1")]
    assert step.requeue_after == 300
    # a generic key (the landscape's PEERING_NETWORK_TAG, say) or one naming another shoot does not authorise
    assert call_of(create(Read(tag_keys=["customer/kyma-net", "customer/c-10"]))) is None


@pytest.mark.parametrize("import_routes", [False, True])
def test_remote_peering_first_exporting_custom_routes_iff_imported(import_routes: bool) -> None:
    plan = create(Read(tag_keys=TAGGED), import_routes=import_routes)
    assert call_of(plan) == Call("add_peering", ("customer", "customer-vpc", "to-kyma", "kyma-project",
                                                 "shoot--kyma--c-1"),
                                 {"import_custom_routes": False, "export_custom_routes": import_routes},
                                 kind="remote_add")
    step = done(plan, "op-remote")
    assert step.status == {"remotePeeringOperation": "op-remote"} and step.requeue_after == 30


def test_remote_peering_exists_then_local_peering_importing_custom_routes() -> None:
    plan = create(Read(remote_peering=PEER_INACTIVE, tag_keys=TAGGED), import_routes=True)
    assert call_of(plan) == Call("add_peering", ("kyma-project", "shoot--kyma--c-1", "cm-p-1", "customer",
                                                 "customer-vpc"),
                                 {"import_custom_routes": True, "export_custom_routes": False}, kind="local_add")
    step = done(plan, "op-local")
    assert step.status == {"remoteId": "to-kyma", "localPeeringOperation": "op-local"} and step.requeue_after == 30
    # the tag is not checked again once the remote peering is this object's (fix)
    assert call_of(create(Read(remote_peering=PEER_INACTIVE, tag_keys=[]), OWNED)) is not None


def test_attack_a_remote_peering_of_that_name_to_another_network_is_never_adopted() -> None:
    """Tenant A names tenant B's customer network and B's remote peering: the original skipped the tag
    check, recorded B's peering as A's and peered A's shoot into B's network."""
    for tags in ([], TAGGED):  # even where the customer's tag would allow A
        step = create(Read(remote_peering=VICTIMS, tag_keys=tags))
        assert call_of(step) is None and step.status is not None and step.status["state"] == "Disconnected"
        assert "remoteId" not in step.status and step.requeue_after == 300
        assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection",
                                "Peering with the same name to-kyma already exists in network customer/customer-vpc")]
        assert "victim" not in str(step.status) and step.event is not None and "victim" not in step.event.message
    # a remoteId recorded before does not make it A's either
    assert call_of(create(Read(remote_peering=VICTIMS, tag_keys=TAGGED), OWNED)) is None


def test_attack_the_tag_check_is_not_skipped_for_a_peering_of_that_name_that_is_not_this_objects() -> None:
    """A peering of that name to this shoot's network that this object did not record (made by hand, say)
    still needs the customer's tag for this shoot."""
    step = create(Read(remote_peering=PEER_INACTIVE, tag_keys=["customer/c-10"]))
    assert call_of(step) is None and "remoteId" not in (step.status or {})
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection",
                            "Error creating VpcPeering, remote VPC does not have a tag with the key: c-1")]


def test_waits_until_both_active_then_ready() -> None:
    step = done(create(Read(remote_peering=PEER_ACTIVE, local_peering={"name": "cm-p-1", "state": "INACTIVE"},
                            tag_keys=TAGGED)))
    assert step.requeue_after == 10 and step.status == {"id": "cm-p-1", "remoteId": "to-kyma"}
    step = done(create(Read(remote_peering=PEER_ACTIVE, local_peering=LOCAL_ACTIVE), OWNED))
    assert step.status is not None and step.status["state"] == "Ready" and step.requeue_after is None
    assert conds(step) == [("Ready", "Ready", "VpcPeering :to-kyma is provisioned")]
    again = done(create(Read(remote_peering=PEER_ACTIVE, local_peering=LOCAL_ACTIVE), {**OWNED, **step.status}))
    assert again.status is None and again.requeue_after is None


@pytest.mark.parametrize(("kind", "err", "reason", "message", "requeue"), [
    ("remote_add", refused(403, "x"), "FailedCreatingVpcPeeringConnection",
     "Error creating Remote VpcPeering for network customer/customer-vpc due to insufficient permissions", 60),
    ("remote_add", refused(400, "x"), "FailedCreatingVpcPeeringConnection", "Error creating Remote VpcPeering", 60),
    ("local_add", refused(400, "x"), "FailedCreatingVpcPeeringConnection",
     "Error creating local network VpcPeering", 60),
])
def test_refused_adds(kind: str, err: Failure, reason: str, message: str, requeue: float) -> None:
    found = Read(tag_keys=TAGGED) if kind == "remote_add" else Read(remote_peering=PEER_ACTIVE, tag_keys=TAGGED)
    plan = create(found)
    assert call_of(plan) is not None and call_of(plan).kind == kind  # type: ignore[union-attr]
    step = failed(plan, err)
    assert conds(step) == [("Error", reason, message)] and step.requeue_after == requeue
    assert step.status is not None and step.status["state"] == "Disconnected"
    busy = failed(create(found), refused(400, "There is a peering operation in progress on the local or peer "
                                         "network."))
    assert "conditions" not in (busy.status or {}) and busy.event is None and busy.requeue_after == 10


def delete(found: Read, delete_remote: bool = True, status: dict[str, Any] | None = None) -> Outcome:
    return plan_delete(obj(status, delete_remote=delete_remote, deleting=True), LOCAL, REMOTE, found, t, now=NOW)


def test_delete_removes_ready_then_the_local_peering_and_waits() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "x", "lastTransitionTime": NOW}
    plan = delete(Read(local_peering=LOCAL_ACTIVE, remote_peering=PEER_ACTIVE), status={"conditions": [ready]})
    assert call_of(plan) == Call("remove_peering", ("kyma-project", "shoot--kyma--c-1", "cm-p-1"), kind="local_remove")
    step = done(plan, "op")
    assert step.status == {"conditions": []} and step.requeue_after == 10 and not step.remove_finalizer
    assert failed(plan, refused(400, "There is a peering operation in progress on the local or peer network. "
                                   "Try again later.")).requeue_after == 10
    error = failed(plan, refused(500, "x"))
    assert conds(error)[-1] == ("Error", "Error", "Error deleting local network VpcPeering")
    assert error.requeue_after == 60


def test_delete_then_the_remote_peering_only_when_asked() -> None:
    plan = delete(Read(remote_peering=PEER_ACTIVE), status=OWNED)
    assert call_of(plan) == Call("remove_peering", ("customer", "customer-vpc", "to-kyma"), kind="remote_remove")
    assert done(plan, "op").remove_finalizer == FIN
    assert failed(plan, refused(429, "x")).requeue_after == 60
    assert failed(plan, refused(400, "operation in progress")).requeue_after == 10
    assert failed(plan, refused(403, "x")).remove_finalizer == FIN  # logged and ignored, as the original
    kept = delete(Read(remote_peering=PEER_ACTIVE), delete_remote=False, status=OWNED)
    assert call_of(kept) is None and done(kept).remove_finalizer == FIN


@pytest.mark.parametrize(("peering", "status"), [
    (VICTIMS, {}),  # another tenant's peering of that name (the attack)
    (VICTIMS, OWNED),  # a remoteId recorded for a peering that does not peer with this shoot
    (PEER_ACTIVE, {}),  # a peering to this shoot this object never recorded
    (PEER_ACTIVE, {"remoteId": "other"}),
])
def test_attack_delete_leaves_a_remote_peering_that_is_not_this_objects(peering: dict[str, Any],
                                                                       status: dict[str, Any]) -> None:
    """Tenant A, naming B's customer network and B's remote peering with ``deleteRemotePeering``, is
    deleted: the original removed B's peering by name."""
    step = delete(Read(remote_peering=peering), status=status)
    assert call_of(step) is None and step.remove_finalizer == FIN
    assert step.event is not None and (step.event.type, step.event.reason) == ("Warning", "RemotePeeringNotOwned")
    assert step.event.message == ("Remote VPC peering to-kyma in network customer/customer-vpc was not created by "
                                  "this VpcPeering: it is left in place")
    assert plan_delete(obj(status, delete_remote=True, deleting=True), None, REMOTE, Read(remote_peering=PEER_ACTIVE),
                       t, now=NOW).writes == ()  # the shoot's network unknown: nothing to compare with


def test_a_network_that_names_no_gcp_network_is_disconnected() -> None:
    step = plan_create(obj(), SCOPE, None, REMOTE, Read(), t, now=NOW)
    assert conds(step) == [("Error", "Error", "The local network names no GCP project and network")]
    assert step.status is not None and step.status["state"] == "Disconnected" and step.writes == ()
    assert conds(plan_create(obj(), SCOPE, LOCAL, None, Read(), t, now=NOW))[0][2].startswith("The remote network")


def test_delete_with_the_local_network_gone_or_not_loadable() -> None:
    assert done(delete(Read(local_error=refused(404, "x")), delete_remote=False)).remove_finalizer == FIN
    step = done(delete(Read(local_error=refused(500, "x"))))
    assert not step.remove_finalizer and step.requeue_after == 60
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection", "Error loading Local Vpc Peering")]
