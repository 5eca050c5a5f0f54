"""The Azure KCP IpRange step through the Azure layer (azure-mgmt-network, -privatedns, -resource)
against the ARM stand-in: CM network, the kyma VpcPeering asked for once its VNet is there (made Ready
here as the KCP controllers would; its ARM peerings are tested through them in
tests/integration/cloud/test_providers.py), security group → subnet → DNS zone → link, deletion in
reverse order, 429, failed provisioning, errors."""

from __future__ import annotations

import time
from typing import Any

import pytest

import fencing
from standins.azure import AzureStandIn
from tasks.cloud.azure import iprange
from tasks.cloud.azure.client import AzureClient
from tasks.cloud.step import ChildStep
from tests.integration.cloud.steps import apply_step, drive

from .conftest import REGION, SUBSCRIPTION, VPC, azure_scope, kcp_iprange

pytestmark = pytest.mark.integration
FAST = iprange.Timing().scaled(0.001)
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


def _reconcile(obj: dict[str, Any], client: AzureClient, azure: AzureStandIn | None = None, **kwargs: Any) -> Any:
    """One turn with the kyma VpcPeering as the KCP IpRange controller passes it, created (and Ready at
    once) or deleted when the step says so."""
    name = obj["metadata"]["name"]
    step = iprange.reconcile(obj, azure_scope(), client, timing=FAST, kyma_peering=PEERINGS.get(name), **kwargs)
    if isinstance(step, ChildStep) and step.child is not None and (name in PEERINGS) != step.child:
        ASKED.append((name, step.child, len(azure.state.history) if azure else 0))
        if step.child:
            PEERINGS[name] = READY_PEERING
        else:
            PEERINGS.pop(name)
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
    again = _reconcile(obj, client)
    assert (again.status, again.requeue_after, again.error) == (None, None, None)
    assert not isinstance(again, ChildStep)

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
        step = iprange.reconcile(obj, azure_scope(), client, timing=iprange.Timing(), kyma_peering=READY_PEERING)
        if step.requeue_after == iprange.Timing().throttled:
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
    assert iprange.reconcile(kcp_iprange(name="x", network="other"), azure_scope(), client,
                             network_type="cloud-resources", timing=FAST).status is not None


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
    with pytest.raises(ValueError, match=r"no spec\.scope\.azure"):
        iprange.reconcile(kcp_iprange(), {"metadata": {"name": "s"}, "spec": {"scope": {}}}, client)
