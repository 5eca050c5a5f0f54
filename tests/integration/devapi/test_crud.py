# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
# (the official client is typed with models; passing plain dicts is supported at runtime)
"""Create / get / list / replace / delete through the official client: conformance with a real API server."""

from __future__ import annotations

import json
import uuid

import pytest
from kubernetes import client

from tests.integration.devapi.conftest import Crd

pytestmark = pytest.mark.integration


def status_body(exc: client.ApiException) -> dict:
    return json.loads(exc.body)


def test_create_sets_server_fields_and_get_returns_the_same(core: client.CoreV1Api, unique_ns: str) -> None:
    created = core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "c1"}, "data": {"a": "1"}})
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    assert created.metadata.namespace == unique_ns
    fetched = core.read_namespaced_config_map("c1", unique_ns)
    assert (fetched.metadata.uid, fetched.data) == (created.metadata.uid, {"a": "1"})


def test_generate_name(core: client.CoreV1Api, unique_ns: str) -> None:
    created = core.create_namespaced_config_map(unique_ns, {"metadata": {"generateName": "gen-"}})
    assert created.metadata.name.startswith("gen-") and len(created.metadata.name) == 9


def test_already_exists_is_409_with_a_status_body(core: client.CoreV1Api, unique_ns: str) -> None:
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "dup"}})
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "dup"}})
    body = status_body(exc.value)
    assert exc.value.status == 409
    assert body["kind"] == "Status" and body["reason"] == "AlreadyExists" and body["code"] == 409
    assert body["message"] == 'configmaps "dup" already exists'
    assert body["details"] == {"name": "dup", "kind": "configmaps"}


def test_not_found_and_missing_namespace(core: client.CoreV1Api, unique_ns: str) -> None:
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_config_map("nope", unique_ns)
    assert exc.value.status == 404 and status_body(exc.value)["message"] == 'configmaps "nope" not found'
    missing = f"missing-{uuid.uuid4().hex[:6]}"
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map(missing, {"metadata": {"name": "x"}})
    assert exc.value.status == 404 and status_body(exc.value)["message"] == f'namespaces "{missing}" not found'


def test_missing_name_is_422(core: client.CoreV1Api, unique_ns: str) -> None:
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map(unique_ns, {"metadata": {}})
    body = status_body(exc.value)
    assert exc.value.status == 422 and body["reason"] == "Invalid"
    assert "name or generateName is required" in body["message"]


def test_list_kind_rv_and_label_selectors(core: client.CoreV1Api, unique_ns: str) -> None:
    for name, labels in [("a", {"app": "x", "tier": "web"}), ("b", {"app": "y"}), ("c", {})]:
        core.create_namespaced_config_map(unique_ns, {"metadata": {"name": name, "labels": labels}})

    def names(selector: str | None = None, field: str | None = None) -> list[str]:
        items = core.list_namespaced_config_map(unique_ns, label_selector=selector, field_selector=field).items
        return sorted(i.metadata.name for i in items if i.metadata.name != "kube-root-ca.crt")

    assert names() == ["a", "b", "c"]
    assert names("app=x") == ["a"]
    assert names("app==x") == ["a"]
    assert names("app!=x") == ["b", "c"]
    assert names("app in (x,y)") == ["a", "b"]
    assert names("app notin (x)") == ["b", "c"]
    assert names("app") == ["a", "b"]
    assert names("!app") == ["c"]
    assert names("app=x,tier=web") == ["a"]
    assert names(field="metadata.name=b") == ["b"]
    assert names(field="metadata.name!=b") == ["a", "c"]
    raw = json.loads(core.list_namespaced_config_map(unique_ns, _preload_content=False).data)
    assert raw["kind"] == "ConfigMapList" and int(raw["metadata"]["resourceVersion"]) > 0
    everywhere = core.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={unique_ns}").items
    assert {i.metadata.name for i in everywhere} >= {"a", "b", "c"}


def test_pod_field_selector_spec_node_name(core: client.CoreV1Api, unique_ns: str) -> None:
    for name, node in [("p1", "n1"), ("p2", "n2")]:
        core.create_namespaced_pod(unique_ns, {"metadata": {"name": name}, "spec": {
            "nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
    pods = core.list_namespaced_pod(unique_ns, field_selector="spec.nodeName=n1").items
    assert [p.metadata.name for p in pods] == ["p1"]


def test_replace_conflicts_on_stale_resource_version(core: client.CoreV1Api, unique_ns: str) -> None:
    first = core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "c"}, "data": {"v": "1"}})
    first.data = {"v": "2"}
    second = core.replace_namespaced_config_map("c", unique_ns, first)
    assert second.metadata.resource_version != first.metadata.resource_version
    first.data = {"v": "3"}
    with pytest.raises(client.ApiException) as exc:
        core.replace_namespaced_config_map("c", unique_ns, first)  # first still has the old RV
    body = status_body(exc.value)
    assert exc.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been modified; '
                               'please apply your changes to the latest version and try again')
    unconditional = core.replace_namespaced_config_map("c", unique_ns, {"metadata": {"name": "c"},
                                                                        "data": {"v": "4"}})
    assert unconditional.data == {"v": "4"}


def test_replace_of_custom_resource_conflicts(crd: Crd, unique_ns: str) -> None:
    obj = crd.api.create_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, crd.body("w", spec={"a": 1}))
    crd.api.patch_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, "w", {"spec": {"a": 2}})
    obj["spec"] = {"a": 3}
    with pytest.raises(client.ApiException) as exc:
        crd.api.replace_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, "w", obj)
    assert exc.value.status == 409
    assert f'on {crd.plural}.{crd.group} "w": the object has been modified' in status_body(exc.value)["message"]


def test_delete_without_finalizers_is_immediate(core: client.CoreV1Api, unique_ns: str) -> None:
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "gone"}})
    core.delete_namespaced_config_map("gone", unique_ns, body={"propagationPolicy": "Background"})
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_config_map("gone", unique_ns)
    assert exc.value.status == 404


def test_cluster_scoped_kinds(core: client.CoreV1Api, kube_client: client.ApiClient) -> None:
    name = f"node-{uuid.uuid4().hex[:6]}"
    node = core.create_node({"metadata": {"name": name, "labels": {"kubedev-test": name}},
                             "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}]}})
    try:
        assert node.metadata.namespace is None
        assert [n.metadata.name for n in core.list_node(label_selector=f"kubedev-test={name}").items] == [name]
    finally:
        core.delete_node(name)


def test_other_builtin_kinds_round_trip(kube_client: client.ApiClient, unique_ns: str) -> None:
    apps = client.AppsV1Api(kube_client)
    dep = apps.create_namespaced_deployment(unique_ns, {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    assert dep.metadata.generation == 1
    lease = client.CoordinationV1Api(kube_client).create_namespaced_lease(
        unique_ns, {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}})
    assert lease.spec.holder_identity == "me"
    eps = client.DiscoveryV1Api(kube_client).create_namespaced_endpoint_slice(unique_ns, {
        "metadata": {"name": "s", "labels": {"kubernetes.io/service-name": "svc"}}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.1.1"]}]})
    assert eps.endpoints[0].addresses == ["10.1.1.1"]
    ev = client.EventsV1Api(kube_client).create_namespaced_event(unique_ns, {
        "metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x/y",
        "reportingInstance": "i", "action": "Act", "reason": "Why", "type": "Normal",
        "regarding": {"kind": "ConfigMap", "namespace": unique_ns, "name": "c"}})
    assert ev.reason == "Why"
    mwc_name = f"mwc-{uuid.uuid4().hex[:6]}"
    adm = client.AdmissionregistrationV1Api(kube_client)
    mwc = adm.create_mutating_webhook_configuration({"metadata": {"name": mwc_name}, "webhooks": [{
        "name": "w.kubedev.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"url": "https://127.0.0.1:1/mutate"}, "failurePolicy": "Ignore",
        "objectSelector": {"matchLabels": {"never": "matches-kubedev"}}}]})
    try:
        assert mwc.webhooks[0].name == "w.kubedev.example.com"
    finally:
        adm.delete_mutating_webhook_configuration(mwc_name)


METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


def test_a_list_asked_for_as_partial_object_metadata_holds_the_metadata_only(core: client.CoreV1Api,
                                                                             unique_ns: str) -> None:
    """client-go's metadata client: ``Accept: ...;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`` gets each
    object's metadata (labels and annotations included) and the list's resourceVersion, no data; a plain
    ``Accept`` the whole objects."""
    core.create_namespaced_config_map(unique_ns, {"metadata": {"name": "m1", "labels": {"a": "b"},
                                                               "annotations": {"v": "1"}}, "data": {"big": "x" * 5000}})
    answer = core.list_namespaced_config_map(unique_ns, label_selector="a=b", _preload_content=False,
                                             _headers={"Accept": METADATA_ACCEPT})
    body = json.loads(answer.data)
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert body["metadata"]["resourceVersion"]
    [item] = body["items"]
    assert set(item) == {"kind", "apiVersion", "metadata"} and item["kind"] == "PartialObjectMetadata"
    assert (item["metadata"]["name"], item["metadata"]["labels"], item["metadata"]["annotations"]) == (
        "m1", {"a": "b"}, {"v": "1"})
    assert len(answer.data) < 1000
    plain = core.list_namespaced_config_map(unique_ns, _preload_content=False, _headers={"Accept": "application/json"})
    assert json.loads(plain.data)["items"][0]["data"] == {"big": "x" * 5000}
