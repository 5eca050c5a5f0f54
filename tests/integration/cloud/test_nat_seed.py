"""What ``up`` seeds for the GCP and Azure shoots of ``examples/cloud`` (Gardener's Cloud NAT router and NAT
gateways, :func:`localrun.cloud.seed_gcp_nat` / :func:`~localrun.cloud.seed_azure_nat`) is what the providers'
``nat_gateway_ips`` read back through google-cloud-compute and azure-mgmt-network (the Scope's exposed data)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from localrun.cloud import seed_azure_nat, seed_azure_shoot, seed_gcp_nat
from standins.azure import AzureStandIn
from standins.gcp import GcpStandIn
from tasks.cloud import settings
from tasks.cloud.azure.provider import AzureProvider
from tasks.cloud.gcp.provider import GcpProvider
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration

SUBSCRIPTION = "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44"


@pytest.fixture
def standins() -> Iterator[tuple[GcpStandIn, AzureStandIn]]:
    """Both stand-ins, the process's cloud settings aimed at them (restored afterwards)."""
    gcp = GcpStandIn(op_delay=0.01).start()
    azure = AzureStandIn(op_delay=0.01).start()
    settings.override(settings.load({"RECONCILERY_GCP_ENDPOINT_URL": gcp.url,
                                     "RECONCILERY_AZURE_ENDPOINT_URL": azure.url}))
    try:
        yield gcp, azure
    finally:
        settings.override(None)
        gcp.stop()
        azure.stop()


def test_the_seeded_nat_ips_are_what_the_providers_read(standins: tuple[GcpStandIn, AzureStandIn]) -> None:
    gcp, azure = standins
    docs = list(yaml.safe_load_all((ROOT / "examples" / "cloud" / "11-garden-gcp-azure.yaml").read_text()))
    gcp_shoot, azure_shoot = (d for d in docs if d["kind"] == "Shoot")
    gcp_ips = seed_gcp_nat(gcp.state, gcp_shoot, "garden-kyma", "sap-kyma-example-42")
    assert seed_gcp_nat(gcp.state, gcp_shoot, "garden-kyma", "sap-kyma-example-42") == gcp_ips  # idempotent
    vnet_id = seed_azure_shoot(azure.url, azure_shoot, "garden-kyma", {"subscriptionID": SUBSCRIPTION})
    azure_ips = seed_azure_nat(azure.state, vnet_id, azure_shoot, "garden-kyma")
    assert len(gcp_ips) == 2 and len(azure_ips) == 3  # the Cloud NAT's two IPs; one NAT gateway per zone
    gcp_scope = {"spec": {"region": "us-east4", "scope": {"gcp": {
        "project": "sap-kyma-example-42", "vpcNetwork": "shoot--kyma--c-2d9a6e4"}}}}
    azure_scope = {"spec": {"region": "northeurope", "scope": {"azure": {
        "subscriptionId": SUBSCRIPTION, "tenantId": "t", "vpcNetwork": "shoot--kyma--c-8e3f1b7"}}}}
    assert GcpProvider().nat_gateway_ips(gcp_scope) == sorted(gcp_ips)
    assert AzureProvider().nat_gateway_ips(azure_scope) == sorted(azure_ips)
