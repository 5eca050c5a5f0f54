"""The watch engine against the dev API server: keys, cross-store mapping, restarts, 410, health."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import REGISTRY

from kube import Kube, Resource, resources
from kubedev import DevAPIServer
from tests.fixtures.kube import install_crd
from tests.fixtures.processes import free_port, wait_for
from watchers import HealthServer, Stores, WatchEvent, WatchManager, WatchRegistration, run
from workers.controller import Key

pytestmark = pytest.mark.integration

FAST: dict[str, Any] = {"watch_timeout": (5.0, 10.0), "backoff_base": 0.05, "backoff_cap": 0.2}


class Collector:
    """The ``enqueue`` callable of the tests: records ``(controller, namespace/name)`` pairs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[tuple[str, str]] = []

    def __call__(self, controller: str, key: Key) -> bool:
        with self._lock:
            self.items.append((controller, key.ref))
        return True

    def counts(self) -> Counter[tuple[str, str]]:
        with self._lock:
            return Counter(self.items)

    def clear(self) -> None:
        with self._lock:
            self.items.clear()

    def wait(self, *expected: tuple[str, str], timeout: float = 10.0) -> None:
        wait_for(lambda: all(e in self.counts() for e in expected), timeout=timeout,
                 message=f"keys {expected}, have {self.items}")


def key_of(event: WatchEvent) -> Key:
    meta = event.object["metadata"]
    return Key(event.cluster, meta.get("namespace", ""), meta["name"])


def own_keys(controller: str) -> Any:
    def map_event(event: WatchEvent, _stores: Stores) -> Iterable[tuple[str, Key]]:
        yield controller, key_of(event)
    return map_event


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def kube_for(url: str) -> Kube:
    cfg = client.Configuration()
    cfg.host = url
    return Kube(client.ApiClient(cfg), timeout=5.0)


@pytest.fixture
def manager_factory() -> Iterator[Any]:
    """Builds started WatchManagers; every one is stopped at teardown."""
    started: list[WatchManager] = []

    def make(registrations: list[WatchRegistration], enqueue: Any, kube: Kube, **kwargs: Any) -> WatchManager:
        manager = WatchManager(registrations, enqueue, kube=kube, **{**FAST, **kwargs})
        started.append(manager)
        return manager.start()

    yield make
    for manager in started:
        manager.stop()


@pytest.fixture
def own_server() -> Iterator[dict[str, Any]]:
    """A private dev API server (restartable on its port); every server started is stopped."""
    servers: list[DevAPIServer] = []
    first = DevAPIServer(port=0, bookmark_interval=0.2).start()
    servers.append(first)

    def restart(port: int | None = None) -> DevAPIServer:
        server = DevAPIServer(port=first.port if port is None else port, store=first.store,
                              bookmark_interval=0.2).start()
        servers.append(server)
        return server

    try:
        yield {"server": first, "restart": restart, "kube": kube_for(first.url)}
    finally:
        for server in servers:
            server.stop()


def test_events_map_to_keys_including_cross_store(kube: Kube, widgets: Resource, unique_ns: str,
                                                  manager_factory: Any) -> None:
    seen: list[WatchEvent] = []

    def map_widget(event: WatchEvent, _stores: Stores) -> Iterable[tuple[str, Key]]:
        seen.append(event)
        yield "widget", key_of(event)

    def map_service(event: WatchEvent, stores: Stores) -> Iterable[tuple[str, Key]]:
        svc = event.object["metadata"]
        yield "service", key_of(event)
        for widget in stores.list("widgets"):
            meta = widget["metadata"]
            if meta["namespace"] == svc["namespace"] and widget["spec"].get("service") == svc["name"]:
                yield "widget", Key(event.cluster, meta["namespace"], meta["name"])

    kube.create(widgets, {"metadata": {"name": "w1", "namespace": unique_ns}, "spec": {"service": "web"}})
    kube.create(widgets, {"metadata": {"name": "w2", "namespace": unique_ns}, "spec": {"service": "other"}})
    collected = Collector()
    manager = manager_factory([
        WatchRegistration("widgets", widgets, unique_ns, None, map_widget, ("widget",)),
        WatchRegistration("services", resources.SERVICE, unique_ns, None, map_service, ("service", "widget")),
    ], collected, kube)
    assert manager.wait_ready(10)
    w1, w2, web = (f"{unique_ns}/{n}" for n in ("w1", "w2", "web"))
    collected.wait(("widget", w1), ("widget", w2))
    assert {e.type for e in seen} == {"ADDED"} and all(e.old is None and e.cluster == "local" for e in seen)

    collected.clear()
    kube.create(resources.SERVICE, {"metadata": {"name": "web", "namespace": unique_ns},
                                    "spec": {"ports": [{"port": 80}]}})
    collected.wait(("service", web), ("widget", w1))
    assert ("widget", w2) not in collected.counts()

    seen.clear()
    kube.patch(widgets, "w1", {"spec": {"size": 3}}, unique_ns)
    wait_for(lambda: any(e.type == "MODIFIED" for e in seen), message="MODIFIED event")
    modified = next(e for e in seen if e.type == "MODIFIED")
    assert modified.old is not None and "size" not in modified.old["spec"]
    assert modified.object["spec"]["size"] == 3

    collected.clear()
    kube.delete(resources.SERVICE, "web", unique_ns)
    collected.wait(("service", web), ("widget", w1))
    kube.delete(widgets, "w2", unique_ns)
    wait_for(lambda: any(e.type == "DELETED" and e.object["metadata"]["name"] == "w2" for e in seen))
    assert manager.stores.get("widgets", unique_ns, "w2") is None
    assert (manager.stores.get("widgets", unique_ns, "w1") or {})["spec"]["size"] == 3
    # the cache gauges are read at scrape time from what the watch thread noted last
    assert sample("reconcilery_watch_store_objects", {"registration": "widgets"}) == 1
    last = sample("reconcilery_watch_last_event_timestamp_seconds", {"registration": "widgets"})
    assert last is not None and time.time() - 30 < last <= time.time()


def test_map_errors_are_counted_and_do_not_stop_the_watch(kube: Kube, unique_ns: str,
                                                           manager_factory: Any) -> None:
    def map_event(event: WatchEvent, _stores: Stores) -> Iterable[tuple[str, Key]]:
        if event.object["metadata"]["name"] == "boom":
            raise RuntimeError("cannot map")
        yield "cm", key_of(event)

    collected = Collector()
    before = sample("reconcilery_watch_map_errors_total", {"registration": "cm-errors"})
    manager_factory([WatchRegistration("cm-errors", resources.CONFIGMAP, unique_ns, None, map_event)],
                    collected, kube)
    kube.create(resources.CONFIGMAP, {"metadata": {"name": "boom", "namespace": unique_ns}})
    kube.create(resources.CONFIGMAP, {"metadata": {"name": "fine", "namespace": unique_ns}})
    collected.wait(("cm", f"{unique_ns}/fine"))
    assert sample("reconcilery_watch_map_errors_total", {"registration": "cm-errors"}) == before + 1


def test_resume_after_api_server_restart_delivers_each_change_once(own_server: dict[str, Any],
                                                                   manager_factory: Any) -> None:
    server, kube = own_server["server"], own_server["kube"]
    for name in ("a", "b", "c"):
        kube.create(resources.CONFIGMAP, {"metadata": {"name": name, "namespace": "default"}, "data": {"v": "1"}})
    collected = Collector()
    reg = "cm-restart"
    manager = manager_factory([WatchRegistration(reg, resources.CONFIGMAP, "default", None, own_keys("cm"))],
                              collected, kube)
    collected.wait(("cm", "default/a"), ("cm", "default/b"), ("cm", "default/c"))
    relists = sample("reconcilery_watch_relists_total", {"registration": reg})
    collected.clear()

    server.stop()
    side = own_server["restart"](port=0)  # the same store on another port: changes while "down"
    side_kube = kube_for(side.url)
    side_kube.patch(resources.CONFIGMAP, "a", {"data": {"v": "2"}}, "default")
    side_kube.delete(resources.CONFIGMAP, "b", "default")
    side_kube.create(resources.CONFIGMAP, {"metadata": {"name": "d", "namespace": "default"}})
    side.stop()
    time.sleep(0.3)  # the watcher retries against the dead port meanwhile
    own_server["restart"]()

    collected.wait(("cm", "default/a"), ("cm", "default/b"), ("cm", "default/d"))
    time.sleep(0.5)  # anything duplicated would arrive by now
    assert collected.counts() == Counter({("cm", "default/a"): 1, ("cm", "default/b"): 1, ("cm", "default/d"): 1})
    assert sample("reconcilery_watch_relists_total", {"registration": reg}) == relists  # resumed, no relist
    store = manager.stores
    assert sorted(o["metadata"]["name"] for o in store.list(reg)) == ["a", "c", "d"]
    assert (store.get(reg, "default", "a") or {}).get("data") == {"v": "2"}
    assert sample("reconcilery_watch_restarts_total", {"registration": reg, "reason": "error"}) >= 1


def test_relist_on_410_turns_the_gap_into_events(own_server: dict[str, Any], manager_factory: Any) -> None:
    server, kube = own_server["server"], own_server["kube"]
    for name in ("keep", "change", "remove"):
        kube.create(resources.CONFIGMAP, {"metadata": {"name": name, "namespace": "default"}, "data": {"v": "1"}})
    seen: list[WatchEvent] = []

    def map_event(event: WatchEvent, _stores: Stores) -> Iterable[tuple[str, Key]]:
        seen.append(event)
        yield "cm", key_of(event)

    collected = Collector()
    reg = "cm-gone"
    manager_factory([WatchRegistration(reg, resources.CONFIGMAP, "default", None, map_event)], collected, kube)
    collected.wait(("cm", "default/keep"), ("cm", "default/change"), ("cm", "default/remove"))
    relists = sample("reconcilery_watch_relists_total", {"registration": reg})
    gone = sample("reconcilery_watch_restarts_total", {"registration": reg, "reason": "gone"})
    collected.clear()
    seen.clear()

    server.stop()
    side = own_server["restart"](port=0)
    side_kube = kube_for(side.url)
    side_kube.patch(resources.CONFIGMAP, "change", {"data": {"v": "2"}}, "default")
    side_kube.delete(resources.CONFIGMAP, "remove", "default")
    side_kube.create(resources.CONFIGMAP, {"metadata": {"name": "new", "namespace": "default"}})
    side.compact()  # the event log of the gap is gone: resuming must fail with 410
    side.stop()
    own_server["restart"]()

    collected.wait(("cm", "default/change"), ("cm", "default/remove"), ("cm", "default/new"))
    time.sleep(0.5)
    assert collected.counts() == Counter({("cm", "default/change"): 1, ("cm", "default/remove"): 1,
                                          ("cm", "default/new"): 1})
    by_name = {e.object["metadata"]["name"]: e for e in seen}
    assert by_name["remove"].type == "DELETED" and by_name["remove"].object["data"] == {"v": "1"}
    assert by_name["change"].type == "MODIFIED" and (by_name["change"].old or {}).get("data") == {"v": "1"}
    assert by_name["new"].type == "ADDED"
    assert sample("reconcilery_watch_relists_total", {"registration": reg}) == relists + 1
    assert sample("reconcilery_watch_restarts_total", {"registration": reg, "reason": "gone"}) == gone + 1


def test_crd_deleted_and_recreated(kube: Kube, widgets: Resource, unique_ns: str, manager_factory: Any) -> None:
    seen: list[WatchEvent] = []

    def map_event(event: WatchEvent, _stores: Stores) -> Iterable[tuple[str, Key]]:
        seen.append(event)
        yield "widget", key_of(event)

    kube.create(widgets, {"metadata": {"name": "w", "namespace": unique_ns}, "spec": {}})
    manager = manager_factory([WatchRegistration("widgets-crd", widgets, unique_ns, None, map_event)],
                              Collector(), kube)
    wait_for(lambda: any(e.type == "ADDED" for e in seen), message="initial ADDED")
    kube.delete(resources.CRD, widgets.full_name)
    wait_for(lambda: any(e.type == "DELETED" for e in seen), message="DELETED after the CRD went away")
    wait_for(lambda: sample("reconcilery_watch_restarts_total",
                            {"registration": "widgets-crd", "reason": "missing"}) >= 1, message="missing kind")
    assert manager.ready()
    install_crd(kube, widgets)
    kube.create(widgets, {"metadata": {"name": "again", "namespace": unique_ns}, "spec": {}})
    wait_for(lambda: any(e.object["metadata"]["name"] == "again" for e in seen), message="new object seen")


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_readiness_liveness_and_metrics(own_server: dict[str, Any], manager_factory: Any) -> None:
    server, kube = own_server["server"], own_server["kube"]
    missing = Resource("nowhere.example.io", "v1", "things", "Thing", True)
    manager = manager_factory([
        WatchRegistration("health-cm", resources.CONFIGMAP, None, None, own_keys("cm")),
        WatchRegistration("health-missing", missing, None, None, own_keys("thing")),
    ], Collector(), kube)
    health = HealthServer(manager, port=0, host="127.0.0.1", max_silence_s=1.0).start()
    try:
        base = f"http://127.0.0.1:{health.port}"
        wait_for(lambda: get(f"{base}/readyz")[0] == 200, message="ready")  # a missing kind is ready too
        assert get(f"{base}/livez")[0] == 200
        time.sleep(1.2)  # bookmarks every 0.2 s keep the watch alive
        assert manager.alive(1.0)
        status, metrics = get(f"{base}/metrics")
        assert status == 200
        assert 'reconcilery_watch_events_total{registration="health-cm",type="BOOKMARK"}' in metrics
        assert get(f"{base}/nope")[0] == 404

        server.stop()  # no events, no bookmarks, no watch can start: not alive after max_silence_s
        wait_for(lambda: get(f"{base}/livez")[0] == 503, timeout=5, message="not alive")
        own_server["restart"]()
        wait_for(lambda: get(f"{base}/livez")[0] == 200, timeout=5, message="alive again")
    finally:
        health.stop()


def test_not_ready_while_the_api_server_is_down(manager_factory: Any) -> None:
    kube = kube_for(f"http://127.0.0.1:{free_port()}")
    manager = manager_factory([WatchRegistration("down", resources.CONFIGMAP, None, None, own_keys("cm"))],
                              Collector(), kube)
    time.sleep(0.5)
    assert not manager.ready()
    assert sample("reconcilery_watch_restarts_total", {"registration": "down", "reason": "error"}) >= 2


def test_stop_is_prompt(kube: Kube, manager_factory: Any) -> None:
    manager = manager_factory([
        WatchRegistration(f"prompt-{i}", resources.CONFIGMAP, None, None, own_keys("cm")) for i in range(5)
    ], Collector(), kube, watch_timeout=(300.0, 600.0))
    assert manager.wait_ready(10)
    started = time.monotonic()
    manager.stop()
    assert time.monotonic() - started < 1.0
    assert not any(w.running for w in manager)


def test_run_selects_registrations_and_stops(kube: Kube, unique_ns: str) -> None:
    collected = Collector()
    regs = [
        WatchRegistration("run-cm", resources.CONFIGMAP, unique_ns, None, own_keys("cm"), ("cm",)),
        WatchRegistration("run-svc", resources.SERVICE, unique_ns, None, own_keys("svc"), ("svc",)),
    ]
    stop = threading.Event()
    port = free_port()
    thread = threading.Thread(target=run, args=(["cm"], regs, collected, port),
                              kwargs={"kube": kube, "stop": stop, "health_host": "127.0.0.1"}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: get(f"http://127.0.0.1:{port}/readyz")[0] == 200, message="run ready")
        kube.create(resources.CONFIGMAP, {"metadata": {"name": "x", "namespace": unique_ns}})
        kube.create(resources.SERVICE, {"metadata": {"name": "y", "namespace": unique_ns},
                                        "spec": {"ports": [{"port": 80}]}})
        collected.wait(("cm", f"{unique_ns}/x"))
        time.sleep(0.3)
        assert all(controller == "cm" for controller, _ in collected.items)
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
    with pytest.raises(ValueError):
        run(["nobody"], regs, collected, None, kube=kube, stop=stop)
