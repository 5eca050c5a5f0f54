"""Fixtures of the Azure tests: an HTTPS ARM stand-in (stopped at teardown) and SDK clients aimed at it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken

from standins.azure import AzureStandIn, make_tls
from tests.fixtures.processes import served

SUBSCRIPTION = "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44"
TENANT = "8e7d6c5b-0000-4a3b-8c2d-1e0f9a8b7c6d"
REGION = "northeurope"


class FakeCredential:
    """A TokenCredential whose token the stand-in accepts (it only checks that a bearer is sent)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("stand-in-token", int(time.time()) + 3600)


@pytest.fixture(scope="session")
def azure_tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    """One CA and server certificate for the session: (server SSL context, path of ca.crt)."""
    return make_tls(str(tmp_path_factory.mktemp("azure-tls")))


@pytest.fixture
def azure(azure_tls: tuple[Any, str]) -> Iterator[AzureStandIn]:
    """An HTTPS ARM stand-in whose operations end 50 ms after they start."""
    yield from served(AzureStandIn(op_delay=0.05, ssl_context=azure_tls[0]).start())


@pytest.fixture
def azure_http() -> Iterator[AzureStandIn]:
    """A plain-HTTP ARM stand-in (clients then need the layer's bearer-over-HTTP policy)."""
    yield from served(AzureStandIn(op_delay=0.05).start())


def sdk_kwargs(standin: AzureStandIn, ca: str) -> dict[str, Any]:
    return {"base_url": standin.url, "polling_interval": 0, "connection_verify": ca}


def ca_path(azure_tls: tuple[Any, str]) -> str:
    return str(Path(azure_tls[1]))


# -- the KCP IpRange and Scope, and driving the step as the KCP controller would ------------------------

SHOOT = "c-0a2e6f9"
VPC = f"shoot--kyma--{SHOOT}"
KYMA = "kyma-az"


def kcp_iprange(name: str = "7c2d-iprange", cidr: str = "10.251.0.0/22", network: str = f"{KYMA}--cm",
                status: dict[str, Any] | None = None) -> dict[str, Any]:
    """A KCP IpRange as the SKR loop projects it on Azure (network ``<kyma>--cm``, notes §2.5)."""
    return {"apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "IpRange",
            "metadata": {"name": name, "namespace": "kcp-system"},
            "spec": {"cidr": cidr, "scope": {"name": KYMA}, "remoteRef": {"namespace": "", "name": "default"},
                     "network": {"name": network}},
            "status": dict(status or {})}


def azure_scope() -> dict[str, Any]:
    return {"metadata": {"name": KYMA, "namespace": "kcp-system"},
            "spec": {"kymaName": KYMA, "shootName": SHOOT, "region": REGION, "provider": "azure",
                     "scope": {"azure": {"tenantId": TENANT, "subscriptionId": SUBSCRIPTION, "vpcNetwork": VPC,
                                         "network": {"cidr": "10.250.0.0/16", "nodes": "10.250.0.0/16",
                                                     "pods": "100.64.0.0/12", "services": "100.104.0.0/13",
                                                     "zones": [{"name": "1", "cidr": "10.250.0.0/19"}]}}}}}
