"""The label index (kubedev.labelindex) answers label-selected lists exactly as the full scan does.

Property: after any sequence of creates, updates, patches, deletes (with and without finalizers) and
namespace deletions, ``Store.list`` with a selector gives the same items, in the same order and with the
same paging, as filtering the unselected list (a scan) with the selector's predicate.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubedev.errors import ApiError
from kubedev.labelindex import LabelIndex
from kubedev.selectors import match_labels, parse_label_selector
from kubedev.store import Store, compile_filter

NAMESPACES = ("a", "b")
NAMES = ("n1", "n2", "n3")
KEYS = ("app", "tier", "apirule.gateway.kyma-project.io/v1beta1")
VALUES = ("x", "y", "r.a", "")

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
value_list = st.lists(st.sampled_from(VALUES[:3]), min_size=1, max_size=2, unique=True).map(",".join)
term_st = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(("=", "==", "!=")), st.sampled_from(VALUES))
    .map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
    st.tuples(st.sampled_from(KEYS), st.sampled_from(("in", "notin")), value_list)
    .map(lambda t: f"{t[0]} {t[1]} ({t[2]})"),
    st.sampled_from(KEYS), st.sampled_from(KEYS).map(lambda k: f"!{k}"),
)
selector_st = st.lists(term_st, min_size=1, max_size=3).map(",".join)
op_st = st.tuples(st.sampled_from(("create", "replace", "patch", "delete", "finalize", "release", "drop_ns")),
                  st.sampled_from(NAMESPACES), st.sampled_from(NAMES), labels_st)


def apply(store: Store, op: tuple[str, str, str, dict[str, str]]) -> None:
    """One write through the store's public API; API errors (404, 409, 403) are part of the game."""
    kind, ns, name, labels = op
    cms = store.registry.lookup("", "v1", "configmaps")
    nss = store.registry.lookup("", "v1", "namespaces")
    assert cms is not None and nss is not None
    try:
        if kind == "create":
            if not store.namespace_exists(ns):
                store.create(nss, None, {"metadata": {"name": ns}})
            store.create(cms, ns, {"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
        elif kind == "replace":
            store.replace(cms, ns, name, {"metadata": {"name": name, "labels": labels,
                                                       "finalizers": ["x/y"] if "app" in labels else []}})
        elif kind == "patch":
            store.patch(cms, ns, name, "merge", {"metadata": {"labels": {k: None for k in KEYS} | labels}})
        elif kind == "delete":
            store.delete(cms, ns, name)
        elif kind == "finalize":
            store.patch(cms, ns, name, "merge", {"metadata": {"finalizers": ["x/y"]}})
        elif kind == "release":
            store.patch(cms, ns, name, "merge", {"metadata": {"finalizers": None}})
        else:
            store.delete(nss, None, ns)
    except ApiError:
        pass


def scan(store: Store, namespace: str | None, selector: str) -> list[dict[str, Any]]:
    """The answer without the index: every object in scope, filtered by the selector."""
    cms = store.registry.lookup("", "v1", "configmaps")
    assert cms is not None
    predicate = compile_filter(cms, None, selector, None)
    return [o for o in store.list(cms, namespace).items if predicate(o)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=3, max_size=30), selectors=st.lists(selector_st, min_size=1, max_size=4),
       namespace=st.sampled_from((None, *NAMESPACES)), limit=st.integers(1, 3))
def test_indexed_list_equals_scan(ops: list[tuple[str, str, str, dict[str, str]]], selectors: list[str],
                                  namespace: str | None, limit: int) -> None:
    store = Store()
    cms = store.registry.lookup("", "v1", "configmaps")
    assert cms is not None
    every_equality = [f"{k}={v}" for k in KEYS for v in VALUES]
    for op in ops:
        apply(store, op)
        for selector in every_equality:
            assert store.list(cms, namespace, selector).items == scan(store, namespace, selector), (op, selector)
    # White-box invariant: the maintained index equals one built from scratch (no stale or missing entries).
    fresh = LabelIndex()
    for key, by_ns in store._objects.items():
        for ns, names in by_ns.items():
            for name, obj in names.items():
                fresh.put(key, ns, name, obj)
    assert store._labels._postings == fresh._postings
    for selector in selectors:
        expected = scan(store, namespace, selector)
        assert store.list(cms, namespace, selector).items == expected
        paged: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = store.list(cms, namespace, selector, limit=limit, continue_token=token)
            paged += page.items
            token = page.continue_token
            if not token:
                break
        assert paged == expected


def test_equality_list_finds_owned_objects_in_name_order() -> None:
    store = Store()
    cms = store.registry.lookup("", "v1", "configmaps")
    assert cms is not None
    owner = "apirule.gateway.kyma-project.io/v1beta1"
    for i in (3, 1, 2):
        store.create(cms, "default", {"metadata": {"name": f"vs-{i}", "labels": {owner: "r.default"}}})
    store.create(cms, "kube-system", {"metadata": {"name": "vs-0", "labels": {owner: "r.default"}}})
    store.create(cms, "default", {"metadata": {"name": "other", "labels": {owner: "s.default"}}})
    names = [(o["metadata"]["namespace"], o["metadata"]["name"])
             for o in store.list(cms, None, f"{owner}==r.default").items]
    assert names == [("default", "vs-1"), ("default", "vs-2"), ("default", "vs-3"), ("kube-system", "vs-0")]
    store.patch(cms, "default", "vs-2", "merge", {"metadata": {"labels": {owner: None}}})
    store.delete(cms, "default", "vs-3")
    assert [o["metadata"]["name"] for o in store.list(cms, "default", f"{owner}=r.default").items] == ["vs-1"]
    store.reset()
    assert store.list(cms, None, f"{owner}=r.default").items == []


objects_st = st.dictionaries(st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES)), labels_st)


@given(rounds=st.lists(objects_st, min_size=1, max_size=4), selector=selector_st,
       namespace=st.sampled_from((None, *NAMESPACES)))
def test_candidates_equal_brute_force(rounds: list[dict[tuple[str, str], dict[str, str]]], selector: str,
                                      namespace: str | None) -> None:
    """Each round makes the index hold exactly ``objects`` (puts for present, drops for absent ones)."""
    index = LabelIndex()
    reqs = [r for r in parse_label_selector(selector) if r.op in ("=", "in")]
    for objects in rounds:
        for ns in NAMESPACES:
            for name in NAMES:
                if (ns, name) in objects:
                    index.put("k", ns, name, {"metadata": {"labels": objects[(ns, name)]}})
                else:
                    index.drop("k", ns, name)
        if not reqs:
            continue
        expected = {ident for ident, labels in objects.items()
                    if (namespace is None or ident[0] == namespace)
                    and match_labels(tuple(reqs), {"metadata": {"labels": labels}})}
        assert index.candidates("k", namespace, reqs) == expected
        assert index.candidates("other", namespace, reqs) == set()
