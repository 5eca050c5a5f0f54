"""Both webhook servers on loopback with a test CA, and HTTPS helpers (tests of the webhooks layer)."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tasks.apigateway.webhook import ConversionWebhook
from tasks.snatch.clusterview import StaticClusterView
from tasks.snatch.mutate import MANAGED_BY_LABEL, admission_review
from tasks.snatch.webhook import SnatchWebhook
from webhooks import ThreadedListener
from webhooks.certificates import CA_FILE, CERT_FILE, KEY_FILE, KeyPair, generate_ca, issue_serving_cert
from webhooks.certificates import write_kubelet_dir as write_dir
from webhooks.serving import RunningWebhook

G = "gateway.kyma-project.io"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kyma-system"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
#: ``(port, path, a valid review)`` of a running webhook.
Served = tuple[int, str, dict[str, Any]]


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return generate_ca("webhooks-test-ca")


def serving(ca: KeyPair) -> KeyPair:
    """A serving pair for ``localhost`` / ``127.0.0.1`` signed by ``ca``."""
    return issue_serving_cert(ca, "localhost", ["localhost"], ["127.0.0.1"])


def client(ca: KeyPair, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """A client context trusting ``ca``; with ``maximum``, TLS 1.2 up to that version."""
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    if maximum is not None:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.maximum_version = maximum
    return ctx


def handshake(port: int, ctx: ssl.SSLContext) -> tuple[str | None, int]:
    """``(TLS version, served serial)`` of one handshake with ``127.0.0.1:port``."""
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                         server_hostname="localhost") as sock:
        der = sock.getpeercert(binary_form=True)
        assert der is not None
        return sock.version(), x509.load_der_x509_certificate(der).serial_number


def post(port: int, path: str, body: dict[str, Any] | bytes, ctx: ssl.SSLContext,
         timeout: float = 30.0) -> tuple[int, dict[str, Any]]:
    """POST ``body`` (JSON-encoded unless bytes) over HTTPS; ``(status, JSON answer)``."""
    conn = http.client.HTTPSConnection("localhost", port, timeout=timeout, context=ctx)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.fixture
def snatch(ca: KeyPair, tmp_path: Path) -> Iterator[Served]:
    pair = serving(ca)
    write_dir(tmp_path / "certs", {CERT_FILE: pair.cert_pem, KEY_FILE: pair.key_pem, CA_FILE: ca.cert_pem})
    view = StaticClusterView(True, {"kyma-system": {MANAGED_BY_LABEL: "kyma"}})
    hook = RunningWebhook(SnatchWebhook(tmp_path / "certs", "cpu-worker-0", view, host="127.0.0.1", port=0,
                                        health_port=0, metrics_port=-1)).start()
    try:
        yield hook.server.ports.webhook, "/mutate--v1-pod", admission_review(POD, uid="u-1")
    finally:
        hook.stop()


@pytest.fixture
def conversion(ca: KeyPair) -> Iterator[Served]:
    secret = {"data": serving(ca).secret_data()}
    listener = ThreadedListener(ConversionWebhook(lambda: secret, host="127.0.0.1", port=0)).start()
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "u-1", "desiredAPIVersion": f"{G}/v2", "objects": []}}
    try:
        yield listener.listener.port, "/convert", review
    finally:
        listener.stop()
