"""The process shell of a webhook: its HTTPS review listener, health and metrics listeners, and ``serve``.

A domain hands :class:`WebhookServer` its review routes (handlers from :func:`webhooks.server.review_endpoint`,
which bounds body size, time and concurrency), what its decisions read (``inputs``: started before the
review listener, stopped after it) and its certificate hooks (metrics, the caBundle sync); the shell
does the rest, as controller-runtime's webhook server and manager do for KIM Snatch (``cmd/main.go``):

- the review routes over HTTPS with the key pair of a certificate directory, hot reloaded
  (:class:`webhooks.tls.CertificateReloader`, TLS 1.3 minimum);
- ``/healthz`` and ``/readyz`` (and their ``/ping`` paths) over plain HTTP on the health port;
  ``/readyz`` fails until a pair is loaded and the review listener is up;
- ``/metrics`` (prometheus-client's default registry) over plain HTTP on the metrics port;
- :func:`serve`: the server plus every extra listener the installed domains register
  (:mod:`webhooks.listeners`) until SIGTERM or SIGINT; :func:`run` does that for any listener (the SKR
  listener's process).

Log lines go to the domain's logger (``logger``), so they keep the domain's name. Lower layer: imports
no domain.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from webhooks import server as review_server
from webhooks.certificates import CertificateError, KeyPair
from webhooks.listeners import Listener, ThreadedListener, load, start_all
from webhooks.review import ReviewKind
from webhooks.tls import CertificateReloader

log = logging.getLogger("reconcilery.webhooks.serving")


class Inputs(Protocol):
    """What a domain's decisions read (a cluster view): started before the review listener, stopped after."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass
class Ports:
    """Bound ports (resolved when 0 was asked for)."""

    webhook: int
    health: int
    metrics: int


class WebhookServer:
    """The three listeners and the certificate reloader of one webhook process.

    Args:
        name: listener name (:class:`webhooks.Listener`), also the thread name under :class:`RunningWebhook`
            and the ``webhook`` label of the routes' request metrics (:mod:`webhooks.server`).
        cert_dir: directory with ``tls.crt`` and ``tls.key`` (kubelet's mounted Secret layout).
        kind: the reviews the routes answer (the HTTPS application's body limit).
        routes: ``POST`` path -> handler; the first path is the one :attr:`url` and the start log line name.
        inputs: what the decisions read, or ``None``.
        host: listen address of all three listeners.
        port, health_port, metrics_port: ports; ``0`` picks a free one (see :attr:`ports`);
            ``metrics_port < 0`` disables metrics.
        on_cert_reload: called with the loaded pair after each certificate (re)load.
        on_cert_error: called with the error of each failed reload while running.
        cert_poll_interval: seconds between certificate polls besides file events.
        logger: the domain's logger for the start/stop lines (default: this module's).
    """

    def __init__(self, name: str, cert_dir: str | os.PathLike[str], kind: ReviewKind,
                 routes: dict[str, review_server.Handler], *, inputs: Inputs | None = None, host: str = "0.0.0.0",
                 port: int, health_port: int, metrics_port: int,
                 on_cert_reload: Callable[[KeyPair | None], None] | None = None,
                 on_cert_error: Callable[[CertificateError], None] | None = None,
                 cert_poll_interval: float = 10.0, logger: logging.Logger | None = None) -> None:
        if not routes:
            raise ValueError("a webhook server needs at least one route")
        self.name = name
        self.kind = kind
        self.routes = dict(routes)
        self.path = next(iter(self.routes))
        self.inputs = inputs
        self.host = host
        self.log = logger or log
        self.on_cert_reload = on_cert_reload
        self.on_cert_error = on_cert_error
        self.reloader = CertificateReloader.for_dir(cert_dir, poll_interval=cert_poll_interval,
                                                    on_reload=self._cert_reloaded, on_error=self._cert_failed)
        self._wanted = Ports(port, health_port, metrics_port)
        self.ports = Ports(port, health_port, metrics_port)
        self._runners: list[web.AppRunner] = []
        self.serving = False

    # ---- certificate --------------------------------------------------------------------------

    def _cert_reloaded(self) -> None:
        if self.on_cert_reload is not None:
            self.on_cert_reload(self.reloader.pair)

    def _cert_failed(self, exc: CertificateError) -> None:
        if self.on_cert_error is not None:
            self.on_cert_error(exc)

    # ---- apps ------------------------------------------------------------------------------

    def _webhook_app(self) -> web.Application:
        return review_server.review_app(self.kind, self.routes, self.name)

    def _health_app(self) -> web.Application:
        async def healthz(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def readyz(_: web.Request) -> web.Response:
            if self.serving and self.reloader.loaded:
                return web.Response(text="ok")
            return web.Response(status=503, text="webhook not serving yet")

        app = web.Application()
        for path in ("/healthz", "/healthz/ping"):
            app.router.add_get(path, healthz)
        for path in ("/readyz", "/readyz/ping"):
            app.router.add_get(path, readyz)
        return app

    @staticmethod
    def _metrics_app() -> web.Application:
        async def metrics_handler(_: web.Request) -> web.Response:
            resp = web.Response(body=generate_latest(REGISTRY))
            resp.headers["Content-Type"] = CONTENT_TYPE_LATEST
            return resp

        app = web.Application()
        app.router.add_get("/metrics", metrics_handler)
        return app

    async def _listen(self, app: web.Application, port: int, ssl_context: Any = None) -> int:
        runner, bound = await review_server.listen(app, self.host, port, ssl_context)
        self._runners.append(runner)
        return bound

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the key pair (raises :class:`webhooks.certificates.CertificateError` if it is unusable,
        as the original fails start-up), start the inputs, then listen. Raises ``OSError`` when a port
        cannot be bound."""
        self.reloader.load()
        self.ports.health = await self._listen(self._health_app(), self._wanted.health)
        if self._wanted.metrics >= 0:
            self.ports.metrics = await self._listen(self._metrics_app(), self._wanted.metrics)
        if self.inputs is not None:
            await self.inputs.start()
        self.reloader.start()
        self.ports.webhook = await self._listen(self._webhook_app(), self._wanted.webhook, self.reloader.context)
        self.serving = True
        self.log.info("webhook serving host=%s port=%d health_port=%d metrics_port=%d path=%s", self.host,
                      self.ports.webhook, self.ports.health, self.ports.metrics, self.path)

    async def stop(self) -> None:
        """Stop listening (open requests finish), stop the certificate watch and the inputs."""
        self.serving = False
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners = []
        await self.reloader.stop()
        if self.inputs is not None:
            await self.inputs.stop()

    @property
    def url(self) -> str:
        """URL of the first route (``https://<host>:<port><path>``; a wildcard host becomes loopback)."""
        return review_server.url(self.host, self.ports.webhook, self.path)


class RunningWebhook(ThreadedListener):
    """A :class:`WebhookServer` running on its own event loop in a daemon thread (tests, ``reconcilery up``)."""

    def __init__(self, server: WebhookServer) -> None:
        super().__init__(server)
        self.server = server

    def start(self, timeout: float = 30.0) -> RunningWebhook:
        """Start and wait until listening. Raises the start-up error, or ``TimeoutError``."""
        super().start(timeout)
        return self

    @property
    def url(self) -> str:
        return self.server.url


def run(main: Listener, others: Callable[[], list[Listener]] = list, *, logger: logging.Logger | None = None,
        stopping: str = "stopping", started: Callable[[], None] | None = None) -> None:
    """Run ``main`` and the listeners ``others()`` builds until SIGTERM or SIGINT (blocking; must run in
    the main thread), then stop them in reverse order and log ``stopping`` to ``logger``. ``started`` is
    called once all listen.

    Raises what ``main.start()`` raises (its key pair cannot be loaded, its port cannot be bound); one of
    ``others`` that cannot bind its port is logged and skipped (:func:`webhooks.listeners.start_all`).
    """
    async def main_loop() -> None:
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, done.set)
        running = others()
        try:
            await main.start()
            running = await start_all(running)
            if started is not None:
                started()
            await done.wait()
            (logger or log).info(stopping)
        finally:
            for listener in reversed(running):
                await listener.stop()
            await main.stop()

    asyncio.run(main_loop())


def serve(server: WebhookServer, *, host: str, kubeconfig: str | None) -> None:
    """Run ``server`` and the extra listeners of the installed domains (:func:`webhooks.load` with
    ``host`` and ``kubeconfig``) until SIGTERM or SIGINT (:func:`run`).

    Raises :class:`webhooks.certificates.CertificateError` when ``server``'s key pair cannot be loaded at
    start, ``OSError`` when one of its ports cannot be bound (an extra listener's is logged and skipped).
    """
    # listeners of other domains served by this process (their own certificates)
    run(server, lambda: load(host=host, kubeconfig=kubeconfig), logger=server.log, stopping="webhook stopping")
