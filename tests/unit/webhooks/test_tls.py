"""The webhooks' one TLS stack: TLS 1.3 only on both servers (Snatch's /mutate and the API Gateway's
/convert), and a hot reload that serves a new pair from files and from a polled source."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tasks.apigateway.webhook import ConversionWebhook
from tasks.snatch.clusterview import StaticClusterView
from tasks.snatch.mutate import MANAGED_BY_LABEL, admission_review
from tasks.snatch.webhook import RunningWebhook, WebhookServer
from webhooks import ThreadedListener, server
from webhooks.certificates import CA_FILE, CERT_FILE, KEY_FILE, KeyPair, generate_ca, issue_serving_cert
from webhooks.certificates import write_kubelet_dir as write_dir
from webhooks.tls import CertificateReloader, server_context

G = "gateway.kyma-project.io"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kyma-system"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return generate_ca("webhooks-test-ca")


def serving(ca: KeyPair) -> KeyPair:
    return issue_serving_cert(ca, "localhost", ["localhost"], ["127.0.0.1"])


def client(ca: KeyPair, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
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


def post(port: int, path: str, body: dict[str, Any], ctx: ssl.SSLContext) -> tuple[int, dict[str, Any]]:
    import http.client

    conn = http.client.HTTPSConnection("localhost", port, timeout=10, context=ctx)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.fixture
def snatch(ca: KeyPair, tmp_path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
    pair = serving(ca)
    write_dir(tmp_path / "certs", {CERT_FILE: pair.cert_pem, KEY_FILE: pair.key_pem, CA_FILE: ca.cert_pem})
    view = StaticClusterView(True, {"kyma-system": {MANAGED_BY_LABEL: "kyma"}})
    hook = RunningWebhook(WebhookServer(tmp_path / "certs", "cpu-worker-0", view, host="127.0.0.1", port=0,
                                        health_port=0, metrics_port=-1)).start()
    try:
        yield hook.server.ports.webhook, "/mutate--v1-pod", admission_review(POD, uid="u-1")
    finally:
        hook.stop()


@pytest.fixture
def conversion(ca: KeyPair) -> Iterator[tuple[int, str, dict[str, Any]]]:
    secret = {"data": serving(ca).secret_data()}
    listener = ThreadedListener(ConversionWebhook(lambda: secret, host="127.0.0.1", port=0)).start()
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "u-1", "desiredAPIVersion": f"{G}/v2", "objects": []}}
    try:
        yield listener.listener.port, "/convert", review
    finally:
        listener.stop()


@pytest.mark.parametrize("which", ["snatch", "conversion"])
def test_both_servers_speak_tls13_only(which: str, request: pytest.FixtureRequest, ca: KeyPair) -> None:
    port, path, review = request.getfixturevalue(which)
    assert handshake(port, client(ca))[0] == "TLSv1.3"
    status, answer = post(port, path, review, client(ca))
    assert status == 200 and answer["response"]["uid"] == "u-1"
    with pytest.raises(ssl.SSLError):
        handshake(port, client(ca, maximum=ssl.TLSVersion.TLSv1_2))


def test_server_context_is_tls13_http11() -> None:
    ctx = server_context()
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3


def wait(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


class Served:
    """A reloader serving a tiny app on loopback in its own loop thread (as the webhooks run it)."""

    def __init__(self, reloader: CertificateReloader) -> None:
        self.reloader = reloader
        self.name = "test"
        self.port = 0
        self._stop = asyncio.Event()
        self._runner: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from aiohttp import web

        self.reloader.load()
        self._runner, self.port = await server.listen(web.Application(), "127.0.0.1", 0, self.reloader.context)
        self._task = asyncio.create_task(self.reloader.run(self._stop))

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
        if self._runner is not None:
            await self._runner.cleanup()
        self.reloader.close()


def test_reload_from_files_serves_the_new_pair(ca: KeyPair, tmp_path: Path) -> None:
    first, second = serving(ca), serving(ca)
    write_dir(tmp_path, {CERT_FILE: first.cert_pem, KEY_FILE: first.key_pem})
    reloads: list[int | None] = []
    served = Served(CertificateReloader.for_dir(tmp_path, poll_interval=30.0))
    served.reloader.on_reload = lambda: reloads.append(served.reloader.serial)
    listener = ThreadedListener(served).start()
    try:
        assert handshake(served.port, client(ca))[1] == first.certificate.serial_number
        write_dir(tmp_path, {CERT_FILE: second.cert_pem, KEY_FILE: second.key_pem})  # kubelet's ..data swap
        wait(lambda: handshake(served.port, client(ca))[1] == second.certificate.serial_number)
        assert reloads == [first.certificate.serial_number, second.certificate.serial_number]
        # a half-written pair (new certificate, old key) is refused: the served pair stays
        write_dir(tmp_path, {CERT_FILE: serving(ca).cert_pem, KEY_FILE: second.key_pem})
        time.sleep(0.5)
        assert handshake(served.port, client(ca))[1] == second.certificate.serial_number
    finally:
        listener.stop()


def test_reload_from_a_polled_source(ca: KeyPair) -> None:
    """The API Gateway's way: a Secret read through the API, polled; no pair yet means no handshake."""
    current: list[KeyPair | None] = [None]
    errors: list[str] = []
    reloader = CertificateReloader(lambda: current[0], "secret", poll_interval=0.1,
                                   on_error=lambda exc: errors.append(str(exc)))
    served = Served(reloader)
    listener = ThreadedListener(served).start()
    try:
        assert not reloader.loaded
        with pytest.raises((ssl.SSLError, ConnectionError)):
            handshake(served.port, client(ca))
        first = serving(ca)
        current[0] = first
        wait(lambda: reloader.loaded)
        assert handshake(served.port, client(ca))[1] == first.certificate.serial_number
        current[0] = KeyPair(serving(ca).cert_pem, first.key_pem)  # unusable: logged, the old pair stays
        wait(lambda: bool(errors))
        assert handshake(served.port, client(ca))[1] == first.certificate.serial_number
        second = serving(ca)
        current[0] = second
        wait(lambda: reloader.serial == second.certificate.serial_number)
        assert handshake(served.port, client(ca))[1] == second.certificate.serial_number
    finally:
        listener.stop()
