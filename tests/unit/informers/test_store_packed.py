"""The packed store: objects kept as JSON text and decoded on read; label and custom indexes that keep a
single key alone stay exact through every change (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informers.reflector import _parse_event, object_text
from informers.selectors import parse_selector
from informers.store import Packer, Snapshot, Store, packed_version, relist_events


def obj(name: str, rv: str, ns: str = "ns", spec: Any = None, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Thing",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels},
            "spec": spec if spec is not None else {"hosts": [f"{name}.example.com"], "n": 1, "ok": True,
                                                    "none": None, "text": "ü ✓ \n\"quoted\""}}


def test_reads_return_equal_new_dicts_the_caller_may_change() -> None:
    s = Store(packed=True)
    original = obj("a", "1", app="web")
    s.apply("ADDED", original)
    first, second = s.get("ns", "a"), s.get("ns", "a")
    assert first == original and second == original and first is not second
    assert first is not None
    first["spec"]["hosts"].append("changed")  # a caller's change never reaches the store
    assert s.get("ns", "a") == original and s.select("app=web") == [original] and s.list() == [original]
    original["metadata"]["labels"]["app"] = "api"  # nor does a change of the object handed in
    assert s.select("app=web") == [s.get("ns", "a")] and s.select("app=api") == []


def test_a_packer_keeps_the_version_in_front_and_round_trips_with_and_without_a_template() -> None:
    template, o = obj("a", "1", app="web"), obj("b", "42", app="api", spec={"big": "x" * 20000, "n": [1, 2.5]})
    for packer in (Packer(template), Packer()):
        packed = packer.pack(o)
        assert packed_version(packed) == "42" and packer.unpack(packed) == o
        assert packed_version(packer.pack({"metadata": {"name": "x"}})) == ""
    similar = obj("c", "7", app="web")
    assert len(Packer(template).pack(similar)) < len(Packer().pack(similar)) < 300  # the template's text is shared


@given(st.sampled_from(["ADDED", "MODIFIED"]), st.dictionaries(st.text(max_size=8), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10), max_size=4))
@settings(max_examples=60, deadline=None)
def test_a_watch_lines_object_text_is_stored_as_received_and_reads_back_as_the_decoded_object(
        type_: str, spec: dict[str, Any]) -> None:
    """The reflector hands a packed store the object's text from the line (kube-apiserver's shape,
    ``{"type":..,"object":..}``): what the store returns is the object the line decodes to, with or
    without JSON's escapes and spacing, and any other shape of line is not cut at all."""
    o = obj("a", "5", app="web", spec=spec)
    for line in (json.dumps({"type": type_, "object": o}, separators=(",", ":")).encode(),
                 json.dumps({"type": type_, "object": o}, separators=(",", ":"), ensure_ascii=False).encode()):
        event_type, decoded, fields = _parse_event(line)
        text = object_text(line, event_type, fields)
        assert text is not None and json.loads(text) == o
        s = Store(packed=True)
        s.apply(type_, decoded, text=text)
        assert s.get("ns", "a") == o and s.select("app=web") == [o]
    for other in (json.dumps({"object": o, "type": type_}), json.dumps({"type": type_, "object": o}),
                  json.dumps({"type": type_, "object": o, "extra": 1}, separators=(",", ":"))):
        assert object_text(other.encode(), *_parse_event(other.encode())[::2]) is None


def test_an_event_of_the_stored_version_is_not_stored_again() -> None:
    s = Store(packed=True)
    assert s.write_through(obj("a", "3", owner="r1"))
    assert s.apply("ADDED", obj("a", "3", owner="r1")) == obj("a", "3", owner="r1")
    assert s.version("ns", "a") == "3" and s.version("ns", "b") is None
    assert s.apply("MODIFIED", obj("a", "4", owner="r1"), decode_old=False) is None
    assert s.version("ns", "a") == "4"


def test_an_index_value_of_one_object_holds_the_key_alone_and_grows_into_a_set() -> None:
    s = Store(packed=True)
    s.apply("ADDED", obj("a", "1", owner="r1", app="web"))
    assert s._index["owner=r1"] == ("ns", "a")  # one object: the key, not a set of one
    s.apply("ADDED", obj("b", "2", owner="r1", app="web"))
    assert s._index["owner=r1"] == {("ns", "a"), ("ns", "b")}
    s.apply("MODIFIED", obj("a", "3", owner="r2", app="web"))  # relabelled: back to one key
    assert s._index["owner=r1"] == ("ns", "b") and s._index["owner=r2"] == ("ns", "a")
    assert [o["metadata"]["name"] for o in s.select("owner=r1,app=web")] == ["b"]
    assert [o["metadata"]["name"] for o in s.select("app=web,owner=r2")] == ["a"]
    assert s.select("owner=r1,app=api") == [] and s.select("owner=nobody,app=web") == []
    s.apply("DELETED", obj("b", "4"))
    assert "owner=r1" not in s._index and s._index["app=web"] == ("ns", "a")
    s.delete_through("ns", "a")
    assert s._index == {} and len(s) == 0


def test_a_relist_diff_of_a_snapshot_compares_versions_and_decodes_what_changed() -> None:
    s = Store(packed=True)
    for o in (obj("same", "1"), obj("changed", "2"), obj("gone", "3")):
        s.apply("ADDED", o)
    snap = s.snapshot()
    assert isinstance(snap, Snapshot) and snap.version(("ns", "changed")) == "2"
    fresh = [obj("same", "1"), obj("changed", "5"), obj("new", "6")]
    events = relist_events(snap, fresh)
    assert [(t, o["metadata"]["name"], (old or {}).get("metadata", {}).get("resourceVersion"))
            for t, o, old in events] == [("MODIFIED", "changed", "2"), ("ADDED", "new", None),
                                         ("DELETED", "gone", "3")]
    assert events == relist_events({k: snap[k] for k in snap}, fresh)  # as a plain dict cache


def test_an_indexer_added_later_and_a_replace_index_every_object() -> None:
    s = Store(packed=True)
    s.replace([obj("a", "1", team="x"), obj("b", "2", team="x")], "2")
    s.add_indexer("team", lambda o: [o["metadata"]["labels"].get("team", "")])
    assert [o["metadata"]["name"] for o in s.by_index("team", ["x"])] == ["a", "b"]
    s.write_through(obj("c", "9", team="y"))
    s.replace([obj("a", "3", team="y")], "5")  # b gone, a changed, c (ours, newer) kept
    assert [o["metadata"]["name"] for o in s.by_index("team", ["y"])] == ["a", "c"]
    assert s.by_index("team", ["x"]) == [] and s.keys() == [("ns", "a"), ("ns", "c")]


NAMES = st.sampled_from(["a", "b", "c", "d"])
LABELS = st.dictionaries(st.sampled_from(["app", "owner", "tier"]), st.sampled_from(["1", "2"]), max_size=3)
OPS = st.lists(st.tuples(st.sampled_from(["ADDED", "MODIFIED", "DELETED", "write", "delete_through"]),
                         NAMES, st.sampled_from(["ns", "other"]), LABELS), max_size=30)
SELECTORS = ["app=1", "app=1,owner=2", "owner=2,tier=1", "app!=1", "tier in (1,2)", "!owner", "app", None]


@pytest.mark.parametrize("label_index", [True, False])  # without: every select scans (tasks.cloud.reads)
@settings(max_examples=150, deadline=None)
@given(OPS)
def test_selects_and_indexes_match_a_plain_map_after_any_changes(
        label_index: bool, ops: list[tuple[str, str, str, dict[str, str]]]) -> None:
    s = Store(packed=True, label_index=label_index)
    s.add_indexer("first", lambda o: sorted(o["metadata"]["labels"].values())[:1])
    model: dict[tuple[str, str], dict[str, Any]] = {}
    for version, (op, name, ns, labels) in enumerate(ops, start=1):
        o = obj(name, str(version), ns, **labels)
        if op in ("ADDED", "MODIFIED", "write"):
            (s.write_through(o) if op == "write" else s.apply(op, o))
            model[(ns, name)] = o
        elif op == "DELETED":
            s.apply(op, o)
            model.pop((ns, name), None)
        else:
            s.delete_through(ns, name, str(version))  # our delete's answer carries its resourceVersion
            model.pop((ns, name), None)
    assert s.keys() == sorted(model)
    for text in SELECTORS:
        sel = parse_selector(text)
        for ns in (None, "ns"):
            want = [model[k] for k in sorted(model) if (ns is None or k[0] == ns)
                    and sel.matches(model[k]["metadata"]["labels"])]
            assert s.select(text, ns) == want, (text, ns)
    for value in ("1", "2"):
        want = [model[k] for k in sorted(model) if sorted(model[k]["metadata"]["labels"].values())[:1] == [value]]
        assert s.by_index("first", [value]) == want
    assert bool(s._index) == (label_index and any(o["metadata"]["labels"] for o in model.values()))
