"""Fixtures of the GCP tests: a running GCP stand-in (stopped at teardown) and SDK clients aimed at it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import googleapiclient
import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1
from googleapiclient import discovery

from standins.gcp import GcpStandIn
from tests.fixtures.processes import served

PROJECT = "sap-kyma-example-42"
VPC = "shoot--kyma--c-91b7d03"
NETWORK = f"projects/{PROJECT}/global/networks/{VPC}"
NETWORK_URL = f"https://www.googleapis.com/compute/v1/{NETWORK}"


@pytest.fixture
def gcp() -> Iterator[GcpStandIn]:
    """A GCP stand-in whose operations finish 50 ms after they start; the test project is known."""
    yield from served(GcpStandIn(op_delay=0.05, projects=(PROJECT,)).start())


@pytest.fixture
def gcp_vpc() -> Iterator[GcpStandIn]:
    """A GCP stand-in whose operations finish 10 ms after they start, with the shoot's VPC network."""
    standin = GcpStandIn(op_delay=0.01, projects=(PROJECT,))
    standin.state.put_network(PROJECT, VPC)  # seeded before it serves: nothing to stop if this fails
    yield from served(standin.start())


def conforms(api: str, schema: str, body: dict[str, Any], version: str = "v1") -> None:
    """Every field of ``body`` is one the discovery schema ``schema`` of ``api`` defines (recursively for
    $ref fields), per the discovery document google-api-python-client ships."""
    path = os.path.join(os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents",
                        f"{api}.{version}.json")
    with open(path) as f:
        props = dict(json.load(f)["schemas"][schema]).get("properties", {})
    for key, value in body.items():
        if key == "@type":
            continue
        assert key in props, f"{schema}.{key} is not in the {api} discovery schema"
        ref = props[key].get("$ref")
        if ref and isinstance(value, dict):
            conforms(api, ref, value, version)


def compute_kwargs(standin: GcpStandIn) -> dict[str, Any]:
    return {"credentials": AnonymousCredentials(), "transport": "rest",
            "client_options": ClientOptions(api_endpoint=standin.url)}


def discovery_client(standin: GcpStandIn, api: str) -> Any:
    """An unmodified google-api-python-client service built from its bundled discovery document."""
    return discovery.build(api, "v1", credentials=AnonymousCredentials(), static_discovery=True,
                           cache_discovery=False, client_options={"api_endpoint": standin.url})


@pytest.fixture
def addresses(gcp: GcpStandIn) -> compute_v1.GlobalAddressesClient:
    """GlobalAddressesClient on the stand-in, with ExtendedOperation polling aimed there too."""
    client = compute_v1.GlobalAddressesClient(**compute_kwargs(gcp))
    client._transport._extended_operations_services["global_operations"] = compute_v1.GlobalOperationsClient(
        **compute_kwargs(gcp))
    return client


@pytest.fixture
def operations(gcp: GcpStandIn) -> compute_v1.GlobalOperationsClient:
    return compute_v1.GlobalOperationsClient(**compute_kwargs(gcp))


# -- driving the IpRange step as the KCP controller would ------------------------------------------------

def kcp_iprange(name: str = "4b0c1a2e-iprange", cidr: str = "10.250.4.0/22", remote_name: str = "default",
                status: dict[str, Any] | None = None) -> dict[str, Any]:
    """A KCP IpRange as the SKR loop projects it (notes §2.5)."""
    return {"apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "IpRange",
            "metadata": {"name": name, "namespace": "kcp-system", "finalizers": [
                "cloud-manager.kyma-project.io/deletion-hook"]},
            "spec": {"cidr": cidr, "scope": {"name": "kyma-1"}, "remoteRef": {"namespace": "", "name": remote_name},
                     "network": {"name": "kyma-1--kyma"}},
            "status": dict(status or {})}


def gcp_scope(project: str = PROJECT, vpc: str = VPC) -> dict[str, Any]:
    return {"metadata": {"name": "kyma-1", "namespace": "kcp-system"},
            "spec": {"kymaName": "kyma-1", "shootName": "c-91b7d03", "region": "us-east4", "provider": "gcp",
                     "scope": {"gcp": {"project": project, "vpcNetwork": vpc, "network": {
                         "nodes": "10.250.0.0/22", "pods": "10.96.0.0/13", "services": "10.104.0.0/13"},
                         "workers": [{"zones": ["us-east4-a", "us-east4-b", "us-east4-c"]}]}}}}
