"""What the webhook knows about the cluster: whether a Kyma pool node exists, and namespace labels.

:class:`KubeClusterView` keeps both in informer stores (:class:`informers.reflector.Reflector`: list +
watch, resume, relist on 410, each into its :class:`informers.store.Store`): the Nodes of the pool
(server-side label selector) and every Namespace.
The webhook starts mutating once a pool node is in the store and stops when the last one goes (KIM
Snatch's bootstrap check, kept current by the watch instead of by polling). Two on-miss lookups
cover the watch's lag: a namespace missing from the store (created a moment ago) is read once with a
GET, and when no pool node is known, an admission lists the pool's nodes directly (rate-limited), so a
node applied together with the Pods counts at once. :class:`StaticClusterView` is a fixed view for
``render``, tests and the benchmark.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from informers.reflector import Reflector
from informers.store import RawEvent, Stores
from kube import resources
from tasks.snatch import metrics
from tasks.snatch.mutate import POOL_LABEL

log = logging.getLogger("reconcilery.snatch.cluster")

NODES = "snatch-pool-nodes"
NAMESPACES = "snatch-namespaces"


class ClusterView(Protocol):
    """The webhook's read-only view of the cluster."""

    @property
    def pool_node_present(self) -> bool: ...

    async def pool_node_present_now(self) -> bool:
        """Whether a pool node exists, re-checked (rate-limited) when none is known."""
        ...

    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """Labels of ``namespace``; ``None`` when it does not exist or cannot be read."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class StaticClusterView:
    """A fixed view: ``namespaces`` maps a namespace name to its labels."""

    def __init__(self, pool_node_present: bool, namespaces: Mapping[str, Mapping[str, str]]) -> None:
        self._present = pool_node_present
        self._namespaces = dict(namespaces)

    @property
    def pool_node_present(self) -> bool:
        return self._present

    async def pool_node_present_now(self) -> bool:
        return self._present

    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._namespaces.get(namespace)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class _Reflector(Reflector):
    """A reflector that calls ``changed()`` after every (re)list and watch event."""

    def __init__(self, name: str, changed: Callable[[], None], *args: Any) -> None:
        super().__init__(name, *args)
        self._changed = changed

    def on_list(self, changes: list[RawEvent]) -> None:
        self._changed()

    def on_event(self, change: RawEvent) -> Sequence[Any]:
        self._changed()
        return ()


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


@dataclass(eq=False)
class KubeClusterView:
    """Pool-node check and namespace labels from watch-fed stores over a :class:`kube.Kube`.

    Args:
        kube_factory: builds the client (called once, lazily, in a worker thread).
        pool: the Kyma worker pool name.
        node_interval: shortest time (seconds) between two direct pool-node lists on a miss.
        namespace_interval: unused (the namespace store is kept current by the watch); kept so
            existing callers and ``--namespace-resync`` keep working.
        lookup_timeout: seconds a cache-miss GET of a namespace may take during an admission.
        ready_timeout: seconds :meth:`start` waits for the initial lists.
    """

    kube_factory: Callable[[], Any]
    pool: str
    node_interval: float = 10.0
    namespace_interval: float = 30.0
    lookup_timeout: float = 2.0
    ready_timeout: float = 10.0

    def __post_init__(self) -> None:
        self._kube: Any = None
        self._present = False
        self._logged: bool | None = None
        self._last_check = float("-inf")
        self._last_direct = False
        #: the informer stores by name (:data:`NODES`, :data:`NAMESPACES`), kept by :attr:`_reflectors`
        self.stores = Stores()
        self._reflectors: list[Reflector] = []

    @property
    def pool_node_present(self) -> bool:
        return self._present

    @property
    def checked(self) -> bool:
        """Whether the initial list of the pool's nodes has completed."""
        return any(r.name == NODES and r.listed.is_set() for r in self._reflectors)

    def _client(self) -> Any:
        if self._kube is None:
            self._kube = self.kube_factory()
        return self._kube

    # ---- informer stores -------------------------------------------------------------------

    def _build(self) -> list[Reflector]:
        kube = self._client()
        cluster = str(getattr(kube, "cluster", "local"))
        self.stores = Stores()  # fresh stores for every start
        return [
            _Reflector(NODES, self._on_node, resources.NODE, None, f"{POOL_LABEL}={self.pool}", None, kube,
                       self.stores.add(NODES), cluster),
            _Reflector(NAMESPACES, self._on_namespace, resources.NAMESPACE, None, None, None, kube,
                       self.stores.add(NAMESPACES), cluster),
        ]

    def _on_node(self) -> None:
        nodes = len(self.stores.store(NODES))
        self._set_present(bool(nodes), nodes)

    def _on_namespace(self) -> None:
        metrics.NAMESPACE_CACHE_SIZE.set(len(self.stores.store(NAMESPACES)))

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(r.listed.wait(max(0.0, deadline - time.monotonic())) for r in self._reflectors)

    def _set_present(self, present: bool, nodes: int) -> None:
        self._present = present
        metrics.POOL_NODE_PRESENT.set(1 if present else 0)
        if present != self._logged:
            self._logged = present
            if present:
                metrics.SHOOTS_DEFAULT.inc()
                log.info("kyma worker pool node found, mutating pods pool=%s nodes=%d", self.pool, nodes)
            else:
                metrics.SHOOTS_FALLBACK.inc()
                log.error("%s=%s does not exist, pods are left unchanged", POOL_LABEL, self.pool)

    # ---- pool node check -------------------------------------------------------------------

    def _list_pool_nodes(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._client().list(resources.NODE,
                                                           label_selector=f"{POOL_LABEL}={self.pool}")
        return result

    async def pool_node_present_now(self, min_interval: float | None = None) -> bool:
        """Like :attr:`pool_node_present`, but when the store has no pool node, list the pool's nodes
        directly (at most every ``min_interval`` seconds, default ``node_interval``): a node that
        joined a moment ago (e.g. applied together with the Pods) counts before its watch event."""
        if self._present:
            return True
        interval = self.node_interval if min_interval is None else min_interval
        if time.monotonic() - self._last_check >= interval:
            self._last_direct = await self.check_nodes()
        return self._present or self._last_direct

    async def check_nodes(self) -> bool:
        """List the pool's nodes once, directly; ``False`` (and an error count) on an API error."""
        self._last_check = time.monotonic()
        try:
            nodes = await asyncio.to_thread(self._list_pool_nodes)
        except Exception as exc:
            metrics.CLUSTER_CHECK_ERRORS.labels("nodes").inc()
            log.error("pool node check failed pool=%s error=%s", self.pool, exc)
            return False
        return bool(nodes)

    # ---- namespaces ------------------------------------------------------------------------

    def _get_namespace(self, name: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self._client().get(resources.NAMESPACE, name)
        return result

    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        if not namespace:
            return None
        if self._reflectors:
            cached = self.stores.get(NAMESPACES, None, namespace)
            if cached is not None:
                return _labels(cached)
        try:  # not (yet) in the store: created a moment ago, or the watch is behind
            obj = await asyncio.wait_for(asyncio.to_thread(self._get_namespace, namespace), self.lookup_timeout)
        except Exception as exc:
            metrics.CLUSTER_CHECK_ERRORS.labels("namespaces").inc()
            log.warning("namespace lookup failed namespace=%s error=%r", namespace, exc)
            return None
        return _labels(obj) if obj is not None else None

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the watches and wait (up to ``ready_timeout``) for their initial lists, so the first
        admission sees a known mode."""
        self._reflectors = await asyncio.to_thread(self._build)
        for reflector in self._reflectors:
            reflector.start()
        if not await asyncio.to_thread(self._wait_ready, self.ready_timeout):
            log.warning("cluster view not ready after %.0f s; on-miss lookups answer meanwhile", self.ready_timeout)
        self._on_node()
        self._on_namespace()

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop the watches, waiting up to ``timeout`` seconds in total for their threads."""
        reflectors, self._reflectors = self._reflectors, []
        for reflector in reflectors:
            reflector.stop()
        deadline = time.monotonic() + timeout
        for reflector in reflectors:
            await asyncio.to_thread(reflector.join, max(0.0, deadline - time.monotonic()))
