# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
# (the official client is typed with models; passing plain dicts is supported at runtime)
"""Status subresource, generation, finalizers, namespace cascade and CRD serving (official client)."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client

from tests.integration.devapi.conftest import Crd, crd_manifest, make_crd, wait_until

pytestmark = pytest.mark.integration


def test_status_subresource_and_generation_rules(crd: Crd, unique_ns: str) -> None:
    g, p = crd.group, crd.plural
    created = crd.api.create_namespaced_custom_object(g, "v1", unique_ns, p, crd.body("w", spec={"size": 1}))
    rv0, gen0 = created["metadata"]["resourceVersion"], created["metadata"]["generation"]
    assert gen0 == 1
    with_status = crd.api.patch_namespaced_custom_object_status(g, "v1", unique_ns, p, "w",
                                                                {"status": {"phase": "Ready"}, "spec": {"size": 7}})
    assert with_status["status"] == {"phase": "Ready"} and with_status["spec"] == {"size": 1}
    assert with_status["metadata"]["generation"] == 1 and with_status["metadata"]["resourceVersion"] != rv0
    main = crd.api.patch_namespaced_custom_object(g, "v1", unique_ns, p, "w",
                                                  {"spec": {"size": 2}, "status": {"phase": "Hacked"}})
    assert main["status"] == {"phase": "Ready"} and main["metadata"]["generation"] == 2
    labelled = crd.api.patch_namespaced_custom_object(g, "v1", unique_ns, p, "w", {"metadata": {"labels": {"l": "1"}}})
    assert labelled["metadata"]["generation"] == 2
    labelled["status"] = {"phase": "ViaPut"}
    replaced = crd.api.replace_namespaced_custom_object_status(g, "v1", unique_ns, p, "w", labelled)
    assert replaced["status"] == {"phase": "ViaPut"}


def test_core_status_subresource(core: client.CoreV1Api, unique_ns: str) -> None:
    core.create_namespaced_service(unique_ns, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    out = core.patch_namespaced_service_status("s", unique_ns, {"status": {"loadBalancer": {
        "ingress": [{"ip": "1.2.3.4"}]}}})
    assert out.status.load_balancer.ingress[0].ip == "1.2.3.4"
    ignored = core.patch_namespaced_service("s", unique_ns,
                                            {"status": {"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}]}}})
    assert ignored.status.load_balancer.ingress[0].ip == "1.2.3.4"


def test_finalizers_hold_deletion_until_removed(crd: Crd, unique_ns: str) -> None:
    g, p = crd.group, crd.plural
    crd.api.create_namespaced_custom_object(g, "v1", unique_ns, p, crd.body(
        "w", metadata={"finalizers": ["kubedev.example.com/hold"]}, spec={"a": 1}))
    crd.api.delete_namespaced_custom_object(g, "v1", unique_ns, p, "w")
    held = crd.api.get_namespaced_custom_object(g, "v1", unique_ns, p, "w")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == ["kubedev.example.com/hold"]
    # writes still work on a terminating object (controllers update status and remove finalizers)
    crd.api.patch_namespaced_custom_object_status(g, "v1", unique_ns, p, "w", {"status": {"phase": "Cleaning"}})
    crd.api.patch_namespaced_custom_object(g, "v1", unique_ns, p, "w", {"metadata": {"finalizers": None}})
    with pytest.raises(client.ApiException) as exc:
        crd.api.get_namespaced_custom_object(g, "v1", unique_ns, p, "w")
    assert exc.value.status == 404


def test_namespace_delete_cascades(core: client.CoreV1Api) -> None:
    ns = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "held", "finalizers": ["kubedev.example.com/x"]}})
    core.delete_namespace(ns)
    assert core.read_namespace(ns).status.phase == "Terminating"
    wait_until(lambda: [c.metadata.name for c in core.list_namespaced_config_map(ns).items
                        if c.metadata.name != "kube-root-ca.crt"] == ["held"])
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})

    def gone() -> bool:
        try:
            core.read_namespace(ns)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_until(gone, timeout=120)


def test_crd_is_served_in_every_version_and_in_discovery(crd: Crd, unique_ns: str,
                                                         kube_client: client.ApiClient) -> None:
    created = crd.api.create_namespaced_custom_object(crd.group, "v1", unique_ns, crd.plural, crd.body("w"))
    via_v2 = crd.api.get_namespaced_custom_object(crd.group, "v2", unique_ns, crd.plural, "w")
    assert via_v2["apiVersion"] == f"{crd.group}/v2" and via_v2["metadata"]["uid"] == created["metadata"]["uid"]
    resources = client.CustomObjectsApi(kube_client).get_api_resources(crd.group, "v1").resources
    by_name = {r.name: r for r in resources}
    assert by_name[crd.plural].kind == crd.kind and by_name[crd.plural].namespaced
    assert by_name[crd.plural].short_names == [f"{crd.plural[:3]}x"]
    assert f"{crd.plural}/status" in by_name
    v2 = client.CustomObjectsApi(kube_client).get_api_resources(crd.group, "v2").resources
    assert f"{crd.plural}/status" not in {r.name for r in v2}
    groups = {g.name for g in client.ApisApi(kube_client).get_api_versions().groups}
    assert crd.group in groups
    established = client.ApiextensionsV1Api(kube_client).read_custom_resource_definition(crd.name)
    assert any(c.type == "Established" and c.status == "True" for c in established.status.conditions)


def test_cluster_scoped_crd(kube_client: client.ApiClient) -> None:
    made = make_crd(kube_client, scope="Cluster")
    try:
        obj = made.api.create_cluster_custom_object(made.group, "v1", made.plural, made.body("c1", spec={"x": 1}))
        assert "namespace" not in obj["metadata"]
        listed = made.api.list_cluster_custom_object(made.group, "v1", made.plural)
        assert [i["metadata"]["name"] for i in listed["items"]] == ["c1"] and listed["kind"] == f"{made.kind}List"
    finally:
        client.ApiextensionsV1Api(kube_client).delete_custom_resource_definition(made.name)


def test_deleting_a_crd_stops_serving_and_deletes_objects(kube_client: client.ApiClient, unique_ns: str) -> None:
    made = make_crd(kube_client)
    made.api.create_namespaced_custom_object(made.group, "v1", unique_ns, made.plural, made.body("w"))
    client.ApiextensionsV1Api(kube_client).delete_custom_resource_definition(made.name)

    def not_served() -> bool:
        try:
            made.api.list_namespaced_custom_object(made.group, "v1", unique_ns, made.plural)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_until(not_served, timeout=60)
    # recreating the CRD starts empty
    client.ApiextensionsV1Api(kube_client).create_custom_resource_definition(
        crd_manifest(made.group, made.plural, made.kind))
    try:
        items = wait_until(lambda: made.api.list_namespaced_custom_object(made.group, "v1", unique_ns, made.plural),
                           timeout=30)
        assert items["items"] == []
    finally:
        client.ApiextensionsV1Api(kube_client).delete_custom_resource_definition(made.name)
