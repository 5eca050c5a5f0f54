"""What the webhook knows about the cluster: whether a Kyma pool node exists, and namespace labels.

:class:`KubeClusterView` keeps both current with periodic lists through :mod:`kube` (the bootstrap
check of KIM Snatch, repeated: the webhook starts mutating once a pool node appears and stops when
the last one goes). A namespace missing from the cache (created since the last list) is read once
with a GET. :class:`StaticClusterView` is a fixed view for ``render``, tests and the benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from tasks.snatch import metrics
from tasks.snatch.mutate import POOL_LABEL

log = logging.getLogger("reconcilery.snatch.cluster")


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


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


class KubeClusterView:
    """Periodic pool-node check and namespace cache over a :class:`kube.Kube`.

    Args:
        kube_factory: builds the client (called once, lazily, in a worker thread).
        pool: the Kyma worker pool name.
        node_interval: seconds between pool node checks.
        namespace_interval: seconds between full namespace lists.
        lookup_timeout: seconds a cache-miss GET of a namespace may take during an admission.
    """

    def __init__(self, kube_factory: Callable[[], Any], pool: str, node_interval: float = 10.0,
                 namespace_interval: float = 30.0, lookup_timeout: float = 2.0) -> None:
        self._kube_factory = kube_factory
        self._kube: Any = None
        self.pool = pool
        self.node_interval = node_interval
        self.namespace_interval = namespace_interval
        self.lookup_timeout = lookup_timeout
        self._present = False
        self._checked = False
        self._last_check = float("-inf")
        self._namespaces: dict[str, dict[str, str]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()

    @property
    def pool_node_present(self) -> bool:
        return self._present

    @property
    def checked(self) -> bool:
        """Whether the pool node check has completed at least once."""
        return self._checked

    def _client(self) -> Any:
        if self._kube is None:
            self._kube = self._kube_factory()
        return self._kube

    # ---- pool node check -------------------------------------------------------------------

    def _list_pool_nodes(self) -> list[dict[str, Any]]:
        from kube import resources

        result: list[dict[str, Any]] = self._client().list(resources.NODE,
                                                           label_selector=f"{POOL_LABEL}={self.pool}")
        return result

    async def pool_node_present_now(self, min_interval: float = 1.0) -> bool:
        """Like :attr:`pool_node_present`, but when no pool node is known, list the nodes again if the
        last check is older than ``min_interval`` seconds: a node that joined a moment ago (e.g. applied
        together with the Pods) is seen at once instead of after the periodic check."""
        if not self._present and time.monotonic() - self._last_check >= min_interval:
            await self.check_nodes()
        return self._present

    async def check_nodes(self) -> bool:
        """List nodes of the pool once and update the mode. On an API error the mode is unchanged."""
        self._last_check = time.monotonic()
        try:
            nodes = await asyncio.to_thread(self._list_pool_nodes)
        except Exception as exc:
            metrics.CLUSTER_CHECK_ERRORS.labels("nodes").inc()
            log.error("pool node check failed pool=%s error=%s", self.pool, exc)
            return self._present
        present = bool(nodes)
        if present != self._present or not self._checked:
            if present:
                metrics.SHOOTS_DEFAULT.inc()
                log.info("kyma worker pool node found, mutating pods pool=%s nodes=%d", self.pool, len(nodes))
            else:
                metrics.SHOOTS_FALLBACK.inc()
                log.error("%s=%s does not exist, pods are left unchanged", POOL_LABEL, self.pool)
        self._present, self._checked = present, True
        metrics.POOL_NODE_PRESENT.set(1 if present else 0)
        return present

    # ---- namespace cache -------------------------------------------------------------------

    def _list_namespaces(self) -> list[dict[str, Any]]:
        from kube import resources

        result: list[dict[str, Any]] = self._client().list(resources.NAMESPACE)
        return result

    def _get_namespace(self, name: str) -> dict[str, Any] | None:
        from kube import resources

        result: dict[str, Any] | None = self._client().get(resources.NAMESPACE, name)
        return result

    async def refresh_namespaces(self) -> None:
        """Replace the cache with a fresh list; on an API error the old cache stays."""
        try:
            items = await asyncio.to_thread(self._list_namespaces)
        except Exception as exc:
            metrics.CLUSTER_CHECK_ERRORS.labels("namespaces").inc()
            log.error("namespace list failed error=%s", exc)
            return
        self._namespaces = {(ns.get("metadata") or {}).get("name", ""): _labels(ns) for ns in items}
        metrics.NAMESPACE_CACHE_SIZE.set(len(self._namespaces))

    async def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        cached = self._namespaces.get(namespace)
        if cached is not None or not namespace:
            return cached
        try:
            obj = await asyncio.wait_for(asyncio.to_thread(self._get_namespace, namespace), self.lookup_timeout)
        except Exception as exc:
            metrics.CLUSTER_CHECK_ERRORS.labels("namespaces").inc()
            log.warning("namespace lookup failed namespace=%s error=%r", namespace, exc)
            return None
        if obj is None:
            return None
        labels = _labels(obj)
        self._namespaces[namespace] = labels
        metrics.NAMESPACE_CACHE_SIZE.set(len(self._namespaces))
        return labels

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Run the first checks (so the first admission sees a known mode), then the loops."""
        self._stop.clear()
        await asyncio.gather(self.check_nodes(), self.refresh_namespaces())
        self._tasks = [
            asyncio.create_task(self._every(self.node_interval, self.check_nodes)),
            asyncio.create_task(self._every(self.namespace_interval, self.refresh_namespaces)),
        ]

    async def _every(self, interval: float, step: Callable[[], Any]) -> None:
        next_at = time.monotonic() + interval
        while not self._stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stop.wait(), max(0.0, next_at - time.monotonic()))
            if self._stop.is_set():
                return
            next_at = time.monotonic() + interval
            await step()

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
