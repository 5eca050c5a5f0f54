# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
"""APIRule versions end to end on the dev API server: the CRD's conversion webhook is Reconcilery's /convert
listener (serving the certificate the apigateway-certificate controller wrote), reached through the
Service kyma-system/api-gateway-webhook-service and its Endpoints. v1beta1, v2alpha1 and v2 read and
write through the official client and kubectl; malformed reviews are 400 ConversionReviews; a webhook
that is down is the API server's 500."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from kube import Kube, resources
from tasks.apigateway import certificate
from tasks.apigateway.install import install_crds
from tasks.apigateway.webhook import ConversionWebhook
from tests.fixtures.devapi import real_cluster
from tests.integration.apigateway.conftest import conversion_webhook
from webhooks import ThreadedListener

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(real_cluster(), reason="a webhook on loopback is only reachable by the dev server")]

G, PLURAL, NS = "gateway.kyma-project.io", "apirules", "shop"
V1BETA1_SPEC = {
    "host": "orders",
    "gateway": "kyma-gateway.kyma-system.svc.cluster.local",
    "service": {"name": "orders", "port": 8080},
    "rules": [
        {"path": "/health", "methods": ["GET"], "accessStrategies": [{"handler": "no_auth"}]},
        {"path": "/orders/{**}", "methods": ["GET"], "accessStrategies": [
            {"handler": "jwt", "config": {"trusted_issuers": ["https://issuer"], "jwks_urls": ["https://issuer/jwks"]}}],
         "mutators": [{"handler": "header", "config": {"headers": {"X-Env": "prod"}}}]},
    ],
}
V2_SPEC = {"hosts": ["catalog.example.com"], "service": {"name": "catalog", "port": 9090},
           "gateway": "kyma-system/kyma-gateway",
           "rules": [{"path": "/items/{*}", "methods": ["GET"], "noAuth": True}]}


class Versions:
    """The cluster with the conversion webhook, and helpers per APIRule version."""

    def __init__(self, kube: Kube, api: client.CustomObjectsApi, listener: ThreadedListener) -> None:
        self.kube = kube
        self.api = api
        self.listener = listener

    def create(self, version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": f"{G}/{version}", "kind": "APIRule", "metadata": {"name": name}, "spec": spec}
        return self.api.create_namespaced_custom_object(G, version, NS, PLURAL, body)

    def get(self, version: str, name: str) -> dict[str, Any]:
        return self.api.get_namespaced_custom_object(G, version, NS, PLURAL, name)

    @property
    def webhook(self) -> ConversionWebhook:
        return self.listener.listener


@pytest.fixture
def versions(kube_client: client.ApiClient) -> Iterator[Versions]:
    kube = Kube(kube_client, timeout=10.0)
    install_crds(kube, istio=False, conversion=True)
    kube.create(resources.NAMESPACE, {"metadata": {"name": NS}})
    with conversion_webhook(kube) as listener:
        yield Versions(kube, client.CustomObjectsApi(kube_client), listener)


def test_v1beta1_object_reads_in_every_version(versions: Versions) -> None:
    created = versions.create("v1beta1", "orders", V1BETA1_SPEC)
    assert created["apiVersion"] == f"{G}/v1beta1" and created["spec"] == V1BETA1_SPEC
    stored = versions.get("v2alpha1", "orders")  # the storage version: what the webhook made of it
    annotations = stored["metadata"]["annotations"]
    assert annotations[f"{G}/original-version"] == "v1beta1"
    assert json.loads(annotations[f"{G}/v1beta1-spec"])["host"] == "orders"
    v2 = versions.get("v2", "orders")
    assert v2["spec"] == {
        "hosts": ["orders"], "gateway": "kyma-system/kyma-gateway", "service": {"name": "orders", "port": 8080},
        "rules": [{"path": "/health", "methods": ["GET"], "noAuth": True},
                  {"path": "/orders/{**}", "methods": ["GET"],
                   "jwt": {"authentications": [{"issuer": "https://issuer", "jwksUri": "https://issuer/jwks"}],
                           "authorizations": [{}]},
                   "request": {"headers": {"X-Env": "prod"}}}]}
    assert versions.get("v1beta1", "orders")["spec"] == V1BETA1_SPEC  # the round trip keeps the v1beta1 spec
    # a status written as v2 reads as v1beta1 component status
    versions.api.patch_namespaced_custom_object_status(G, "v2", NS, PLURAL, "orders",
                                                       {"status": {"state": "Ready", "description": "ok"}})
    assert versions.get("v1beta1", "orders")["status"]["APIRuleStatus"] == {"code": "OK", "desc": "ok"}
    # a v1beta1 patch goes through the webhook both ways and updates the annotation
    versions.api.patch_namespaced_custom_object(G, "v1beta1", NS, PLURAL, "orders", {"spec": {"timeout": 300}})
    assert json.loads(versions.get("v2alpha1", "orders")["metadata"]["annotations"][f"{G}/v1beta1-spec"])[
        "timeout"] == 300
    assert versions.get("v2", "orders")["spec"]["timeout"] == 300


def test_v2_object_reads_as_v1beta1_with_empty_spec_and_lists_watch(versions: Versions) -> None:
    versions.create("v2", "catalog", V2_SPEC)
    assert versions.get("v2alpha1", "catalog")["metadata"]["annotations"][f"{G}/original-version"] == "v2"
    assert versions.get("v1beta1", "catalog")["spec"] == {}
    versions.create("v1beta1", "orders", V1BETA1_SPEC)
    listed = versions.api.list_namespaced_custom_object(G, "v2", NS, PLURAL)
    assert [(o["metadata"]["name"], o["apiVersion"]) for o in listed["items"]] == [
        ("catalog", f"{G}/v2"), ("orders", f"{G}/v2")]
    events = []
    stream = watch.Watch().stream(versions.api.list_namespaced_custom_object, G, "v1beta1", NS, PLURAL,
                                  timeout_seconds=5)
    for event in stream:
        events.append((event["type"], event["object"]["apiVersion"], event["object"]["metadata"]["name"]))
        if len(events) == 2:
            versions.api.patch_namespaced_custom_object(G, "v2", NS, PLURAL, "catalog", {"spec": {"timeout": 5}})
        if len(events) == 3:
            break
    assert events == [("ADDED", f"{G}/v1beta1", "catalog"), ("ADDED", f"{G}/v1beta1", "orders"),
                      ("MODIFIED", f"{G}/v1beta1", "catalog")]


def test_schema_of_the_request_version_applies(versions: Versions) -> None:
    """v1beta1 objects are validated against the v1beta1 schema (whatever the storage version requires)."""
    with pytest.raises(ApiException) as caught:
        versions.create("v1beta1", "bad", {**V1BETA1_SPEC, "host": "x"})
    assert caught.value.status == 422
    assert "spec.host in body should be at least 3 chars long" in json.loads(caught.value.body)["message"]
    # unconvertible rules are fine in v1beta1: stored without rules, read back whole
    spec = {**V1BETA1_SPEC, "rules": [{"path": "/.*", "methods": ["GET"],
                                        "accessStrategies": [{"handler": "oauth2_introspection"}]}]}
    versions.create("v1beta1", "regex", spec)
    assert "rules" not in versions.get("v2alpha1", "regex")["spec"]
    assert versions.get("v1beta1", "regex")["spec"] == spec


def test_webhook_down_is_the_api_servers_500(versions: Versions) -> None:
    versions.create("v2", "catalog", V2_SPEC)
    versions.listener.stop()
    with pytest.raises(ApiException) as caught:
        versions.get("v1beta1", "catalog")
    assert caught.value.status == 500
    assert ("conversion webhook for gateway.kyma-project.io/v2alpha1, Kind=APIRule failed: Post "
            in json.loads(caught.value.body)["message"])
    assert versions.get("v2alpha1", "catalog")["spec"] == V2_SPEC  # the storage version needs no webhook


def _post(url: str, body: bytes, ca_pem: bytes) -> tuple[int, dict[str, Any]]:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.check_hostname = False  # the certificate names the Service, the test dials 127.0.0.1
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_malformed_reviews_get_400_over_https(versions: Versions) -> None:
    secret = versions.kube.get(resources.SECRET, certificate.SECRET[1], namespace=certificate.SECRET[0])
    ca = certificate.decode_secret_data(secret)[0]
    assert ca is not None
    url = versions.webhook.url
    for body in (b"{", b"[]", b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}'):
        status, answer = _post(url, body, ca)
        # a ConversionReview with a failed result (issue 17; was a Status)
        assert status == 400 and answer["kind"] == "ConversionReview"
        assert answer["response"]["result"]["status"] == "Failure"
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "x", "desiredAPIVersion": f"{G}/v1beta1", "objects": [{"apiVersion": "v1"}]}}
    status, answer = _post(url, json.dumps(review).encode(), ca)
    assert status == 200 and answer["response"]["result"]["status"] == "Failure"


@pytest.mark.kubectl
def test_kubectl_gets_every_version(versions: Versions, kubeconfig_path: Path, tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl binary in PATH")
    versions.create("v1beta1", "orders", V1BETA1_SPEC)
    base = [kubectl, "--kubeconfig", str(kubeconfig_path), "--cache-dir", str(tmp_path / "cache"), "-n", NS]
    for resource, key, expected in ((f"apirules.v1beta1.{G}", "host", "orders"),
                                    (f"apirules.v2.{G}", "hosts", ["orders"])):
        done = subprocess.run([*base, "get", resource, "orders", "-o", "json"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["spec"][key] == expected


def test_v1beta1_admission_webhook_refuses_v1beta1_writes_without_access(versions: Versions) -> None:
    """The same listener's /validate-gateway-kyma-project-io-v1beta1-apirule, registered as up does (deploy/'s
    ValidatingWebhookConfiguration through the Service, the certificate Secret's caBundle): without v1beta1 access
    (the default) a v1beta1 create is refused with the original's message and counted; v2 is not asked."""
    import base64

    from prometheus_client import REGISTRY

    from tasks.apigateway.webhook import v1beta1_webhook_configuration

    namespace, name = certificate.SECRET
    cert_pem, _ = certificate.decode_secret_data(versions.kube.get(resources.SECRET, name, namespace=namespace))
    config = v1beta1_webhook_configuration(base64.b64encode(cert_pem or b"").decode())
    versions.kube.create(resources.VALIDATING_WEBHOOK_CONFIGURATION, config)
    counted = REGISTRY.get_sample_value("api_gateway_apirule_v1beta1_create_actions_total") or 0.0

    with pytest.raises(ApiException) as info:
        versions.create("v1beta1", "legacy", V1BETA1_SPEC)

    assert info.value.status == 403
    assert json.loads(info.value.body)["message"] == (
        'admission webhook "v1beta1-admission.apirule.gateway.kyma-project.io" denied the request: '
        "v1beta1 APIRule version is no longer supported, please use v2 instead")
    assert REGISTRY.get_sample_value("api_gateway_apirule_v1beta1_create_actions_total") == counted + 1
    assert versions.create("v2", "current", V2_SPEC)["metadata"]["name"] == "current"
    assert [o["metadata"]["name"] for o in versions.api.list_namespaced_custom_object(
        G, "v2", NS, PLURAL)["items"]] == ["current"]
