import pytest

from informers.store import Store, Stores, object_key, relist_events
from kube import resources
from watchers.engine import (
    ReconnectBackoff,
    WatchEvent,
    WatchRegistration,
    parse_watch_line,
    select_registrations,
    split_lines,
)
from workers.controller import Key


def obj(name: str, rv: str, namespace: str = "ns") -> dict:
    return {"kind": "Service", "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


def test_backoff_doubles_from_0_8_to_a_30_s_cap_and_resets() -> None:
    backoff = ReconnectBackoff()
    assert [backoff.next() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    backoff.reset()
    assert backoff.next() == 0.8
    many = ReconnectBackoff(0.8, 30.0)
    assert [many.next() for _ in range(200)][-1] == 30.0


def test_relist_diff_gives_each_missed_change_once() -> None:
    cache = {object_key(o): o for o in (obj("same", "1"), obj("changed", "2"), obj("gone", "3"))}
    fresh = [obj("same", "1"), obj("changed", "5"), obj("new", "6")]
    events = relist_events(cache, fresh)
    assert [(t, o["metadata"]["name"], old and old["metadata"]["resourceVersion"]) for t, o, old in events] == [
        ("MODIFIED", "changed", "2"),
        ("ADDED", "new", None),
        ("DELETED", "gone", "3"),
    ]
    # the DELETED event carries the last known state
    assert events[2][1] is cache[("ns", "gone")]
    assert relist_events(cache, list(cache.values())) == []
    assert [t for t, _, _ in relist_events({}, fresh)] == ["ADDED"] * 3


def test_store_apply_returns_previous_object() -> None:
    store = Store()
    assert store.apply("ADDED", obj("a", "1")) is None
    first = store.get("ns", "a")
    assert store.apply("MODIFIED", obj("a", "2")) is first
    assert (store.get("ns", "a") or {})["metadata"]["resourceVersion"] == "2"
    assert (store.apply("DELETED", obj("a", "3")) or {})["metadata"]["resourceVersion"] == "2"
    assert store.get("ns", "a") is None and len(store) == 0
    store.replace([obj("b", "1"), obj("n", "1", namespace="")])
    assert sorted(o["metadata"]["name"] for o in store.list()) == ["b", "n"]
    assert store.get(None, "n") is not None


def test_stores_by_registration() -> None:
    stores = Stores()
    stores.add("services").apply("ADDED", obj("a", "1"))
    assert [o["metadata"]["name"] for o in stores.list("services")] == ["a"]
    assert stores.get("services", "ns", "a") is not None
    with pytest.raises(ValueError):
        stores.add("services")
    with pytest.raises(KeyError, match="services"):
        stores.list("apirules")


def test_split_lines_keeps_partial_lines() -> None:
    buffer = bytearray()
    assert split_lines(buffer, b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert split_lines(buffer, b":2}\n\n") == [b'{"b":2}']
    assert buffer == bytearray()


def test_parse_watch_line() -> None:
    assert parse_watch_line(b'{"type":"ADDED","object":{"metadata":{"name":"x"}}}') == (
        "ADDED", {"metadata": {"name": "x"}})
    for bad in (b"[]", b'{"type":"ADDED"}', b"nope"):
        with pytest.raises(ValueError):
            parse_watch_line(bad)


def test_select_registrations_by_controller() -> None:
    def nothing(event: WatchEvent, stores: Stores) -> list[tuple[str, Key]]:
        return []

    a = WatchRegistration("apirules", resources.SERVICE, None, None, nothing, controllers=("apirule",))
    b = WatchRegistration("nodes", resources.NODE, None, None, nothing, controllers=("nginx", "snatch"))
    c = WatchRegistration("undeclared", resources.POD, None, None, nothing)
    assert select_registrations([a, b, c], None) == [a, b, c]
    assert select_registrations([a, b, c], ["snatch"]) == [b]
    assert select_registrations([a, b, c], ["apirule", "nginx"]) == [a, b]
    assert select_registrations([a, b, c], ["unknown"]) == []


def test_a_poll_runs_once_listed_survives_a_failing_check_and_enqueues_its_keys() -> None:
    import threading
    from typing import Any, cast

    from kube import Kube
    from watchers.engine import Poll, RegistrationWatcher

    calls: list[int] = []
    key = Key.parse("ns/x", "local")

    def check(stores: Stores) -> list[tuple[str, Key]]:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("a bad read")
        return [("c", key)]

    enqueued: list[tuple[str, Key]] = []
    got = threading.Event()

    def enqueue(controller: str, k: Key) -> None:
        enqueued.append((controller, k))
        got.set()

    reg = WatchRegistration("r", resources.SERVICE, None, None, lambda e, s: [], ("c",), poll=Poll(check, 0.01))
    # the watch thread is never started: no API server is needed for the poll thread
    watcher = RegistrationWatcher(reg, cast(Kube, cast(Any, None)), Store(), Stores(), enqueue)
    thread = watcher._poll_thread
    assert thread is not None
    thread.start()
    threading.Event().wait(0.1)
    assert calls == []  # not before the initial list: it enqueues everything with the input as it is
    watcher.listed.set()
    assert got.wait(2)
    watcher.stop()
    thread.join(2)
    assert not thread.is_alive()
    assert calls[:2] == [0, 1] and set(enqueued) == {("c", key)}



def test_a_registration_chooses_a_packed_cache() -> None:
    from typing import Any, cast

    from kube import Kube
    from watchers.engine import WatchManager

    plain = WatchRegistration("plain", resources.SERVICE, None, None, lambda e, s: [])
    packed = WatchRegistration("packed", resources.CONFIGMAP, None, None, lambda e, s: [], packed=True)
    manager = WatchManager([plain, packed], enqueue=lambda c, k: None, kube=cast(Kube, cast(Any, object())))
    assert not manager.stores.store("plain").packed and manager.stores.store("packed").packed
    o = obj("a", "1")
    manager.stores.store("plain").apply("ADDED", o)
    manager.stores.store("packed").apply("ADDED", o)
    assert manager.stores.get("plain", "ns", "a") is o  # kept as given
    assert manager.stores.get("packed", "ns", "a") == o and manager.stores.get("packed", "ns", "a") is not o
