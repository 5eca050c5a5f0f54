"""Azure Scope building from a Garden shoot and its credentials (notes §4.2), pure."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tasks.cloud.azure.iprange_plan import Timing, private_dns_zone_name, vnet_id
from tasks.cloud.azure.scope import (
    cm_name,
    cm_network_reference,
    kyma_network_reference,
    needs_rebuild,
    scope_section,
)
from tasks.cloud.gcp.scope import secret_values
from tests.unit.cloud.garden import shoot_and_secret


def _sample() -> tuple[dict[str, Any], dict[str, str]]:
    shoot, secret = shoot_and_secret("azure")
    return shoot, secret_values(secret)


def test_scope_from_the_sample_azure_shoot() -> None:
    shoot, credentials = _sample()
    section = scope_section(shoot, credentials)
    assert section == {"azure": {
        "tenantId": "8e7d6c5b-0000-4a3b-8c2d-1e0f9a8b7c6d",
        "subscriptionId": "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44",
        "vpcNetwork": "shoot--kyma--c-0a2e6f9",
        "network": {"cidr": "10.250.0.0/16",
                    "zones": [{"name": "1", "cidr": "10.250.0.0/19"}, {"name": "2", "cidr": "10.250.32.0/19"},
                              {"name": "3", "cidr": "10.250.64.0/19"}],
                    "nodes": "10.250.0.0/16", "pods": "100.64.0.0/12", "services": "100.104.0.0/13"},
    }}
    scope = {"spec": {"scope": section}}
    assert kyma_network_reference(scope) == {"azure": {
        "tenantId": "8e7d6c5b-0000-4a3b-8c2d-1e0f9a8b7c6d", "subscriptionId": "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44",
        "resourceGroup": "shoot--kyma--c-0a2e6f9", "networkName": "shoot--kyma--c-0a2e6f9"}}
    assert cm_network_reference(scope)["azure"]["networkName"] == "shoot--kyma--c-0a2e6f9--cm"
    assert not needs_rebuild(scope)


def test_zone_names_are_strings_in_shoot_order() -> None:
    shoot, credentials = _sample()
    shoot["spec"]["provider"]["infrastructureConfig"]["networks"]["zones"] = [
        {"name": 2, "cidr": "10.250.32.0/19"}, {"name": 3, "cidr": "10.250.64.0/19"},
        {"name": 1, "cidr": "10.250.0.0/19"}]
    section = scope_section(shoot, credentials)
    assert section is not None
    assert [z["name"] for z in section["azure"]["network"]["zones"]] == ["2", "3", "1"]


@pytest.mark.parametrize("missing", ["subscriptionID", "tenantID"])
def test_missing_key_is_logged_and_stops(caplog: pytest.LogCaptureFixture, missing: str) -> None:
    shoot, credentials = _sample()
    del credentials[missing]
    with caplog.at_level(logging.ERROR, logger="tasks.cloud.azure.scope"):
        assert scope_section(shoot, credentials) is None
    assert f"gardener credential for azure missing {missing} key" in caplog.text


def test_rebuild_when_nodes_are_missing() -> None:
    assert needs_rebuild({"spec": {"scope": {"azure": {"network": {}}}}})


def test_names() -> None:
    assert cm_name("shoot--kyma--c-1") == "shoot--kyma--c-1--cm"
    assert private_dns_zone_name() == "privatelink.redis.cache.windows.net"
    assert private_dns_zone_name("AzureChina") == "privatelink.redis.cache.chinacloudapi.cn"
    assert vnet_id("s", "rg", "v") == "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
    assert Timing() == Timing(wait=10, peering_wait=1, throttled=60, load_error=60, create_error=300,
                              delete_error=60, link_delete_wait=60, network_error=60)
    assert Timing().scaled(0.01).create_error == pytest.approx(3.0)
