"""The read registration (pure): which reads of a kind an informer serves, and from which informer."""

from __future__ import annotations

from typing import cast

import pytest

from informers import informer
from informers.reader import API, Cached, Reads
from kube import Kube, Resource, resources

ONE = Cached(resources.CONFIGMAP, per_namespace=True, objects=frozenset({("kyma-system", "cfg")}))


@pytest.mark.parametrize(("rule", "name", "namespace", "get", "listed", "scope"), [
    (Cached(resources.SERVICE), "web", "shop", True, True, None),  # one cluster-wide informer
    (Cached(resources.POD, per_namespace=True), "p", "shop", True, True, "shop"),  # the namespace's own
    (Cached(resources.POD, per_namespace=True), "p", None, True, True, None),  # across namespaces: cluster-wide
    (ONE, "cfg", "kyma-system", True, False, "kyma-system"),  # only the registered object; lists: the API
    (ONE, "shoot-info", "kube-system", False, False, "kube-system"),
    (Cached(resources.NODE), "n", None, True, True, None),
])
def test_what_an_informer_serves(rule: Cached, name: str, namespace: str | None, get: bool, listed: bool,
                                 scope: str | None) -> None:
    assert rule.serves_get(name, namespace) is get
    assert rule.serves_list() is listed
    assert rule.scope(namespace) == scope


def test_a_kind_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        Reads((Cached(resources.POD), Cached(resources.POD, per_namespace=True)))
    reads = Reads((Cached(resources.POD),))
    assert reads.rule(resources.POD) == Cached(resources.POD)
    assert reads.rule(resources.SECRET) is None  # not registered: the API server
    assert API.rule(resources.POD) is None


def test_a_kind_registered_packed_gets_packed_informers() -> None:
    many = Resource("example.com", "v1", "manies", "Many", True)
    few = Resource("example.com", "v1", "fews", "Few", True)
    Reads((Cached(many, packed=True), Cached(few)))
    assert informer.packed(many) and not informer.packed(few)
    assert informer.Informer(many, None, cast(Kube, _NoKube()), "local").store.packed
    assert not informer.Informer(few, None, cast(Kube, _NoKube()), "local").store.packed


class _NoKube:
    """An informer that is never started needs no client."""
