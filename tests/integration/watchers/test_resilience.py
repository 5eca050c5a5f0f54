"""The watch engine against misbehaving servers: silent watches, watches dropped at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from informers.store import Stores
from kube import ApiError, Kube, resources
from kube.kubeconfig import from_kubeconfig_dict
from kubedev import DevAPIServer, kubeconfig_dict
from tests.fixtures.processes import wait_for
from watchers import WatchManager, WatchRegistration
from watchers import metrics as watch_metrics
from watchers.engine import ReconnectBackoff, RegistrationWatcher, WatchEvent
from workers.controller import Key

pytestmark = pytest.mark.integration


def keys_of(event: WatchEvent, _stores: Stores) -> Iterator[tuple[str, Key]]:
    meta = event.object["metadata"]
    yield "cm", Key(event.cluster, meta.get("namespace", ""), meta["name"])


def metric(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_silent_watch_is_resumed_without_a_relist() -> None:
    with DevAPIServer(bookmark_interval=3600) as server:  # no bookmarks: the watch stays silent
        kube = Kube(from_kubeconfig_dict(kubeconfig_dict(server.url)))
        got: list[tuple[str, Key]] = []
        reg = WatchRegistration("silent-cm", resources.CONFIGMAP, "default", None, keys_of)
        manager = WatchManager([reg], lambda c, k: got.append((c, k)), kube=kube, silence_timeout=0.5,
                               watch_timeout=(300, 300)).start()
        try:
            assert manager.wait_ready(10)
            before = metric("reconcilery_watch_restarts_total", registration="silent-cm", reason="silent")
            wait_for(lambda: metric("reconcilery_watch_restarts_total", registration="silent-cm",
                                    reason="silent") >= before + 2, timeout=10, message="silent watches resumed")
            assert metric("reconcilery_watch_relists_total", registration="silent-cm") == 0
            kube.create(resources.CONFIGMAP, {"metadata": {"name": "late", "namespace": "default"}})
            wait_for(lambda: ("cm", Key("local", "default", "late")) in got, message="event after resumes")
        finally:
            manager.stop()
            kube.close()


class _DroppingKube:
    """A server that lists fine and ends every watch at once (a broken proxy)."""

    timeout = 5.0

    def list_with_version(self, *_: Any, **__: Any) -> tuple[list[dict[str, Any]], str]:
        return [], "1"

    def open(self, *_: Any, **__: Any) -> Any:
        raise ApiError(0, "Unreachable", "connection reset by peer")


def test_a_server_that_drops_every_watch_is_retried_ever_more_slowly() -> None:
    store = Stores()
    watcher = RegistrationWatcher(WatchRegistration("drop", resources.CONFIGMAP, None, None, keys_of),
                                  _DroppingKube(), store.add("drop"), store, lambda c, k: None,  # type: ignore[arg-type]
                                  backoff=ReconnectBackoff(0.8, 30.0))
    delays = [watcher._step() for _ in range(6)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6]  # the list succeeded once; the watches never did
    assert watch_metrics.WATCH_RESTARTS.labels("drop", "error")._value.get() >= 6
