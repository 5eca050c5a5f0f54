"""The apigateway-certificate controller against the dev API server: the Secret and the CRD caBundle after
one reconcile, renewal at 13 (not 15) days before expiry, invalid Secrets, a CRD re-applied without its
caBundle; and end to end through a watcher and a worker process."""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kube import Kube, clusters, resources
from tasks.apigateway import certificate
from tasks.apigateway.certificate_controller import ensure_certificate, reconcile, secret_key
from tasks.apigateway.install import install_crds
from tests.fixtures.devapi import real_cluster
from tests.fixtures.processes import wait_for
from workers.controller import ResultKind

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(real_cluster(), reason="replaces the APIRule CRD; dev API server only")]

NS, NAME = certificate.SECRET


@pytest.fixture
def kube(kube_client: client.ApiClient, kubeconfig_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kube]:
    monkeypatch.setenv("RECONCILERY_APIGATEWAY_CERT_KEY_BITS", "2048")
    monkeypatch.setenv("RECONCILERY_KUBECONFIG", str(kubeconfig_path))  # for reconcile()'s client_for("local")
    clusters.reset()
    k = Kube(kube_client, timeout=10.0)
    install_crds(k, istio=False, conversion=True)
    try:
        yield k
    finally:
        clusters.reset()


def secret_pair(kube: Kube) -> tuple[bytes | None, bytes | None]:
    return certificate.decode_secret_data(kube.get(resources.SECRET, NAME, namespace=NS))


def ca_bundle_of(crd: dict[str, Any] | None) -> bytes | None:
    """The decoded conversion caBundle of a CRD (``None`` when unset)."""
    raw = ((((crd or {}).get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get(
        "clientConfig", {}).get("caBundle")
    return base64.b64decode(raw) if isinstance(raw, str) and raw else None


def crd_bundle(kube: Kube) -> bytes | None:
    return ca_bundle_of(kube.get(resources.CRD, certificate.APIRULE_CRD))


def put_pair(kube: Kube, pair: certificate.KeyPair | dict[str, str]) -> None:
    data = pair.secret_data() if isinstance(pair, certificate.KeyPair) else pair
    kube.patch(resources.SECRET, NAME, {"data": data}, namespace=NS)


def expiring_in(days: float) -> certificate.KeyPair:
    now = datetime.datetime.now(datetime.UTC)
    return certificate.generate(now=now - certificate.MAX_AGE + certificate.CLOCK_SKEW + datetime.timedelta(days=days),
                                key_size=2048)


def test_first_reconcile_creates_the_secret_and_writes_the_ca_bundle(kube: Kube) -> None:
    kube.create(resources.NAMESPACE, {"metadata": {"name": NS}})
    kube.create(resources.DEPLOYMENT, {"metadata": {"name": "api-gateway-controller-manager", "namespace": NS},
                                       "spec": {"selector": {"matchLabels": {"a": "b"}},
                                                "template": {"metadata": {"labels": {"a": "b"}}}}})
    outcome = ensure_certificate(kube)
    assert outcome.renewed and "required keys" in outcome.reason
    secret = kube.get(resources.SECRET, NAME, namespace=NS)
    assert secret["metadata"]["labels"] == {"kyma-project.io/module": "api-gateway"}
    assert secret["metadata"]["ownerReferences"][0]["name"] == "api-gateway-controller-manager"
    cert_pem, key_pem = secret_pair(kube)
    certificate.verify(cert_pem, key_pem)
    assert crd_bundle(kube) == cert_pem  # the whole tls.crt, as the original writes it
    assert reconcile(secret_key()).outcome is ResultKind.REQUEUE_AFTER  # valid: nothing to do, back in an hour
    assert secret_pair(kube) == (cert_pem, key_pem)


@pytest.mark.parametrize(("days_left", "renewed"), [(13, True), (15, False)])
def test_renewal_before_expiry(kube: Kube, days_left: int, renewed: bool) -> None:
    ensure_certificate(kube)
    old = expiring_in(days_left)
    put_pair(kube, old)
    outcome = ensure_certificate(kube)
    assert outcome.renewed is renewed
    cert_pem, _ = secret_pair(kube)
    assert (cert_pem != old.cert_pem) is renewed
    assert crd_bundle(kube) == cert_pem


@pytest.mark.parametrize("data", [
    {"tls.crt": base64.b64encode(b"not a certificate").decode(), "tls.key": base64.b64encode(b"nor a key").decode()},
    {"tls.crt": "%%% not base64"},
])
def test_invalid_secret_is_renewed(kube: Kube, data: dict[str, str]) -> None:
    ensure_certificate(kube)
    kube.replace(resources.SECRET, {"metadata": {"name": NAME, "namespace": NS}, "data": data})
    outcome = ensure_certificate(kube)
    assert outcome.renewed
    certificate.verify(*secret_pair(kube))


def test_crd_reapplied_without_ca_bundle_is_repaired(kube: Kube) -> None:
    ensure_certificate(kube)
    cert_pem, _ = secret_pair(kube)
    crd: dict[str, Any] = kube.get(resources.CRD, certificate.APIRULE_CRD)
    del crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
    kube.replace(resources.CRD, crd)
    outcome = ensure_certificate(kube)
    assert not outcome.renewed and outcome.written == (f"CustomResourceDefinition {certificate.APIRULE_CRD}",)
    assert crd_bundle(kube) == cert_pem


def test_without_conversion_webhook_nothing_is_needed(kube: Kube) -> None:
    install_crds(kube, istio=False, conversion=False)
    assert ensure_certificate(kube).skipped
    assert kube.get(resources.SECRET, NAME, namespace=NS) is None


def test_end_to_end_with_a_worker_process(kube: Kube, platform: Callable[..., Any]) -> None:
    plat = platform(domains="tasks.apigateway.certificate_controller", controllers="apigateway-certificate",
                    workers=1, queues="apigateway", RECONCILERY_APIGATEWAY_CERT_KEY_BITS="2048")
    try:
        # the CRD the watcher saw enqueued the key: the worker made the Secret and wrote the caBundle
        wait_for(lambda: secret_pair(kube)[0] is not None and crd_bundle(kube) == secret_pair(kube)[0],
                 timeout=60, message="certificate created and caBundle written")
        first = secret_pair(kube)[0]
        # an invalid Secret is renewed, and the CRD follows
        put_pair(kube, {"tls.crt": base64.b64encode(b"broken").decode()})
        wait_for(lambda: secret_pair(kube)[0] not in (first, b"broken") and crd_bundle(kube) == secret_pair(kube)[0],
                 timeout=60, message="certificate renewed")
        certificate.verify(*secret_pair(kube))
        # a pair 13 days from expiry is renewed, the caBundle dropped by a re-apply comes back
        put_pair(kube, expiring_in(13))
        wait_for(lambda: certificate.not_after(secret_pair(kube)[0] or b"") > datetime.datetime.now(datetime.UTC)
                 + datetime.timedelta(days=80), timeout=60, message="13-day certificate renewed")
        install_crds(kube, istio=False, conversion=True)  # keeps the caBundle ...
        assert crd_bundle(kube) == secret_pair(kube)[0]
        crd: dict[str, Any] = kube.get(resources.CRD, certificate.APIRULE_CRD)
        del crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
        kube.replace(resources.CRD, crd)  # ... a plain re-apply does not
        wait_for(lambda: crd_bundle(kube) == secret_pair(kube)[0], timeout=60, message="caBundle repaired")
    except Exception:
        print(plat.logs())
        raise
