"""Conformance of the ARM stand-in with Azure Resource Manager, through the unmodified SDK clients
(``azure-mgmt-network``, ``azure-mgmt-privatedns``, ``azure-mgmt-resource``) over HTTPS with the SDK's
own bearer-token policy: long-running operations (``Azure-AsyncOperation``, ``InProgress`` →
``Succeeded``/``Failed``), ``provisioningState``, status codes and ARM error bodies."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import requests
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.network.models import (
    AddressSpace,
    NetworkSecurityGroup,
    Subnet,
    SubResource,
    VirtualNetwork,
    VirtualNetworkPeering,
)
from azure.mgmt.privatedns import PrivateDnsManagementClient
from azure.mgmt.privatedns.models import PrivateZone, VirtualNetworkLink
from azure.mgmt.resource.resources import ResourceManagementClient

from standins.azure import AzureStandIn
from tests.fixtures.processes import wait_for

from .conftest import REGION, SUBSCRIPTION, FakeCredential, sdk_kwargs

pytestmark = pytest.mark.integration
ZONE = "privatelink.redis.cache.windows.net"


@pytest.fixture
def clients(azure: AzureStandIn, azure_tls: tuple[Any, str]) -> tuple[Any, Any, Any]:
    kw = sdk_kwargs(azure, azure_tls[1])
    return (ResourceManagementClient(FakeCredential(), SUBSCRIPTION, **kw),
            NetworkManagementClient(FakeCredential(), SUBSCRIPTION, **kw),
            PrivateDnsManagementClient(FakeCredential(), SUBSCRIPTION, **kw))


def _vnet(cidr: str) -> VirtualNetwork:
    return VirtualNetwork(location=REGION, address_space=AddressSpace(address_prefixes=[cidr]))


def test_put_answers_201_updating_with_an_async_operation_that_ends_succeeded(
        azure: AzureStandIn, azure_tls: tuple[Any, str], clients: tuple[Any, Any, Any]) -> None:
    rc, nc, _ = clients
    assert rc.resource_groups.create_or_update("rg", {"location": REGION}).properties.provisioning_state == "Succeeded"
    azure.state.op_delay = 0.3
    url = f"{azure.url}/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Network/" \
          "virtualNetworks/v1?api-version=2024-05-01"
    raw = requests.put(url, json={"location": REGION, "properties": {"addressSpace": {
        "addressPrefixes": ["10.1.0.0/16"]}}}, headers={"Authorization": "Bearer t"}, verify=azure_tls[1], timeout=10)
    assert raw.status_code == 201
    assert raw.json()["properties"]["provisioningState"] == "Updating"
    op_url = raw.headers["Azure-AsyncOperation"]
    assert "/providers/Microsoft.Network/locations/northeurope/operations/" in op_url
    assert requests.get(op_url, headers={"Authorization": "Bearer t"}, verify=azure_tls[1],
                        timeout=10).json()["status"] == "InProgress"
    wait_for(lambda: requests.get(op_url, headers={"Authorization": "Bearer t"}, verify=azure_tls[1],
                                  timeout=10).json()["status"] == "Succeeded", timeout=30, message="Succeeded")
    assert nc.virtual_networks.get("rg", "v1").provisioning_state == "Succeeded"
    # the SDK's poller follows the operation and ends with the resource's final GET
    poller = nc.virtual_networks.begin_create_or_update("rg", "v2", _vnet("10.2.0.0/16"))
    assert poller.result().provisioning_state == "Succeeded"
    again = requests.put(url, json={"location": REGION, "properties": {"addressSpace": {
        "addressPrefixes": ["10.1.0.0/16"]}}}, headers={"Authorization": "Bearer t"}, verify=azure_tls[1], timeout=10)
    assert again.status_code == 200  # an update of an existing resource


def test_requests_need_api_version_and_a_bearer(azure: AzureStandIn, azure_tls: tuple[Any, str]) -> None:
    url = f"{azure.url}/subscriptions/{SUBSCRIPTION}/resourceGroups/rg"
    missing = requests.get(url, headers={"Authorization": "Bearer t"}, verify=azure_tls[1], timeout=10)
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "MissingApiVersionParameter"
    anonymous = requests.get(url + "?api-version=2025-04-01", verify=azure_tls[1], timeout=10)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "AuthenticationFailed"


def test_not_found_errors(clients: tuple[Any, Any, Any]) -> None:
    rc, nc, dc = clients
    with pytest.raises(ResourceNotFoundError) as err:
        rc.resource_groups.get("nope")
    assert err.value.error.code == "ResourceGroupNotFound"
    assert rc.resource_groups.check_existence("nope") is False
    with pytest.raises(ResourceNotFoundError) as err:
        nc.virtual_networks.begin_create_or_update("nope", "v", _vnet("10.0.0.0/16"))
    assert err.value.error.code == "ResourceGroupNotFound"
    rc.resource_groups.create_or_update("rg", {"location": REGION})
    with pytest.raises(ResourceNotFoundError) as err:
        nc.virtual_networks.get("rg", "v")
    assert err.value.error.code == "ResourceNotFound"
    with pytest.raises(ResourceNotFoundError) as err:
        nc.subnets.get("rg", "v", "s")
    assert err.value.error.code == "ParentResourceNotFound"
    nc.virtual_networks.begin_create_or_update("rg", "v", _vnet("10.0.0.0/16")).result()
    with pytest.raises(ResourceNotFoundError) as err:
        nc.subnets.get("rg", "v", "s")
    assert err.value.error.code == "NotFound"
    with pytest.raises(ResourceNotFoundError):
        dc.private_zones.get("rg", ZONE)
    # deleting what is not there is a 204: the poller ends at once
    nc.subnets.begin_delete("rg", "v", "s").result()
    dc.private_zones.begin_delete("rg", ZONE).result()


def test_subnet_validation_and_nsg_in_use(clients: tuple[Any, Any, Any]) -> None:
    rc, nc, _ = clients
    rc.resource_groups.create_or_update("rg", {"location": REGION})
    nc.virtual_networks.begin_create_or_update("rg", "v", _vnet("10.250.4.0/22")).result()
    nsg = nc.network_security_groups.begin_create_or_update("rg", "n", NetworkSecurityGroup(location=REGION)).result()
    assert nsg.provisioning_state == "Succeeded" and len(nsg.default_security_rules) == 6
    with pytest.raises(HttpResponseError) as err:
        nc.subnets.begin_create_or_update("rg", "v", "s", Subnet(address_prefix="10.0.0.0/24"))
    assert err.value.error.code == "NetcfgSubnetRangeOutsideVnet"
    with pytest.raises(HttpResponseError) as err:
        nc.subnets.begin_create_or_update("rg", "v", "s", Subnet(
            address_prefix="10.250.4.0/22", network_security_group=NetworkSecurityGroup(id=nsg.id + "x")))
    assert err.value.error.code == "InvalidResourceReference"
    subnet = nc.subnets.begin_create_or_update("rg", "v", "s", Subnet(
        address_prefix="10.250.4.0/22", network_security_group=NetworkSecurityGroup(id=nsg.id))).result()
    assert subnet.provisioning_state == "Succeeded" and subnet.network_security_group.id == nsg.id
    with pytest.raises(HttpResponseError) as err:
        nc.subnets.begin_create_or_update("rg", "v", "s2", Subnet(address_prefix="10.250.5.0/24"))
    assert err.value.error.code == "NetcfgSubnetRangesOverlap"
    assert [s.name for s in nc.virtual_networks.get("rg", "v").subnets] == ["s"]
    assert [s.id for s in nc.network_security_groups.get("rg", "n").subnets] == [subnet.id]
    with pytest.raises(HttpResponseError) as err:
        nc.network_security_groups.begin_delete("rg", "n")
    assert err.value.status_code == 400 and err.value.error.code == "InUseNetworkSecurityGroup"
    nc.subnets.begin_delete("rg", "v", "s").result()
    nc.network_security_groups.begin_delete("rg", "n").result()
    with pytest.raises(ResourceNotFoundError):
        nc.network_security_groups.get("rg", "n")


def test_delete_answers_202_and_the_resource_is_deleting_until_the_operation_ends(
        azure: AzureStandIn, azure_tls: tuple[Any, str], clients: tuple[Any, Any, Any]) -> None:
    rc, nc, _ = clients
    rc.resource_groups.create_or_update("rg", {"location": REGION})
    nc.virtual_networks.begin_create_or_update("rg", "v", _vnet("10.0.0.0/16")).result()
    azure.state.op_delay = 0.3
    url = f"{azure.url}/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Network/" \
          "virtualNetworks/v?api-version=2024-05-01"
    raw = requests.delete(url, headers={"Authorization": "Bearer t"}, verify=azure_tls[1], timeout=10)
    assert raw.status_code == 202 and "Azure-AsyncOperation" in raw.headers and "Location" in raw.headers
    assert nc.virtual_networks.get("rg", "v").provisioning_state == "Deleting"
    assert requests.get(raw.headers["Location"], headers={"Authorization": "Bearer t"}, verify=azure_tls[1],
                        timeout=10).status_code == 202
    nc.virtual_networks.begin_delete("rg", "v").result()  # follows the operation to its end
    with pytest.raises(ResourceNotFoundError):
        nc.virtual_networks.get("rg", "v")


def test_failed_provisioning_ends_the_operation_failed_and_the_resource_failed(
        azure: AzureStandIn, clients: tuple[Any, Any, Any]) -> None:
    rc, nc, _ = clients
    rc.resource_groups.create_or_update("rg", {"location": REGION})
    nc.virtual_networks.begin_create_or_update("rg", "v", _vnet("10.0.0.0/16")).result()
    azure.state.fail_provisioning("s", code="InternalServerError", message="Subnet provisioning failed.")
    with pytest.raises(HttpResponseError) as err:
        nc.subnets.begin_create_or_update("rg", "v", "s", Subnet(address_prefix="10.0.0.0/24")).result()
    assert "Subnet provisioning failed." in str(err.value)
    assert nc.subnets.get("rg", "v", "s").provisioning_state == "Failed"
    # a new PUT retries the provisioning
    assert nc.subnets.begin_create_or_update("rg", "v", "s", Subnet(address_prefix="10.0.0.0/24")) \
        .result().provisioning_state == "Succeeded"


def test_injected_429_carries_retry_after_and_too_many_requests(
        azure: AzureStandIn, azure_tls: tuple[Any, str]) -> None:
    azure.state.inject("GET", "/resourcegroups/rg$", 429, times=1, retry_after="7")
    raw = requests.get(f"{azure.url}/subscriptions/{SUBSCRIPTION}/resourcegroups/rg?api-version=2025-04-01",
                       headers={"Authorization": "Bearer t"}, verify=azure_tls[1], timeout=10)
    assert raw.status_code == 429 and raw.headers["Retry-After"] == "7"
    assert raw.json()["error"]["code"] == "TooManyRequests"
    azure.state.inject("GET", "/resourcegroups/rg$", 503, times=20)
    rc = ResourceManagementClient(FakeCredential(), SUBSCRIPTION, **sdk_kwargs(azure, azure_tls[1]), retry_total=0)
    with pytest.raises(HttpResponseError) as err:
        rc.resource_groups.get("rg")
    assert err.value.status_code == 503


def test_peering_is_initiated_then_connected_then_disconnected(clients: tuple[Any, Any, Any]) -> None:
    rc, nc, _ = clients
    for rg in ("kyma", "cm"):
        rc.resource_groups.create_or_update(rg, {"location": REGION})
    kyma = nc.virtual_networks.begin_create_or_update("kyma", "kyma", _vnet("10.250.0.0/16")).result()
    cm = nc.virtual_networks.begin_create_or_update("cm", "cm", _vnet("10.251.0.0/22")).result()
    local = nc.virtual_network_peerings.begin_create_or_update(
        "kyma", "kyma", "cm--shoot", VirtualNetworkPeering(remote_virtual_network=SubResource(id=cm.id),
                                                          allow_virtual_network_access=True),
        sync_remote_address_space="true").result()
    assert local.peering_state == "Initiated"
    remote = nc.virtual_network_peerings.begin_create_or_update(
        "cm", "cm", "kyma--shoot", VirtualNetworkPeering(remote_virtual_network=SubResource(id=kyma.id))).result()
    assert remote.peering_state == "Connected"
    local = nc.virtual_network_peerings.get("kyma", "kyma", "cm--shoot")
    assert (local.peering_state, local.peering_sync_level) == ("Connected", "FullyInSync")
    assert local.remote_address_space.address_prefixes == ["10.251.0.0/22"]
    assert [p.name for p in nc.virtual_network_peerings.list("kyma", "kyma")] == ["cm--shoot"]
    nc.virtual_network_peerings.begin_delete("cm", "cm", "kyma--shoot").result()
    assert nc.virtual_network_peerings.get("kyma", "kyma", "cm--shoot").peering_state == "Disconnected"
    with pytest.raises(HttpResponseError) as err:
        nc.virtual_network_peerings.begin_create_or_update(
            "cm", "cm", "self", VirtualNetworkPeering(remote_virtual_network=SubResource(id=cm.id)))
    assert err.value.error.code == "VnetAddressSpacesOverlap"


def test_peering_errors_of_vpc_peering_and_tags_across_subscriptions(
        azure: AzureStandIn, azure_tls: tuple[Any, str], clients: tuple[Any, Any, Any]) -> None:
    """The codes the VPC peering maps to user messages, a VNet's tags, and a peering to a VNet of another
    subscription (the customer's)."""
    rc, nc, _ = clients
    kw = sdk_kwargs(azure, azure_tls[1])
    other = "9d8c7b6a-0000-4e5f-8a7b-6c5d4e3f2a1b"
    rc2 = ResourceManagementClient(FakeCredential(), other, **kw)
    nc2 = NetworkManagementClient(FakeCredential(), other, **kw)
    rc.resource_groups.create_or_update("kyma", {"location": REGION})
    rc2.resource_groups.create_or_update("customer", {"location": REGION})
    kyma = nc.virtual_networks.begin_create_or_update("kyma", "kyma", _vnet("10.250.0.0/16")).result()
    tagged = VirtualNetwork(location=REGION, address_space=AddressSpace(address_prefixes=["172.16.0.0/16"]),
                            tags={"c-0a2e6f9": ""})
    customer = nc2.virtual_networks.begin_create_or_update("customer", "vnet", tagged).result()
    assert nc2.virtual_networks.get("customer", "vnet").tags == {"c-0a2e6f9": ""}
    assert customer.id.startswith(f"/subscriptions/{other}/")
    nc.virtual_network_peerings.begin_create_or_update(
        "kyma", "kyma", "first", VirtualNetworkPeering(remote_virtual_network=SubResource(id=customer.id),
                                                      use_remote_gateways=False)).result()
    with pytest.raises(HttpResponseError) as err:
        nc.virtual_network_peerings.begin_create_or_update(
            "kyma", "kyma", "second", VirtualNetworkPeering(remote_virtual_network=SubResource(id=customer.id)))
    assert (err.value.status_code, err.value.error.code) == (400, "AnotherPeeringAlreadyReferencesRemoteVnet")
    back = nc2.virtual_network_peerings.begin_create_or_update(
        "customer", "vnet", "to-kyma", VirtualNetworkPeering(remote_virtual_network=SubResource(id=kyma.id),
                                                            allow_gateway_transit=True)).result()
    assert (back.peering_state, back.allow_gateway_transit) == ("Connected", True)
    nc.virtual_network_peerings.begin_delete("kyma", "kyma", "first").result()
    assert nc2.virtual_network_peerings.get("customer", "vnet", "to-kyma").peering_state == "Disconnected"
    with pytest.raises(HttpResponseError) as err:  # the customer's side must be re-created first
        nc.virtual_network_peerings.begin_create_or_update(
            "kyma", "kyma", "first", VirtualNetworkPeering(remote_virtual_network=SubResource(id=customer.id)))
    assert err.value.error.code == "RemotePeeringIsDisconnected"
    overlapping = nc2.virtual_networks.begin_create_or_update("customer", "overlap", _vnet("10.250.128.0/17")).result()
    with pytest.raises(HttpResponseError) as err:
        nc.virtual_network_peerings.begin_create_or_update(
            "kyma", "kyma", "third", VirtualNetworkPeering(remote_virtual_network=SubResource(id=overlapping.id)))
    assert err.value.error.code == "VnetAddressSpacesOverlap"
    assert "Overlapping address prefixes: 10.250.128.0/17" in err.value.error.message


def test_private_dns_zone_and_link(azure: AzureStandIn, clients: tuple[Any, Any, Any]) -> None:
    rc, nc, dc = clients
    rc.resource_groups.create_or_update("rg", {"location": REGION})
    vnet = nc.virtual_networks.begin_create_or_update("rg", "v", _vnet("10.0.0.0/16")).result()
    zone = dc.private_zones.begin_create_or_update("rg", ZONE, PrivateZone(location="global")).result()
    assert (zone.provisioning_state, zone.location) == ("Succeeded", "global")
    with pytest.raises(HttpResponseError) as err:
        dc.virtual_network_links.begin_create_or_update("rg", ZONE, "l", VirtualNetworkLink(
            location="global", virtual_network=SubResource(id=vnet.id + "x"), registration_enabled=False))
    assert err.value.error.code == "InvalidResourceReference"
    link = dc.virtual_network_links.begin_create_or_update("rg", ZONE, "l", VirtualNetworkLink(
        location="global", virtual_network=SubResource(id=vnet.id), registration_enabled=False)).result()
    assert (link.provisioning_state, link.virtual_network_link_state) == ("Succeeded", "Completed")
    assert dc.private_zones.get("rg", ZONE).number_of_virtual_network_links == 1
    with pytest.raises(ResourceExistsError) as err:  # 409: nested links first
        dc.private_zones.begin_delete("rg", ZONE)
    assert err.value.error.code == "CannotDeleteResource"
    dc.virtual_network_links.begin_delete("rg", ZONE, "l").result()
    dc.private_zones.begin_delete("rg", ZONE).result()
    assert azure.state.ids("privateDnsZones") == []


def test_resource_group_delete_takes_its_resources_along(azure: AzureStandIn, clients: tuple[Any, Any, Any]) -> None:
    rc, nc, _ = clients
    rc.resource_groups.create_or_update("rg", {"location": REGION})
    nc.virtual_networks.begin_create_or_update("rg", "v", _vnet("10.0.0.0/16")).result()
    rc.resource_groups.begin_delete("rg").result()  # 202 + Location, polled to 204
    assert azure.state.ids() == [] and rc.resource_groups.check_existence("rg") is False


def test_runs_as_a_module(spawn: Any, tmp_path: Any) -> None:
    from tests.fixtures.processes import free_port, wait_for

    port = free_port()
    spawn([sys.executable, "-m", "standins.azure", "--port", str(port), "--op-delay", "0",
           "--tls-dir", str(tmp_path)])
    ca = str(tmp_path / "ca.crt")

    def _answers() -> bool:
        rc = ResourceManagementClient(FakeCredential(), SUBSCRIPTION, base_url=f"https://127.0.0.1:{port}",
                                      connection_verify=ca, retry_total=0)
        return rc.resource_groups.check_existence("rg") is False

    wait_for(_answers, timeout=30, message="the stand-in process to answer over HTTPS")
