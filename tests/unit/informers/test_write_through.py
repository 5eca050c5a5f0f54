"""The informers' view of the process's own writes (:meth:`informers.informer.InformerSet._on_write`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from informers.informer import InformerSet
from informers.store import Store
from kube import Resource

RES = Resource("gateway.kyma-project.io", "v1alpha1", "externalgateways", "ExternalGateway", True)


class _Kube:
    def add_write_listener(self, listener: Any) -> None:
        self.listener = listener


def obj(rv: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "a", "resourceVersion": rv, **meta}}


def informer_set() -> tuple[InformerSet, Store]:
    informers = InformerSet(_Kube())  # type: ignore[arg-type]
    store = Store()
    informers._by_resource[RES.full_name] = [SimpleNamespace(namespace=None, store=store)]  # type: ignore[list-item]
    return informers, store


def test_removing_the_last_finalizer_after_the_deleted_event_leaves_nothing() -> None:
    informers, store = informer_set()
    store.apply("ADDED", obj("5", deletionTimestamp="t", finalizers=["f"]))
    released = obj("6", deletionTimestamp="t")
    store.apply("DELETED", released)  # the watch got there before the patch's answer
    informers._on_write(RES, "patch", released)
    assert store.get("ns", "a") is None
    store.apply("MODIFIED", obj("5", deletionTimestamp="t", finalizers=["f"]))  # a late older event
    assert store.get("ns", "a") is None


def test_writes_and_deletes_held_by_finalizers_are_stored() -> None:
    informers, store = informer_set()
    informers._on_write(RES, "create", obj("1"))
    assert store.get("ns", "a") is not None
    informers._on_write(RES, "delete", obj("2", deletionTimestamp="t", finalizers=["f"]))
    assert (store.get("ns", "a") or {})["metadata"]["resourceVersion"] == "2"
    informers._on_write(RES, "delete", obj("3"))
    assert store.get("ns", "a") is None
