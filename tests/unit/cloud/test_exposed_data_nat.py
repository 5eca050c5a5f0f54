"""The pure parts of the GCP and Azure exposed-data reads (the original's ``exposedDataSetToScope`` and
``azureutil.ParseResourceID``) and the NAT IPs ``up`` seeds."""

from __future__ import annotations

from typing import Any

import pytest

from localrun.cloud import nat_ips as seeded_nat_ips
from tasks.cloud.azure.provider import nat_ips as azure_nat_ips
from tasks.cloud.azure.provider import resource_group_and_name
from tasks.cloud.gcp.exposeddata_client import routers_filter
from tasks.cloud.gcp.provider import nat_ips as gcp_nat_ips

SUB = "/subscriptions/3c1f8a57/resourceGroups"


@pytest.mark.parametrize(("resource_id", "expected"), [
    (f"{SUB}/shoot--kyma--c/providers/Microsoft.Network/natGateways/ng-z1", ("shoot--kyma--c", "ng-z1")),
    (f"{SUB}/rg/providers/microsoft.network/publicIPAddresses/ip-1/", ("rg", "ip-1")),
    (f"{SUB}/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s", ("rg", "s")),
    (f"{SUB}/rg", None),
    (f"{SUB}/rg/providers/Microsoft.Network/natGateways", None),
    ("/subscriptions/s/resourceGroup/rg/providers/Microsoft.Network/natGateways/n", None),
    (f"{SUB}//providers/Microsoft.Network/natGateways/n", None),
    ("", None),
])
def test_resource_group_and_name_of_an_arm_id(resource_id: str, expected: tuple[str, str] | None) -> None:
    assert resource_group_and_name(resource_id) == expected


def test_azure_nat_ips_are_sorted_unique_and_skip_empty() -> None:
    ips: list[dict[str, Any]] = [{"properties": {"ipAddress": "20.2.2.2"}}, {"properties": {"ipAddress": "20.1.1.1"}},
           {"properties": {"ipAddress": "20.2.2.2"}}, {"properties": {}}, {}]
    assert azure_nat_ips(ips) == ["20.1.1.1", "20.2.2.2"]


def test_gcp_nat_ips_are_sorted_unique_and_skip_empty() -> None:
    assert gcp_nat_ips([{"address": "35.2.0.1"}, {"address": "35.1.0.1"}, {"address": "35.2.0.1"}, {}]) == [
        "35.1.0.1", "35.2.0.1"]


def test_routers_filter_is_the_originals_network_regex() -> None:
    assert routers_filter("shoot--kyma--c-1") == "network eq .*shoot--kyma--c-1"


def test_seeded_nat_ips_are_stable_distinct_public_ipv4() -> None:
    import ipaddress

    a, b = seeded_nat_ips("shoot--kyma--a", 3, 20), seeded_nat_ips("shoot--kyma--b", 3, 20)
    assert a == seeded_nat_ips("shoot--kyma--a", 3, 20) and len(set(a)) == 3 and not set(a) & set(b)
    assert all(ipaddress.ip_address(ip).is_global and ip.startswith("20.") for ip in a + b)
