"""The providers of Cloud Resources by their Gardener type: one static table, imported explicitly (no
lookup by module name). A Scope's ``spec.provider`` selects one; any other type is unknown (the
controllers report it). A new provider is its package and one entry here.

The kinds' own provider parts are declared with each kind (:attr:`tasks.cloud.registry.Kind.providers`);
this table holds what is not a kind's: the Scope, the IpRange and the Network.
"""

from __future__ import annotations

from tasks.cloud.aws.provider import AwsProvider
from tasks.cloud.azure.provider import AzureProvider
from tasks.cloud.gcp.provider import GcpProvider
from tasks.cloud.providers import Provider

__all__ = ["PROVIDERS", "get"]

#: Gardener provider type -> its provider.
PROVIDERS: dict[str, Provider] = {p.name: p for p in (AwsProvider(), GcpProvider(), AzureProvider())}


def get(name: str) -> Provider | None:
    """The provider of type ``name``; ``None`` for an unknown one (never an import: ``name`` comes from a
    Scope, which is built from a Shoot)."""
    return PROVIDERS.get(name)
