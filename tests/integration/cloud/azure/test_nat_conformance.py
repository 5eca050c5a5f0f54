"""Conformance of the ARM stand-in's NAT gateways and public IP addresses (the NAT IPs of a shoot, the Scope's
exposed data) with Azure Resource Manager, through the unmodified ``azure-mgmt-network`` client
(``nat_gateways``, ``public_ip_addresses``, ``subnets``: paths and model parsing); then the Azure provider's
``nat_gateway_ips`` against it, as the original's ``pkg/kcp/provider/azure/exposedData`` reads."""

from __future__ import annotations

from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.network.models import NatGateway

from standins.azure import AzureStandIn
from tasks.cloud import settings
from tasks.cloud.azure.client import AzureClient
from tasks.cloud.azure.provider import AzureProvider
from tasks.cloud.azure.vpcpeering import seed_vnet
from tasks.cloud.providers import ProviderError

from .conftest import REGION, SUBSCRIPTION, TENANT, VPC, FakeCredential, sdk_kwargs

pytestmark = pytest.mark.integration


def _seed(standin: AzureStandIn, ca: str | None = None) -> str:
    """The shoot's VNet (resource group = VNet = VPC) with two zone subnets each behind a NAT gateway (one
    with two IPs), a third subnet without one, and a NAT gateway of another VNet's subnet."""
    client = AzureClient(SUBSCRIPTION, base_url=standin.url, retry_total=0, connection_verify=ca)
    vnet_id = seed_vnet(client, VPC, VPC, REGION, "10.250.0.0/16")
    other_id = seed_vnet(client, "other-rg", "other-vnet", REGION, "10.9.0.0/16")
    client.create_security_group(VPC, "nsg", REGION)
    state = standin.state
    state.put_nat_gateway(vnet_id, f"{VPC}-nodes-z1", "10.250.0.0/19", f"{VPC}-nat-gateway-z1", ("20.1.1.1",), "1")
    state.put_nat_gateway(vnet_id, f"{VPC}-nodes-z2", "10.250.32.0/19", f"{VPC}-nat-gateway-z2",
                          ("20.2.2.2", "20.1.1.0"), "2")
    state.put_nat_gateway(other_id, "other-nodes", "10.9.0.0/19", "other-nat", ("20.9.9.9",))
    return vnet_id


def test_nat_gateways_and_public_ips_parse_with_the_sdk(azure: AzureStandIn, azure_tls: tuple[Any, str]) -> None:
    _seed(azure, azure_tls[1])
    nc = NetworkManagementClient(FakeCredential(), SUBSCRIPTION, **sdk_kwargs(azure, azure_tls[1]))
    subnet = nc.subnets.get(VPC, VPC, f"{VPC}-nodes-z2")
    assert subnet.nat_gateway is not None and subnet.nat_gateway.id.endswith(f"/natGateways/{VPC}-nat-gateway-z2")
    gateway = nc.nat_gateways.get(VPC, f"{VPC}-nat-gateway-z2")
    assert gateway.sku is not None and gateway.sku.name == "Standard"
    assert (gateway.zones, gateway.provisioning_state) == (["2"], "Succeeded")
    assert [s.id for s in gateway.subnets or []] == [subnet.id]
    assert [p.id.rsplit("/", 1)[1] for p in gateway.public_ip_addresses or []] == [
        f"{VPC}-nat-gateway-z2-ip", f"{VPC}-nat-gateway-z2-ip-2"]
    ip = nc.public_ip_addresses.get(VPC, f"{VPC}-nat-gateway-z2-ip")
    assert ip.sku is not None and ip.sku.name == "Standard"
    assert (ip.ip_address, ip.public_ip_allocation_method, ip.public_ip_address_version) == ("20.2.2.2", "Static",
                                                                                              "IPv4")
    assert ip.nat_gateway is not None and ip.nat_gateway.id == gateway.id
    assert sorted(str(g.name) for g in nc.nat_gateways.list(VPC)) == [f"{VPC}-nat-gateway-z1", f"{VPC}-nat-gateway-z2"]
    assert len(list(nc.public_ip_addresses.list(VPC))) == 3
    vnet = nc.virtual_networks.get(VPC, VPC)
    assert sorted(str(s.name) for s in vnet.subnets or []) == [f"{VPC}-nodes-z1", f"{VPC}-nodes-z2"]
    with pytest.raises(ResourceNotFoundError):
        nc.nat_gateways.get(VPC, "missing")
    with pytest.raises(HttpResponseError) as err:  # read-only here: seeded, never written by the SDK
        nc.nat_gateways.begin_create_or_update(VPC, "new", NatGateway(location=REGION)).result()
    assert err.value.status_code == 405


def test_provider_reads_the_nat_ips_of_the_shoot_vnets_subnets(azure_http: AzureStandIn) -> None:
    vnet_id = _seed(azure_http)
    scope: dict[str, Any] = {"spec": {"region": REGION, "provider": "azure", "scope": {"azure": {
        "subscriptionId": SUBSCRIPTION, "tenantId": TENANT, "vpcNetwork": VPC}}}}
    settings.override(settings.load({"RECONCILERY_AZURE_ENDPOINT_URL": azure_http.url}))
    try:
        provider = AzureProvider()
        assert provider.nat_gateway_ips(scope) == ["20.1.1.0", "20.1.1.1", "20.2.2.2"]  # not other-vnet's
        # a subnet without a NAT gateway is skipped
        AzureClient(SUBSCRIPTION, base_url=azure_http.url, retry_total=0).create_subnet(
            VPC, VPC, "plain", "10.250.128.0/24", f"{vnet_id.split('/providers/')[0]}/providers/"
            "Microsoft.Network/networkSecurityGroups/nsg")
        assert provider.nat_gateway_ips(scope) == ["20.1.1.0", "20.1.1.1", "20.2.2.2"]
        azure_http.state.inject("GET", "/publicIPAddresses/", 403, "AuthorizationFailed",
                                "The client does not have authorization to perform action "
                                "'Microsoft.Network/publicIPAddresses/read'")
        with pytest.raises(ProviderError) as err:
            provider.nat_gateway_ips(scope)
        assert not err.value.retryable and "publicIPAddresses/read" in err.value.message
        gone = {"spec": {**scope["spec"], "scope": {"azure": {**scope["spec"]["scope"]["azure"],
                                                               "vpcNetwork": "no-such-vnet"}}}}
        with pytest.raises(ProviderError) as err:
            provider.nat_gateway_ips(gone)
        assert err.value.retryable and "no-such-vnet" in err.value.message
    finally:
        settings.override(None)
