# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
# (the official client is typed with models; passing plain dicts is supported at runtime)
"""PATCH flavours through the official client: merge, JSON, strategic merge and server-side apply."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.integration.devapi.conftest import Crd

pytestmark = pytest.mark.integration


def raw_patch(api: client.ApiClient, path: str, body: object, content_type: str,
              query: list[tuple[str, str]] | None = None) -> dict:
    """PATCH ``path`` with an explicit content type (the client otherwise picks one itself)."""
    response = api.call_api(*api.param_serialize(
        method="PATCH", resource_path=path, query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": "application/json"}, body=body,
        auth_settings=["BearerToken"]))
    response.read()
    if response.status >= 400:
        raise client.ApiException(status=response.status, reason=response.reason, body=response.data.decode())
    return json.loads(response.data)


def test_merge_patch_merges_maps_and_deletes_with_null(core: client.CoreV1Api, unique_ns: str,
                                                       kube_client: client.ApiClient) -> None:
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}},
                                                  "data": {"x": "1"}})
    out = raw_patch(kube_client, f"/api/v1/namespaces/{unique_ns}/configmaps/c",
                    {"metadata": {"labels": {"a": None, "c": "3"}}, "data": {"y": "2"}},
                    "application/merge-patch+json")
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"} and out["data"] == {"x": "1", "y": "2"}


def test_json_patch(crd: Crd, unique_ns: str) -> None:
    crd.api.create_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural,
                                            crd.body("w", spec={"items": [1, 2], "size": 1}))
    out = crd.api.patch_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, "w", [
        {"op": "replace", "path": "/spec/size", "value": 5},
        {"op": "add", "path": "/spec/items/-", "value": 3},
        {"op": "remove", "path": "/spec/items/0"}], _content_type="application/json-patch+json")
    assert out["spec"] == {"items": [2, 3], "size": 5} and out["metadata"]["generation"] == 2
    with pytest.raises(client.ApiException) as exc:
        crd.api.patch_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, "w",
                                               [{"op": "test", "path": "/spec/size", "value": 99}],
                                               _content_type="application/json-patch+json")
    assert exc.value.status == 422


def test_strategic_merge_patch_merges_containers_by_name(kube_client: client.ApiClient, unique_ns: str) -> None:
    apps = client.AppsV1Api(kube_client)
    apps.create_namespaced_deployment(unique_ns, {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "side:1"}]}}}})
    out = raw_patch(kube_client, f"/apis/apps/v1/namespaces/{unique_ns}/deployments/d",
                    {"spec": {"template": {"spec": {"containers": [
                        {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}]}}}},
                    "application/strategic-merge-patch+json")
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "app:2"), ("side", "side:1")]
    assert [e["name"] for e in containers[0]["env"]] == ["A", "B"]
    assert out["metadata"]["generation"] == 2


def test_strategic_merge_patch_finalizers_and_delete_directive(core: client.CoreV1Api, unique_ns: str,
                                                               kube_client: client.ApiClient) -> None:
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "c", "finalizers": ["a.example.com/x"]}})
    path = f"/api/v1/namespaces/{unique_ns}/configmaps/c"
    out = raw_patch(kube_client, path, {"metadata": {"finalizers": ["b.example.com/y"]}},
                    "application/strategic-merge-patch+json")
    assert out["metadata"]["finalizers"] == ["a.example.com/x", "b.example.com/y"]
    out = raw_patch(kube_client, path, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/x",
                                                                                              "b.example.com/y"]}},
                    "application/strategic-merge-patch+json")
    assert not out["metadata"].get("finalizers")


def test_strategic_merge_patch_of_custom_resource_is_unsupported(crd: Crd, unique_ns: str,
                                                                 kube_client: client.ApiClient) -> None:
    crd.api.create_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, crd.body("w"))
    with pytest.raises(client.ApiException) as exc:
        raw_patch(kube_client, f"/apis/{crd.group}/v1/namespaces/{unique_ns}/{crd.plural}/w", {"spec": {}},
                  "application/strategic-merge-patch+json")
    assert exc.value.status == 415


def test_server_side_apply_creates_then_merges(crd: Crd, unique_ns: str, kube_client: client.ApiClient) -> None:
    path = f"/apis/{crd.group}/v1/namespaces/{unique_ns}/{crd.plural}/applied"
    query = [("fieldManager", "kubedev-test"), ("force", "true")]
    created = raw_patch(kube_client, path, crd.body("applied", spec={"a": 1, "b": 2}),
                        "application/apply-patch+yaml", query)
    assert created["spec"] == {"a": 1, "b": 2} and created["metadata"]["uid"]
    updated = raw_patch(kube_client, path, crd.body("applied", spec={"a": 1, "b": 3}),
                        "application/apply-patch+yaml", query)
    assert updated["spec"]["b"] == 3 and updated["metadata"]["uid"] == created["metadata"]["uid"]


def test_noop_patch_keeps_resource_version(core: client.CoreV1Api, unique_ns: str) -> None:
    created = core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    same = core.patch_namespaced_config_map("c", unique_ns, {"data": {"a": "1"}})
    assert same.metadata.resource_version == created.metadata.resource_version


def test_patch_with_stale_resource_version_conflicts(core: client.CoreV1Api, unique_ns: str) -> None:
    created = core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("c", unique_ns, {"data": {"a": "2"}})
    with pytest.raises(client.ApiException) as exc:
        core.patch_namespaced_config_map("c", unique_ns, {"metadata": {"resourceVersion":
                                                                       created.metadata.resource_version},
                                                          "data": {"a": "3"}})
    assert exc.value.status == 409
