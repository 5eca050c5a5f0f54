"""The Kubernetes layer against the dev API server: CRUD, patches, status, errors, events."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from kube import ApiError, Conflict, Kube, NotFound, Resource, ResourceMissing, clusters, resources
from kube.kubeconfig import ENV_KUBECONFIG, from_kubeconfig
from tests.fixtures.processes import wait_for

pytestmark = pytest.mark.integration


def configmap(name: str, namespace: str, **data: str) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": "t"}}, "data": dict(data)}


def test_crud(kube: Kube, unique_ns: str) -> None:
    created = kube.create(resources.CONFIGMAP, configmap("a", unique_ns, k="v"))
    assert created["metadata"]["resourceVersion"] and created["kind"] == "ConfigMap"
    kube.create(resources.CONFIGMAP, {**configmap("b", unique_ns), "metadata": {"name": "b", "namespace": unique_ns}})

    assert (kube.get(resources.CONFIGMAP, "a", unique_ns) or {}).get("data") == {"k": "v"}
    assert kube.get(resources.CONFIGMAP, "missing", unique_ns) is None
    listed = kube.list(resources.CONFIGMAP, unique_ns, label_selector="app=t")
    assert [o["metadata"]["name"] for o in listed] == ["a"]
    assert listed[0]["apiVersion"] == "v1" and listed[0]["kind"] == "ConfigMap"
    assert {"a", "b"} <= {o["metadata"]["name"] for o in kube.list(resources.CONFIGMAP, unique_ns)}
    by_field = kube.list(resources.CONFIGMAP, unique_ns, field_selector="metadata.name=b")
    assert [o["metadata"]["name"] for o in by_field] == ["b"]

    with pytest.raises(Conflict) as exists:
        kube.create(resources.CONFIGMAP, configmap("a", unique_ns))
    assert exists.value.reason == "AlreadyExists"

    updated = kube.replace(resources.CONFIGMAP, {**created, "data": {"k": "w"}})
    assert updated["data"] == {"k": "w"}
    with pytest.raises(Conflict) as stale:
        kube.replace(resources.CONFIGMAP, {**created, "data": {"k": "x"}})  # created's resourceVersion is old
    assert stale.value.status == 409 and stale.value.reason == "Conflict"

    kube.delete(resources.CONFIGMAP, "a", unique_ns)
    assert kube.get(resources.CONFIGMAP, "a", unique_ns) is None
    kube.delete(resources.CONFIGMAP, "a", unique_ns)  # absent: fine


def test_pagination(kube: Kube, unique_ns: str) -> None:
    for i in range(7):
        kube.create(resources.CONFIGMAP, configmap(f"c{i}", unique_ns))
    items, version = kube.list_with_version(resources.CONFIGMAP, unique_ns, "app=t", page_size=3)
    assert sorted(o["metadata"]["name"] for o in items) == [f"c{i}" for i in range(7)]
    assert version


def test_patch_types(kube: Kube, unique_ns: str) -> None:
    kube.create(resources.CONFIGMAP, configmap("p", unique_ns, a="1", b="2"))
    merged = kube.patch(resources.CONFIGMAP, "p", {"data": {"a": "9", "b": None}}, unique_ns)
    assert merged["data"] == {"a": "9"}
    jsoned = kube.patch(resources.CONFIGMAP, "p", [{"op": "add", "path": "/data/c", "value": "3"}], unique_ns, "json")
    assert jsoned["data"] == {"a": "9", "c": "3"}
    with pytest.raises(ApiError):
        kube.patch(resources.CONFIGMAP, "p", [{"op": "test", "path": "/data/a", "value": "0"}], unique_ns, "json")

    svc = {"metadata": {"name": "s", "namespace": unique_ns},
           "spec": {"ports": [{"name": "http", "port": 80}], "selector": {"app": "x"}}}
    kube.create(resources.SERVICE, svc)
    patched = kube.patch(resources.SERVICE, "s", {"spec": {"ports": [{"name": "https", "port": 443}]}},
                         unique_ns, "strategic")
    assert sorted(p["port"] for p in patched["spec"]["ports"]) == [80, 443]  # merged by the port key

    with pytest.raises(ValueError):
        kube.patch(resources.CONFIGMAP, "p", {}, unique_ns, "apply")
    with pytest.raises(NotFound):
        kube.patch(resources.CONFIGMAP, "nope", {"data": {}}, unique_ns)
    with pytest.raises(NotFound):
        kube.replace(resources.CONFIGMAP, configmap("nope", unique_ns))


def test_status_subresource(kube: Kube, widgets: Resource, unique_ns: str) -> None:
    kube.create(widgets, {"metadata": {"name": "w", "namespace": unique_ns}, "spec": {"size": 1}})
    after = kube.patch_status(widgets, "w", {"state": "Ready", "observedGeneration": 1}, unique_ns)
    assert after["status"] == {"state": "Ready", "observedGeneration": 1}
    assert after["spec"] == {"size": 1}
    # the main resource ignores status, the status subresource ignores spec
    ignored = kube.patch(widgets, "w", {"spec": {"size": 2}, "status": {"state": "Hacked"}}, unique_ns)
    assert ignored["spec"] == {"size": 2} and ignored["status"]["state"] == "Ready"
    with pytest.raises(NotFound):
        kube.patch_status(widgets, "nope", {"state": "x"}, unique_ns)


def test_resource_missing_after_crd_deleted(kube: Kube, widgets: Resource, unique_ns: str) -> None:
    kube.create(widgets, {"metadata": {"name": "w", "namespace": unique_ns}, "spec": {}})
    assert kube.get(widgets, "w", unique_ns) is not None
    kube.delete(resources.CRD, widgets.full_name)
    wait_for(lambda: not kube.served(widgets), timeout=10, message="kind no longer served")
    with pytest.raises(ResourceMissing):
        kube.get(widgets, "w", unique_ns)
    with pytest.raises(ResourceMissing):
        kube.list(widgets, unique_ns)
    with pytest.raises(ResourceMissing):
        kube.create(widgets, {"metadata": {"name": "w2", "namespace": unique_ns}})
    kube.delete(widgets, "w", unique_ns)  # nothing to delete: fine
    never = Resource("nowhere.example.io", "v1", "things", "Thing", False)
    with pytest.raises(ResourceMissing):
        kube.get(never, "x")
    assert not kube.served(never)


def test_emit_event_aggregates_identical_events(kube: Kube, unique_ns: str) -> None:
    cm = kube.create(resources.CONFIGMAP, configmap("e", unique_ns))
    kube.emit_event(cm, "Synced", "all good")
    kube.emit_event(cm, "Synced", "all good")
    kube.emit_event(cm, "Synced", "all good")
    kube.emit_event(cm, "Failed", "bad spec", "Warning")
    events = {e["reason"]: e for e in kube.list(resources.EVENT, unique_ns)}
    assert set(events) == {"Synced", "Failed"}
    synced = events["Synced"]
    assert synced["count"] == 3
    assert synced["type"] == "Normal" and events["Failed"]["type"] == "Warning"
    assert synced["source"]["component"] == "reconcilery"
    assert synced["involvedObject"]["name"] == "e" and synced["involvedObject"]["kind"] == "ConfigMap"
    assert synced["involvedObject"]["uid"] == cm["metadata"]["uid"]
    assert synced["lastTimestamp"] >= synced["firstTimestamp"]

    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"{unique_ns}-node", "uid": "n-1"}}
    kube.emit_event(node, "Seen", "cluster-scoped objects get events in default")
    assert [e["reason"] for e in kube.list(resources.EVENT, "default")
            if e["involvedObject"]["name"] == f"{unique_ns}-node"] == ["Seen"]


def test_unreachable_server_is_an_api_error() -> None:
    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:1"
    cfg.retries = False
    with pytest.raises(ApiError) as err:
        Kube(client.ApiClient(cfg), timeout=2).get(resources.SERVICE, "x", "default")
    assert err.value.status == 0


def test_client_for_local_reads_reconcilery_kubeconfig(kubeconfig_path: Path, kube_client: client.ApiClient,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_KUBECONFIG, str(kubeconfig_path))
    clusters.reset()
    try:
        local = clusters.client_for("local")
        assert clusters.client_for("local") is local
        assert local.get(resources.NAMESPACE, "default") is not None
        with pytest.raises(KeyError):
            clusters.client_for("skr-1")
        clusters.register("skr-1", from_kubeconfig(str(kubeconfig_path)))
        assert clusters.client_for("skr-1").get(resources.NAMESPACE, "default") is not None
        assert clusters.registered("skr-1")
    finally:
        clusters.reset()
    assert not clusters.registered("skr-1")
