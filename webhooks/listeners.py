"""The registry of extra webhook listeners and a runner that serves one from a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from workers import domains
from workers.controller import import_installed

log = logging.getLogger("reconcilery.webhooks")


class Listener(Protocol):
    """What the webhook process runs: ``start()`` binds and serves, ``stop()`` ends (idempotent)."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


#: ``factory(host=..., kubeconfig=...)``: the webhook process's listen address and kubeconfig.
Factory = Callable[..., "Listener | None"]
_factories: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> Factory:
    """Register ``factory`` (returns a listener, or ``None`` when its settings disable it)."""
    _factories[name] = factory
    return factory


def factories() -> dict[str, Factory]:
    """The registered factories by name."""
    return dict(_factories)


def load(modules: tuple[str, ...] | None = None, **options: Any) -> list[Listener]:
    """Import ``modules`` (default: every installed domain's webhook modules, :mod:`workers.domains`)
    and build every registered listener with ``options`` (``host``, ``kubeconfig``); disabled ones
    are left out."""
    import_installed(domains.webhook_modules() if modules is None else modules)
    built = [factory(**options) for factory in _factories.values()]
    return [listener for listener in built if listener is not None]


async def start_all(listeners: list[Listener]) -> list[Listener]:
    """Start each listener; one that cannot (a port in use) is logged and left out, so the process
    keeps serving the others. Returns the started ones."""
    started: list[Listener] = []
    for listener in listeners:
        try:
            await listener.start()
        except OSError as exc:
            log.error("webhook listener not started name=%s error=%s", listener.name, exc)
            await listener.stop()
            continue
        started.append(listener)
    return started


class ThreadedListener:
    """A :class:`Listener` on its own event loop in a daemon thread (tests, ``reconcilery up``)."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=f"webhook-{listener.name}", daemon=True)
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._done: asyncio.Event | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            self._done = asyncio.Event()
            try:
                await self.listener.start()
            except BaseException as exc:
                self._error = exc
                self._started.set()
                await self.listener.stop()
                return
            self._started.set()
            await self._done.wait()
            await self.listener.stop()

        try:
            self._loop.run_until_complete(main())
        finally:
            self._loop.close()

    def start(self, timeout: float = 30.0) -> ThreadedListener:
        """Start and wait until listening. Raises the start-up error, or ``TimeoutError``."""
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError(f"webhook listener {self.listener.name} did not start")
        if self._error is not None:
            self._thread.join(5)
            raise self._error
        return self

    def call(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Run ``fn`` (sync) on the listener's loop thread and return its result."""
        async def wrapped() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop).result(timeout)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the listener and join the thread (idempotent)."""
        if self._thread.is_alive() and self._done is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._done.set)
        self._thread.join(timeout)
