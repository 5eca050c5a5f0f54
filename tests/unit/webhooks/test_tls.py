"""The webhooks' one TLS stack: TLS 1.3 only on both servers (Snatch's /mutate and the API Gateway's
/convert), and a hot reload that serves a new pair from files and from a polled source."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.webhooks.conftest import client, handshake, post, serving
from webhooks import ThreadedListener, server
from webhooks.certificates import CERT_FILE, KEY_FILE, KeyPair
from webhooks.certificates import write_kubelet_dir as write_dir
from webhooks.tls import CertificateReloader, server_context


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
        self._runner: Any = None

    async def start(self) -> None:
        from aiohttp import web

        self.reloader.load()
        self._runner, self.port = await server.listen(web.Application(), "127.0.0.1", 0, self.reloader.context)
        self.reloader.start()

    async def stop(self) -> None:
        await self.reloader.stop()
        if self._runner is not None:
            await self._runner.cleanup()


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


def test_a_key_pair_never_shows_its_key(ca: KeyPair) -> None:
    pair = serving(ca)
    assert pair.key_pem.decode() not in repr(pair) and "PRIVATE KEY" not in repr(pair)
