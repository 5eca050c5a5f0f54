"""The TLS server side of every webhook: one server context, one hot reloader of its key pair.

Both webhooks serve TLS 1.3 only (the API server's webhook client speaks it; KIM Snatch and Go's
``crypto/tls`` servers default to it) with ALPN ``http/1.1``. The key pair comes from a *source*: the
files of a mounted Secret (:meth:`CertificateReloader.for_dir`, as controller-runtime's
``certwatcher``: the directory is watched with ``watchfiles``, which sees kubelet's ``..data`` symlink
swaps, and polled) or any callable, such as a read of a Secret through the API
(:meth:`CertificateReloader.for_source`, polled only).

A new pair is loaded into the live ``SSLContext`` in place: new handshakes get it, open connections
are kept. A half-written update (new certificate, old key) never reaches the live context: the pair is
first copied to private files and checked in a scratch context, and the live context loads those copies
on the event loop thread, so no handshake sees half a pair.
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

from webhooks.certificates import CERT_FILE, KEY_FILE, CertificateError, KeyPair

log = logging.getLogger("reconcilery.webhooks.tls")

#: The oldest TLS version the webhooks accept.
MINIMUM_VERSION = ssl.TLSVersion.TLSv1_3


def server_context() -> ssl.SSLContext:
    """An empty server context: TLS 1.3 minimum, ALPN ``http/1.1`` only (a reloader fills it)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = MINIMUM_VERSION
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


#: Returns the current pair, or ``None`` when there is none yet; may raise :class:`CertificateError`.
PairSource = Callable[[], "KeyPair | None"]


class CertificateReloader:
    """Keeps :attr:`context` loaded with the pair of ``source``.

    Args:
        source: blocking read of the current pair (``None``: none yet; :class:`CertificateError`: unusable).
        name: what the source is, for log lines (a directory, ``namespace/name`` of a Secret).
        watch_dir: a directory to watch for changes besides polling (``None``: poll only).
        poll_interval: seconds between polls (certwatcher: 10 s); until a pair is loaded, at most 1 s.
        on_reload: called (on the event loop thread) after each effective load, the first included, as
            certwatcher's callback; exceptions are logged, not raised.
        on_error: called with the error of each failed reload while running (metrics); not for
            :meth:`load`, which raises.
    """

    def __init__(self, source: PairSource, name: str, *, watch_dir: str | os.PathLike[str] | None = None,
                 poll_interval: float = 10.0, on_reload: Callable[[], None] | None = None,
                 on_error: Callable[[CertificateError], None] | None = None) -> None:
        self.source = source
        self.name = name
        self.watch_dir = Path(watch_dir) if watch_dir is not None else None
        self.poll_interval = poll_interval
        self.on_reload = on_reload
        self.on_error = on_error
        self.context = server_context()
        self.pair: KeyPair | None = None
        self._scratch = tempfile.TemporaryDirectory(prefix="webhook-tls-")
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def for_dir(cls, cert_dir: str | os.PathLike[str], *, poll_interval: float = 10.0,
                on_reload: Callable[[], None] | None = None,
                on_error: Callable[[CertificateError], None] | None = None) -> CertificateReloader:
        """A reloader of ``<cert_dir>/tls.crt`` + ``tls.key`` (a mounted Secret), watched and polled."""
        return cls(lambda: KeyPair.from_dir(cert_dir), str(cert_dir), watch_dir=cert_dir,
                   poll_interval=poll_interval, on_reload=on_reload, on_error=on_error)

    @property
    def loaded(self) -> bool:
        """Whether a pair is served."""
        return self.pair is not None

    @property
    def serial(self) -> int | None:
        """Serial number of the served leaf certificate."""
        return self.pair.certificate.serial_number if self.pair is not None else None

    def swap(self, pair: KeyPair | None) -> bool:
        """Serve ``pair`` if it is new. Returns ``True`` when a new pair is now served (``None``: ``False``).

        Raises :class:`CertificateError` when the pair does not load; the served pair (if any) stays.
        Call it on the event loop thread that serves :attr:`context`.
        """
        if pair is None or pair == self.pair:
            return False
        crt, key = Path(self._scratch.name) / CERT_FILE, Path(self._scratch.name) / KEY_FILE
        crt.write_bytes(pair.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(pair.key_pem)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(crt, key)
            not_after = pair.not_after
        except (ssl.SSLError, ValueError) as exc:
            raise CertificateError(f"invalid key pair in {self.name}: {exc}") from exc
        self.context.load_cert_chain(crt, key)
        self.pair = pair
        log.info("certificate loaded source=%s serial=%x not_after=%s", self.name, self.serial, not_after.isoformat())
        if self.on_reload is not None:
            try:
                self.on_reload()
            except Exception:
                log.exception("certificate reload callback failed source=%s", self.name)
        return True

    def load(self) -> bool:
        """Read the source and serve its pair if it changed (blocking; on the loop thread).

        Raises :class:`CertificateError` when the source has no usable pair; the old pair stays in use.
        """
        return self.swap(self.source())

    async def refresh(self) -> bool:
        """Read the source in a worker thread and serve its pair if it changed; a failure is logged and
        reported to ``on_error``, the old pair stays. Returns whether a new pair is served."""
        try:
            return self.swap(await asyncio.to_thread(self.source))
        except CertificateError as exc:
            self._failed(exc)
        except Exception as exc:  # a source that cannot be read (API down) is the same: keep the old pair
            self._failed(CertificateError(f"cannot read key pair from {self.name}: {exc!r}"))
        return False

    def _failed(self, exc: CertificateError) -> None:
        log.error("certificate reload failed source=%s error=%s", self.name, exc)
        if self.on_error is not None:
            self.on_error(exc)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch (when a directory is given) and poll until ``stop`` is set, reloading on every change."""
        poller = asyncio.create_task(self._poll(stop))
        try:
            if self.watch_dir is None:
                await stop.wait()
                return
            async for _changes in watchfiles.awatch(self.watch_dir, stop_event=stop, debounce=100, step=20,
                                                    ignore_permission_denied=True):
                await self.refresh()
        except Exception:
            # No inotify (or the directory vanished): the poll alone keeps the pair current.
            log.exception("certificate watch failed; polling only source=%s", self.name)
            await stop.wait()
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller

    def start(self) -> None:
        """Run :meth:`run` in the background of the running event loop until :meth:`stop`."""
        self._stop.clear()
        self._task = asyncio.create_task(self.run(self._stop))

    async def stop(self) -> None:
        """End the background :meth:`run` started by :meth:`start` and wait for it (idempotent)."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _poll(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            interval = self.poll_interval if self.loaded else min(1.0, self.poll_interval)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
            if not stop.is_set():
                await self.refresh()

    def close(self) -> None:
        """Remove the private copies of the key pair."""
        self._scratch.cleanup()
