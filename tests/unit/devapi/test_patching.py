"""Patch semantics (kubedev.patching): RFC 7386 merge patch, RFC 6902 JSON patch, strategic merge, apply."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubedev.patching import PatchError, apply_merge, json_patch, merge_patch, strategic_merge_patch

# RFC 7386 Appendix A, verbatim.
RFC7386_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_EXAMPLES)
def test_merge_patch_rfc7386_examples(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
json_values = st.recursive(json_scalars, lambda children: st.lists(children, max_size=3)
                           | st.dictionaries(st.text(max_size=3), children, max_size=3), max_leaves=10)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


def make_merge_patch(source: Any, target: Any) -> Any:
    """The merge patch that turns ``source`` into ``target`` (RFC 7386 section 2, in reverse)."""
    if not isinstance(source, dict) or not isinstance(target, dict):
        return target
    patch: dict[str, Any] = {}
    for key in source:
        if key not in target:
            patch[key] = None
    for key, value in target.items():
        if key not in source:
            patch[key] = value
        elif source[key] != value:
            patch[key] = make_merge_patch(source[key], value)
    return patch


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


@given(json_objects, json_objects)
def test_merge_patch_reaches_any_null_free_target(source: dict, target: dict) -> None:
    target = without_nulls(target)
    assert merge_patch(source, make_merge_patch(source, target)) == target


@given(json_objects, json_objects)
def test_merge_patch_is_idempotent_and_pure(target: dict, patch: dict) -> None:
    before_t, before_p = copy.deepcopy(target), copy.deepcopy(patch)
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
    assert (target, patch) == (before_t, before_p)


@given(json_objects)
def test_empty_merge_patch_is_identity(target: dict) -> None:
    assert merge_patch(target, {}) == target


def test_json_patch_ops_and_failures() -> None:
    doc: dict[str, Any] = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}
    out = json_patch(doc, [{"op": "add", "path": "/metadata/labels/b", "value": "2"},
                           {"op": "remove", "path": "/spec/items/0"},
                           {"op": "test", "path": "/metadata/labels/a", "value": "1"}])
    assert out == {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"items": [2]}}
    assert doc["spec"]["items"] == [1, 2]
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "test", "path": "/metadata/labels/a", "value": "2"}])
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "remove", "path": "/nope"}])
    with pytest.raises(PatchError):
        json_patch(doc, {"op": "add"})


POD = {"spec": {
    "containers": [{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}],
                    "ports": [{"containerPort": 80, "name": "http"}]},
                   {"name": "side", "image": "side:1"}],
    "volumes": [{"name": "v1", "emptyDir": {}}],
    "tolerations": [{"key": "k1"}],
}, "metadata": {"finalizers": ["a"], "labels": {"x": "1"}}}


@pytest.mark.parametrize(("patch", "check"), [
    # containers merge by name: other containers and fields stay
    ({"spec": {"containers": [{"name": "app", "image": "app:2"}]}},
     lambda r: [c["image"] for c in r["spec"]["containers"]] == ["app:2", "side:1"]
     and r["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]),
    # a new container is appended
    ({"spec": {"containers": [{"name": "new", "image": "n"}]}},
     lambda r: [c["name"] for c in r["spec"]["containers"]] == ["app", "side", "new"]),
    # env merges by name inside a merged container
    ({"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}},
     lambda r: r["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
    # container ports merge by containerPort
    ({"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}},
     lambda r: r["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]),
    # $patch: delete removes one list element
    ({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
     lambda r: [c["name"] for c in r["spec"]["containers"]] == ["app"]),
    # $patch: replace on a map
    ({"spec": {"$patch": "replace", "containers": []}}, lambda r: r["spec"] == {"containers": []}),
    # lists without a merge key are replaced
    ({"spec": {"tolerations": [{"key": "k2"}]}}, lambda r: r["spec"]["tolerations"] == [{"key": "k2"}]),
    # finalizers are a set union; $deleteFromPrimitiveList removes
    ({"metadata": {"finalizers": ["b", "a"]}}, lambda r: r["metadata"]["finalizers"] == ["a", "b"]),
    ({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, lambda r: r["metadata"]["finalizers"] == []),
    # null deletes a map key; $setElementOrder is accepted and ignored
    ({"metadata": {"labels": {"x": None}}, "$setElementOrder/x": []}, lambda r: r["metadata"]["labels"] == {}),
    ({"spec": {"volumes": [{"name": "v2", "secret": {"secretName": "s"}}]}},
     lambda r: [v["name"] for v in r["spec"]["volumes"]] == ["v1", "v2"]),
])
def test_strategic_merge_patch(patch: dict, check: Any) -> None:
    original = copy.deepcopy(POD)
    assert check(strategic_merge_patch(POD, patch))
    assert original == POD


def test_service_ports_merge_by_port() -> None:
    svc = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    out = strategic_merge_patch(svc, {"spec": {"ports": [{"port": 80, "nodePort": 30080}]}})
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 8080, "nodePort": 30080}, {"port": 443}]


def test_apply_merge_keeps_fields_on_null() -> None:
    out = apply_merge({"spec": {"a": 1, "b": 2}}, {"spec": {"a": None, "b": 3}})
    assert out == {"spec": {"a": 1, "b": 3}}
