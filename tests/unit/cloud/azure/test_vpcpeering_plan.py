"""The Azure VpcPeering plan (pure): the original's flow (notes §8, ``pkg/kcp/provider/azure/vpcpeering``),
its Azure error-code mapping (``azuremeta.GetErrorMessage``), 429 and the fixes."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from kube.toolkit import Call, Outcome
from tasks.cloud.azure import client, vpcpeering_plan
from tasks.cloud.azure.client import UNAUTHENTICATED, AzureApiError
from tasks.cloud.azure.vpcpeering_plan import (
    ERROR_MESSAGES,
    MISSING_SERVICE_PRINCIPAL,
    Read,
    VNet,
    client_failed,
    error_message,
    kyma_peering,
    plan_create,
    plan_delete,
    read_failed,
)
from tests.unit.cloud.outcomes import calls, done, failed

NOW = "2026-11-26T01:00:00Z"
LOCAL = VNet("sub-l", "shoot--kyma--c-1", "shoot--kyma--c-1", "tenant-l")
REMOTE = VNet("sub-r", "rg-r", "vnet-r", "tenant-r")
SCOPE = {"spec": {"shootName": "c-1", "scope": {"azure": {"tenantId": "tenant-l", "subscriptionId": "sub-l"}}}}
FIN = "cloud-manager.kyma-project.io/deletion-hook"
LOCAL_PEERING: dict[str, Any] = {"id": f"{LOCAL.id}/virtualNetworkPeerings/p-1",
                 "properties": {"peeringState": "Connected", "remoteVirtualNetwork": {"id": REMOTE.id}}}
REMOTE_PEERING = {"id": f"{REMOTE.id}/virtualNetworkPeerings/to-kyma",
                  "properties": {"peeringState": "Connected", "remoteVirtualNetwork": {"id": LOCAL.id.upper()}}}
TAGGED = {"tags": {"c-1": ""}}
#: the remote peering is this object's once its resource id is recorded
OWNED = {"state": "Initiated", "remoteId": str(REMOTE_PEERING["id"])}
#: another tenant's remote peering of the same name, referencing that tenant's shoot VNet
VICTIMS = {"id": f"{REMOTE.id}/virtualNetworkPeerings/to-kyma",
           "properties": {"peeringState": "Connected", "remoteVirtualNetwork": {
               "id": "/subscriptions/sub-v/resourceGroups/shoot--kyma--c-9/providers/Microsoft.Network/"
                     "virtualNetworks/shoot--kyma--c-9"}}}


def t(seconds: float) -> float:
    return seconds


def arm(status: int, code: str, message: str) -> Failure:
    """A refused ARM request as the client layer classifies it (:attr:`AzureApiError.failure`)."""
    return AzureApiError(status, code, message).failure


def obj(status: dict[str, Any] | None = None, gateway: bool = False, delete_remote: bool = False,
        peering_name: str = "to-kyma", local_name: str = "") -> dict[str, Any]:
    details = {"peeringName": peering_name, "useRemoteGateway": gateway, "deleteRemotePeering": delete_remote}
    if local_name:
        details["localPeeringName"] = local_name
    return {"metadata": {"name": "p-1", "namespace": "kcp-system"}, "spec": {"details": details},
            "status": dict(status) if status is not None else {"state": "Initiated"}}


def create(found: Read, status: dict[str, Any] | None = None, remote_type: str = "external", network_tag: str = "",
           **kw: Any) -> Outcome:
    return plan_create(obj(status, **kw), SCOPE, LOCAL, REMOTE, remote_type, found, t, network_tag, now=NOW)


def conds(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions", [])]


@pytest.mark.parametrize("code", sorted(set(ERROR_MESSAGES) - {"VnetAddressSpacesOverlap"}))
def test_known_codes_are_the_originals_messages_and_warnings(code: str) -> None:
    assert error_message(arm(400, code, "ARM's words"), "default") == (ERROR_MESSAGES[code], True)


def test_overlap_keeps_the_overlapping_prefixes_and_other_answers_keep_arms_message() -> None:
    err = arm(400, "VnetAddressSpacesOverlap", "Cannot create or update peering x. ... overlap. "
                        "Overlapping address prefixes: 10.0.0.0/16, 10.1.0.0/16")
    assert error_message(err, "d") == (ERROR_MESSAGES["VnetAddressSpacesOverlap"]
                                       + "Overlapping address prefixes: 10.0.0.0/16, 10.1.0.0/16", True)
    assert error_message(arm(400, "SomethingNew", "ARM's words"), "d") == ("ARM's words", True)
    assert error_message(arm(0, UNAUTHENTICATED, "no token"), "d") == (MISSING_SERVICE_PRINCIPAL, True)
    assert error_message(arm(0, "ServiceRequestError", "connection refused"), "d") == ("d", False)


def test_vnet_of_and_its_id() -> None:
    ref = {"azure": {"tenantId": "t", "subscriptionId": "s", "resourceGroup": "rg", "networkName": "n"}}
    vnet = VNet.of({"status": {"network": ref}})
    assert vnet == VNet("s", "rg", "n", "t")
    assert vnet.id == "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/n"
    assert VNet.of({"spec": {"network": {"reference": {"azure": {"subscriptionId": "s"}}}}}) is None
    assert VNet.from_id(vnet.id, "t") == vnet
    assert VNet.from_id(f"{vnet.id}/subnets/x") is None and VNet.from_id("vnet") is None


def test_first_turn_is_initiated_and_creates_both_peerings_local_first() -> None:
    plan = create(Read(remote_vnet=TAGGED), status={}, gateway=True)
    assert calls(plan) == (
        Call("create_peering", (LOCAL.resource_group, LOCAL.name, "p-1", REMOTE.id),
             {"allow_vnet_access": True, "use_remote_gateways": True, "allow_gateway_transit": False},
             client="peering", kind="local_create"),
        Call("create_peering", ("rg-r", "vnet-r", "to-kyma", LOCAL.id),
             {"allow_vnet_access": True, "use_remote_gateways": False, "allow_gateway_transit": True},
             client="remote", kind="remote_create"))
    step = done(plan)
    assert step.status == {"state": "Initiated", "remoteId": f"{REMOTE.id}/virtualNetworkPeerings/to-kyma"}
    assert step.requeue_after == 1
    # the id ARM answered for the remote peering is the one recorded
    answered = plan.then(({"id": "L"}, {"id": "R"})) if plan.then is not None else plan
    assert answered.status == {"state": "Initiated", "remoteId": "R"}


def test_local_peering_name_is_the_detail_else_the_kcp_name() -> None:
    plan = create(Read(remote_vnet=TAGGED), local_name="cm--c-1")
    assert calls(plan)[0].args[2] == "cm--c-1"


def test_waits_for_connected_then_ready_with_the_ids() -> None:
    initiated = {**LOCAL_PEERING, "properties": {**LOCAL_PEERING["properties"], "peeringState": "Initiated"}}
    step = done(create(Read(local_peering=initiated, remote_peering=REMOTE_PEERING), OWNED))
    assert step.requeue_after == 1 and step.status is None
    # a remote peering to the shoot's VNet not recorded yet: the tag allows it, its id is recorded at Ready
    step = done(create(Read(local_peering=LOCAL_PEERING, remote_peering=REMOTE_PEERING, remote_vnet=TAGGED)))
    assert step.status is not None and step.status["state"] == "Ready" and step.requeue_after is None
    assert (step.status["id"], step.status["remoteId"]) == (LOCAL_PEERING["id"], REMOTE_PEERING["id"])
    assert conds(step) == [("Ready", "Ready", "Ready")]


def test_only_the_missing_side_is_created() -> None:
    plan = create(Read(local_peering=LOCAL_PEERING, remote_vnet=TAGGED))
    assert [c.kind for c in calls(plan)] == ["remote_create"]


def test_a_disconnected_local_peering_is_put_again_before_the_customers_side() -> None:
    disconnected = {**LOCAL_PEERING, "properties": {**LOCAL_PEERING["properties"], "peeringState": "Disconnected"}}
    plan = create(Read(local_peering=disconnected, remote_vnet=TAGGED), status={"state": "Ready"})
    assert [c.kind for c in calls(plan)] == ["local_create", "remote_create"]
    assert done(plan).requeue_after == 1
    assert done(plan).status == {"remoteId": f"{REMOTE.id}/virtualNetworkPeerings/to-kyma"}


@pytest.mark.parametrize(("tags", "network_tag", "remote_type", "ok"), [
    ({"c-1": ""}, "", "external", True),
    ({"kyma-peering": "x"}, "kyma-peering", "external", True),
    ({"other": ""}, "", "external", False),
    ({}, "", "cloud-resources", True),  # Kyma's own networks need no tag
    ({}, "", "kyma", True),
])
def test_remote_vnet_tag(tags: dict[str, str], network_tag: str, remote_type: str, ok: bool) -> None:
    plan = create(Read(remote_vnet={"tags": tags}), network_tag=network_tag, remote_type=remote_type)
    if ok:
        assert len(calls(plan)) == 2
        return
    step = done(plan)
    assert not calls(plan) and step.status is not None and step.status["state"] == "Warning"
    assert conds(step) == [("Error", "FailedLoadingRemoteVpcNetwork", "Loaded remote VPC network has no matching tags")]
    assert step.requeue_after == 60


@pytest.mark.parametrize(("err", "state", "reason", "message", "requeue"), [
    (arm(404, "ResourceNotFound", "x"), "Warning", "FailedLoadingRemoteVpcNetwork",
     "Remote VPC network not found", None),
    (arm(403, "AuthorizationFailed", "x"), "Warning", "Unauthorized", ERROR_MESSAGES["AuthorizationFailed"],
     60),
    (arm(0, "ServiceRequestError", "refused"), "Error", "FailedLoadingRemoteVpcNetwork",
     "Error loading remote network", 60),
])
def test_remote_vnet_not_loadable(err: Failure, state: str, reason: str, message: str,
                                  requeue: float | None) -> None:
    step = done(create(Read(remote_vnet_error=err)))
    assert step.status is not None and step.status["state"] == state and step.requeue_after == requeue
    assert conds(step) == [("Error", reason, message)]


def test_429_anywhere_requeues_without_a_status_change() -> None:
    throttled = arm(429, "TooManyRequests", "slow down")
    assert done(create(Read(remote_vnet_error=throttled))) == type(done(create(Read())))(requeue_after=60)
    step = done(create(Read(remote_error=throttled)))
    assert step.status is None and step.requeue_after == 60
    step = done(create(Read(local_error=throttled)))
    assert step.status is None and step.requeue_after == 10
    plan = create(Read(remote_vnet=TAGGED))
    refused = failed(plan, calls(plan)[0], throttled)
    assert refused is not None and refused.status is None and refused.event is None and refused.requeue_after == 60


def test_refused_create_with_a_known_code_is_a_warning_and_stops() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready", "lastTransitionTime": NOW}
    plan = create(Read(remote_vnet=TAGGED), status={"state": "Ready", "conditions": [ready]})
    err = arm(400, "AnotherPeeringAlreadyReferencesRemoteVnet", "x")
    step = failed(plan, calls(plan)[0], err)
    assert step is not None and step.status is not None and step.status["state"] == "Warning"
    assert conds(step) == [("Error", "FailedCreatingVpcPeeringConnection",
                            ERROR_MESSAGES["AnotherPeeringAlreadyReferencesRemoteVnet"])]
    assert step.requeue_after is None and step.error is None and step.event is not None
    transport = failed(plan, calls(plan)[1], arm(0, "ServiceRequestError", "refused"))
    assert transport is not None and transport.status is not None and transport.status["state"] == "Error"
    assert conds(transport)[-1][2] == "Error creating remote VPC peering"


def test_remote_peering_of_the_same_name_to_another_vnet_is_a_warning() -> None:
    elsewhere = {"id": "x", "properties": {"remoteVirtualNetwork": {"id": "/subscriptions/o/other"}}}
    step = done(create(Read(remote_peering=elsewhere)))
    assert step.status is not None and step.status["state"] == "Warning" and step.requeue_after is None
    assert conds(step) == [("Error", "FailedLoadingRemoteVpcPeeringConnection",
                            f"Peering with the same name to-kyma already exists in network {REMOTE.id}")]


@pytest.mark.parametrize(("err", "state", "reason", "requeue"), [
    (arm(403, "AuthorizationFailed", "x"), "Warning", "Unauthorized", 300),
    (arm(0, UNAUTHENTICATED, "x"), "Warning", "FailedLoadingRemoteVpcPeeringConnection", 300),
    (arm(500, "InternalServerError", "x"), "Warning", "FailedLoadingRemoteVpcPeeringConnection", None),
])
def test_remote_peering_not_loadable(err: Failure, state: str, reason: str, requeue: float | None) -> None:
    step = done(create(Read(remote_error=err)))
    assert step.status is not None and step.status["state"] == state and step.requeue_after == requeue
    assert conds(step)[0][1] == reason


def test_missing_peering_name_and_client_errors() -> None:
    step = done(create(Read(remote_vnet=TAGGED), peering_name=""))
    assert conds(step) == [("Error", "Error", "Peering name not specified")] and step.requeue_after is None
    step = done(create(Read(client_error="no credential")))
    assert conds(step) == [("Error", "CloudProviderError", "Failed creating Azure client for tenant tenant-r "
                            "subscription sub-r")]
    assert step.requeue_after == 300


def delete(found: Read, delete_remote: bool = True, status: dict[str, Any] | None = None) -> Outcome:
    o = obj(OWNED if status is None else status, delete_remote=delete_remote)
    o["metadata"]["deletionTimestamp"] = NOW
    return plan_delete(o, LOCAL, REMOTE, found, t, now=NOW)


def test_delete_removes_the_remote_side_first_only_when_asked() -> None:
    plan = delete(Read(local_peering=LOCAL_PEERING, remote_peering=REMOTE_PEERING))
    assert calls(plan) == (Call("delete_peering", ("rg-r", "vnet-r", "to-kyma"), client="remote", kind="remote_delete"),
                           Call("delete_peering", (LOCAL.resource_group, LOCAL.name, "p-1"), client="local",
                                kind="local_delete"))
    assert done(plan).remove_finalizer == FIN
    assert failed(plan, calls(plan)[0], arm(403, "AuthorizationFailed", "x")) is None  # ignored
    refused = failed(plan, calls(plan)[1], arm(500, "X", "x"))
    assert refused is not None and refused.requeue_after == 300 and not refused.remove_finalizer
    assert [c.kind for c in calls(delete(Read(local_peering=LOCAL_PEERING, remote_peering=REMOTE_PEERING),
                                         delete_remote=False))] == ["local_delete"]
    assert done(delete(Read())).remove_finalizer == FIN


@pytest.mark.parametrize(("peering", "status"), [
    (VICTIMS, {}),  # another tenant's peering of that name (the attack)
    (VICTIMS, {"remoteId": VICTIMS["id"]}),  # a recorded id of a peering that references another VNet
    (REMOTE_PEERING, {}),  # a peering to the shoot's VNet this object never recorded
    (REMOTE_PEERING, {"remoteId": f"{REMOTE.id}/virtualNetworkPeerings/other"}),
])
def test_attack_delete_leaves_a_remote_peering_that_is_not_this_objects(peering: dict[str, Any],
                                                                       status: dict[str, Any]) -> None:
    """Tenant A, naming B's customer VNet and B's remote peering with ``deleteRemotePeering``, is deleted:
    the port deleted B's peering by name (the original deletes only its own)."""
    plan = delete(Read(local_peering=LOCAL_PEERING, remote_peering=peering), status=status)
    assert [c.kind for c in calls(plan)] == ["local_delete"]
    step = done(plan)
    assert step.remove_finalizer == FIN and step.event is not None
    assert (step.event.type, step.event.reason) == ("Warning", "RemotePeeringNotOwned")
    assert step.event.message == (f"Remote VPC peering to-kyma in network {REMOTE.id} was not created by this "
                                  "VpcPeering: it is left in place")
    assert "c-9" not in step.event.message


def test_attack_another_tenants_remote_peering_is_never_adopted() -> None:
    for status in ({}, {"remoteId": VICTIMS["id"]}):
        step = done(create(Read(remote_peering=VICTIMS, remote_vnet=TAGGED), status))
        assert not step.writes and step.status is not None and step.status["state"] == "Warning"
        assert "remoteId" not in step.status and "c-9" not in str(step.status)


def test_attack_the_tag_check_is_not_skipped_for_a_remote_peering_that_is_not_this_objects() -> None:
    """A peering of that name to the shoot's VNet this object did not record still needs the tag."""
    step = done(create(Read(local_peering=LOCAL_PEERING, remote_peering=REMOTE_PEERING, remote_vnet={"tags": {}})))
    assert step.status is not None and step.status["state"] == "Warning" and "remoteId" not in step.status
    assert conds(step) == [("Error", "FailedLoadingRemoteVpcNetwork", "Loaded remote VPC network has no matching tags")]
    # this object's own: the tag is not read again (its removal does not break a working peering)
    ready = done(create(Read(local_peering=LOCAL_PEERING, remote_peering=REMOTE_PEERING), OWNED))
    assert ready.status is not None and ready.status["state"] == "Ready"


def test_a_local_client_that_cannot_be_built_and_networks_that_name_no_vnet() -> None:
    assert vpcpeering_plan.UNAUTHENTICATED == client.UNAUTHENTICATED  # the plan imports no client
    why = "Failed creating Azure client for tenant tenant-l subscription sub-l: no secret"
    step = client_failed(obj(), why, t, NOW)
    assert conds(step) == [("Error", "CloudProviderError", why)] and step.requeue_after == 300
    refused = Failure("refused", code=vpcpeering_plan.CLIENT_FAILED, message=why, text=why)
    assert read_failed(obj(), refused, t, NOW) == step
    assert read_failed(obj(), arm(503, "ServerBusy", "x"), t, NOW) == Outcome(requeue_after=10)
    missing = plan_create(obj(), SCOPE, LOCAL, None, "external", Read(), t, now=NOW)
    assert conds(missing) == [("Error", "Error", "The remote network names no Azure VNet")] and missing.writes == ()


def test_the_kyma_peering_of_an_azure_iprange_is_the_originals() -> None:
    scope = {"metadata": {"name": "kyma-az", "namespace": "kcp-system"}, "spec": {"shootName": "c-1"}}
    peering = kyma_peering(scope)
    assert peering["metadata"] == {"name": "kyma-az", "namespace": "kcp-system"}
    assert peering["spec"]["details"] == {"localNetwork": {"name": "kyma-az--kyma"},
                                          "remoteNetwork": {"name": "kyma-az--cm"}, "peeringName": "kyma--c-1",
                                          "localPeeringName": "cm--c-1", "deleteRemotePeering": True}
    assert peering["spec"]["remoteRef"] == {"namespace": "none", "name": "none"}
    # the Cloud Manager network needs no tag: both peerings are planned at once
    plan = plan_create(peering, SCOPE, LOCAL, REMOTE, "cloud-resources", Read(), t, now=NOW)
    assert [(c.kind, c.args[2]) for c in calls(plan)] == [("local_create", "cm--c-1"), ("remote_create", "kyma--c-1")]
    # its remote peering is recorded as it is made, so deleting the IpRange's peering removes both sides
    status = plan.then(({"id": "L"}, {"id": REMOTE_PEERING["id"]})).status if plan.then is not None else None
    assert status is not None and status["remoteId"] == REMOTE_PEERING["id"]
    peering["metadata"]["deletionTimestamp"] = NOW
    gone = plan_delete({**peering, "status": status}, LOCAL, REMOTE, Read(remote_peering=REMOTE_PEERING), t, now=NOW)
    assert [c.kind for c in calls(gone)] == ["remote_delete"]
