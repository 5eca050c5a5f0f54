"""The skr-listener attacked over real TLS on loopback: only a client certificate verified against the
configured CA (or, behind a trusted proxy that presents one, its ``X-Forwarded-Client-Cert``) connects an
SKR; bodies, time and connections are bounded, and the listener stays up whatever a client sends."""

from __future__ import annotations

import dataclasses
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from localrun.cloud import ListenerCerts, listener_certs
from tasks.cloud.skr.listener import SIZE_LIMIT, Listener
from tests.unit.cloud.test_notify import xfcc
from webhooks import ThreadedListener
from webhooks.certificates import generate_ca

BODY = json.dumps({"owner": {"name": "k", "namespace": "kcp-system"}, "watched": {"name": "w", "namespace": "n"},
                   "watchedGvk": {"group": "g", "version": "v", "kind": "K"}}).encode()
EVENT = "/v2/cloud-manager/event"


class Served:
    """A running listener, the kymas it was asked to connect, and its certificates."""

    def __init__(self, certs: ListenerCerts, **options: object) -> None:
        self.certs = certs
        self.kymas: list[str] = []
        self.listener = Listener(self._on_kyma, "127.0.0.1", 0, tls=certs.tls, **options)  # type: ignore[arg-type]
        self.running = ThreadedListener(self.listener).start()
        self.url = self.listener.url
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.running.stop()

    def _on_kyma(self, kyma: str) -> str:
        self.kymas.append(kyma)
        return "accepted"

    def post(self, cert: tuple[str, str] | None = None, headers: dict[str, str] | None = None) -> int:
        return requests.post(self.url + EVENT, data=BODY, cert=cert, headers=headers, timeout=10,
                             verify=str(self.certs.server_ca)).status_code

    def alive(self) -> bool:
        return requests.get(self.url + "/healthz", verify=str(self.certs.server_ca), timeout=10).status_code == 200

    def tls_socket(self, cert: tuple[str, str] | None = None) -> ssl.SSLSocket:
        ctx = ssl.create_default_context(cafile=str(self.certs.server_ca))
        if cert:
            ctx.load_cert_chain(*cert)
        return ctx.wrap_socket(socket.create_connection(("127.0.0.1", self.port), timeout=10),
                               server_hostname="127.0.0.1")


def _status(sock: socket.socket, request: bytes) -> int | None:
    """Send ``request``; the answer's status, ``None`` when the connection closed without one."""
    try:
        sock.sendall(request)
        head = sock.recv(4096)
    except (OSError, ssl.SSLError):
        return None
    finally:
        sock.close()
    return int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else None


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    served = Served(listener_certs(tmp_path), timeout=1.5, max_connections=4)
    yield served
    served.stop()


def test_a_verified_client_certificate_connects_its_skr(served: Served) -> None:
    assert served.post(cert=served.certs.client("kyma-1")) == 200
    assert served.kymas == ["kyma-1"]
    # the SKR names itself by its certificate only: a header naming another kyma changes nothing
    assert served.post(cert=served.certs.client("kyma-1"), headers={"X-Forwarded-Client-Cert": xfcc("victim")}) == 200
    assert served.kymas == ["kyma-1", "kyma-1"]
    assert served.post(cert=served.certs.client("")) == 400  # no CN
    assert served.kymas == ["kyma-1", "kyma-1"]


def test_no_client_certificate_is_rejected(served: Served) -> None:
    assert served.post() == 401
    assert served.post(headers={"X-Forwarded-Client-Cert": xfcc("victim")}) == 401
    plain = requests.post(served.url.replace("https", "http") + EVENT, data=BODY, timeout=10,
                          headers={"X-Forwarded-Client-Cert": xfcc("victim")})
    assert plain.status_code == 401
    assert served.kymas == []
    assert served.alive()


def test_a_forged_client_certificate_is_rejected(served: Served) -> None:
    forged = served.certs.client("victim", ca=generate_ca("klm-watcher-ca"))  # same name, another key
    with pytest.raises(requests.exceptions.RequestException):
        served.post(cert=forged)
    assert served.kymas == []
    assert served.alive()


def _behind_proxy(tmp_path: Path, *names: str) -> Served:
    certs = listener_certs(tmp_path, trust_xfcc=True)
    return Served(dataclasses.replace(certs, tls=dataclasses.replace(certs.tls, proxy_names=names)))


def test_behind_a_trusted_proxy_the_header_names_the_skr_only_for_a_verified_proxy(tmp_path: Path) -> None:
    served = _behind_proxy(tmp_path, "istio-ingressgateway")
    try:
        proxy = served.certs.client("istio-ingressgateway")
        assert served.post(cert=proxy, headers={"X-Forwarded-Client-Cert": xfcc("kyma-2")}) == 200
        assert served.kymas == ["kyma-2"]
        assert served.post(cert=proxy) == 401  # the proxy did not say who
        assert served.post(headers={"X-Forwarded-Client-Cert": xfcc("victim")}) == 401  # not the proxy
        with pytest.raises(requests.exceptions.RequestException):
            served.post(cert=served.certs.client("proxy", ca=generate_ca("mesh")),
                        headers={"X-Forwarded-Client-Cert": xfcc("victim")})
        assert served.kymas == ["kyma-2"]
    finally:
        served.stop()


def test_behind_a_proxy_another_certificate_of_its_issuer_is_not_the_proxy(tmp_path: Path) -> None:
    # issue 27: any certificate the CA issued (an SKR's own runtime-watcher certificate) was taken for the proxy
    served = _behind_proxy(tmp_path, "istio-ingressgateway")
    try:
        attacker = served.certs.client("kyma-attacker")
        assert served.post(cert=attacker, headers={"X-Forwarded-Client-Cert": xfcc("victim")}) == 401
        assert served.kymas == []
        assert served.post(cert=served.certs.client("istio-ingressgateway"),
                           headers={"X-Forwarded-Client-Cert": xfcc("kyma-2")}) == 200
        assert served.kymas == ["kyma-2"]
    finally:
        served.stop()
    unpinned = _behind_proxy(tmp_path / "unpinned")  # trusting the header with no proxy pinned believes no one
    try:
        assert unpinned.post(cert=unpinned.certs.client("istio-ingressgateway"),
                             headers={"X-Forwarded-Client-Cert": xfcc("kyma-2")}) == 401
        assert unpinned.kymas == []
    finally:
        unpinned.stop()


@pytest.mark.parametrize(("headers", "status"), [
    (b"Content-Length: -1\r\n", 400),
    (b"Content-Length: 1e3\r\n", 400),
    (b"", 411),
    (b"Transfer-Encoding: chunked\r\n", 411),
    (f"Content-Length: {SIZE_LIMIT + 1}\r\n".encode(), 413),
    (b"Content-Length: 99999999999999999999\r\n", 413),
])
def test_bad_lengths_are_refused_before_any_read(served: Served, headers: bytes, status: int) -> None:
    sock = served.tls_socket(served.certs.client("kyma-1"))
    start = time.monotonic()
    assert _status(sock, b"POST " + EVENT.encode() + b" HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n") == status
    assert time.monotonic() - start < 1.0, "answered without waiting for a body"
    assert served.kymas == [] and served.alive()


def test_slow_and_trickling_clients_are_cut_at_the_deadline(served: Served) -> None:
    cert = served.certs.client("kyma-1")
    slow_body = served.tls_socket(cert)
    slow_body.sendall(b"POST " + EVENT.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    start = time.monotonic()
    head = slow_body.recv(4096)
    assert head.startswith(b"HTTP/1.0 408") or head == b"", head
    assert time.monotonic() - start < 3.0
    slow_body.close()
    trickle = served.tls_socket(cert)
    start = time.monotonic()
    closed = False
    try:  # the server closes the connection while the client still trickles its headers
        for byte in b"POST " + EVENT.encode() + b" HTTP/1.1\r\n" + b"X-Slow: x\r\n" * 100:
            trickle.sendall(bytes([byte]))
            time.sleep(0.05)
            if time.monotonic() - start > 5:
                break
    except OSError:
        closed = True
    assert closed and time.monotonic() - start < 4.0, "a trickling client is cut at the 1.5 s deadline"
    trickle.close()
    # a TLS client that never finishes its handshake, and a plain one that sends nothing
    idle = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    idle.sendall(b"\x16\x03\x01")
    assert idle.recv(1) == b""
    idle.close()
    assert served.kymas == [] and served.alive()


def test_many_slow_clients_are_bounded_and_the_listener_stays_up(tmp_path: Path) -> None:
    served = Served(listener_certs(tmp_path), timeout=6.0, max_connections=4)
    try:
        _many_slow_clients(served)
    finally:
        served.stop()


def _many_slow_clients(served: Served) -> None:
    baseline = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", served.port), timeout=10) for _ in range(40)]
    time.sleep(0.3)
    # 4 served + 4 answered 503; the other 32 are closed at once
    assert threading.active_count() <= baseline + 8
    late = [socket.create_connection(("127.0.0.1", served.port), timeout=10) for _ in range(3)]
    answers = [_status(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") for s in late]
    assert all(a in (None, 503) for a in answers), answers
    for s in idle:
        s.close()
    deadline = time.monotonic() + 10
    server = served.listener.server  # the slots are free again once the listener saw the clients go
    while time.monotonic() < deadline and (threading.active_count() > baseline or server.served or server.overflowing):
        time.sleep(0.1)
    assert served.alive()
    assert served.post(cert=served.certs.client("kyma-1")) == 200 and served.kymas == ["kyma-1"]


def test_without_certificates_it_serves_probes_and_refuses_every_event() -> None:
    kymas: list[str] = []

    def on_kyma(kyma: str) -> str:
        kymas.append(kyma)
        return "accepted"

    listener = Listener(on_kyma, "127.0.0.1", 0)
    running = ThreadedListener(listener).start()
    try:
        assert listener.url.startswith("http://")
        assert requests.get(listener.url + "/healthz", timeout=5).status_code == 200
        assert requests.post(listener.url + EVENT, data=BODY, timeout=5,
                             headers={"X-Forwarded-Client-Cert": xfcc("kyma-1")}).status_code == 401
        assert kymas == []
    finally:
        running.stop()
