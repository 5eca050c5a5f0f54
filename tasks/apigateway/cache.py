"""Per-process informer cache of every VirtualService, for the occupied-host check.

The occupied-host check (api-gateway's ``validateHosts``) compares an APIRule's hosts with the hosts
of every VirtualService of the cluster. Listing them all on each reconcile makes a pass over N
APIRules O(N²); like controller-runtime's cached client, each worker process instead keeps one
list + watch of VirtualServices (all namespaces) per cluster through the watch engine
(:class:`watchers.engine.WatchManager`, a registration that enqueues nothing) and answers the check
from memory, through an index ``first DNS label of a host -> objects``.

The cache may lag writes by a few milliseconds: the controller therefore keeps reading the APIRule's
*own* VirtualServices directly (owner label selectors) and only takes the others from here (see
``tasks.apigateway.controller.read_state``).

Environment: ``RECONCILERY_APIRULE_VS_CACHE`` (``1``; ``0`` = no cache, list every VirtualService on
each reconcile as before), ``RECONCILERY_APIRULE_VS_CACHE_READY_SECONDS`` (5: how long the first use
in a process waits for the initial list before falling back to a direct list).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from prometheus_client import REGISTRY, Counter

from kube import Kube, Resource
from watchers.cache import ObjectKey, Store, object_key
from watchers.engine import Stores, WatchEvent, WatchManager, WatchRegistration
from workers.controller import Key

log = structlog.get_logger("tasks.apigateway.cache")

REGISTRATION = "apigateway-vs-cache"


def _counter(name: str, doc: str, labels: list[str]) -> Any:
    try:
        return Counter(name, doc, labels)
    except ValueError:  # re-imported module: the registered one
        return REGISTRY._names_to_collectors[name]


VS_READS = _counter(
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


class HostIndex:
    """Thread-safe ``first host label -> {(namespace, name)}`` of the cached VirtualServices."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, set[ObjectKey]] = {}

    def update(self, type_: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        """Record one store change (``old``: the object before, ``None`` if new)."""
        key = object_key(obj)
        before = {host_label(h) for h in vs_hosts(old)}
        after = set() if type_ == "DELETED" else {host_label(h) for h in vs_hosts(obj)}
        with self._lock:
            for label in before - after:
                keys = self._keys.get(label)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._keys[label]
            for label in after:
                self._keys.setdefault(label, set()).add(key)

    def keys_for(self, labels: Iterable[str]) -> set[ObjectKey]:
        """Keys of the objects with a host whose first label is one of ``labels``."""
        with self._lock:
            return {k for label in labels for k in self._keys.get(label, ())}


class VirtualServiceCache:
    """A watch-fed cache of every VirtualService of one cluster.

    Args:
        resource: the VirtualService resource reference.
        kube: the cluster's client; ``cluster``: its name.
    """

    def __init__(self, resource: Resource, kube: Kube, cluster: str) -> None:
        self.kube = kube
        self.index = HostIndex()
        registration = WatchRegistration(REGISTRATION, resource, None, None, self._map_event)
        self.manager = WatchManager([registration], enqueue=_no_enqueue, cluster=cluster, kube=kube)
        self.store: Store = self.manager.stores.store(REGISTRATION)

    def _map_event(self, event: WatchEvent, _stores: Stores) -> list[tuple[str, Key]]:
        self.index.update(event.type, event.object, event.old)
        return []

    def start(self) -> VirtualServiceCache:
        self.manager.start()
        return self

    def stop(self) -> None:
        self.manager.stop()

    def ready(self) -> bool:
        """Whether the initial list is done (the kind not being served counts as done: empty)."""
        return self.manager.ready()

    def wait_ready(self, timeout: float) -> bool:
        return self.manager.wait_ready(timeout)

    def with_hosts(self, hosts: Iterable[str]) -> list[dict[str, Any]]:
        """Cached VirtualServices that may share a host with ``hosts`` (same first label: a
        superset of the exact matches the occupied-host check looks for). Read-only dicts."""
        keys = self.index.keys_for({host_label(h) for h in hosts})
        return [obj for k in sorted(keys) if (obj := self.store.get(k[0], k[1])) is not None]

    def __len__(self) -> int:
        return len(self.store)


def _no_enqueue(_controller: str, _key: Key) -> None:
    return None


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """``RECONCILERY_APIRULE_VS_CACHE`` is not ``0``/``false``/``no``/``off``."""
    env = os.environ if environ is None else environ
    return env.get("RECONCILERY_APIRULE_VS_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def ready_timeout(environ: Mapping[str, str] | None = None) -> float:
    """``RECONCILERY_APIRULE_VS_CACHE_READY_SECONDS`` (5). Raises ``ValueError`` on a bad value."""
    env = os.environ if environ is None else environ
    raw = env.get("RECONCILERY_APIRULE_VS_CACHE_READY_SECONDS", "").strip()
    try:
        return max(0.0, float(raw)) if raw else 5.0
    except ValueError:
        raise ValueError(f"RECONCILERY_APIRULE_VS_CACHE_READY_SECONDS={raw!r}: expected seconds") from None


_lock = threading.Lock()
#: cluster -> (pid that started it, cache). A forked child starts its own (threads do not survive fork).
_caches: dict[str, tuple[int, VirtualServiceCache]] = {}


def cache_for(resource: Resource, kube: Kube, cluster: str) -> VirtualServiceCache | None:
    """The ready VirtualService cache of ``cluster`` in this process, started on first use; ``None``
    when disabled or not ready (the caller lists directly).

    The first use waits up to :func:`ready_timeout` seconds for the initial list; later calls never
    wait. A cache built on another ``kube`` client (the cluster's client was replaced) is stopped
    and rebuilt."""
    if not enabled():
        return None
    pid = os.getpid()
    stale: VirtualServiceCache | None = None
    with _lock:
        entry = _caches.get(cluster)
        if entry is not None and entry[0] == pid and entry[1].kube is kube:
            cache = entry[1]
            fresh = False
        else:
            if entry is not None and entry[0] == pid:
                stale = entry[1]
            cache = VirtualServiceCache(resource, kube, cluster).start()
            _caches[cluster] = (pid, cache)
            fresh = True
    if stale is not None:
        stale.stop()
    if cache.ready():
        return cache
    if fresh and cache.wait_ready(ready_timeout()):
        log.info("virtualservice cache ready", cluster=cluster, objects=len(cache))
        return cache
    if fresh:
        log.warning("virtualservice cache not ready, listing directly", cluster=cluster)
    return None


def reset() -> None:
    """Stop and forget every cache of this process (tests; a process whose clusters changed)."""
    with _lock:
        old = [cache for pid, cache in _caches.values() if pid == os.getpid()]
        _caches.clear()
    for cache in old:
        cache.stop()


__all__ = ["VS_READS", "HostIndex", "VirtualServiceCache", "cache_for", "enabled", "host_label", "reset",
           "vs_hosts"]
