"""The IpRange kind's Azure provider through the Azure layer (azure-mgmt-network, -privatedns, -resource)
against the ARM stand-in, as the KCP controller runs it (read, plan, the executor's calls): CM network,
the kyma VpcPeering created once its VNet is there (made Ready here as the KCP controllers would; its ARM
peerings are tested through them in tests/integration/cloud/test_providers.py), security group → subnet
→ DNS zone → link, deletion in reverse order, 429, failed provisioning, errors."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

import fencing
from kube.toolkit import Action, Outcome, execute
from standins.azure import AzureStandIn
from tasks.cloud import registry
from tasks.cloud.azure.client import AzureClient
from tasks.cloud.azure.iprange_plan import Timing
from tasks.cloud.kcp.iprange_plan import Seen
from tasks.cloud.kcp.kind import provider_turn
from tasks.cloud.registry import Turn
from tasks.cloud.settings import CloudSettings
from tests.integration.cloud.steps import apply_step, drive

from .conftest import REGION, SUBSCRIPTION, VPC, azure_scope, kcp_iprange

pytestmark = pytest.mark.integration
FAST = Timing().scaled(0.001)
CM = f"{VPC}--cm"
NET = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{{rg}}/providers/Microsoft.Network"
ZONE = "privatelink.redis.cache.windows.net"


@pytest.fixture
def client(azure: AzureStandIn, azure_tls: tuple[Any, str]) -> AzureClient:
    """The layer's client over HTTPS (the SDK's own bearer policy); the shoot's VNet exists already."""
    c = AzureClient(SUBSCRIPTION, base_url=azure.url, connection_verify=azure_tls[1], retry_total=0)
    c.create_resource_group(VPC, REGION)
    c.create_vnet(VPC, VPC, REGION, "10.250.0.0/16")
    return c


READY_PEERING = {"metadata": {"name": "kyma-az"}, "status": {"state": "Ready", "conditions": [
    {"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready"}]}}
#: The kyma VpcPeering per IpRange name, as the KCP controllers keep it; what the steps asked, in order.
PEERINGS: dict[str, dict[str, Any]] = {}
ASKED: list[tuple[str, bool, int]] = []


def _turn(obj: dict[str, Any], client: AzureClient, peering: dict[str, Any] | None, *, scale: float = 1000.0,
          network_type: str = "", scope: dict[str, Any] | None = None) -> tuple[Outcome, list[Action]]:
    """The provider's Outcome of one turn, carried out with ``client`` but for its writes of the kyma
    VpcPeering, which are answered: ``(outcome, those writes)``."""
    scope = scope or azure_scope()
    network = {"spec": {"type": network_type}} if network_type else None
    turn = Turn(kube=None, obj=obj, scope=scope, settings=CloudSettings(time_scale=scale),  # type: ignore[arg-type]
                seen=Seen(obj, scope, network=network, peering=peering))
    outcome, _ = provider_turn(registry.get("iprange"), turn, bool(obj["metadata"].get("deletionTimestamp")),
                               {"": client})
    peerings = [w for w in outcome.writes if isinstance(w, Action)]
    outcome = replace(outcome, writes=tuple(w for w in outcome.writes if not isinstance(w, Action)))
    return execute(outcome, clients={"": client}, scale=turn.t).outcome, peerings


def _reconcile(obj: dict[str, Any], client: AzureClient, azure: AzureStandIn | None = None, **kwargs: Any) -> Any:
    """One turn with the kyma VpcPeering as the KCP IpRange controller reads it, created (and Ready at
    once) or deleted as the turn writes it; its status patch written into ``obj``."""
    name = obj["metadata"]["name"]
    step, peerings = _turn(obj, client, PEERINGS.get(name), **kwargs)
    for write in peerings:
        assert write.kind == "VpcPeering" and write.name == "kyma-az"
        ASKED.append((name, write.verb == "create", len(azure.state.history) if azure else 0))
        if write.verb == "create":
            PEERINGS[name] = READY_PEERING
        else:
            PEERINGS.pop(name)
    apply_step(obj, step)
    return step


def _conditions(obj: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in obj["status"].get("conditions", [])]


def _ids(*parts: str) -> str:
    return "/".join(parts)


def test_create_is_ready_and_delete_goes_in_reverse_order(azure: AzureStandIn, client: AzureClient) -> None:
    obj = kcp_iprange(name="ipr-az", cidr="10.251.0.0/22")
    step, states = drive(_reconcile, obj, client, azure)
    assert states[-1] == "Ready" and _conditions(obj) == [("Ready", "True", "Ready", "Ready")]
    assert obj["status"]["cidr"] == "10.251.0.0/22"
    cm_net, kyma_net = NET.format(rg=CM), NET.format(rg=VPC)
    created = [i for kind, i in azure.state.history if kind == "put"]
    order = [
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{CM}",
        f"{cm_net}/virtualNetworks/{CM}",
        f"{cm_net}/networkSecurityGroups/{CM}",
        f"{cm_net}/virtualNetworks/{CM}/subnets/{CM}",
        f"{cm_net}/privateDnsZones/{ZONE}",
        f"{cm_net}/privateDnsZones/{ZONE}/virtualNetworkLinks/ipr-az",
    ]
    assert created[2:] == order  # after the fixture's shoot RG and VNet
    vnet = azure.state.resource(order[1])
    assert vnet is not None and vnet["properties"]["addressSpace"]["addressPrefixes"] == ["10.251.0.0/22"]
    assert vnet["location"] == REGION
    subnet = azure.state.resource(order[3])
    assert subnet is not None and subnet["properties"]["addressPrefix"] == "10.251.0.0/22"
    assert subnet["properties"]["networkSecurityGroup"]["id"] == order[2]
    # the kyma VpcPeering was asked for once the CM VNet was there, before the security group
    [(_, child, at)] = [a for a in ASKED if a[0] == "ipr-az"]
    history = [i for kind, i in azure.state.history[:at] if kind == "put"]
    assert child is True and order[1] in history and order[2] not in history
    link = azure.state.resource(order[5])
    assert link is not None and link["properties"]["virtualNetwork"]["id"] == f"{kyma_net}/virtualNetworks/{VPC}"
    asked = len(ASKED)
    again = _reconcile(obj, client)
    assert (again.status, again.requeue_after, again.error) == (None, None, None) and len(ASKED) == asked

    obj["metadata"]["deletionTimestamp"] = "2026-11-21T10:00:00Z"
    step, _ = drive(_reconcile, obj, client, azure)
    assert step.remove_finalizer
    deleted = [i.lower() for kind, i in azure.state.history if kind == "delete"]
    expected = [order[5], order[4], order[3], order[2], order[1]]
    assert deleted[:5] == [i.lower() for i in expected]
    assert deleted[5] == order[0].lower()
    # the kyma VpcPeering was removed after the security group, before the CM VNet
    [(_, child, at)] = [a for a in ASKED if a[0] == "ipr-az"][1:]
    gone_before = [i.lower() for kind, i in azure.state.history[:at] if kind == "delete"]
    assert child is False and order[2].lower() in gone_before and order[1].lower() not in gone_before
    assert azure.state.ids() == [f"{kyma_net}/virtualNetworks/{VPC}"]  # the shoot's VNet stays


def test_429_requeues_after_60_s_without_a_status_change(azure: AzureStandIn, client: AzureClient) -> None:
    obj = kcp_iprange(name="ipr-429")
    azure.state.inject("PUT", "/subnets/", 429, times=3)
    seen = None
    for _ in range(200):
        step, _ = _turn(obj, client, READY_PEERING, scale=1.0)
        if step.requeue_after == Timing().throttled:
            seen = step
            break
        apply_step(obj, step)
        time.sleep(0.02)
    assert seen is not None and seen.status is None and seen.error is None and seen.event is None
    assert "conditions" not in obj["status"]


def test_failed_provisioning_is_an_error_then_put_again(azure: AzureStandIn, client: AzureClient) -> None:
    obj = kcp_iprange(name="ipr-fail")
    # RG, VNet, security group and subnet are all named <vpc>--cm: arm the failure once the security
    # group exists, so that it hits the subnet's PUT
    for _ in range(200):
        step = _reconcile(obj, client)
        apply_step(obj, step)
        if azure.state.resource(f"{NET.format(rg=CM)}/networkSecurityGroups/{CM}") is not None:
            break
        time.sleep(0.02)
    drive_until = time.monotonic() + 30
    azure.state.fail_provisioning(CM, message="Subnet provisioning failed.")
    error_step = None
    while time.monotonic() < drive_until:
        step = _reconcile(obj, client)
        apply_step(obj, step)
        if obj["status"].get("state") == "Error":
            error_step = step
            break
        time.sleep(0.02)
    assert error_step is not None, obj["status"]
    assert _conditions(obj) == [("Error", "True", "Error", "Error creating Azure subnet")]
    assert error_step.requeue_after == FAST.create_error and error_step.event is not None
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready"


def test_create_error_is_state_error_with_the_original_message(azure: AzureStandIn, client: AzureClient) -> None:
    azure.state.inject("PUT", "/networkSecurityGroups/", 400, code="InvalidRequestFormat", times=1)
    obj = kcp_iprange(name="ipr-nsg")
    step, _ = drive(_reconcile, obj, client, stop_on_error=True)
    assert _conditions(obj) == [("Error", "True", "Error", "Error creating Azure security group")]
    assert obj["status"]["state"] == "Error" and step.requeue_after == FAST.create_error
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready"


def test_load_error_of_the_subnet(azure: AzureStandIn, client: AzureClient) -> None:
    obj = kcp_iprange(name="ipr-load")
    azure.state.inject("GET", f"/subnets/{CM}$", 500, times=1000)
    step, _ = drive(_reconcile, obj, client, stop_on_error=True)
    assert _conditions(obj) == [("Error", "True", "Error", "Error loading subnet")]
    assert step.requeue_after == FAST.load_error
    azure.state.faults.clear()


def test_not_on_a_cm_network_is_unsupported(client: AzureClient) -> None:
    obj = kcp_iprange(name="ipr-kyma", network="kyma-az--kyma")
    step, _ = drive(_reconcile, obj, client)
    assert _conditions(obj) == [("Error", "True", "Error", "Unsupported network type")]
    assert (step.requeue_after, step.error) == (None, None)
    assert _turn(kcp_iprange(name="x", network="other"), client, READY_PEERING,
                 network_type="cloud-resources")[0].status is not None


def test_plain_http_with_the_layers_bearer_policy(azure_http: AzureStandIn) -> None:
    """Over http:// the SDK's bearer policy refuses to send a token; the layer's own policy does."""
    c = AzureClient(SUBSCRIPTION, base_url=azure_http.url, retry_total=0)
    c.create_resource_group(VPC, REGION)
    c.create_vnet(VPC, VPC, REGION, "10.250.0.0/16")
    obj = kcp_iprange(name="ipr-http")
    _, states = drive(_reconcile, obj, c)
    assert states[-1] == "Ready"


def test_a_fenced_reconcile_writes_nothing(azure: AzureStandIn, client: AzureClient) -> None:
    fence = fencing.Fence(token="1", deadline=time.monotonic() + 60, valid_until=time.monotonic() + 60)
    fence.mark_lost("taken over")
    before = len(azure.state.history)
    with fencing.fenced(fence), pytest.raises(fencing.LeaseLost):
        _reconcile(kcp_iprange(name="ipr-fence"), client)
    assert len(azure.state.history) == before


def test_an_allocated_cidr_in_status_is_used(azure: AzureStandIn, client: AzureClient) -> None:
    """The common part allocates a CIDR into status.cidr when spec.cidr is empty (notes §5.4)."""
    obj = kcp_iprange(name="ipr-alloc", cidr="", status={"cidr": "10.251.0.0/22"})
    _, states = drive(_reconcile, obj, client)
    assert states[-1] == "Ready"
    subnet = azure.state.resource(f"{NET.format(rg=CM)}/virtualNetworks/{CM}/subnets/{CM}")
    assert subnet is not None and subnet["properties"]["addressPrefix"] == "10.251.0.0/22"


def test_a_scope_without_azure_fields_is_a_clear_error(client: AzureClient) -> None:
    step, _ = _turn(kcp_iprange(), client, None, scope={"metadata": {"name": "s"}, "spec": {"provider": "azure"}})
    assert step.status is not None and [(c["reason"], c["message"]) for c in step.status["conditions"]] == [
        ("Error", "Scope 's' has no spec.scope.azure.vpcNetwork, spec.shootName or name")]
