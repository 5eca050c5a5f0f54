"""The Azure KCP VpcPeering flow through the Azure layer (azure-mgmt-network) against the ARM stand-in:
the customer's VNet seeded through the SDK in a second subscription, create → both peerings Connected
with the gateway flags → delete with and without ``deleteRemotePeering``; an untagged VNet, HTTP 429 and a
known Azure error code."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kube.toolkit import deleting
from standins.azure import AzureStandIn
from tasks.cloud.azure import vpcpeering
from tasks.cloud.azure.client import AzureClient
from tasks.cloud.kcp.vpcpeering_plan import Seen
from tasks.cloud.registry import Turn
from tasks.cloud.settings import CloudSettings
from tests.integration.cloud.steps import apply_step, drive, provider_outcome, provider_turns

from .conftest import REGION, SHOOT, SUBSCRIPTION, TENANT, VPC, azure_scope

pytestmark = pytest.mark.integration

REMOTE_SUBSCRIPTION = "9d8c7b6a-0000-4e5f-8a7b-6c5d4e3f2a1b"
REMOTE_TENANT = "1a2b3c4d-0000-4e5f-9a8b-7c6d5e4f3a2b"
REMOTE_RG, REMOTE_VNET = "customer-rg", "customer-vnet"
FINALIZER = "cloud-manager.kyma-project.io/deletion-hook"


def t(seconds: float) -> float:
    return seconds / 1000


@pytest.fixture
def clients(azure_http: AzureStandIn) -> dict[str, AzureClient]:
    local = AzureClient(SUBSCRIPTION, base_url=azure_http.url, retry_total=0)
    remote = AzureClient(REMOTE_SUBSCRIPTION, base_url=azure_http.url, retry_total=0)
    vpcpeering.seed_vnet(local, VPC, VPC, REGION, "10.250.0.0/16")  # the shoot's VNet (Gardener's)
    return {"local": local, "peering": local, "remote": remote}


def network(subscription: str, tenant: str, rg: str, name: str, type_: str) -> dict[str, Any]:
    ref = {"azure": {"tenantId": tenant, "subscriptionId": subscription, "resourceGroup": rg, "networkName": name}}
    return {"metadata": {"name": name, "namespace": "kcp-system"}, "spec": {"type": type_, "network": {
        "reference": ref}}, "status": {"network": ref, "networkType": type_, "state": "Ready"}}


LOCAL = network(SUBSCRIPTION, TENANT, VPC, VPC, "kyma")
REMOTE = network(REMOTE_SUBSCRIPTION, REMOTE_TENANT, REMOTE_RG, REMOTE_VNET, "external")
REMOTE_ID = (f"/subscriptions/{REMOTE_SUBSCRIPTION}/resourceGroups/{REMOTE_RG}/providers/Microsoft.Network/"
             f"virtualNetworks/{REMOTE_VNET}")
LOCAL_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{VPC}/providers/Microsoft.Network/virtualNetworks/{VPC}"


def peering(name: str = "5e1d-peer", gateway: bool = True, delete_remote: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "kcp-system", "finalizers": [FINALIZER]},
            "spec": {"scope": {"name": "kyma-az"}, "remoteRef": {"namespace": "", "name": "to-customer"},
                     "details": {"localNetwork": {"name": "kyma-az--kyma"}, "remoteNetwork": {"name": name},
                                 "peeringName": "customer-to-kyma", "useRemoteGateway": gateway,
                                 "deleteRemotePeering": delete_remote}},
            "status": {}}


def _reconcile(obj: dict[str, Any], clients: dict[str, AzureClient]) -> Any:
    """The Azure provider's turn (its read, plan and the executor's calls) with ``clients``, as the KCP
    VpcPeering controller hands the object on (a deleted one to the deletion)."""
    scope = azure_scope()
    turn = Turn(kube=None, obj=obj, scope=scope, settings=CloudSettings(time_scale=1000),  # type: ignore[arg-type]
                seen=Seen(obj, scope, True, LOCAL, REMOTE))
    return provider_outcome("vpcpeering", turn, deleting(obj), clients)


def _seed_remote(clients: dict[str, AzureClient], tags: dict[str, str]) -> None:
    vpcpeering.seed_vnet(clients["remote"], REMOTE_RG, REMOTE_VNET, REGION, "172.16.0.0/16", tags)


def _peering(azure: AzureStandIn, vnet_id: str, name: str) -> dict[str, Any] | None:
    return azure.state.resource(f"{vnet_id}/virtualNetworkPeerings/{name}")


def _wait(predicate: Any) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_tagged_remote_vnet_is_peered_both_ways_then_deleted_on_both_sides(
        azure_http: AzureStandIn, clients: dict[str, AzureClient]) -> None:
    _seed_remote(clients, {SHOOT: ""})
    obj = peering()
    step, states = drive(_reconcile, obj, clients)
    assert states[0] == "Initiated" and states[-1] == "Ready" and step.requeue_after is None
    assert [(c["type"], c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("Ready", "Ready", "Ready")]
    local = _peering(azure_http, LOCAL_ID, "5e1d-peer")
    remote = _peering(azure_http, REMOTE_ID, "customer-to-kyma")
    assert local is not None and remote is not None
    assert obj["status"]["id"] == local["id"] and obj["status"]["remoteId"] == remote["id"]
    lp, rp = local["properties"], remote["properties"]
    assert (lp["peeringState"], rp["peeringState"]) == ("Connected", "Connected")
    assert lp["remoteVirtualNetwork"]["id"] == REMOTE_ID and rp["remoteVirtualNetwork"]["id"] == LOCAL_ID
    # useRemoteGateway: Kyma uses the customer's gateways, the customer's side allows the transit
    assert (lp["useRemoteGateways"], lp["allowGatewayTransit"]) == (True, False)
    assert (rp["useRemoteGateways"], rp["allowGatewayTransit"]) == (False, True)
    assert lp["allowVirtualNetworkAccess"] and rp["allowVirtualNetworkAccess"]

    # the customer removes their side: both sides are made anew (the local one PUT again first)
    clients["remote"].delete_peering(REMOTE_RG, REMOTE_VNET, "customer-to-kyma")
    assert _wait(lambda: (_peering(azure_http, LOCAL_ID, "5e1d-peer") or {}).get("properties", {}).get(
        "peeringState") == "Disconnected")
    step, _ = drive(_reconcile, obj, clients)
    assert step.requeue_after is None and obj["status"]["state"] == "Ready"
    assert (_peering(azure_http, REMOTE_ID, "customer-to-kyma") or {})["properties"]["peeringState"] == "Connected"

    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    step = _reconcile(obj, clients)
    assert step.remove_finalizer == FINALIZER
    assert _wait(lambda: _peering(azure_http, LOCAL_ID, "5e1d-peer") is None
                 and _peering(azure_http, REMOTE_ID, "customer-to-kyma") is None)


def test_untagged_vnet_warns_and_delete_without_delete_remote_keeps_the_customers_side(
        azure_http: AzureStandIn, clients: dict[str, AzureClient]) -> None:
    _seed_remote(clients, {"other": "x"})
    obj = peering(name="6f-untagged", gateway=False, delete_remote=False)
    step = _reconcile(obj, clients)
    assert step.status is not None and step.status["state"] == "Warning"
    assert [(c["type"], c["reason"], c["message"]) for c in step.status["conditions"]] == [
        ("Error", "FailedLoadingRemoteVpcNetwork", "Loaded remote VPC network has no matching tags")]
    assert step.requeue_after == pytest.approx(t(60))
    assert _peering(azure_http, REMOTE_ID, "customer-to-kyma") is None

    _seed_remote(clients, {SHOOT: ""})  # the customer tags the VNet
    step, states = drive(_reconcile, obj, clients)
    assert states[-1] == "Ready"
    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    assert _reconcile(obj, clients).remove_finalizer == FINALIZER
    assert _wait(lambda: _peering(azure_http, LOCAL_ID, "6f-untagged") is None)
    kept = _peering(azure_http, REMOTE_ID, "customer-to-kyma")
    assert kept is not None and kept["properties"]["peeringState"] == "Disconnected"


def test_429_requeues_without_a_status_change_and_a_known_code_is_a_warning(
        azure_http: AzureStandIn, clients: dict[str, AzureClient]) -> None:
    _seed_remote(clients, {SHOOT: ""})
    obj = peering(name="7a-throttled")
    obj["status"]["state"] = "Initiated"
    azure_http.state.inject("PUT", "/virtualNetworkPeerings/7a-throttled", 429)
    step = _reconcile(obj, clients)
    assert step.status is None and step.event is None and step.requeue_after == pytest.approx(t(60))
    assert _peering(azure_http, LOCAL_ID, "7a-throttled") is None

    # another peering of the shoot's VNet already references the customer's VNet
    clients["local"].create_peering(VPC, VPC, "made-by-hand", REMOTE_ID)
    step = _reconcile(obj, clients)
    assert step.status is not None and step.status["state"] == "Warning" and step.requeue_after is None
    assert [(c["type"], c["reason"], c["message"]) for c in step.status["conditions"]] == [
        ("Error", "FailedCreatingVpcPeeringConnection", vpcpeering.ERROR_MESSAGES[
            "AnotherPeeringAlreadyReferencesRemoteVnet"])]
    assert step.event is not None and step.event.type == "Warning"


def test_through_the_azure_provider(azure_http: AzureStandIn, clients: dict[str, AzureClient]) -> None:
    """The kind's azure provider side with its own three clients (local, local with the remote tenant,
    remote subscription: ``azure.clients.peering``) aimed at the stand-in."""
    _seed_remote(clients, {SHOOT: ""})
    env = {"RECONCILERY_AZURE_ENDPOINT_URL": azure_http.url, "RECONCILERY_CLOUD_TIME_SCALE": "1000"}
    with provider_turns("azure", env, azure_scope(), LOCAL, REMOTE) as turn:
        obj = peering(name="8b-bridge")
        _, states = drive(turn, obj)
        assert states[-1] == "Ready"
        assert _peering(azure_http, REMOTE_ID, "customer-to-kyma") is not None
        step = turn(obj, delete=True)
        assert step.remove_finalizer == FINALIZER
        assert _wait(lambda: _peering(azure_http, LOCAL_ID, "8b-bridge") is None)


VICTIM_RG = VICTIM_VNET = "shoot--kyma--c-victim"
VICTIM_ID = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{VICTIM_RG}/providers/Microsoft.Network/"
             f"virtualNetworks/{VICTIM_VNET}")


def test_attacker_naming_another_tenants_remote_peering_never_deletes_it(
        azure_http: AzureStandIn, clients: dict[str, AzureClient]) -> None:
    """Tenant A's AzureVpcPeering names tenant B's customer VNet and B's remote peering, with
    ``deleteRemotePeering``, then is deleted: B's peering stays Connected and A's object finishes deleting."""
    _seed_remote(clients, {"c-victim": ""})
    vpcpeering.seed_vnet(clients["local"], VICTIM_RG, VICTIM_VNET, REGION, "10.200.0.0/16")  # B's shoot VNet
    clients["local"].create_peering(VICTIM_RG, VICTIM_VNET, "cm-victim", REMOTE_ID)  # B's connection
    clients["remote"].create_peering(REMOTE_RG, REMOTE_VNET, "customer-to-kyma", VICTIM_ID)
    assert _wait(lambda: (_peering(azure_http, REMOTE_ID, "customer-to-kyma") or {}).get("properties", {}).get(
        "peeringState") == "Connected")

    obj = peering(name="a7-attacker", delete_remote=True)
    step = _reconcile(obj, clients)
    apply_step(obj, step)
    assert obj["status"]["state"] == "Warning" and not obj["status"].get("remoteId")
    assert VICTIM_VNET not in str(obj["status"])

    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    step = _reconcile(obj, clients)
    assert step.remove_finalizer == FINALIZER
    assert step.event is not None and VICTIM_VNET not in step.event.message
    time.sleep(0.1)
    kept = _peering(azure_http, REMOTE_ID, "customer-to-kyma")
    assert kept is not None and kept["properties"]["peeringState"] == "Connected"
