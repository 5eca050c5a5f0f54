"""Fixtures of the APIRule integration tests: the dev API server with the CRDs and the example cluster.

- ``agw`` (function): an :class:`AGW` helper whose ``kube`` is ``kube.client_for("local")`` pointed at
  the freshly reset dev API server (``RECONCILERY_KUBECONFIG``), with the APIRule and Istio CRDs
  installed and ``examples/apigateway/00-cluster.yaml`` applied (kyma-gateway, config maps, Services).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube import Kube, Resource, clusters, resources
from kubedev import DevAPIServer
from tasks.apigateway import cache as vs_cache
from tasks.apigateway import controller, install
from tests.fixtures.devapi import real_cluster
from tests.fixtures.processes import wait_for

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "examples/apigateway/00-cluster.yaml"
APIRULES = ROOT / "examples/apigateway/10-apirules.yaml"

KINDS: dict[str, Resource] = {
    "Namespace": resources.NAMESPACE,
    "ConfigMap": resources.CONFIGMAP,
    "Service": resources.SERVICE,
    "Pod": resources.POD,
    "Gateway": controller.GATEWAY,
    "APIRule": controller.APIRULE,
    **controller.OWNED,
}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def example(name: str) -> dict[str, Any]:
    """The APIRule ``name`` of ``examples/apigateway/10-apirules.yaml`` (a fresh copy)."""
    return copy.deepcopy(next(d for d in documents(APIRULES) if d["metadata"]["name"] == name))


class AGW:
    """The test's cluster: ``kube`` client and small helpers."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.kube.create(KINDS[obj["kind"]], obj)

    def get(self, name: str, namespace: str = "shop") -> dict[str, Any] | None:
        return self.kube.get(controller.APIRULE, name, namespace)

    def owned(self, name: str, namespace: str = "shop") -> dict[str, list[dict[str, Any]]]:
        """Objects labelled as owned by APIRule ``namespace/name``, by kind."""
        selector = f"apirule.gateway.kyma-project.io/name={name},apirule.gateway.kyma-project.io/namespace={namespace}"
        out: dict[str, list[dict[str, Any]]] = {}
        for kind in ("VirtualService", "AuthorizationPolicy", "RequestAuthentication"):
            try:
                out[kind] = self.kube.list(controller.OWNED[kind], label_selector=selector)
            except Exception:  # kind not served
                out[kind] = []
        return out

    def events(self, name: str, namespace: str = "shop") -> list[dict[str, Any]]:
        return [e for e in self.kube.list(resources.EVENT, namespace=namespace)
                if e["involvedObject"].get("name") == name and e["involvedObject"].get("kind") == "APIRule"]


@pytest.fixture
def agw(devapi_clean: DevAPIServer | None, kubeconfig_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AGW]:
    if real_cluster():
        pytest.skip("installs Istio stand-in CRDs; dev API server only")
    monkeypatch.setenv("RECONCILERY_KUBECONFIG", str(kubeconfig_path))
    clusters.reset()
    try:
        kube = clusters.client_for("local")
        install.install_crds(kube)
        helper = AGW(kube)
        for doc in documents(CLUSTER):
            helper.create(doc)
        yield helper
    finally:
        vs_cache.reset()  # the VirtualService cache's watch thread, if a reconcile started it
        clusters.reset()


@contextlib.contextmanager
def conversion_webhook(kube: Kube) -> Iterator[Any]:
    """The APIRule conversion webhook as ``reconcilery up`` runs it (the APIRule CRD with the conversion
    stanza must be installed): the certificate Secret and caBundle (2048-bit keys, for speed), the
    ``/convert`` listener in a thread, the Service ``kyma-system/api-gateway-webhook-service`` with
    Endpoints on loopback. Yields the :class:`webhooks.ThreadedListener`; stopped on exit."""
    from tasks.apigateway import certificate
    from tasks.apigateway.certificate_controller import ensure_certificate
    from tasks.apigateway.webhook import ConversionWebhook
    from webhooks import ThreadedListener

    if kube.get(resources.NAMESPACE, "kyma-system") is None:
        kube.create(resources.NAMESPACE, {"metadata": {"name": "kyma-system"}})
    ensure_certificate(kube, bits=2048)
    namespace, name = certificate.SECRET
    listener = ThreadedListener(ConversionWebhook(lambda: kube.get(resources.SECRET, name, namespace=namespace),
                                                  host="127.0.0.1", port=0, poll_interval=0.2)).start()
    try:
        port = listener.listener.port
        meta = {"name": certificate.SERVICE_NAME, "namespace": "kyma-system"}
        kube.create(resources.SERVICE, {"metadata": meta, "spec": {
            "ports": [{"name": "https-convert", "port": 9443, "targetPort": port}]}})
        kube.create(resources.ENDPOINTS, {"metadata": meta, "subsets": [{
            "addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https-convert", "port": port}]}]})
        wait_for(lambda: listener.listener.ready, timeout=10, message="conversion webhook has no certificate")
        yield listener
    finally:
        listener.stop()
