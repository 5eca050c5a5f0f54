"""The webhook process shell (webhooks.serving) with a domain-free route: it serves the route over TLS 1.3
with the directory's pair, reports the pair to its hook, serves health and metrics, starts and stops
the decision inputs around the review listener, and fails start-up without a usable pair."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.unit.webhooks.conftest import client, handshake, post, serving
from webhooks import review as reviews
from webhooks import server as review_server
from webhooks.certificates import CERT_FILE, KEY_FILE, CertificateError, KeyPair
from webhooks.certificates import write_kubelet_dir as write_dir
from webhooks.serving import RunningWebhook, WebhookServer


class Inputs:
    """Decision inputs that record, when started and stopped, what the server serves at that moment."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.server: WebhookServer | None = None
        self.at_start: tuple[int, int] | None = None  # (the review port, /readyz status)
        self.review_port_open_at_stop: bool | None = None

    async def start(self) -> None:
        self.events.append("start")
        if self.server is not None:
            async with aiohttp.ClientSession() as session, session.get(
                    f"http://127.0.0.1:{self.server.ports.health}/readyz") as ready:
                self.at_start = (self.server.ports.webhook, ready.status)

    async def stop(self) -> None:
        self.events.append("stop")
        if self.server is not None:
            try:
                socket.create_connection(("127.0.0.1", self.server.ports.webhook), timeout=1).close()
                self.review_port_open_at_stop = True
            except OSError:
                self.review_port_open_at_stop = False


async def _allow(review: reviews.Review) -> dict[str, Any]:
    return {"allowed": True}


def _server(cert_dir: Path, inputs: Inputs, reloaded: list[KeyPair | None]) -> WebhookServer:
    route = review_server.review_endpoint(reviews.ADMISSION, _allow)
    inputs.server = WebhookServer("test", cert_dir, reviews.ADMISSION, {"/check": route, "/other": route},
                                  inputs=inputs, host="127.0.0.1", port=0, health_port=0, metrics_port=0,
                                  on_cert_reload=reloaded.append)
    return inputs.server


def test_the_shell_serves_the_routes_with_health_metrics_and_inputs(ca: KeyPair, tmp_path: Path) -> None:
    pair = serving(ca)
    write_dir(tmp_path, {CERT_FILE: pair.cert_pem, KEY_FILE: pair.key_pem})
    inputs, reloaded = Inputs(), []
    hook = RunningWebhook(_server(tmp_path, inputs, reloaded)).start()
    try:
        ports = hook.server.ports
        assert hook.url == f"https://127.0.0.1:{ports.webhook}/check"
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1"}}
        assert post(ports.webhook, "/other", review, client(ca)) == (
            200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "response": {"uid": "u-1", "allowed": True}})
        assert handshake(ports.webhook, client(ca))[0] == "TLSv1.3"
        assert [p.cert_pem if p else None for p in reloaded] == [pair.cert_pem]
        assert inputs.events == ["start"]
        # the inputs started before the review listener (port 0: not bound yet), while /readyz said not ready
        assert inputs.at_start == (0, 503)
        for path in ("/healthz", "/healthz/ping", "/readyz", "/readyz/ping"):
            assert urllib.request.urlopen(f"http://127.0.0.1:{ports.health}{path}", timeout=5).read() == b"ok"
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{ports.metrics}/metrics", timeout=5).read()
        assert b"python_info" in metrics
    finally:
        hook.stop()
    assert inputs.events == ["start", "stop"] and not hook.server.serving
    assert inputs.review_port_open_at_stop is False  # stopped after the review listener closed


def test_no_usable_pair_fails_start_before_the_inputs_start(tmp_path: Path) -> None:
    inputs = Inputs()
    with pytest.raises(CertificateError):
        RunningWebhook(_server(tmp_path, inputs, [])).start()
    assert "start" not in inputs.events


def test_a_server_needs_a_route(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        WebhookServer("test", tmp_path, reviews.ADMISSION, {}, port=0, health_port=0, metrics_port=0)
