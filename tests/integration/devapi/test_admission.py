"""Mutating admission webhooks on the dev API server (kubedev.admission): a local HTTPS webhook, and the
real Snatch webhook end to end. Dev server only: a real cluster cannot reach a webhook on loopback."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client

from kubedev import DevAPIServer
from tasks.snatch.certs import KeyPair, generate_ca, issue_serving_cert
from tests.fixtures.devapi import real_cluster
from tests.fixtures.processes import free_port

pytestmark = pytest.mark.skipif(real_cluster(), reason="webhooks on loopback are only reachable by the dev server")

Handler = Callable[[dict[str, Any]], dict[str, Any] | None]
POOL_TERM = {"key": "worker.gardener.cloud/pool", "operator": "In", "values": ["cpu-worker-0"]}


def allow(patch: list[dict[str, Any]] | None = None) -> Handler:
    """A handler answering ``allowed: true`` with ``patch`` (a JSONPatch) if given."""
    def handle(review: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if patch is not None:
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    return handle


class StubWebhook:
    """An HTTPS admission webhook in a thread; records reviews, answers with ``handler`` (after ``delay`` s)."""

    def __init__(self, ca: KeyPair) -> None:
        self.ca = ca
        self.reviews: list[dict[str, Any]] = []
        self.handler: Handler = allow()
        self.delay = 0.0
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/mutate"

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        if self.delay:
            await asyncio.sleep(self.delay)
        return web.json_response(self.handler(review))

    async def _start(self, serving: KeyPair, tmp: Path) -> None:
        (tmp / "tls.crt").write_bytes(serving.cert_pem)
        (tmp / "tls.key").write_bytes(serving.key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tmp / "tls.crt", tmp / "tls.key")
        app = web.Application()
        app.router.add_post("/mutate", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=context).start()

    def start(self, tmp: Path) -> StubWebhook:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(issue_serving_cert(self.ca), tmp), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return generate_ca("kubedev-admission-test-ca")


@pytest.fixture
def stub(ca: KeyPair, tmp_path: Path) -> Iterator[StubWebhook]:
    hook = StubWebhook(ca).start(tmp_path)
    try:
        yield hook
    finally:
        hook.stop()


def ca_bundle(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


def configuration(url: str, bundle: str, name: str = "test-hook", **webhook: Any) -> dict[str, Any]:
    """A MutatingWebhookConfiguration with one webhook on Pod CREATE in namespaces labelled ``admit=yes``."""
    hook = {"name": "pods.test.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"url": url, "caBundle": bundle}, "failurePolicy": "Fail", "timeoutSeconds": 5,
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"admit": "yes"}}}
    hook.update(webhook)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name}, "webhooks": [hook]}


def pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.fixture
def apis(kube_client: client.ApiClient) -> tuple[Any, Any]:
    """(CoreV1Api, AdmissionregistrationV1Api) with namespaces ``admitted`` (``admit=yes``) and ``plain``."""
    core: Any = client.CoreV1Api(kube_client)
    for ns, labels in (("admitted", {"admit": "yes"}), ("plain", {})):
        core.create_namespace({"metadata": {"name": ns, "labels": labels}})
    return core, client.AdmissionregistrationV1Api(kube_client)


def create_config(admission: Any, body: dict[str, Any]) -> None:
    admission.create_mutating_webhook_configuration(body)


def raw_pod(core: Any, namespace: str, name: str) -> dict[str, Any]:
    resp = core.read_namespaced_pod(name, namespace, _preload_content=False)
    return dict(json.loads(resp.data))


def test_mutating_webhook_patches_a_created_pod(apis: Any, stub: StubWebhook, ca: KeyPair) -> None:
    core, admission = apis
    stub.handler = allow([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
    create_config(admission, configuration(stub.url, ca_bundle(ca.cert_pem)))

    created = core.create_namespaced_pod("admitted", pod("p1", {"app": "a"}))

    assert created.metadata.labels == {"app": "a", "mutated": "yes"}
    assert raw_pod(core, "admitted", "p1")["metadata"]["labels"]["mutated"] == "yes"
    (review,) = stub.reviews
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    request = review["request"]
    assert request["uid"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert (request["namespace"], request["name"], request["operation"]) == ("admitted", "p1", "CREATE")
    assert request["userInfo"]["username"]
    assert request["dryRun"] is False
    assert request["object"]["metadata"]["labels"] == {"app": "a"}
    assert request["object"]["metadata"]["namespace"] == "admitted"


@pytest.mark.parametrize(("namespace", "hook", "called"), [
    ("plain", {}, False),  # namespaceSelector does not match
    ("admitted", {"objectSelector": {"matchLabels": {"app": "other"}}}, False),
    ("admitted", {"objectSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}},
     True),
    ("admitted", {"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                             "resources": ["pods"]}]}, False),
    ("admitted", {"rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
                             "resources": ["*"]}]}, True),
    ("admitted", {"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                             "resources": ["configmaps"]}]}, False),
])
def test_only_matching_webhooks_are_called(apis: Any, stub: StubWebhook, ca: KeyPair, namespace: str,
                                           hook: dict[str, Any], called: bool) -> None:
    core, admission = apis
    stub.handler = allow([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
    create_config(admission, configuration(stub.url, ca_bundle(ca.cert_pem), **hook))

    created = core.create_namespaced_pod(namespace, pod("p1", {"app": "a"}))

    assert len(stub.reviews) == (1 if called else 0)
    assert ("mutated" in created.metadata.labels) is called


def test_denial_rejects_with_the_webhooks_status(apis: Any, stub: StubWebhook, ca: KeyPair) -> None:
    core, admission = apis

    def deny(review: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": False,
                             "status": {"code": 403, "message": "pods need an owner"}}}

    stub.handler = deny
    create_config(admission, configuration(stub.url, ca_bundle(ca.cert_pem)))

    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod("admitted", pod("p1"))

    assert info.value.status == 403
    body = json.loads(info.value.body or "{}")
    assert body["message"] == 'admission webhook "pods.test.example.com" denied the request: pods need an owner'
    assert core.list_namespaced_pod("admitted").items == []


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
def test_unreachable_webhook_follows_failure_policy(apis: Any, ca: KeyPair, policy: str) -> None:
    core, admission = apis
    down = f"https://127.0.0.1:{free_port()}/mutate"
    create_config(admission, configuration(down, ca_bundle(ca.cert_pem), failurePolicy=policy))

    if policy == "Ignore":
        created = core.create_namespaced_pod("admitted", pod("p1", {"app": "a"}))
        assert created.metadata.labels == {"app": "a"}
        return
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod("admitted", pod("p1"))
    assert info.value.status == 500
    body = json.loads(info.value.body or "{}")
    assert body["reason"] == "InternalError"
    assert body["message"].startswith('Internal error occurred: failed calling webhook "pods.test.example.com": '
                                      f'failed to call webhook: Post "{down}"')
    assert body["details"]["causes"][0]["message"].startswith('failed calling webhook "pods.test.example.com"')
    assert core.list_namespaced_pod("admitted").items == []


def test_certificate_not_signed_by_the_ca_bundle_is_a_call_failure(apis: Any, stub: StubWebhook) -> None:
    core, admission = apis
    other = generate_ca("another-ca")
    create_config(admission, configuration(stub.url, ca_bundle(other.cert_pem)))

    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod("admitted", pod("p1"))

    assert info.value.status == 500
    assert "certificate verify failed" in json.loads(info.value.body or "{}")["message"]
    assert stub.reviews == []


def test_slow_webhook_times_out_without_blocking_the_server(apis: Any, stub: StubWebhook, ca: KeyPair,
                                                            devapi: DevAPIServer) -> None:
    core, admission = apis
    stub.delay = 3.0
    create_config(admission, configuration(stub.url, ca_bundle(ca.cert_pem), timeoutSeconds=1,
                                           failurePolicy="Ignore"))
    result: dict[str, Any] = {}

    def create() -> None:
        started = time.monotonic()
        result["pod"] = core.create_namespaced_pod("admitted", pod("p1", {"app": "a"}))
        result["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=create)
    thread.start()
    try:
        time.sleep(0.3)
        started = time.monotonic()
        core.read_namespace("plain")  # answered while the admission waits on the webhook
        assert time.monotonic() - started < 0.5
    finally:
        thread.join(10)
    assert 0.9 < result["seconds"] < 2.5
    assert result["pod"].metadata.labels == {"app": "a"}


def test_update_and_dry_run_are_admitted(apis: Any, stub: StubWebhook, ca: KeyPair) -> None:
    core, admission = apis
    stub.handler = allow([{"op": "add", "path": "/metadata/annotations", "value": {"seen": "yes"}}])
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]
    create_config(admission, configuration(stub.url, ca_bundle(ca.cert_pem), rules=rules))

    dry = core.create_namespaced_pod("admitted", pod("p1"), dry_run="All")
    assert dry.metadata.annotations == {"seen": "yes"}
    assert stub.reviews[-1]["request"]["dryRun"] is True
    assert core.list_namespaced_pod("admitted").items == []

    created = core.create_namespaced_pod("admitted", pod("p1"))
    created.metadata.annotations = None
    created.metadata.labels = {"v": "2"}
    replaced = core.replace_namespaced_pod("p1", "admitted", created)

    assert replaced.metadata.annotations == {"seen": "yes"}
    request = stub.reviews[-1]["request"]
    assert request["operation"] == "UPDATE"
    assert request["oldObject"]["metadata"]["annotations"] == {"seen": "yes"}
    assert request["object"]["metadata"]["labels"] == {"v": "2"}


def test_service_reference_is_skipped(apis: Any, ca: KeyPair) -> None:
    core, admission = apis
    body = configuration("unused", ca_bundle(ca.cert_pem))
    body["webhooks"][0]["clientConfig"] = {"service": {"name": "hook", "namespace": "default"},
                                           "caBundle": ca_bundle(ca.cert_pem)}
    create_config(admission, body)

    assert core.create_namespaced_pod("admitted", pod("p1", {"app": "a"})).metadata.labels == {"app": "a"}


# ---- the real Snatch webhook ----------------------------------------------------------------------


def test_snatch_webhook_end_to_end(kube_client: client.ApiClient, kubeconfig_path: Path, tmp_path: Path) -> None:
    from tasks.snatch.webhook import dev_webhook_configuration, start_dev_webhook

    core: Any = client.CoreV1Api(kube_client)
    for node, pool in (("kyma-node-0", "cpu-worker-0"), ("customer-node-0", "customer-gpu")):
        core.create_node({"metadata": {"name": node, "labels": {"worker.gardener.cloud/pool": pool}}})
    core.create_namespace({"metadata": {"name": "kyma-system",
                                        "labels": {"operator.kyma-project.io/managed-by": "kyma"}}})
    core.create_namespace({"metadata": {"name": "customer-apps"}})
    url, ca_path, stop = start_dev_webhook(tmp_path, str(kubeconfig_path), "cpu-worker-0", metrics_port=-1)
    try:
        config = dev_webhook_configuration(url)
        config["webhooks"][0]["clientConfig"]["caBundle"] = ca_bundle(Path(ca_path).read_bytes())
        create_config(client.AdmissionregistrationV1Api(kube_client), config)

        kyma = core.create_namespaced_pod("kyma-system", pod("telemetry-agent"))
        customer = core.create_namespaced_pod("customer-apps", pod("shop-frontend"))
    finally:
        stop()

    preferred = kyma.spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    assert [(t.weight, t.preference.match_expressions[0].to_dict()) for t in preferred] == [
        (10, {**POOL_TERM})]
    assert customer.spec.affinity is None
    # with the webhook down, failurePolicy Ignore admits unchanged
    late = core.create_namespaced_pod("kyma-system", pod("late"))
    assert late.spec.affinity is None


# ---- validating webhooks ------------------------------------------------------------------------------


def test_validating_webhook_sees_create_update_delete_and_its_refusal_stops_each(apis: Any, stub: StubWebhook,
                                                                                 ca: KeyPair) -> None:
    core, admission = apis
    refuse: set[str] = set()

    def judge(review: dict[str, Any]) -> dict[str, Any]:
        request = review["request"]
        allowed = request["operation"] not in refuse
        response: dict[str, Any] = {"uid": request["uid"], "allowed": allowed}
        if not allowed:
            response["status"] = {"code": 403, "reason": "Forbidden", "message": f"no {request['operation']}"}
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    stub.handler = judge
    body = configuration(stub.url, ca_bundle(ca.cert_pem), rules=[
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE", "DELETE"],
         "resources": ["pods"]}])
    body["kind"] = "ValidatingWebhookConfiguration"
    admission.create_validating_webhook_configuration(body)

    created = core.create_namespaced_pod("admitted", pod("p1", {"app": "a"}))
    created.metadata.labels = {"app": "b"}
    core.replace_namespaced_pod("p1", "admitted", created)
    refuse.update({"UPDATE", "DELETE"})
    for call in (lambda: core.replace_namespaced_pod("p1", "admitted", pod("p1", {"app": "c"})),
                 lambda: core.delete_namespaced_pod("p1", "admitted")):
        with pytest.raises(client.ApiException) as info:
            call()
        assert info.value.status == 403
    assert json.loads(info.value.body or "{}")["message"] == (
        'admission webhook "pods.test.example.com" denied the request: no DELETE')
    assert core.read_namespaced_pod("p1", "admitted").metadata.labels == {"app": "b"}
    core.create_namespaced_pod("plain", pod("p2"))  # namespaceSelector: not asked

    operations = [r["request"]["operation"] for r in stub.reviews]
    assert operations == ["CREATE", "UPDATE", "UPDATE", "DELETE"]
    delete = stub.reviews[-1]["request"]
    assert delete["object"] is None and delete["oldObject"]["metadata"]["labels"] == {"app": "b"}
    assert delete["options"]["kind"] == "DeleteOptions"


def test_a_validating_webhook_that_patches_fails_the_call(apis: Any, stub: StubWebhook, ca: KeyPair) -> None:
    core, admission = apis
    stub.handler = allow([{"op": "add", "path": "/metadata/labels/x", "value": "y"}])
    body = configuration(stub.url, ca_bundle(ca.cert_pem))
    body["kind"] = "ValidatingWebhookConfiguration"
    admission.create_validating_webhook_configuration(body)

    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod("admitted", pod("p1"))
    assert info.value.status == 500
    assert "validating webhook may not return a patch" in json.loads(info.value.body or "{}")["message"]
