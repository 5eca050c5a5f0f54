"""The webhook over real HTTPS, against the dev API server."""

from __future__ import annotations

import base64
import json
from typing import Any

import requests

from kube import resources
from tasks.snatch.certs import DevCertificates
from tasks.snatch.mutate import admission_review, affinity_term
from tests.fixtures.processes import wait_for
from tests.integration.snatch.conftest import POOL, add_namespace, add_pool_node

PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def pod(namespace: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


def admit(url: str, ca: str, body: Any, session: requests.Session | None = None) -> dict[str, Any]:
    post = (session or requests).post
    r = post(url, json=body, verify=ca, timeout=5)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out["response"]


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def test_admission_over_https(api, start_webhook, dev_certs: DevCertificates) -> None:
    kube, kubeconfig = api
    add_pool_node(kube)
    add_namespace(kube, "kyma-system", managed=True)
    add_namespace(kube, "customer-apps", managed=False)
    add_namespace(kube, "kube-system", managed=True)
    hook = start_webhook(kubeconfig)
    ca = str(dev_certs.ca_path)

    mutated = admit(hook.url, ca, admission_review(pod("kyma-system"), uid="u1"))
    assert mutated["uid"] == "u1" and mutated["allowed"] is True and mutated["patchType"] == "JSONPatch"
    assert patch_of(mutated) == [{"op": "add", "path": "/spec/affinity",
                                  "value": {"nodeAffinity": {PREF: [affinity_term(POOL)]}}}]
    for namespace, reason in (("customer-apps", "namespace_not_managed"), ("kube-system", "forbidden_namespace"),
                              ("nowhere", "namespace_unknown")):
        response = admit(hook.url, ca, admission_review(pod(namespace)))
        assert response["allowed"] is True and "patch" not in response
        assert response["auditAnnotations"]["snatch-reason"] == reason
    scheduled = admit(hook.url, ca, admission_review(pod("kyma-system", nodeName="kyma-node-0")))
    assert scheduled["auditAnnotations"]["snatch-reason"] == "already_scheduled" and "patch" not in scheduled

    # a namespace created after start is found by the cache-miss lookup
    add_namespace(kube, "kyma-new", managed=True)
    assert patch_of(admit(hook.url, ca, admission_review(pod("kyma-new"))))


def test_malformed_input_is_400(api, start_webhook, dev_certs: DevCertificates) -> None:
    _, kubeconfig = api
    hook = start_webhook(kubeconfig)
    ca = str(dev_certs.ca_path)
    cases = [
        (b"", {"Content-Type": "application/json"}, 400),
        (b"{not json", {"Content-Type": "application/json"}, 400),
        (json.dumps(admission_review(pod("x"))).encode(), {"Content-Type": "text/plain"}, 400),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
         {"Content-Type": "application/json"}, 400),
        (b"x" * (7 * 1024 * 1024 + 10), {"Content-Type": "application/json"}, 413),
    ]
    for body, headers, status in cases:
        r = requests.post(hook.url, data=body, headers=headers, verify=ca, timeout=10)
        assert r.status_code == status, (body[:40], r.text)
        if status == 400:  # an AdmissionReview with a failed status (issue 17; was a Status)
            assert r.json()["kind"] == "AdmissionReview" and r.json()["response"]["allowed"] is False
            assert r.json()["response"]["status"]["message"]
    assert requests.get(hook.url.replace("/mutate--v1-pod", "/other"), verify=ca, timeout=5).status_code == 404


def test_pool_node_appears_later(api, start_webhook, dev_certs: DevCertificates) -> None:
    """Seed: without a Kyma pool node nothing is mutated; once one appears, Pods are mutated."""
    kube, kubeconfig = api
    add_namespace(kube, "kyma-system", managed=True)
    kube.create(resources.NODE, {"apiVersion": "v1", "kind": "Node",
                                 "metadata": {"name": "customer-node-0", "labels": {
                                     "worker.gardener.cloud/pool": "customer-gpu"}}})
    hook = start_webhook(kubeconfig, node_interval=0.2)
    ca = str(dev_certs.ca_path)
    before = admit(hook.url, ca, admission_review(pod("kyma-system")))
    assert "patch" not in before and before["auditAnnotations"]["snatch-reason"] == "no_pool_node"

    add_pool_node(kube)
    wait_for(lambda: "patch" in admit(hook.url, ca, admission_review(pod("kyma-system"))), timeout=5,
             message="webhook mutates after the pool node appeared")

    kube.delete(resources.NODE, "kyma-node-0")
    wait_for(lambda: "patch" not in admit(hook.url, ca, admission_review(pod("kyma-system"))), timeout=5,
             message="webhook stops mutating when the last pool node is gone")


def test_health_ready_and_metrics(api, start_webhook, dev_certs: DevCertificates) -> None:
    kube, kubeconfig = api
    add_pool_node(kube)
    add_namespace(kube, "kyma-system", managed=True)
    hook = start_webhook(kubeconfig)
    ports = hook.server.ports
    for path in ("/healthz", "/readyz"):
        r = requests.get(f"http://127.0.0.1:{ports.health}{path}", timeout=5)
        assert (r.status_code, r.text) == (200, "ok")
    admit(hook.url, str(dev_certs.ca_path), admission_review(pod("kyma-system")))
    text = requests.get(f"http://127.0.0.1:{ports.metrics}/metrics", timeout=5).text
    assert 'snatch_admission_requests_total{reason="mutated",result="mutated"}' in text
    assert "snatch_admission_duration_seconds_bucket" in text
    assert "snatch_pool_node_present 1.0" in text
    assert "kim_snatch_shoots_default_total" in text
    assert "snatch_certificate_not_after_timestamp_seconds" in text
