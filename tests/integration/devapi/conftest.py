"""Shared helpers for the dev API conformance suite (runs against a real cluster when KUBECONFIG is set)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client, watch

from tests.fixtures.processes import wait_for


@dataclass
class Crd:
    """A CRD made for one test: ``group``, ``plural``, ``kind``; versions v1 (storage, status) and v2."""

    group: str
    plural: str
    kind: str
    name: str
    api: client.CustomObjectsApi
    namespaced: bool = True

    def body(self, name: str, version: str = "v1", **extra: Any) -> dict[str, Any]:
        """A CR body of this kind (``extra`` goes to the top level: ``spec=...``, ``metadata`` is merged)."""
        meta = {"name": name, **extra.pop("metadata", {})}
        return {"apiVersion": f"{self.group}/{version}", "kind": self.kind, "metadata": meta, **extra}


def crd_manifest(group: str, plural: str, kind: str, scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD with v1 (storage, status subresource) and v2 (served), both schemaless."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "shortNames": [f"{plural[:3]}x"],
                           "categories": ["kubedevtest"]},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": schema},
                              {"name": "v2", "served": True, "storage": False, "schema": schema}]},
    }


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until truthy (exceptions count as not yet); raises ``AssertionError`` on timeout."""
    try:
        return wait_for(predicate, timeout=timeout, interval=interval)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None


def make_crd(kube_client: client.ApiClient, scope: str = "Namespaced") -> Crd:
    """Create a uniquely named CRD and wait until its resource is served."""
    suffix = uuid.uuid4().hex[:8]
    group, plural, kind = f"t{suffix}.kubedev.example.com", f"gadgets{suffix}", f"Gadget{suffix}"
    ext = client.ApiextensionsV1Api(kube_client)
    ext.create_custom_resource_definition(crd_manifest(group, plural, kind, scope))  # type: ignore[arg-type]
    custom = client.CustomObjectsApi(kube_client)
    wait_until(lambda: custom.list_cluster_custom_object(group, "v1", plural) is not None)
    return Crd(group, plural, kind, f"{plural}.{group}", custom, scope == "Namespaced")


@pytest.fixture
def crd(kube_client: client.ApiClient) -> Iterator[Crd]:
    """A fresh namespaced CRD (deleted afterwards)."""
    made = make_crd(kube_client)
    try:
        yield made
    finally:
        try:
            client.ApiextensionsV1Api(kube_client).delete_custom_resource_definition(made.name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    """CoreV1Api on the test cluster."""
    return client.CoreV1Api(kube_client)


@dataclass
class Collector:
    """Watch events gathered by a background thread: ``events`` as (type, name, rv, object)."""

    events: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    error: BaseException | None = None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def types_for(self, name: str) -> list[str]:
        return [t for t, n, _, _ in self.events if n == name]

    def wait_for(self, predicate: Callable[[Collector], bool], timeout: float = 15.0) -> None:
        wait_until(lambda: predicate(self) or self.error, timeout)
        if self.error is not None and not predicate(self):
            raise self.error


def _to_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    return client.ApiClient().sanitize_for_serialization(obj)


@pytest.fixture
def collect() -> Iterator[Callable[..., Collector]]:
    """Start a watch (``watch.Watch().stream(func, *args, **kwargs)``) in a thread; stopped at teardown."""
    started: list[tuple[watch.Watch, Collector]] = []

    def _collect(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Collector:
        collector = Collector()
        w = watch.Watch()

        def run() -> None:
            try:
                for event in w.stream(func, *args, **kwargs):
                    obj = _to_dict(event["object"])
                    meta = obj.get("metadata") or {}
                    collector.events.append((event["type"], meta.get("name", ""), meta.get("resourceVersion", ""),
                                             obj))
            except BaseException as exc:
                collector.error = exc
            finally:
                collector.done.set()

        collector.thread = threading.Thread(target=run, daemon=True)
        collector.thread.start()
        started.append((w, collector))
        return collector

    yield _collect
    for w, _ in started:
        w.stop()
    for _, collector in started:
        if collector.thread is not None:
            collector.thread.join(timeout=15)
