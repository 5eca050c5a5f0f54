"""The providers table: each Gardener type found by name, unknown types are None (never an import), a new
provider is one entry."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud import clouds, providers
from tasks.cloud.azure.provider import AzureProvider
from tasks.cloud.gcp.provider import GcpProvider
from tasks.cloud.providers import Provider


def test_aws_is_found_by_its_gardener_type() -> None:
    aws = clouds.get("aws")
    assert aws is not None and aws.name == "aws"
    scope = {"spec": {"region": "eu-central-1", "scope": {"aws": {"accountId": "1", "vpcNetwork": "shoot--kyma--c",
                                                                  "network": {"nodes": "10.250.0.0/16",
                                                                              "pods": "p", "services": "s"}}}}}
    assert aws.existing_ranges(scope) == ["10.250.0.0/16", "p", "s"]
    assert aws.network_reference(scope) == {"aws": {"awsAccountId": "1", "region": "eu-central-1",
                                                    "networkName": "shoot--kyma--c"}}


def test_unknown_provider_is_none() -> None:
    assert clouds.get("no-such-cloud") is None
    assert clouds.get("../etc") is None


def test_a_new_provider_plugs_in_without_touching_the_controllers(monkeypatch: pytest.MonkeyPatch) -> None:
    class Fake(Provider):
        name = "fakecloud"

        def scope_info(self, inputs: Any) -> dict[str, Any]:
            return {"project": "p"}

    monkeypatch.setitem(clouds.PROVIDERS, "fakecloud", Fake())
    found = clouds.get("fakecloud")
    assert isinstance(found, Fake)
    assert found.existing_ranges({"spec": {"scope": {}}}) == ["", "", ""]


def test_gcp_and_azure_come_from_their_packages() -> None:
    from tasks.cloud.providers import ScopeInputs

    gcp, azure = clouds.get("gcp"), clouds.get("azure")
    assert isinstance(gcp, GcpProvider) and isinstance(azure, AzureProvider)
    shoot = {"metadata": {"name": "c-1", "namespace": "garden-kyma"},
             "spec": {"networking": {"nodes": "10.250.0.0/22"}, "provider": {"workers": [{"zones": ["z-a"]}]}}}
    inputs = ScopeInputs("k", "us-east4", shoot, {"serviceaccount.json": '{"project_id": "p-1"}'},
                         "shoot--kyma--c-1", "garden-kyma")
    info = gcp.scope_info(inputs)
    assert info["project"] == "p-1" and info["workers"] == [{"zones": ["z-a"]}]
    broken = ScopeInputs("k", "us-east4", shoot, {}, "shoot--kyma--c-1", "garden-kyma")
    with pytest.raises(providers.ProviderError):
        gcp.scope_info(broken)


def test_only_an_azure_iprange_depends_on_a_kcp_vpcpeering() -> None:
    """The Azure IpRange's kyma peering (the original's kymaPeeringCreate); AWS and GCP ask for none."""
    from tasks.cloud.azure.vpcpeering_plan import kyma_peering

    scope = {"metadata": {"name": "k-1", "namespace": "kcp-system"},
             "spec": {"provider": "azure", "shootName": "c-1", "scope": {"azure": {"vpcNetwork": "shoot--kyma--c-1"}}}}
    azure = clouds.get("azure")
    assert azure is not None and azure.iprange_peering(scope) == kyma_peering(scope)
    assert azure.iprange_peering(scope)["metadata"]["name"] == "k-1"  # type: ignore[index]
    for name in ("aws", "gcp"):
        provider = clouds.get(name)
        assert provider is not None and provider.iprange_peering(scope) is None
