"""caBundle sync (the ``snatch-cabundle`` reconcile) against the dev API server."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube import clusters, resources
from kube.kubeconfig import from_kubeconfig
from tasks.snatch import controller
from tasks.snatch.certs import DevCertificates, generate_ca, rotate_serving_cert
from workers.controller import ResultKind, registry

NAME = "kim-snatch-mutating-webhook-configuration"


def mwc(*hooks: str) -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [{"name": h, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "clientConfig": {"service": {"name": "kim-snatch-webhook-service",
                                                       "namespace": "kyma-system", "path": "/mutate--v1-pod"}}}
                         for h in hooks]}


@pytest.fixture
def local(api, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """``kube.client_for("local")`` points at the dev API server for this test."""
    kube, kubeconfig = api
    monkeypatch.delenv(controller.ENV_CERT_DIR, raising=False)
    monkeypatch.delenv(controller.ENV_CA_SECRET, raising=False)
    clusters.register("local", from_kubeconfig(kubeconfig))
    try:
        yield kube
    finally:
        clusters.unregister("local")


def bundles(kube) -> list[bytes]:
    obj = kube.get(resources.MUTATING_WEBHOOK_CONFIGURATION, NAME)
    return [base64.b64decode(h["clientConfig"].get("caBundle", "")) for h in obj["webhooks"]]


def test_registered() -> None:
    ctrl = registry.get("snatch-cabundle")
    assert ctrl.queue == "snatch" and ctrl.resync_interval
    assert [k.name for k in ctrl.list_keys()] == [NAME]  # type: ignore[misc]


def test_sync_from_cert_dir(local, dev_certs: DevCertificates, monkeypatch: pytest.MonkeyPatch) -> None:
    kube = local
    monkeypatch.setenv(controller.ENV_CERT_DIR, str(dev_certs.cert_dir))
    kube.create(resources.MUTATING_WEBHOOK_CONFIGURATION, mwc("mpod-v1.kb.io", "second.kb.io"))
    key = controller.webhook_config_key()
    assert controller.reconcile(key).outcome is ResultKind.SUCCESS
    ca = dev_certs.ca_path.read_bytes()
    assert bundles(kube) == [ca, ca]
    # up to date: no write
    version = kube.get(resources.MUTATING_WEBHOOK_CONFIGURATION, NAME)["metadata"]["resourceVersion"]
    assert controller.reconcile(key).outcome is ResultKind.SUCCESS
    assert kube.get(resources.MUTATING_WEBHOOK_CONFIGURATION, NAME)["metadata"]["resourceVersion"] == version
    # a new CA (rotation with re-issued CA) is written on the next reconcile
    new_ca = generate_ca()
    rotate_serving_cert(dev_certs.cert_dir, new_ca)
    assert controller.reconcile(key).outcome is ResultKind.SUCCESS
    assert bundles(kube) == [new_ca.cert_pem, new_ca.cert_pem]


def test_sync_from_secret(local, monkeypatch: pytest.MonkeyPatch) -> None:
    kube = local
    ca = generate_ca().cert_pem
    monkeypatch.setenv(controller.ENV_CA_SECRET, "kyma-system/snatch-certs")
    kube.create(resources.NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyma-system"}})
    kube.create(resources.MUTATING_WEBHOOK_CONFIGURATION, mwc("mpod-v1.kb.io"))
    key = controller.webhook_config_key()
    result = controller.reconcile(key)
    assert result.outcome is ResultKind.ERROR and "not found" in result.message  # the Secret is not there yet
    kube.create(resources.SECRET, {"apiVersion": "v1", "kind": "Secret",
                                   "metadata": {"name": "snatch-certs", "namespace": "kyma-system"},
                                   "data": {"ca.crt": base64.b64encode(ca).decode()}})
    assert controller.reconcile(key).outcome is ResultKind.SUCCESS
    assert bundles(kube) == [ca]


def test_missing_configuration_or_ca(local, dev_certs: DevCertificates, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(controller.ENV_CERT_DIR, str(dev_certs.cert_dir))
    assert controller.reconcile(controller.webhook_config_key("absent")).outcome is ResultKind.SUCCESS
    monkeypatch.setenv(controller.ENV_CERT_DIR, str(tmp_path / "empty"))
    result = controller.reconcile(controller.webhook_config_key())
    assert result.outcome is ResultKind.ERROR and "unable to read certificate" in result.message
