"""The notification path: Kyma runtime-watcher events connect an SKR sooner (``pkg/skr/runtime``'s
notification sleeve, listener of ``kyma-project/runtime-watcher``, contract v2).

``POST /v2/cloud-manager/event`` (``/v1/...`` too) with a runtime-watcher ``WatchEvent`` body
(``owner``, ``watched``, ``watchedGvk``) over mutual TLS: the runtime id (the kyma name) is the subject
common name of the client certificate, verified against the configured CA (KLM's runtime-watcher CA).
Only when :attr:`Identity.trust_xfcc` is set (behind a proxy such as Istio that verified the SKR's
certificate) the certificate comes from ``X-Forwarded-Client-Cert`` instead, and then the proxy must
itself present a verified client certificate. Answers as the listener does: 405 for other methods,
413 over 16 KiB, 400/401 for a missing version, certificate or common name, 500 for a body that is not
a WatchEvent, else 200. ``GET /healthz`` and ``/readyz`` answer 200 (probes).

The server (:class:`Listener`) is bounded: one request per connection, ``timeout`` seconds in all per
connection (handshake, headers and body; past it 408 or closed), bodies need a ``Content-Length`` of at
most :data:`SIZE_LIMIT` (else 411/400/413 before any read), at most ``max_connections`` connections are
served at once (a few more are answered 503, the rest closed). A connection that does not start a TLS
handshake is served plain HTTP (kubelet's probes carry no client certificate): it never has an identity,
so an event on it is answered 401.

An accepted event goes to :meth:`tasks.cloud.sweep.Rotation.notify`: the SKR gets a fresh connect
(``workqueue.add``) unless it is not active, its rotation connect is already queued or running, a
notification is pending, or its last notification-driven connect ended less than
``notif_min_interval`` (10 s) ago. Notifications never touch the rotation's order.
"""

from __future__ import annotations

import io
import json
import os
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

import structlog
from cryptography import x509
from cryptography.x509.oid import NameOID

from kube.toolkit.metrics import counter
from webhooks.tls import server_context

log = structlog.get_logger("tasks.cloud.notify")

__all__ = ["COMPONENT", "Identity", "Listener", "ListenerTLS", "Parsed", "parse_event", "runtime_id"]

COMPONENT = "cloud-manager"
XFCC = "X-Forwarded-Client-Cert"
#: Largest event body (the runtime-watcher listener's own limit).
SIZE_LIMIT = 16 * 1024
#: Connections answered 503 at once when all ``max_connections`` slots are taken (the rest are closed).
OVERFLOW_CONNECTIONS = 4
#: Seconds an overflow connection gets for its 503.
OVERFLOW_SECONDS = 2.0
#: Seconds between two looks at the certificate files (cert-manager renews them in place).
RELOAD_SECONDS = 10.0

EVENTS = counter("reconcilery_cloud_skr_notifications_total",
                  "Runtime-watcher events by outcome (accepted, inactive, queued, coalesced, rate_limited, dropped).",
                  ["outcome"])
REFUSED = counter("reconcilery_cloud_skr_listener_refused_total",
                  "skr-listener connections refused before an event (busy, timeout, tls, bad_request).",
                  ["reason"])


@dataclass(frozen=True)
class Parsed:
    """An answer: HTTP ``status``, a ``message``, and the ``kyma`` to notify (``""``: none)."""

    status: int
    message: str
    kyma: str = ""


@dataclass(frozen=True)
class Identity:
    """Who sent a request: ``peer_cn`` is the subject CN of the direct peer's verified client certificate
    (``None``: no verified certificate, e.g. plain HTTP); ``trust_xfcc``: the peer is a trusted proxy whose
    ``X-Forwarded-Client-Cert`` names the SKR."""

    peer_cn: str | None = None
    trust_xfcc: bool = False


def common_name(cert: x509.Certificate) -> str:
    """The subject's first common name (``""``: none)."""
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def runtime_id(xfcc: str) -> str:
    """The common name of the first certificate in an ``X-Forwarded-Client-Cert`` value. Raises
    ``ValueError`` when there is none or it cannot be parsed."""
    start = xfcc.find("Cert=")
    if start < 0:
        raise ValueError("empty certificate")
    token = xfcc[start + len("Cert="):]
    for sep in (";", ","):
        if sep in token:
            token = token.split(sep, 1)[0]
    pem = unquote(token).strip('"')
    try:
        cert = x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise ValueError(f"failed to decode PEM block: {exc}") from exc
    return common_name(cert)


def _kyma(headers: Mapping[str, str], identity: Identity) -> Parsed:
    if identity.peer_cn is None:
        return Parsed(401, "could not get client certificate from request: no verified client certificate")
    if not identity.trust_xfcc:
        cn = identity.peer_cn
    else:
        header = next((v for k, v in headers.items() if k.lower() == XFCC.lower()), None)
        if header is None:
            return Parsed(401, "could not get client certificate from request: "
                               f"request does not contain '{XFCC}' header")
        try:
            cn = runtime_id(header)
        except ValueError as exc:
            return Parsed(401, f"could not get client certificate from request: {exc}")
    if not cn:
        return Parsed(400, "client certificate common name is empty")
    return Parsed(200, "", cn)


def parse_event(method: str, path: str, headers: Mapping[str, str], body: bytes,
                component: str = COMPONENT, identity: Identity = Identity()) -> Parsed:
    """The listener's decision for one request (pure). ``identity`` is what the connection proved; by
    default none, so every event is answered 401."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if len(parts) != 3 or parts[1] != component or parts[2] != "event" or not parts[0].startswith("v"):
        return Parsed(404, "not found")
    if method != "POST":
        return Parsed(405, f"{method} method is not allowed on this path")
    if len(body) > SIZE_LIMIT:
        return Parsed(413, f"Body size greater than {SIZE_LIMIT} bytes is not allowed")
    if parts[0] == "v":
        return Parsed(400, "contract version cannot be empty")
    try:
        event = json.loads(body)
        if not isinstance(event, dict):
            raise ValueError("not an object")
    except (ValueError, RecursionError):
        return Parsed(500, f"could not unmarshal watcher event: Body{{{body[:200].decode(errors='replace')}}}")
    return _kyma(headers, identity)


def content_length(method: str, headers: Mapping[str, str]) -> Parsed | int:
    """The body length to read (pure): an ``int``, or the refusal (411 missing for POST or chunked, 400 not
    a number or negative, 413 over :data:`SIZE_LIMIT`)."""
    lower = {k.lower(): v for k, v in headers.items()}
    if "transfer-encoding" in lower:
        return Parsed(411, "Transfer-Encoding is not supported: send a Content-Length")
    raw = lower.get("content-length")
    if raw is None:
        return Parsed(411, "Content-Length required") if method == "POST" else 0
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit():
        return Parsed(400, "invalid Content-Length")
    length = int(raw)
    if length > SIZE_LIMIT:
        return Parsed(413, f"Body size greater than {SIZE_LIMIT} bytes is not allowed")
    return length


@dataclass(frozen=True)
class ListenerTLS:
    """Files of the listener's mTLS: server ``cert_file`` + ``key_file`` (PEM) and ``client_ca_file``, the CA
    bundle client certificates are verified against; ``trust_xfcc`` as :attr:`Identity.trust_xfcc`."""

    cert_file: str
    key_file: str
    client_ca_file: str
    trust_xfcc: bool = False

    def context(self) -> ssl.SSLContext:
        """A TLS 1.3 server context that verifies client certificates when presented (``CERT_OPTIONAL``:
        a connection without one is answered, but never with an identity). Raises ``ssl.SSLError`` or
        ``OSError`` for unusable files."""
        ctx = server_context()
        ctx.load_cert_chain(self.cert_file, self.key_file)
        ctx.load_verify_locations(cafile=self.client_ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx

    def stamp(self) -> tuple[tuple[int, int], ...]:
        """Modification time and size of the three files (a change means: load them again)."""
        out = []
        for name in (self.cert_file, self.key_file, self.client_ca_file):
            try:
                st = os.stat(name)
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((0, 0))
        return tuple(out)


class _Contexts:
    """The live server context, reloaded when the files change (looked at every :data:`RELOAD_SECONDS`)."""

    def __init__(self, tls: ListenerTLS) -> None:
        self.tls = tls
        self._stamp = tls.stamp()
        self._ctx = tls.context()
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def current(self) -> ssl.SSLContext:
        with self._lock:
            if time.monotonic() - self._checked >= RELOAD_SECONDS:
                self._checked = time.monotonic()
                stamp = self.tls.stamp()
                if stamp != self._stamp:
                    try:
                        self._ctx, self._stamp = self.tls.context(), stamp
                        log.info("listener certificates reloaded", cert=self.tls.cert_file)
                    except (ssl.SSLError, OSError, ValueError) as exc:
                        log.error("listener certificate reload failed; keeping the old ones", error=str(exc))
            return self._ctx


class _DeadlineReader(io.RawIOBase):
    """Reads a socket with one deadline for all reads (a client trickling a byte at a time cannot hold a
    connection past it): ``socket.timeout`` when it passes."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request deadline passed")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


@dataclass(frozen=True)
class _Connection:
    """What the handler of one connection gets: its socket, what it proved, whether it is an overflow
    connection (answered 503) and its deadline (``time.monotonic()`` seconds)."""

    sock: socket.socket
    identity: Identity
    busy: bool
    deadline: float


class _Server(socketserver.TCPServer):
    """Accepts connections and serves each in a thread, at most ``max_connections`` at once."""

    allow_reuse_address = True
    request_queue_size = 128  # the listen backlog (socketserver: 5)
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[socketserver.BaseRequestHandler],
                 max_connections: int, serve: Callable[[Any, Any, bool], None]) -> None:
        super().__init__(address, handler)
        self.serve = serve
        self.slots = threading.BoundedSemaphore(max_connections)
        self.overflow = threading.BoundedSemaphore(OVERFLOW_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if self.slots.acquire(blocking=False):
            release, busy = self.slots.release, False
        elif self.overflow.acquire(blocking=False):
            release, busy = self.overflow.release, True
        else:
            REFUSED.labels("busy").inc()
            self.shutdown_request(request)
            return

        def run() -> None:
            try:
                self.serve(request, client_address, busy)
            finally:
                self.shutdown_request(request)
                release()

        threading.Thread(target=run, name="skr-listener-conn", daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.warning("listener connection failed", peer=str(client_address))


class Listener:
    """The runtime-watcher listener in a background thread; ``on_kyma(kyma) -> outcome`` handles an event.

    ``Listener(on_kyma, port=8083, tls=ListenerTLS(...)).start()``; :attr:`url` once started; :meth:`stop`
    ends it. Without ``tls`` it serves plain HTTP only: probes answer, every event is 401.
    ``max_connections`` connections are served at once, each for at most ``timeout`` seconds.
    Raises ``ssl.SSLError``/``OSError`` when ``tls`` names unusable files.
    """

    def __init__(self, on_kyma: Callable[[str], str], host: str = "127.0.0.1", port: int = 8083,
                 component: str = COMPONENT, tls: ListenerTLS | None = None, max_connections: int = 32,
                 timeout: float = 10.0) -> None:
        self.on_kyma = on_kyma
        self.component = component
        self.tls = tls
        self.timeout = timeout
        self._contexts = _Contexts(tls) if tls is not None else None
        listener = self

        class Handler(BaseHTTPRequestHandler):
            identity = Identity()
            busy = False

            def setup(self) -> None:
                conn: _Connection = self.request
                self.identity, self.busy = conn.identity, conn.busy
                self.connection = conn.sock
                self.rfile = io.BufferedReader(_DeadlineReader(conn.sock, conn.deadline))
                self.wfile = socketserver._SocketWriter(conn.sock)  # type: ignore[attr-defined]

            def _answer(self) -> None:
                if self.busy:
                    REFUSED.labels("busy").inc()
                    self._send(Parsed(503, "too many connections"))
                    return
                if self.path in ("/healthz", "/readyz"):
                    self._send(Parsed(200, "ok"))
                    return
                length = content_length(self.command, dict(self.headers.items()))
                if isinstance(length, Parsed):
                    REFUSED.labels("bad_request").inc()
                    EVENTS.labels("dropped").inc()
                    self._send(length)
                    return
                try:
                    body = self.rfile.read(length) if length else b""
                except (TimeoutError, OSError):
                    REFUSED.labels("timeout").inc()
                    self._send(Parsed(408, "request body not received in time"))
                    return
                if len(body) < length:
                    REFUSED.labels("bad_request").inc()
                    self.close_connection = True
                    return
                parsed = parse_event(self.command, self.path, dict(self.headers.items()), body,
                                     listener.component, self.identity)
                if parsed.kyma:
                    try:
                        outcome = listener.on_kyma(parsed.kyma)
                    except Exception as exc:
                        log.error("notification failed", kyma=parsed.kyma, error=repr(exc))
                        parsed = Parsed(500, "notification failed")
                        outcome = "error"
                    EVENTS.labels(outcome).inc()
                    log.info("skr event", kyma=parsed.kyma, outcome=outcome)
                elif parsed.status != 200:
                    EVENTS.labels("dropped").inc()
                self._send(parsed)

            def _send(self, parsed: Parsed) -> None:
                payload = (parsed.message + "\n").encode() if parsed.message else b""
                try:
                    self.connection.settimeout(2.0)  # the answer gets its own short bound, past the deadline too
                    self.send_response(parsed.status)
                    self.send_header("Content-Type", "text/plain; charset=utf-8")
                    self.send_header("Content-Length", str(len(payload)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    self.close_connection = True

            do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = _answer

            def handle(self) -> None:
                try:
                    self.handle_one_request()
                except (TimeoutError, OSError):
                    REFUSED.labels("timeout").inc()
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._handler: type[BaseHTTPRequestHandler] = Handler
        self._server = _Server((host, port), Handler, max_connections, self._serve)
        self._thread = threading.Thread(target=self._server.serve_forever, name="skr-listener", daemon=True)

    def _serve(self, sock: socket.socket, client_address: Any, busy: bool) -> None:
        """One connection: TLS when it starts a handshake, then one request; never raises."""
        deadline = time.monotonic() + (OVERFLOW_SECONDS if busy else self.timeout)
        identity = Identity()
        try:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            first = sock.recv(1, socket.MSG_PEEK)
            if not first:
                return
            if first[0] == 0x16 and self._contexts is not None:  # a TLS handshake record
                conn = self._contexts.current().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                conn.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    conn.do_handshake()
                except (ssl.SSLError, OSError) as exc:
                    REFUSED.labels("tls").inc()
                    log.info("listener TLS handshake refused", peer=str(client_address[0]), error=str(exc))
                    conn.close()
                    return
                der = conn.getpeercert(binary_form=True)
                if der:
                    identity = Identity(common_name(x509.load_der_x509_certificate(der)),
                                        self.tls.trust_xfcc if self.tls else False)
                sock = conn
            self._handler(_Connection(sock, identity, busy, deadline), client_address,  # type: ignore[arg-type]
                          self._server)
        except Exception as exc:  # a connection never takes the listener down
            REFUSED.labels("timeout" if isinstance(exc, TimeoutError) else "bad_request").inc()
            log.info("listener connection ended", peer=str(client_address[0]), error=repr(exc))
        finally:
            sock.close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        return f"{'https' if self.tls else 'http'}://{text}:{port}"

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def notify_connect(kyma: str) -> str:
    """The production ``on_kyma``: the rotation's decision, and a fresh connect when accepted."""
    from tasks.cloud import settings, sweep
    from workers.workqueue import current as workqueue

    s = settings.current()
    outcome = sweep.rotation(s).notify(kyma)
    if outcome == "accepted":
        workqueue().add(sweep.CONNECT, sweep.connect_keys([kyma], s.kcp_namespace)[0])
    return outcome
