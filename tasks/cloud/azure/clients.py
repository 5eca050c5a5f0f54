"""The Azure ARM clients of this process (cached per subscription, tenant and endpoint: their transports
are reused by every turn).

``network(settings, scope)``: the Scope's subscription with ``AZURE_TENANT_ID`` (else the Scope's
tenant), ``AZURE_CLIENT_ID`` / ``AZURE_CLIENT_SECRET``, at ``RECONCILERY_AZURE_ENDPOINT_URL`` (the
stand-in); ``on_network(cls, settings, scope)``: a kind's client (Azure Cache for Redis, ...) on the same
credentials, so a new kind's client needs no edit here; ``peering(...)``:
the peering credentials (``AZURE_PEERING_CLIENT_*``, else the default ones) of any subscription and
tenant, with auxiliary tenants. Building one imports its Azure SDK (inside the client's constructor).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tasks.cloud.azure import metrics as azure_metrics
from tasks.cloud.azure.client import AzureClient
from tasks.cloud.settings import CloudSettings

__all__ = ["network", "on_network", "peering", "scope_azure"]

C = TypeVar("C")
_lock = threading.Lock()
_clients: dict[tuple[str, ...], Any] = {}


def _cached(key: tuple[str, ...], build: Callable[[], C]) -> C:
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = build()
        return client


def scope_azure(scope: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.scope.azure`` of a Scope (``{}`` when missing)."""
    return ((scope.get("spec") or {}).get("scope") or {}).get("azure") or {}


def network(settings: CloudSettings, scope: Mapping[str, Any]) -> AzureClient:
    """The ARM network client of the Scope's subscription. Raises ``ValueError`` for unusable credentials."""
    azure = scope_azure(scope)
    subscription = str(azure.get("subscriptionId") or "")
    base_url = settings.azure_endpoint_url or None
    tenant = settings.azure_tenant_id or str(azure.get("tenantId") or "")
    return _cached(("azure", subscription, base_url or ""), lambda: AzureClient(
        subscription, base_url=base_url, tenant_id=tenant, client_id=settings.azure_client_id,
        client_secret=settings.azure_client_secret))


def on_network(build: Callable[..., C], settings: CloudSettings, scope: Mapping[str, Any]) -> C:
    """The process's client of class ``build`` for the Scope's subscription, built once as
    ``build(network, base_url=...)`` on :func:`network`'s client and credentials (Azure Cache for Redis:
    ``AzureRedisClient``). Raises ``ValueError`` for unusable credentials."""
    net = network(settings, scope)
    base_url = settings.azure_endpoint_url or None
    name = f"{build.__module__}.{getattr(build, '__qualname__', build)}"
    # a kind's client builds its own ARM clients: their attempts are counted too (tasks.cloud.provider_metrics)
    return _cached((name, net.subscription_id, base_url or ""),
                   lambda: azure_metrics.instrument(build(net, base_url=base_url)))


def peering(settings: CloudSettings, subscription: str, tenant: str, auxiliary: tuple[str, ...] = ()) -> AzureClient:
    """An ARM client of ``subscription`` in ``tenant`` with the peering credentials (``AZURE_PEERING_CLIENT_*``,
    else the default ones) and ``auxiliary`` tenants. Raises ``ValueError`` for unusable credentials."""
    base_url = settings.azure_endpoint_url or None
    client_id = settings.azure_peering_client_id or settings.azure_client_id
    secret = settings.azure_peering_client_secret or settings.azure_client_secret
    return _cached(("azure-peering", subscription, tenant, ",".join(auxiliary), base_url or "", client_id),
                   lambda: AzureClient(subscription, base_url=base_url, tenant_id=tenant, client_id=client_id,
                                       client_secret=secret, auxiliary_tenants=auxiliary))
