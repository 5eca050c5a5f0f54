"""The SKR listener: Kyma runtime-watcher events connect an SKR sooner (``pkg/skr/runtime``'s
notification sleeve, listener of ``kyma-project/runtime-watcher``, contract v2).

``POST /v2/cloud-manager/event`` (``/v1/...`` too) with a runtime-watcher ``WatchEvent`` body
(``owner``, ``watched``, ``watchedGvk``) over mutual TLS: the runtime id (the kyma name) is the subject
common name of the client certificate, verified against the configured CA (KLM's runtime-watcher CA).
Only when :attr:`Identity.trust_xfcc` is set (behind a proxy such as Istio that verified the SKR's
certificate) the certificate comes from ``X-Forwarded-Client-Cert`` instead, and then the proxy must
itself present a verified client certificate whose subject CN or a DNS SAN is one of the pinned
:attr:`ListenerTLS.proxy_names` (issue 27: any other certificate of the same issuer, an SKR's included,
could otherwise name any SKR in the header); none pinned, no event is believed.
Answers as the listener does: 405 for other methods,
413 over 16 KiB, 400/401 for a missing version, certificate or common name, 500 for a body that is not
a WatchEvent, else 200. ``GET /healthz`` and ``/readyz`` answer 200 (probes).

This module is the decision (:func:`parse_event`) and the wiring; the serving is the webhooks' stack:
the TLS context and its certificate reloader (:mod:`webhooks.tls`: the three files are watched and
polled, a renewal is served to new handshakes), the bounded connections (:mod:`webhooks.connections`:
``max_connections`` served at once, :data:`OVERFLOW_CONNECTIONS` more answered 503, the rest closed;
``timeout`` seconds per connection in all, handshake, headers and body, past it 408 or closed; a
connection that does not start a TLS handshake is served plain HTTP, as kubelet's probes are: it never
has an identity, so an event on it is answered 401) and one request per connection
(:mod:`webhooks.exchange`: a ``Content-Length`` of at most :data:`SIZE_LIMIT`, else 411/400/413 before any
read).

An accepted event goes to :meth:`tasks.cloud.sweep.Rotation.notify`: the SKR gets a fresh connect
(``workqueue.add``) unless it is not active, its rotation connect is already queued or running, a
notification is pending, or its last notification-driven connect ended less than
``notif_min_interval`` (10 s) ago (the rate limit per SKR). Notifications never touch the rotation's order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

import structlog
from cryptography import x509
from cryptography.x509.oid import NameOID

from kube.toolkit.metrics import counter
from tasks.cloud import settings, sweep
from webhooks.connections import BoundedServer, Bounds, Connection, peer_certificate
from webhooks.exchange import Answer, Refused, content_length, read_body, read_head, respond
from webhooks.tls import CertificateReloader
from workers.workqueue import current as workqueue

log = structlog.get_logger("tasks.cloud.skr.listener")

__all__ = ["COMPONENT", "Identity", "Listener", "ListenerTLS", "Parsed", "notify_connect", "parse_event",
           "runtime_id"]

COMPONENT = "cloud-manager"
XFCC = "X-Forwarded-Client-Cert"
#: Largest event body (the runtime-watcher listener's own limit).
SIZE_LIMIT = 16 * 1024
#: Connections answered 503 at once when all ``max_connections`` slots are taken (the rest are closed).
OVERFLOW_CONNECTIONS = 4
#: Seconds an overflow connection gets for its 503.
OVERFLOW_SECONDS = 2.0
#: Paths answered 200 to any method (the Deployment's probes).
PROBES = ("/healthz", "/readyz")

EVENTS = counter("reconcilery_cloud_skr_notifications_total",
                  "Runtime-watcher events by outcome (accepted, inactive, queued, coalesced, rate_limited, dropped).",
                  ["outcome"])
REFUSED = counter("reconcilery_cloud_skr_listener_refused_total",
                  "skr-listener connections refused before an event (busy, timeout, tls, bad_request).",
                  ["reason"])


@dataclass(frozen=True)
class Parsed(Answer):
    """An answer: HTTP ``status``, a ``message``, and the ``kyma`` to notify (``""``: none)."""

    kyma: str = ""


@dataclass(frozen=True)
class Identity:
    """Who sent a request: ``peer_cn`` is the subject CN of the direct peer's verified client certificate
    (``None``: no verified certificate, e.g. plain HTTP); ``trust_xfcc``: the listener sits behind a proxy
    whose ``X-Forwarded-Client-Cert`` names the SKR; ``proxy``: the peer's certificate carries one of the
    pinned proxy names (:attr:`ListenerTLS.proxy_names`), so its header is believed."""

    peer_cn: str | None = None
    trust_xfcc: bool = False
    proxy: bool = False


def common_name(cert: x509.Certificate) -> str:
    """The subject's first common name (``""``: none)."""
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def subject_names(cert: x509.Certificate) -> set[str]:
    """The subject's common names and the DNS names of its subjectAltName."""
    found = {str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)}
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return found
    return found | set(san.get_values_for_type(x509.DNSName))


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
    elif not identity.proxy:
        return Parsed(401, "could not get client certificate from request: "
                           "the client certificate is not the trusted proxy's")
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


@dataclass(frozen=True)
class ListenerTLS:
    """Files of the listener's mTLS: server ``cert_file`` + ``key_file`` (PEM) and ``client_ca_file``, the CA
    bundle client certificates are verified against; ``trust_xfcc`` as :attr:`Identity.trust_xfcc`;
    ``proxy_names``: with ``trust_xfcc``, the subject CNs / DNS SANs of which the proxy's verified client
    certificate must carry one (empty: no peer is the proxy, every event is 401)."""

    cert_file: str
    key_file: str
    client_ca_file: str
    trust_xfcc: bool = False
    proxy_names: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, s: settings.CloudSettings) -> ListenerTLS:
        """The listener's mTLS from the ``RECONCILERY_CLOUD_LISTENER_*`` settings."""
        names = tuple(n.strip() for n in s.listener_proxy_names.split(",") if n.strip())
        return cls(s.listener_cert_file, s.listener_key_file, s.listener_client_ca_file, s.listener_trust_xfcc, names)

    def reloader(self) -> CertificateReloader:
        """The reloader of the three files (:meth:`webhooks.tls.CertificateReloader.for_files`): client
        certificates are verified when presented; a connection without one is served without identity."""
        return CertificateReloader.for_files(self.cert_file, self.key_file, self.client_ca_file)


class Listener:
    """The runtime-watcher listener (a :class:`webhooks.Listener`); ``on_kyma(kyma) -> outcome`` (blocking,
    run in a worker thread) handles an event.

    ``Listener(on_kyma, port=8083, tls=ListenerTLS(...))``, then ``await start()`` (or
    :func:`webhooks.serving.run`, or :class:`webhooks.ThreadedListener`); :attr:`url` once started.
    Without ``tls`` it serves plain HTTP only: probes answer, every event is 401. ``max_connections``
    connections are served at once, each for at most ``timeout`` seconds.
    """

    name = "skr-listener"

    def __init__(self, on_kyma: Callable[[str], str], host: str = "127.0.0.1", port: int = 8083,
                 component: str = COMPONENT, tls: ListenerTLS | None = None, max_connections: int = 32,
                 timeout: float = 10.0) -> None:
        self.on_kyma = on_kyma
        self.component = component
        self.tls = tls
        self.certificates = tls.reloader() if tls is not None else None
        bounds = Bounds(max_connections, timeout, OVERFLOW_CONNECTIONS, OVERFLOW_SECONDS, plain=True)
        self.server = BoundedServer(self._serve, self._busy, host, port,
                                    ssl_context=self.certificates.context if self.certificates else None,
                                    bounds=bounds, on_refused=lambda reason: REFUSED.labels(reason).inc(),
                                    name=self.name)

    @property
    def url(self) -> str:
        """``https://host:port`` (``http://`` without TLS)."""
        return self.server.url()

    async def start(self) -> None:
        """Load the certificates, then listen. Raises :class:`webhooks.certificates.CertificateError` when
        they cannot be read or do not load, ``OSError`` when the port cannot be bound."""
        if self.certificates is not None:
            self.certificates.load()
        await self.server.start()
        if self.certificates is not None:
            self.certificates.start()
        if self.tls is not None and self.tls.trust_xfcc and not self.tls.proxy_names:
            log.warning("skr-listener trusts X-Forwarded-Client-Cert but pins no proxy name "
                        "(RECONCILERY_CLOUD_LISTENER_PROXY_NAMES): every event is answered 401")
        log.info("skr-listener serving", url=self.url, mtls=self.tls is not None)

    async def stop(self) -> None:
        """Stop listening and watching the certificates (idempotent)."""
        await self.server.stop()
        if self.certificates is not None:
            await self.certificates.stop()

    def _identity(self, writer: asyncio.StreamWriter) -> Identity:
        cert = peer_certificate(writer)
        if cert is None or self.tls is None:
            return Identity(common_name(cert) if cert is not None else None)
        proxy = self.tls.trust_xfcc and not subject_names(cert).isdisjoint(self.tls.proxy_names)
        return Identity(common_name(cert), self.tls.trust_xfcc, proxy)

    async def _busy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
        try:
            await read_head(reader, conn.deadline)
        except Refused as exc:
            if exc.reason != "closed":
                REFUSED.labels("timeout" if exc.reason == "timeout" else "bad_request").inc()
            return
        REFUSED.labels("busy").inc()
        await respond(writer, Answer(503, "too many connections"))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
        """One connection: one request, answered, then closed."""
        try:
            head = await read_head(reader, conn.deadline)
        except Refused as exc:
            if exc.reason != "closed":
                REFUSED.labels(exc.reason).inc()
            if exc.answer is not None:
                await respond(writer, exc.answer)
            return
        if head.target in PROBES:
            await respond(writer, Answer(200, "ok"))
            return
        length = content_length(head.method, head.headers, SIZE_LIMIT)
        if isinstance(length, Answer):
            REFUSED.labels("bad_request").inc()
            EVENTS.labels("dropped").inc()
            await respond(writer, length)
            return
        try:
            body = await read_body(reader, length, conn.deadline)
        except Refused as exc:
            REFUSED.labels("timeout" if exc.reason == "timeout" else "bad_request").inc()
            if exc.answer is not None:
                await respond(writer, exc.answer)
            return
        parsed = parse_event(head.method, head.target, head.headers, body, self.component, self._identity(writer))
        if kyma := parsed.kyma:
            try:
                outcome = await asyncio.to_thread(self.on_kyma, kyma)
            except Exception as exc:
                log.error("notification failed", kyma=kyma, error=repr(exc))
                parsed, outcome = Parsed(500, "notification failed"), "error"
            EVENTS.labels(outcome).inc()
            log.info("skr event", kyma=kyma, outcome=outcome)
        elif parsed.status != 200:
            EVENTS.labels("dropped").inc()
        await respond(writer, parsed)


def notify_connect(kyma: str) -> str:
    """The production ``on_kyma``: the rotation's decision, and a fresh connect when accepted."""
    s = settings.current()
    outcome = sweep.rotation(s).notify(kyma)
    if outcome == "accepted":
        workqueue().add(sweep.CONNECT, sweep.connect_keys([kyma], s.kcp_namespace)[0])
    return outcome
