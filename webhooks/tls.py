"""The house's one TLS stack: server contexts and the one certificate reloader of every listener and client.

Servers (the webhooks, the SKR listener) speak TLS 1.3 only (the API server's webhook client speaks it;
KIM Snatch and Go's ``crypto/tls`` servers default to it) with ALPN ``http/1.1``; a server may verify
client certificates (:func:`server_context` with ``client_ca``). The NGINX edge's client contexts use the
same reloader with a context builder of their own.

What a context is loaded with (:class:`Material`: its own key pair, the CAs it verifies peers against)
comes from a *source*: files (:meth:`CertificateReloader.for_dir` for a mounted Secret,
:meth:`CertificateReloader.for_files`; watched with ``watchfiles``, which sees kubelet's ``..data``
symlink swaps, and polled, as controller-runtime's ``certwatcher``), any callable such as a read of a
Secret through the API (polled only), or material the caller reads itself and hands to
:meth:`CertificateReloader.swap` (the NGINX client reads its Secrets at every sync).

Every change builds a fresh context and loads the new material into it; material that does not load
(a half-written update: new certificate, old key) never reaches a handshake, the old context stays. A
server is given :attr:`CertificateReloader.context`, a front context whose SNI callback (called for every
handshake, with or without SNI) hands the handshake the current one; a client takes
:attr:`CertificateReloader.current` for each new connection. Open connections keep their context.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import watchfiles

from webhooks.certificates import CertificateError, KeyPair

log = logging.getLogger("reconcilery.webhooks.tls")

#: The oldest TLS version the servers accept.
MINIMUM_VERSION = ssl.TLSVersion.TLSv1_3


def server_context(client_ca: bytes | None = None) -> ssl.SSLContext:
    """A server context without a key pair: TLS 1.3 minimum, ALPN ``http/1.1`` only (a reloader fills it).

    ``client_ca`` (PEM, may be empty): client certificates are asked for and verified against it
    (``CERT_OPTIONAL``: a client without one is served, without an identity; one that does not verify
    fails the handshake), and no session tickets are issued, so no resumed session skips that check.
    ``None``: clients are not asked for certificates. Raises ``ssl.SSLError`` for a CA that does not load.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = MINIMUM_VERSION
    ctx.set_alpn_protocols(["http/1.1"])
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.num_tickets = 0
        if client_ca:
            ctx.load_verify_locations(cadata=client_ca.decode("ascii"))
    return ctx


@dataclass(frozen=True)
class Material:
    """What one context is loaded with: its own key pair (``None``: none, a client without certificate)
    and ``trust``, the PEM bundle of the CAs it verifies its peers against (``b""``: the builder's default)."""

    pair: KeyPair | None = None
    trust: bytes = b""


#: Returns the current material (a bare :class:`KeyPair`: no trust), or ``None`` when there is none yet;
#: may raise :class:`CertificateError`.
Source = Callable[[], "Material | KeyPair | None"]
#: Builds an empty context that verifies peers against ``trust`` (PEM; may raise ``ssl.SSLError``/``ValueError``).
Builder = Callable[[bytes], ssl.SSLContext]


def _server(trust: bytes) -> ssl.SSLContext:
    return server_context()


def load_pair(context: ssl.SSLContext, pair: KeyPair) -> None:
    """Load ``pair`` into ``context``. ``ssl`` reads key pairs from files only: the pair is written to a
    private temporary file (mode 0600) that is removed at once. Raises ``ssl.SSLError`` or ``ValueError``
    when the pair does not load (a key that does not belong to the certificate)."""
    fd, path = tempfile.mkstemp(prefix="reconcilery-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pair.cert_pem.rstrip(b"\n") + b"\n" + pair.key_pem)
        context.load_cert_chain(path)
    finally:
        os.unlink(path)


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CertificateError(f"cannot read key pair in {path.parent}: {exc}") from exc


class CertificateReloader:
    """Keeps a context loaded with the material of a source.

    Args:
        source: blocking read of the current material (``None``: none yet; :class:`CertificateError`:
            unusable); ``None``: the caller hands material to :meth:`swap` itself.
        name: what the source is, for log lines (a directory, ``namespace/name`` of a Secret).
        build: builds an empty context for the material's trust (default: :func:`server_context`).
        watch: directories to watch for changes besides polling (empty: poll only).
        poll_interval: seconds between polls (certwatcher: 10 s); until material is loaded, at most 1 s.
        on_reload: called after each effective load, the first included, as certwatcher's callback;
            exceptions are logged, not raised.
        on_error: called with the error of each failed reload while running (metrics); not for
            :meth:`load`, which raises.
    """

    def __init__(self, source: Source | None, name: str, *, build: Builder = _server,
                 watch: Iterable[str | os.PathLike[str]] = (), poll_interval: float = 10.0,
                 on_reload: Callable[[], None] | None = None,
                 on_error: Callable[[CertificateError], None] | None = None) -> None:
        self.source = source
        self.name = name
        self.build = build
        self.watch = tuple(dict.fromkeys(Path(p) for p in watch))
        self.poll_interval = poll_interval
        self.on_reload = on_reload
        self.on_error = on_error
        self.material: Material | None = None
        #: The context loaded with :attr:`material` (``None`` until loaded): what a client connects with.
        self.current: ssl.SSLContext | None = None
        self._front: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._stop = asyncio.Event()
        self._end_watch = threading.Event()  # set: the watcher thread returns
        self._task: asyncio.Task[None] | None = None
        self._watcher: threading.Thread | None = None

    @classmethod
    def for_dir(cls, cert_dir: str | os.PathLike[str], *, poll_interval: float = 10.0,
                on_reload: Callable[[], None] | None = None,
                on_error: Callable[[CertificateError], None] | None = None) -> CertificateReloader:
        """A reloader of ``<cert_dir>/tls.crt`` + ``tls.key`` (a mounted Secret), watched and polled."""
        return cls(lambda: KeyPair.from_dir(cert_dir), str(cert_dir), watch=[cert_dir],
                   poll_interval=poll_interval, on_reload=on_reload, on_error=on_error)

    @classmethod
    def for_files(cls, cert_file: str, key_file: str, client_ca_file: str | None = None, *,
                  poll_interval: float = 10.0) -> CertificateReloader:
        """A server's reloader of a PEM certificate (chain) and key, and with ``client_ca_file`` the CA
        bundle it verifies client certificates against (:func:`server_context`); their directories are
        watched, and polled. A file that cannot be read is a :class:`CertificateError`."""
        files = [Path(cert_file), Path(key_file)] + ([Path(client_ca_file)] if client_ca_file else [])

        def read() -> Material:
            pair = KeyPair(_read_file(files[0]), _read_file(files[1]))
            return Material(pair, _read_file(files[2]) if client_ca_file else b"")

        build: Builder = (lambda trust: server_context(trust)) if client_ca_file else _server
        return cls(read, str(files[0].parent), build=build, watch=[f.parent for f in files],
                   poll_interval=poll_interval)

    @property
    def context(self) -> ssl.SSLContext:
        """What a server serves with: a front context that hands every handshake :attr:`current` (no
        handshake succeeds until material is loaded). Server builders only."""
        if self._front is None:
            front = self.build(b"")
            front.sni_callback = self._handshake
            self._front = front
        return self._front

    def _handshake(self, connection: Any, server_name: str | None, front: ssl.SSLContext) -> None:
        current = self.current
        if current is not None:
            connection.context = current

    @property
    def pair(self) -> KeyPair | None:
        """The key pair served (``None``: none loaded, or material without a pair)."""
        return self.material.pair if self.material is not None else None

    @property
    def loaded(self) -> bool:
        """Whether material is loaded."""
        return self.material is not None

    @property
    def serial(self) -> int | None:
        """Serial number of the loaded leaf certificate."""
        pair = self.pair
        return pair.certificate.serial_number if pair is not None else None

    def swap(self, material: Material | KeyPair | None) -> bool:
        """Load ``material`` if it is new (thread-safe). Returns ``True`` when new material is now loaded
        (``None``: ``False``).

        Raises :class:`CertificateError` (its cause: the ``ssl.SSLError``/``ValueError``) when it does not
        load; the loaded material (if any) stays.
        """
        if isinstance(material, KeyPair):
            material = Material(material)
        with self._lock:
            if material is None or material == self.material:
                return False
            try:
                fresh = self.build(material.trust)
                if material.pair is not None:
                    load_pair(fresh, material.pair)
                    not_after = material.pair.not_after.isoformat()
            except (ssl.SSLError, ValueError) as exc:
                raise CertificateError(f"invalid key pair in {self.name}: {exc}") from exc
            self.current, self.material = fresh, material
        if material.pair is not None:
            log.info("certificate loaded source=%s serial=%x not_after=%s", self.name, self.serial, not_after)
        else:
            log.info("certificates loaded source=%s", self.name)
        if self.on_reload is not None:
            try:
                self.on_reload()
            except Exception:
                log.exception("certificate reload callback failed source=%s", self.name)
        return True

    def _read(self) -> Material | KeyPair | None:
        if self.source is None:
            raise CertificateError(f"{self.name} has no source to read")
        return self.source()

    def load(self) -> bool:
        """Read the source and load its material if it changed (blocking).

        Raises :class:`CertificateError` when the source has no usable material; the old one stays in use.
        """
        return self.swap(self._read())

    async def refresh(self) -> bool:
        """Read the source in a worker thread and load its material if it changed; a failure is logged
        and reported to ``on_error``, the old material stays. Returns whether new material is loaded."""
        try:
            return self.swap(await asyncio.to_thread(self._read))
        except CertificateError as exc:
            self._failed(exc)
        except Exception as exc:  # a source that cannot be read (API down) is the same: keep the old pair
            self._failed(CertificateError(f"cannot read key pair from {self.name}: {exc!r}"))
        return False

    def _failed(self, exc: CertificateError) -> None:
        log.error("certificate reload failed source=%s error=%s", self.name, exc)
        if self.on_error is not None:
            self.on_error(exc)

    def start(self) -> None:
        """Poll, and watch the directories (one daemon thread, running when this returns), in the
        background of the running event loop until :meth:`stop`; every change is reloaded."""
        loop = asyncio.get_running_loop()
        self._stop.clear()
        self._end_watch.clear()
        self._task = asyncio.create_task(self._poll())
        if self.watch:
            self._watcher = threading.Thread(target=self._watch, args=(loop,), daemon=True,
                                             name=f"certwatch-{self.name}")
            self._watcher.start()

    async def stop(self) -> None:
        """End polling and watching started by :meth:`start` and wait for them (idempotent)."""
        self._stop.set()
        self._end_watch.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._watcher is not None:
            self._watcher.join(5)  # the watch looks at its stop event every few milliseconds
            self._watcher = None

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            for _changes in watchfiles.watch(*self.watch, stop_event=self._end_watch, debounce=100, step=20,
                                             ignore_permission_denied=True, raise_interrupt=False):
                asyncio.run_coroutine_threadsafe(self.refresh(), loop)
        except Exception:
            # No inotify (or the directory vanished): the poll alone keeps the material current.
            log.exception("certificate watch failed; polling only source=%s", self.name)

    async def _poll(self) -> None:
        while not self._stop.is_set():
            interval = self.poll_interval if self.loaded else min(1.0, self.poll_interval)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stop.wait(), interval)
            if not self._stop.is_set():
                await self.refresh()
