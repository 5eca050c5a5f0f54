"""The worker's VirtualService cache (``tasks.apigateway.cache``) behind the occupied-host check."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from tasks.apigateway import cache as vs_cache
from tasks.apigateway import controller
from tests.fixtures.processes import wait_for
from tests.integration.apigateway.conftest import AGW, example
from workers.controller import Key

pytestmark = pytest.mark.integration

VS = controller.OWNED["VirtualService"]


def reads(source: str) -> float:
    value = REGISTRY.get_sample_value("reconcilery_apirule_virtualservice_reads_total", {"source": source})
    return value or 0.0


def reconcile(name: str) -> Any:
    return controller.reconcile(Key("local", "shop", name))


def foreign_vs(host: str) -> dict[str, Any]:
    return {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
            "metadata": {"name": "someone-else", "namespace": "default"},
            "spec": {"hosts": [host], "gateways": ["kyma-system/kyma-gateway"],
                     "http": [{"route": [{"destination": {"host": "x.default.svc.cluster.local"}}]}]}}


def test_occupied_host_check_reads_the_cache_and_sees_a_foreign_virtualservice(agw: AGW) -> None:
    agw.create(example("httpbin-public"))
    cached, listed = reads("cache"), reads("list")
    reconcile("httpbin-public")
    assert reads("cache") == cached + 1 and reads("list") == listed  # no cluster-wide LIST
    cache = vs_cache.cache_for(VS, agw.kube, "local")
    assert cache is not None and len(cache) == 1  # the cache saw our own VirtualService

    # someone else takes orders' host; the check sees it within a short wait, not only after a relist
    agw.kube.create(VS, foreign_vs("orders.local.kyma.dev"))
    wait_for(lambda: len(cache.with_hosts(["orders.local.kyma.dev"])) == 1, timeout=5,
             message="foreign VirtualService in the cache")
    agw.create(example("orders"))
    reconcile("orders")
    status = agw.get("orders")["status"]  # type: ignore[index]
    assert status["state"] == "Error"
    assert "Attribute '.spec.hosts[0]': Host is occupied by another Virtual Service" in status["description"]
    assert agw.owned("orders")["VirtualService"] == []

    # the foreign one goes away: orders becomes Ready, with exactly one VirtualService
    agw.kube.delete(VS, "someone-else", "default")
    wait_for(lambda: not cache.with_hosts(["orders.local.kyma.dev"]), timeout=5, message="deletion cached")
    reconcile("orders")
    assert agw.get("orders")["status"]["state"] == "Ready"  # type: ignore[index]
    assert len(agw.owned("orders")["VirtualService"]) == 1


def test_own_virtualservice_is_never_duplicated_when_the_cache_lags(agw: AGW) -> None:
    agw.create(example("orders"))
    for _ in range(5):  # back to back: the cache may not have seen the create yet
        reconcile("orders")
    assert len(agw.owned("orders")["VirtualService"]) == 1
    assert agw.get("orders")["status"]["state"] == "Ready"  # type: ignore[index]


def test_cache_disabled_lists_every_virtualservice(agw: AGW, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILERY_APIRULE_VS_CACHE", "0")
    agw.kube.create(VS, foreign_vs("orders.local.kyma.dev"))
    agw.create(example("orders"))
    listed = reads("list")
    reconcile("orders")
    assert reads("list") == listed + 1
    assert agw.get("orders")["status"]["state"] == "Error"  # type: ignore[index]
