# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
"""CRD schemas enforced by the dev API server, through the official client and kubectl: the APIRule CRD's
422 answers (schema keywords and CEL rules), status updates against the status schema, pruning and
defaults on create, patch and update."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tasks.apigateway.install import load_crds
from tests.fixtures.devapi import real_cluster
from tests.fixtures.processes import wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(real_cluster(), reason="installs the APIRule CRD (a real cluster has its own)")]

GROUP, PLURAL = "gateway.kyma-project.io", "apirules"
SPEC = {"hosts": ["shop.example.com"], "service": {"name": "shop", "port": 80}, "gateway": "kyma-system/kyma-gateway",
        "rules": [{"path": "/orders/{**}", "methods": ["GET"], "noAuth": True}]}


@pytest.fixture
def apirules(kube_client: client.ApiClient) -> client.CustomObjectsApi:
    ext = client.ApiextensionsV1Api(kube_client)
    ext.create_custom_resource_definition(load_crds(istio=False)[0])
    custom = client.CustomObjectsApi(kube_client)
    wait_for(lambda: _served(custom), timeout=10, message="APIRule CRD not served")
    return custom


def _served(custom: client.CustomObjectsApi) -> bool:
    try:
        custom.list_namespaced_custom_object(GROUP, "v2", "default", PLURAL)
        return True
    except ApiException:
        return False


def body(spec: Any, name: str = "shop", version: str = "v2") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "APIRule", "metadata": {"name": name}, "spec": spec}


def rejected(call: Any) -> dict[str, Any]:
    with pytest.raises(ApiException) as caught:
        call()
    assert caught.value.status == 422
    status = json.loads(caught.value.body)
    assert status["reason"] == "Invalid" and status["code"] == 422 and status["kind"] == "Status"
    return status


def test_create_rejections_with_the_api_servers_messages(apirules: client.CustomObjectsApi) -> None:
    spec = copy.deepcopy(SPEC)
    spec["rules"] = [{"path": "orders", "methods": ["GET", "FETCH"], "noAuth": True, "timeout": 0}]
    spec["hosts"] = ["a.example.com", "b.example.com"]
    status = rejected(lambda: apirules.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, body(spec)))
    causes = {c["field"]: c for c in status["details"]["causes"]}
    assert status["message"].startswith('APIRule.gateway.kyma-project.io "shop" is invalid: [spec.hosts: Too many: '
                                        '2: must have at most 1 items, ')
    assert causes["spec.rules[0].methods[1]"]["reason"] == "FieldValueNotSupported"
    assert causes["spec.rules[0].methods[1]"]["message"].startswith('Unsupported value: "FETCH": supported values: '
                                                                     '"GET", "HEAD"')
    assert causes["spec.rules[0].path"]["message"].startswith('Invalid value: "orders": spec.rules[0].path in body '
                                                               'should match')
    assert causes["spec.rules[0].timeout"]["message"] == ("Invalid value: 0: spec.rules[0].timeout in body should be "
                                                           "greater than or equal to 1")
    assert status["details"] == {**status["details"], "name": "shop", "group": GROUP, "kind": "APIRule"}

    spec = copy.deepcopy(SPEC)
    spec["rules"][0] = {"path": "/a", "methods": ["GET"]}
    spec["gateway"] = "kyma-gateway.kyma-system.svc.cluster.local"
    status = rejected(lambda: apirules.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, body(spec)))
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        ("spec.gateway", 'Invalid value: "string": Gateway must be in the namespace/name format'),
        ("spec.rules[0]", 'Invalid value: "object": One of the following fields must be set: noAuth, jwt, extAuth'),
    ]
    with pytest.raises(ApiException) as missing:
        apirules.get_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "shop")
    assert missing.value.status == 404  # nothing was stored


def test_status_patch_update_pruning(apirules: client.CustomObjectsApi) -> None:
    created = apirules.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL,
                                                       body({**SPEC, "surprise": {"x": 1}}))
    assert "surprise" not in created["spec"]
    # the status subresource is validated against the status schema
    bad_status = {"status": {"state": "Great", "description": 5}}
    status = rejected(lambda: apirules.patch_namespaced_custom_object_status(GROUP, "v2", "default", PLURAL, "shop",
                                                                             bad_status))
    assert [c["field"] for c in status["details"]["causes"]] == ["status.state", "status.description", "<nil>"]
    ok = apirules.patch_namespaced_custom_object_status(GROUP, "v2", "default", PLURAL, "shop",
                                                        {"status": {"state": "Ready", "unknown": 1}})
    assert ok["status"] == {"state": "Ready"}
    # merge patch and PUT are validated too; a valid change goes through
    rejected(lambda: apirules.patch_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "shop",
                                                             {"spec": {"timeout": 4000}}))
    current = apirules.get_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "shop")
    current["spec"]["rules"] = []
    status = rejected(lambda: apirules.replace_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "shop",
                                                                       current))
    assert status["details"]["causes"][0]["message"] == ("Invalid value: 0: spec.rules in body should have at least "
                                                         "1 items")
    patched = apirules.patch_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "shop", {"spec": {"timeout": 60}})
    assert patched["spec"]["timeout"] == 60 and patched["metadata"]["generation"] == 2


def test_a_metadata_only_update_of_an_object_stored_before_the_schema_is_accepted(
        apirules: client.CustomObjectsApi, kube_client: client.ApiClient) -> None:
    """Ratcheting: the controller can still add its finalizer to an object that is invalid today."""
    ext = client.ApiextensionsV1Api(kube_client)
    crd = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}").to_dict()
    loose = load_crds(istio=False)[0]
    for version in loose["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    loose["metadata"]["resourceVersion"] = crd["metadata"]["resource_version"]
    ext.replace_custom_resource_definition(f"{PLURAL}.{GROUP}", loose)
    apirules.create_namespaced_custom_object(GROUP, "v2", "default", PLURAL, body({"hosts": "not a list"}, "old"))
    strict = load_crds(istio=False)[0]
    strict["metadata"]["resourceVersion"] = ext.read_custom_resource_definition(
        f"{PLURAL}.{GROUP}").metadata.resource_version
    ext.replace_custom_resource_definition(f"{PLURAL}.{GROUP}", strict)
    patched = apirules.patch_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "old",
                                                      {"metadata": {"finalizers": ["x/y"]}})
    assert patched["metadata"]["finalizers"] == ["x/y"]
    rejected(lambda: apirules.patch_namespaced_custom_object(GROUP, "v2", "default", PLURAL, "old",
                                                             {"spec": {"hosts": "still not a list"}}))


@pytest.mark.kubectl
def test_kubectl_apply_shows_the_rejection(apirules: client.CustomObjectsApi, kubeconfig_path: Path,
                                           tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl binary in PATH")
    manifest = tmp_path / "rule.yaml"
    manifest.write_text(yaml.safe_dump(body({**SPEC, "hosts": ["Shop.Example.com"]}) | {
        "metadata": {"name": "shop", "namespace": "default"}}))
    done = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig_path), "--cache-dir", str(tmp_path / "cache"),
                           "apply", "-f", str(manifest)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert 'The APIRule "shop" is invalid: spec.hosts[0]: Invalid value: "string": Host must be a lowercase ' \
           'RFC 1123 label' in done.stderr
