"""The occupied-host check's view of every VirtualService: the worker's VirtualService informer.

The occupied-host check (api-gateway's ``validateHosts``) compares an APIRule's hosts with the hosts
of every VirtualService of the cluster. Listing them all on each reconcile makes a pass over N
APIRules O(N²); like controller-runtime's cached client, each worker process instead reads the
cluster-wide VirtualService informer (:mod:`informers.informer`, the same store the owned
VirtualServices are read from) through an index ``first DNS label of a host -> objects``
(:data:`HOST_INDEX`).

Environment: ``RECONCILERY_APIRULE_VS_CACHE`` (``1``; ``0`` = no cache, list every VirtualService on
each reconcile; independent of ``RECONCILERY_INFORMERS``); how long the first use waits for the
initial list is the informers' ``RECONCILERY_INFORMER_SYNC_SECONDS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from informers import informer as informers
from informers.store import Store
from kube import Kube, Resource
from kube.toolkit.metrics import counter
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.settings import ApiGatewaySettings

HOST_INDEX = "apigateway-host-label"


VS_READS = counter(
    "reconcilery_apirule_virtualservice_reads_total",
    "Sources of the other VirtualServices of an occupied-host check: cache (the worker's informer "
    "cache) or list (a cluster-wide LIST: cache disabled or not ready).", ["source"])


def host_label(host: str) -> str:
    """The first DNS label of ``host`` (``"a"`` for ``a.b.c`` and for the short host ``a``).

    A short host completed with the Gateway's domain keeps its first label, so an APIRule host and
    a VirtualService host can only be equal when their first labels are."""
    return host.split(".", 1)[0]


def vs_hosts(obj: Mapping[str, Any] | None) -> list[str]:
    """``spec.hosts`` of a VirtualService (strings only; ``[]`` when absent or malformed)."""
    spec = (obj or {}).get("spec")
    hosts = spec.get("hosts") if isinstance(spec, dict) else None
    return [h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else []


def host_labels(obj: Mapping[str, Any]) -> set[str]:
    """The index function of :data:`HOST_INDEX`: first labels of the VirtualService's hosts."""
    return {host_label(h) for h in vs_hosts(obj)}


class VirtualServiceCache:
    """The occupied-host view of one informer store (every VirtualService of a cluster)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.add_indexer(HOST_INDEX, host_labels)

    def with_hosts(self, hosts: Iterable[str]) -> list[dict[str, Any]]:
        """Cached VirtualServices that may share a host with ``hosts`` (same first label: a
        superset of the exact matches the occupied-host check looks for). Read-only dicts."""
        return self.store.by_index(HOST_INDEX, {host_label(h) for h in hosts})

    def __len__(self) -> int:
        return len(self.store)


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """``RECONCILERY_APIRULE_VS_CACHE`` (on; independent of ``RECONCILERY_INFORMERS``: the host index
    predates the other cached reads), from ``environ`` or this process's settings."""
    return (domain_settings.current() if environ is None else ApiGatewaySettings.load(environ)).vs_cache


def cache_for(resource: Resource, kube: Kube, cluster: str = "") -> VirtualServiceCache | None:
    """The synced VirtualService view of ``kube``'s cluster in this process, its informer started
    on first use; ``None`` when disabled or not synced in time (the caller lists directly)."""
    if not enabled():
        return None
    informer = informers.synced_informer(kube, resource, always=True)
    if informer is None or not informer.served:
        return None
    return VirtualServiceCache(informer.store)


def reset() -> None:
    """Stop and forget every informer of this process (tests)."""
    informers.reset()


__all__ = ["HOST_INDEX", "VS_READS", "VirtualServiceCache", "cache_for", "enabled", "host_label",
           "host_labels", "reset", "vs_hosts"]
