"""The running part every stand-in shares: an aiohttp application served on its own event loop thread,
started and stopped from synchronous code (tests, ``reconcilery up``, the benchmarks).

A stand-in subclasses :class:`StandInServer` and implements ``_handle`` (or its own
:meth:`~StandInServer.app`); its ``state``
lives outside the server, so :meth:`~StandInServer.stop` then :meth:`~StandInServer.start` brings it back
on the same port with the same state (like a restart that keeps its data)::

    class MyStandIn(StandInServer):
        thread_name = "my-standin"

        async def _handle(self, request: web.Request) -> web.StreamResponse: ...

    with MyStandIn(port=0) as server:   # port 0: any free port, fixed after the first start
        server.base_url                 # "http://127.0.0.1:PORT" ("https://" with ssl_context)
"""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
import threading
from typing import Self

from aiohttp import web

log = logging.getLogger("standins")

__all__ = ["StandInServer"]


class StandInServer:
    """An aiohttp server on its own event loop thread.

    Args:
        port: TCP port on ``host`` (0 = any free port, fixed after the first :meth:`start`).
        host: the address to bind.
        ssl_context: serve HTTPS with this context.
    """

    #: Name of the serving thread (the port is appended).
    thread_name = "standin"

    def __init__(self, port: int = 0, host: str = "127.0.0.1", ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    #: Largest request body accepted (bytes).
    client_max_size = 1024 * 1024

    def app(self) -> web.Application:
        """The aiohttp application to serve (a new one per :meth:`start`): by default every method and
        path goes to :meth:`_handle`."""
        app = web.Application(client_max_size=self.client_max_size)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request (stand-ins that keep the default :meth:`app` implement it)."""
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        """``http(s)://host:port``."""
        return f"{'https' if self.ssl_context else 'http'}://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The endpoint clients are configured with (default :attr:`base_url`)."""
        return self.base_url

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> Self:
        """Start serving (blocks until the port is bound); returns ``self``. Raises ``OSError``."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        errors: list[BaseException] = []
        loop = asyncio.new_event_loop()

        async def _serve() -> None:
            runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
            await runner.setup()
            site = web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context, reuse_address=True)
            await site.start()
            sockets = getattr(site._server, "sockets", None)
            if self.port == 0 and sockets:
                self.port = int(sockets[0].getsockname()[1])
            self._runner = runner

        def _run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(_serve())
            except BaseException as exc:  # handed to the starting thread
                errors.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        thread = threading.Thread(target=_run, name=f"{self.thread_name}-{self.port}", daemon=True)
        thread.start()
        ready.wait(10)
        if errors:
            thread.join(5)
            raise errors[0]
        self._loop, self._thread = loop, thread
        log.info("%s listening url=%s", self.thread_name, self.base_url)
        return self

    def stop(self) -> None:
        """Stop serving (connections are refused afterwards); the state is kept for a later :meth:`start`."""
        loop, thread, runner = self._loop, self._thread, self._runner
        if loop is None or thread is None:
            return
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._loop = self._thread = self._runner = None

    def serve_forever(self, banner: str) -> int:
        """Serve until SIGTERM or SIGINT (a stand-in run as a process): start, print ``banner`` (``{url}``
        replaced by :attr:`url`), stop.
        Returns the exit code 0."""
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        self.start()
        print(banner.replace("{url}", self.url), flush=True)
        stop.wait()
        self.stop()
        return 0

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
