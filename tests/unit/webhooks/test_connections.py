"""The bounded listener of the webhooks' stack (webhooks.connections, webhooks.exchange) with the reloader's
client-certificate verification: TLS and plain HTTP on one port, client certificates verified against a
CA that is reloaded (a replaced CA is trusted alone), connection slots with a busy answer, one deadline."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.webhooks.conftest import serving
from webhooks import ThreadedListener
from webhooks.certificates import KeyPair, generate_ca, issue_client_cert
from webhooks.connections import BoundedServer, Bounds, Connection, StreamHandler, peer_certificate
from webhooks.exchange import Answer, Refused, read_head, respond
from webhooks.tls import CertificateReloader


async def _whoami(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
    """Answers ``tls=<bool> cn=<client certificate CN or ->``, or what :func:`read_head` refused."""
    try:
        await read_head(reader, conn.deadline)
    except Refused as exc:
        if exc.answer is not None:
            await respond(writer, exc.answer)
        return
    cert = peer_certificate(writer)
    cn = cert.subject.rfc4514_string() if cert is not None else "-"
    await respond(writer, Answer(200, f"tls={conn.tls} {cn}"))


async def _forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
    await asyncio.Event().wait()


async def _busy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
    with contextlib.suppress(Refused):
        await read_head(reader, conn.deadline)
        await respond(writer, Answer(503, "too many connections"))


class Served:
    """A :class:`BoundedServer` with a certificate reloader, as a :class:`webhooks.Listener`."""

    name = "test-bounded"

    def __init__(self, reloader: CertificateReloader | None, bounds: Bounds, handler: StreamHandler = _whoami) -> None:
        self.reloader = reloader
        self.refused: list[str] = []
        self.server = BoundedServer(handler, _busy, "127.0.0.1", 0,
                                    ssl_context=reloader.context if reloader else None, bounds=bounds,
                                    on_refused=self.refused.append)

    async def start(self) -> None:
        if self.reloader is not None:
            self.reloader.load()
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()


@dataclass
class Pki:
    root: Path
    server_ca: KeyPair
    client_ca: KeyPair

    def client(self, cn: str, ca: KeyPair | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self.server_ca.cert_pem.decode())
        if cn:
            pair = issue_client_cert(ca or self.client_ca, cn)
            crt, key = self.root / f"{cn}.crt", self.root / f"{cn}.key"
            crt.write_bytes(pair.cert_pem)
            key.write_bytes(pair.key_pem)
            ctx.load_cert_chain(crt, key)
        return ctx


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    server_ca, client_ca = generate_ca("server-ca"), generate_ca("client-ca")
    pair = serving(server_ca)
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    (tmp_path / "ca.crt").write_bytes(client_ca.cert_pem)
    return Pki(tmp_path, server_ca, client_ca)


def _reloader(pki: Pki) -> CertificateReloader:
    return CertificateReloader.for_files(str(pki.root / "tls.crt"), str(pki.root / "tls.key"), str(pki.root / "ca.crt"))


@pytest.fixture
def mtls(pki: Pki) -> Iterator[tuple[ThreadedListener, Served]]:
    served = Served(_reloader(pki), Bounds(max_connections=4, timeout=2.0, plain=True))
    running = ThreadedListener(served).start()
    try:
        yield running, served
    finally:
        running.stop()


def _ask(port: int, ctx: ssl.SSLContext | None = None, request: bytes = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") -> bytes:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if ctx is not None:
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
    with sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


def _wait(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _refused(port: int, ctx: ssl.SSLContext) -> bool:
    """Whether the server ends the TLS connection without an answer (the handshake failed)."""
    try:
        return _ask(port, ctx) == b""
    except (ssl.SSLError, ConnectionError):
        return True


def test_tls_and_plain_http_on_one_port_with_verified_client_certificates(
        mtls: tuple[ThreadedListener, Served], pki: Pki) -> None:
    port = mtls[1].server.port
    assert _ask(port).endswith(b"tls=False -\n")
    assert _ask(port, pki.client("")).endswith(b"tls=True -\n")  # no certificate: served, no identity
    assert _ask(port, pki.client("kyma-1")).endswith(b"tls=True CN=kyma-1\n")
    assert _refused(port, pki.client("forged", ca=generate_ca("client-ca")))  # same name, another key
    _wait(lambda: mtls[1].refused == ["tls"])  # recorded once the server's side of the handshake ended
    answer = _ask(port, request=b"nonsense\r\n\r\n")
    assert answer.startswith(b"HTTP/1.0 400 Bad Request\r\n") and b"Connection: close" in answer


def test_a_replaced_client_ca_is_trusted_alone(mtls: tuple[ThreadedListener, Served], pki: Pki) -> None:
    running, served = mtls
    port = served.server.port
    old = pki.client("kyma-1")
    replacement = generate_ca("client-ca-2")
    (pki.root / "ca.crt").write_bytes(replacement.cert_pem)
    assert served.reloader is not None and running.call(served.reloader.load)
    assert _refused(port, old)
    assert _ask(port, pki.client("kyma-2", ca=replacement)).endswith(b"tls=True CN=kyma-2\n")


def test_connections_past_the_slots_are_answered_busy_then_closed() -> None:
    served = Served(None, Bounds(max_connections=1, timeout=5.0, overflow=1, overflow_seconds=5.0))
    running = ThreadedListener(served).start()
    try:
        port = served.server.port
        holder = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.1)
        assert _ask(port).startswith(b"HTTP/1.0 503 Service Unavailable\r\n")  # the overflow slot
        overflow = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.1)  # the overflow slot is held: its handler waits for a request
        with contextlib.suppress(ConnectionError):  # neither slot free: closed at once, without an answer
            assert _ask(port) == b""
        assert served.refused == ["busy"]
        overflow.close()
        holder.close()  # the handlers see the end: both slots are free again
        _wait(lambda: not served.server.served and not served.server.overflowing)
    finally:
        running.stop()


def test_a_connection_is_cut_at_its_deadline(pki: Pki) -> None:
    served = Served(_reloader(pki), Bounds(timeout=0.3, answer_seconds=0.2, plain=True), _forever)
    running = ThreadedListener(served).start()
    try:
        port = served.server.port
        start = time.monotonic()
        assert _ask(port, pki.client("kyma-1")) == b""  # the handler never answers: aborted
        assert time.monotonic() - start < 2.0
        silent = socket.create_connection(("127.0.0.1", port), timeout=5)  # sends nothing at all
        assert silent.recv(1) == b""
        silent.close()
        _wait(lambda: served.refused == ["timeout"])
    finally:
        running.stop()
