"""kubedev.encoding: the answers' bytes are json.dumps' exactly, a CRD's spec encoded once and never stale."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubedev import encoding


def plain(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def crd(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "resourceVersion": "7", "annotations": {"note": "ünïcode \"quoted\""}},
            "spec": spec, "status": {"acceptedNames": {"kind": "Widget"}}}


SPEC = {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                     "description": "tab\there, snowman \u2603"}}}]}


@pytest.mark.parametrize("obj", [
    {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"k": "v\n"}},
    crd("widgets.example.com", SPEC),
    {"kind": "CustomResourceDefinition", "spec": "not a dict"},
    {"kind": "CustomResourceDefinition", "spec": {}, 1: "a non-string key"},
    [1, "two", None, 3.5],
    "text",
])
def test_dumps_is_json_dumps(obj: Any) -> None:
    assert encoding.dumps(obj) == plain(obj)
    assert encoding.dumps(obj) == plain(obj)  # a second time, from the cache


@pytest.mark.parametrize("items", [
    [],
    [{"kind": "ConfigMap", "metadata": {"name": "a"}}],
    [crd("widgets.example.com", SPEC), crd("gadgets.example.com", {**SPEC, "group": "gadgets"})],
])
@pytest.mark.parametrize("head", [{"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "3"}}, {}])
def test_dumps_list_is_json_dumps_of_the_list(head: dict[str, Any], items: list[Any]) -> None:
    assert encoding.dumps_list(head, items) == plain({**head, "items": items})


def test_a_crd_with_a_new_spec_is_encoded_anew() -> None:
    first = crd("widgets.example.com", {**SPEC, "scope": "Namespaced"})
    assert encoding.dumps(first) == plain(first)
    updated = {**first, "spec": {**first["spec"], "scope": "Cluster"}}  # the store replaces, as on an update
    assert b'"scope":"Cluster"' in encoding.dumps(updated)
    assert encoding.dumps(updated) == plain(updated)


def test_clusters_sharing_one_spec_share_its_encoding() -> None:
    shared = dict(SPEC)
    a, b = crd("widgets.example.com", shared), {**crd("widgets.example.com", shared), "metadata": {"name": "b"}}
    assert encoding.dumps(a) == plain(a)
    assert encoding.dumps(b) == plain(b)


def test_the_cache_is_bounded() -> None:
    specs = [{**SPEC, "group": f"g{n}.example.com"} for n in range(encoding.CRD_SPEC_CACHE_SIZE + 20)]
    for spec in specs:
        obj = crd(f"widgets.g{spec['group']}", spec)
        assert encoding.dumps(obj) == plain(obj)
    assert len(encoding._specs) <= encoding.CRD_SPEC_CACHE_SIZE
