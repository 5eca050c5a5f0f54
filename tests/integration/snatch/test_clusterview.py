"""The webhook's cluster view on the watch engine's stores: a pool node and namespace labels appear
through the watch (no polling); misses are looked up directly."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from kube import Kube, resources
from kube.kubeconfig import from_kubeconfig
from tasks.snatch.clusterview import NAMESPACES, KubeClusterView
from tasks.snatch.mutate import MANAGED_BY_LABEL
from tests.integration.snatch.conftest import POOL, add_namespace, add_pool_node


async def _until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def _started(kubeconfig: str, node_interval: float) -> AsyncIterator[KubeClusterView]:
    """A started view of the test cluster's pool, stopped on leaving."""
    view = KubeClusterView(lambda: Kube(from_kubeconfig(kubeconfig), timeout=5), POOL, node_interval=node_interval)
    await view.start()
    try:
        yield view
    finally:
        await view.stop()


def test_pool_node_and_namespaces_follow_the_watch(api: tuple[Kube, str]) -> None:
    kube, kubeconfig = api

    async def scenario() -> None:
        # node_interval of an hour: only the watch can flip the mode after the first direct check
        async with _started(kubeconfig, node_interval=3600) as view:
            assert view.checked and not view.pool_node_present
            assert not await view.pool_node_present_now()
            add_pool_node(kube)
            await _until(lambda: view.pool_node_present)
            assert await view.pool_node_present_now()
            kube.delete(resources.NODE, "kyma-node-0")
            await _until(lambda: not view.pool_node_present)

            add_namespace(kube, "shop", managed=True)
            # at once (a GET when the watch has not delivered it yet), then from the store
            assert (await view.namespace_labels("shop") or {}).get(MANAGED_BY_LABEL) == "kyma"
            await _until(lambda: view.stores.get(NAMESPACES, None, "shop") is not None)
            kube.patch(resources.NAMESPACE, "shop", {"metadata": {"labels": {"team": "a"}}})
            await _until(lambda: (view.stores.get(NAMESPACES, None, "shop") or {})
                         .get("metadata", {}).get("labels", {}).get("team") == "a")
            assert (await view.namespace_labels("shop") or {}).get("team") == "a"
            assert await view.namespace_labels("missing") is None

    asyncio.run(scenario())


def test_a_node_applied_with_the_pods_counts_before_its_watch_event(api: tuple[Kube, str]) -> None:
    kube, kubeconfig = api

    async def scenario() -> None:
        async with _started(kubeconfig, node_interval=0.0) as view:
            view._present = False  # as if the watch event had not arrived yet
            add_pool_node(kube)
            view._present = False
            assert await view.pool_node_present_now()  # the direct list on a miss sees it

    asyncio.run(scenario())
