"""The notification path: Kyma runtime-watcher events connect an SKR sooner (``pkg/skr/runtime``'s
notification sleeve, listener of ``kyma-project/runtime-watcher``, contract v2).

``POST /v2/cloud-manager/event`` (``/v1/...`` too) with a runtime-watcher ``WatchEvent`` body
(``owner``, ``watched``, ``watchedGvk``) and the ``X-Forwarded-Client-Cert`` header of the SKR's
client certificate: the runtime id (the kyma name) is the certificate's common name. Answers as the
listener does: 405 for other methods, 413 over 16 KiB, 400/401 for a missing version, header or
common name, 500 for a body that is not a WatchEvent, else 200. ``GET /healthz`` answers 200 (probes).

An accepted event goes to :meth:`tasks.cloud.sweep.Rotation.notify`: the SKR gets a fresh connect
(``workqueue.add``) unless it is not active, its rotation connect is already queued or running, a
notification is pending, or its last notification-driven connect ended less than
``notif_min_interval`` (10 s) ago. Notifications never touch the rotation's order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import structlog
from cryptography import x509
from cryptography.x509.oid import NameOID

from kube.toolkit.metrics import counter

log = structlog.get_logger("tasks.cloud.notify")

__all__ = ["COMPONENT", "Listener", "Parsed", "parse_event", "runtime_id"]

COMPONENT = "cloud-manager"
XFCC = "X-Forwarded-Client-Cert"
SIZE_LIMIT = 16 * 1024

EVENTS = counter("reconcilery_cloud_skr_notifications_total",
                  "Runtime-watcher events by outcome (accepted, inactive, queued, coalesced, rate_limited, dropped).",
                  ["outcome"])


@dataclass(frozen=True)
class Parsed:
    """An answer: HTTP ``status``, a ``message``, and the ``kyma`` to notify (``""``: none)."""

    status: int
    message: str
    kyma: str = ""


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
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def parse_event(method: str, path: str, headers: Mapping[str, str], body: bytes,
                component: str = COMPONENT) -> Parsed:
    """The listener's decision for one request (pure)."""
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
    except ValueError:
        return Parsed(500, f"could not unmarshal watcher event: Body{{{body[:200].decode(errors='replace')}}}")
    header = next((v for k, v in headers.items() if k.lower() == XFCC.lower()), None)
    if header is None:
        return Parsed(401, f"could not get client certificate from request: request does not contain '{XFCC}' header")
    try:
        kyma = runtime_id(header)
    except ValueError as exc:
        return Parsed(401, f"could not get client certificate from request: {exc}")
    if not kyma:
        return Parsed(400, "client certificate common name is empty")
    return Parsed(200, "", kyma)


class Listener:
    """The HTTP listener in a background thread; ``on_kyma(kyma) -> outcome`` handles an event.

    ``Listener(on_kyma, port=8083).start()``; :attr:`url` once started; :meth:`stop` ends it.
    """

    def __init__(self, on_kyma: Callable[[str], str], host: str = "127.0.0.1", port: int = 8083,
                 component: str = COMPONENT) -> None:
        self.on_kyma = on_kyma
        self.component = component
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                if self.path in ("/healthz", "/readyz"):
                    self._send(Parsed(200, "ok"))
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > SIZE_LIMIT:
                    self._send(Parsed(413, f"Body size greater than {SIZE_LIMIT} bytes is not allowed"))
                    return
                body = self.rfile.read(length) if length else b""
                parsed = parse_event(self.command, self.path, dict(self.headers.items()), body, listener.component)
                if parsed.kyma:
                    try:
                        outcome = listener.on_kyma(parsed.kyma)
                    except Exception:
                        log.exception("notification failed", kyma=parsed.kyma)
                        parsed = Parsed(500, "notification failed")
                        outcome = "error"
                    EVENTS.labels(outcome).inc()
                    log.info("skr event", kyma=parsed.kyma, outcome=outcome)
                elif parsed.status != 200:
                    EVENTS.labels("dropped").inc()
                self._send(parsed)

            def _send(self, parsed: Parsed) -> None:
                payload = (parsed.message + "\n").encode() if parsed.message else b""
                self.send_response(parsed.status)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="skr-listener", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{text}:{port}"

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
