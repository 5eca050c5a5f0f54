"""Serving certificate of the webhook: load it into one SSLContext and reload it in place when it changes.

As controller-runtime's ``certwatcher`` (used by KIM Snatch): the files are watched (here with
``watchfiles``, which sees kubelet's ``..data`` symlink swaps) and also polled every few seconds;
a reload happens only when the certificate or key bytes changed. The live ``SSLContext`` is updated
in place, so new TLS handshakes get the new certificate and open connections are not dropped.

A half-written update (new certificate, old key) never reaches the live context: the pair is first
copied to private files and checked in a scratch context, and the live context loads those copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

import watchfiles
from cryptography import x509

from tasks.snatch import metrics
from tasks.snatch.certs import CERT_FILE, KEY_FILE

log = logging.getLogger("reconcilery.snatch.tls")


class CertificateError(Exception):
    """The key pair in the certificate directory is missing, unreadable or does not match."""


def server_context() -> ssl.SSLContext:
    """An empty server context: TLS 1.3 minimum and ALPN ``http/1.1`` only, as KIM Snatch."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class CertificateReloader:
    """Keeps :attr:`context` loaded with ``<cert_dir>/tls.crt`` + ``tls.key``.

    Args:
        cert_dir: the directory (a mounted Secret or :func:`tasks.snatch.certs.write_kubelet_dir`).
        on_reload: called (in the event loop thread) after each effective load, the first included,
            as certwatcher's callback; exceptions are logged, not raised.
        poll_interval: seconds between polls besides file events (certwatcher: 10 s).
    """

    def __init__(self, cert_dir: str | os.PathLike[str], on_reload: Callable[[], None] | None = None,
                 poll_interval: float = 10.0) -> None:
        self.cert_dir = Path(cert_dir)
        self.on_reload = on_reload
        self.poll_interval = poll_interval
        self.context = server_context()
        self.loaded = False
        self.serial: int | None = None
        self._current: tuple[bytes, bytes] | None = None
        self._scratch = tempfile.TemporaryDirectory(prefix="snatch-tls-")

    def load(self) -> bool:
        """Load the pair if it changed. Returns ``True`` when a new pair is now served.

        Raises :class:`CertificateError` when the files are missing or do not form a key pair;
        the previously loaded pair (if any) stays in use.
        """
        try:
            cert_pem = (self.cert_dir / CERT_FILE).read_bytes()
            key_pem = (self.cert_dir / KEY_FILE).read_bytes()
        except OSError as exc:
            raise CertificateError(f"cannot read key pair in {self.cert_dir}: {exc}") from exc
        if self._current == (cert_pem, key_pem):
            return False
        crt, key = Path(self._scratch.name) / CERT_FILE, Path(self._scratch.name) / KEY_FILE
        crt.write_bytes(cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(key_pem)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(crt, key)
            not_after = x509.load_pem_x509_certificate(cert_pem)
        except (ssl.SSLError, ValueError) as exc:
            raise CertificateError(f"invalid key pair in {self.cert_dir}: {exc}") from exc
        # Runs on the event loop thread, so no handshake sees a half-loaded context.
        self.context.load_cert_chain(crt, key)
        self._current = (cert_pem, key_pem)
        self.loaded = True
        self.serial = not_after.serial_number
        metrics.CERT_NOT_AFTER.set(not_after.not_valid_after_utc.timestamp())
        metrics.CERT_RELOADS.labels("success").inc()
        log.info("certificate loaded cert_dir=%s serial=%x not_after=%s", self.cert_dir, self.serial,
                 not_after.not_valid_after_utc.isoformat())
        if self.on_reload is not None:
            try:
                self.on_reload()
            except Exception:
                log.exception("certificate reload callback failed cert_dir=%s", self.cert_dir)
        return True

    def try_load(self) -> bool:
        """:meth:`load`, logging (not raising) a failure; the old pair stays in use."""
        try:
            return self.load()
        except CertificateError as exc:
            metrics.CERT_RELOADS.labels("error").inc()
            log.error("certificate reload failed cert_dir=%s error=%s", self.cert_dir, exc)
            return False

    async def run(self, stop: asyncio.Event) -> None:
        """Watch and poll until ``stop`` is set, reloading on every change."""
        poller = asyncio.create_task(self._poll(stop))
        try:
            async for _changes in watchfiles.awatch(self.cert_dir, stop_event=stop, debounce=100, step=20,
                                                    ignore_permission_denied=True):
                self.try_load()
        except Exception:
            # No inotify (or the directory vanished): the poll alone keeps the pair current.
            log.exception("certificate watch failed; polling only cert_dir=%s", self.cert_dir)
            await stop.wait()
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller

    async def _poll(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_interval)
            if not stop.is_set():
                self.try_load()

    def close(self) -> None:
        """Remove the private copies of the key pair."""
        self._scratch.cleanup()
