"""The informer store: resourceVersion ordering, write-through, tombstones, label and custom indexes (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from informers import store as store_module
from informers.selectors import parse_selector
from informers.store import Store, newer_or_equal


def obj(name: str, rv: str, ns: str = "ns", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels}}


def rv(found: dict[str, Any] | None) -> str | None:
    return None if found is None else found["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("candidate", "current", "expected"), [
    ("10", "9", True), ("9", "10", False), ("10", "10", True), ("abc", "10", True), ("", "3", True),
])
def test_newer_or_equal_compares_numbers_and_lets_opaque_versions_win(candidate: str, current: str,
                                                                      expected: bool) -> None:
    assert newer_or_equal(candidate, current) is expected


def test_a_watch_event_older_than_our_own_write_does_not_bring_the_old_state_back() -> None:
    s = Store()
    s.apply("ADDED", obj("a", "5"))
    assert s.write_through(obj("a", "7", owner="x"))  # our update's answer
    assert s.apply("MODIFIED", obj("a", "6")) is not None  # the watch lags: ignored
    assert rv(s.get("ns", "a")) == "7"
    s.apply("MODIFIED", obj("a", "7", owner="x"))  # the watch catches up
    s.apply("MODIFIED", obj("a", "8"))
    assert rv(s.get("ns", "a")) == "8"
    assert not s.write_through(obj("a", "7"))  # a stale answer never overwrites a newer event


def test_our_create_is_visible_at_once_and_the_later_added_event_is_harmless() -> None:
    s = Store()
    assert s.write_through(obj("vs-abc", "3", owner="r1"))
    assert [o["metadata"]["name"] for o in s.select("owner=r1")] == ["vs-abc"]
    s.apply("ADDED", obj("vs-abc", "3", owner="r1"))
    assert len(s) == 1


def test_our_delete_drops_the_object_and_keeps_older_events_out_until_the_deletion_is_seen() -> None:
    s = Store()
    s.apply("ADDED", obj("a", "5", owner="r1"))
    s.delete_through("ns", "a")
    assert s.get("ns", "a") is None and s.select("owner=r1") == []
    s.apply("MODIFIED", obj("a", "5", owner="r1"))  # an event from before our delete
    assert s.get("ns", "a") is None
    s.apply("DELETED", obj("a", "5"))
    s.apply("ADDED", obj("a", "9"))  # recreated afterwards: back
    assert rv(s.get("ns", "a")) == "9"


def test_a_newer_object_of_a_deleted_name_passes_the_tombstone() -> None:
    s = Store()
    s.apply("ADDED", obj("a", "5"))
    s.delete_through("ns", "a")
    s.apply("ADDED", obj("a", "8"))
    assert rv(s.get("ns", "a")) == "8"


def test_tombstones_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Store()
    s.apply("ADDED", obj("a", "5"))
    s.delete_through("ns", "a")
    monkeypatch.setattr(store_module, "TOMBSTONE_SECONDS", -1.0)
    s.delete_through("ns", "b", "4")
    s.apply("ADDED", obj("b", "4"))
    assert s.get("ns", "b") is not None


def test_a_relist_replaces_everything_but_keeps_our_newer_writes() -> None:
    s = Store()
    s.apply("ADDED", obj("gone", "1", owner="x"))
    s.write_through(obj("mine", "12", owner="x"))
    s.replace([obj("listed", "9", owner="x")], "10")
    assert sorted(o["metadata"]["name"] for o in s.select("owner=x")) == ["listed", "mine"]
    s.replace([obj("listed", "9")], "")  # no version: exactly the list
    assert [o["metadata"]["name"] for o in s.list()] == ["listed"]


def test_select_uses_labels_namespaces_and_every_operator() -> None:
    s = Store()
    s.apply("ADDED", obj("a", "1", app="web", tier="fe"))
    s.apply("ADDED", obj("b", "2", app="web", tier="db"))
    s.apply("ADDED", obj("c", "3", ns="other", app="web"))
    s.apply("ADDED", obj("d", "4", app="api"))

    def sel(text: str | None, ns: str | None = None) -> list[str]:
        return [o["metadata"]["name"] for o in s.select(text, ns)]

    assert sel("app=web") == ["a", "b", "c"] and sel("app=web", "ns") == ["a", "b"]
    assert sel("app==web,tier!=db") == ["a", "c"]
    assert sel("tier in (fe, db)") == ["a", "b"] and sel("app notin (web)") == ["d"]
    assert sel("tier") == ["a", "b"] and sel("!tier") == ["d", "c"] and sel(None) == ["a", "b", "d", "c"]
    s.apply("MODIFIED", obj("a", "5", app="api"))  # relabelled: the index follows
    assert sel("app=web") == ["b", "c"] and sel("app=api") == ["a", "d"]  # sorted by (namespace, name)
    s.apply("DELETED", obj("d", "6", app="api"))
    assert sel("app=api") == ["a"]


def test_selectors_that_do_not_parse_raise() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        parse_selector("a=b,(")


def test_custom_indexes_follow_every_change() -> None:
    s = Store()
    s.apply("ADDED", obj("a", "1", team="x"))
    s.add_indexer("team", lambda o: [o["metadata"]["labels"].get("team", "")])
    s.add_indexer("team", lambda o: ["ignored"])  # the first definition stays
    s.apply("ADDED", obj("b", "2", team="y"))
    assert [o["metadata"]["name"] for o in s.by_index("team", ["x", "y"])] == ["a", "b"]
    s.apply("MODIFIED", obj("a", "3", team="y"))
    s.delete_through("ns", "b")
    assert [o["metadata"]["name"] for o in s.by_index("team", ["y"])] == ["a"]
    assert s.by_index("team", ["x"]) == []
    with pytest.raises(KeyError):
        s.by_index("missing", ["x"])


def test_compact_keeps_the_value_and_shares_short_strings() -> None:
    a = {"metadata": {"name": "".join(["r", "1"]), "labels": {"app": "".join(["we", "b"])}}, "spec": {
        "hosts": ["x" * 100, "".join(["h", "1"])], "port": 8000, "tls": None, "on": True}}
    b = store_module.compact(a)
    assert b == a and b is not a
    assert b["metadata"]["labels"]["app"] is store_module.compact({"v": "web"})["v"]
    assert b["spec"]["hosts"][0] == "x" * 100  # long strings are kept as they are
