"""One reader: each read is served as the registration says, counted at the dev API server.

A kind registered :class:`~informers.reader.Cached` is read from the process's informers (no request
once synced; one informer per namespace read when ``per_namespace``), an object outside ``objects``
and every other kind from the API server; the worker's own writes are seen at once, and a kind that is
not served raises :class:`kube.ResourceMissing` either way.
"""

from __future__ import annotations

import pytest

from informers import informer as informers
from informers.reader import API, Cached, Reads
from kube import Kube, Resource, ResourceMissing, resources
from kubedev import DevAPIServer
from tests.fixtures.devapi import counted

pytestmark = pytest.mark.integration

#: A kind no CRD serves.
GADGET = Resource("tests.reconcilery.io", "v1", "gadgets", "Gadget", True)


def configmap(name: str, namespace: str, value: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"k": value}}


def test_each_read_goes_where_its_kind_is_registered(kube: Kube, devapi_clean: DevAPIServer | None,
                                                      unique_ns: str) -> None:
    if devapi_clean is None:
        pytest.skip("counts requests at the dev API server")
    ns = unique_ns
    reads = Reads((Cached(resources.CONFIGMAP, per_namespace=True, objects=frozenset({(ns, "cached")})),
                   Cached(resources.SERVICE), Cached(GADGET)))
    reader = reads.reader(kube)
    kube.create(resources.CONFIGMAP, configmap("cached", ns, "1"))
    kube.create(resources.CONFIGMAP, configmap("other", ns, "1"))
    kube.create(resources.SERVICE, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
                                    "spec": {"ports": [{"port": 80}]}})
    assert reader.get(resources.CONFIGMAP, "cached", ns) is not None  # starts and syncs the informers
    assert [s["metadata"]["name"] for s in reader.list(resources.SERVICE, ns)] == ["web"]

    assert counted(devapi_clean, lambda: reader.get(resources.CONFIGMAP, "cached", ns)) == {}
    assert counted(devapi_clean, lambda: reader.list(resources.SERVICE, ns)) == {}
    assert counted(devapi_clean, lambda: reader.get(resources.CONFIGMAP, "other", ns)) == {"GET": 1}
    assert counted(devapi_clean, lambda: reader.list(resources.CONFIGMAP, ns)) == {"LIST": 1}
    assert counted(devapi_clean, lambda: reader.get(resources.SECRET, "none", ns)) == {"GET": 1}
    assert counted(devapi_clean, lambda: API.reader(kube).get(resources.CONFIGMAP, "cached", ns)) == {"GET": 1}

    running = informers.informers_for(kube)
    per_namespace = running.find(resources.CONFIGMAP, ns)
    assert per_namespace is not None and per_namespace.namespace == ns
    assert running.find(resources.CONFIGMAP, None) is None  # only the namespace read is watched
    assert running.find(resources.SERVICE, None) is not None  # one cluster-wide informer

    kube.patch(resources.CONFIGMAP, "cached", {"data": {"k": "2"}}, namespace=ns)
    assert reader.get(resources.CONFIGMAP, "cached", ns)["data"] == {"k": "2"}  # type: ignore[index]  # own write
    kube.delete(resources.CONFIGMAP, "cached", ns)
    assert reader.get(resources.CONFIGMAP, "cached", ns) is None

    for read in (reader, kube):
        with pytest.raises(ResourceMissing):
            read.get(GADGET, "g", ns)
        with pytest.raises(ResourceMissing):
            read.list(GADGET, ns)

