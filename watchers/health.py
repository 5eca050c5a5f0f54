"""``/readyz``, ``/livez`` and ``/metrics`` of a watch process (stdlib HTTP server in a thread)."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

if TYPE_CHECKING:
    from watchers.engine import WatchManager

log = logging.getLogger(__name__)

#: Liveness allowance: longer than the longest watch (10 min) plus a reconnect.
DEFAULT_MAX_SILENCE_S = 15 * 60.0


class HealthServer:
    """Serves the health of a :class:`~watchers.engine.WatchManager`.

    - ``GET /readyz``: 200 once every registration finished its initial list, else 503.
    - ``GET /livez``: 200 while every watch saw activity within ``max_silence_s``, else 503.
    - ``GET /metrics``: Prometheus text of ``registry``.

    Bodies are JSON with the per-registration status. ``port=0`` picks a free port (see :attr:`port`).
    """

    def __init__(self, manager: WatchManager, port: int = 0, host: str = "0.0.0.0",
                 max_silence_s: float = DEFAULT_MAX_SILENCE_S, registry: CollectorRegistry = REGISTRY) -> None:
        self.manager = manager
        self.max_silence_s = max_silence_s
        self.registry = registry
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="watch-health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> HealthServer:
        self._thread.start()
        log.info("health server port=%d", self.port)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        health = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(health.registry), CONTENT_TYPE_LATEST)
                elif path in ("/readyz", "/livez", "/healthz"):
                    ok = health.manager.ready() if path == "/readyz" else health.manager.alive(health.max_silence_s)
                    body = json.dumps({"ok": ok, "watches": health.manager.status()}).encode()
                    self._send(200 if ok else 503, body, "application/json")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # quiet: probes every few seconds
                log.debug("health %s", format % args)

        return Handler
