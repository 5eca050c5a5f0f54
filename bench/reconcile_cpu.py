"""The reconcile function's own CPU, for ``bench/apirules.py``: what is left of a process's CPU is the
framework's (the watch, the queue, the dispatch, the executor; the same reconcile runs in both peers).

A process started with ``RECONCILERY_BENCH_RECONCILE_CPU=<path>`` sums the thread CPU time
(``time.thread_time``: user + system of the calling thread) of every call of
:func:`tasks.apigateway.controller.reconcile` and writes ``"<seconds> <calls>"`` to ``<path>`` every
0.2 s (replaced atomically). Imported as a Reconcilery domain module (``RECONCILERY_DOMAINS=
tasks.apigateway.controller,bench.reconcile_cpu``) it wraps the controller's reconcile before the
registry builds the controller; the kopf peer (:mod:`bench.kopf_apirules`) imports it the same way.
Without the variable nothing is wrapped and nothing is written.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

PATH_ENV = "RECONCILERY_BENCH_RECONCILE_CPU"
T = TypeVar("T")


class Meter:
    """Sums thread CPU seconds of timed calls and writes them to ``path`` every ``every`` seconds."""

    def __init__(self, path: str, every: float = 0.2) -> None:
        self.path = Path(path)
        self.every = every
        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._write_loop, name="bench-reconcile-cpu", daemon=True).start()

    def add(self, seconds: float) -> None:
        with self._lock:
            self.seconds += seconds
            self.calls += 1

    def _write_loop(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        while True:
            with self._lock:
                text = f"{self.seconds:.6f} {self.calls}"
            tmp.write_text(text)
            tmp.replace(self.path)
            time.sleep(self.every)


_meter: Meter | None = None


def meter() -> Meter | None:
    """This process's meter (``None`` without :data:`PATH_ENV`)."""
    global _meter
    if _meter is None and os.environ.get(PATH_ENV):
        _meter = Meter(os.environ[PATH_ENV])
    return _meter


def timed(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` with its thread CPU time added to the meter (``fn`` itself without one)."""
    m = meter()
    if m is None:
        return fn

    def call(*args: Any, **kwargs: Any) -> T:
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            m.add(time.thread_time() - t0)

    return call


def read(path: Path) -> tuple[float, int]:
    """``(seconds, calls)`` a meter wrote to ``path`` (zeros before the first write)."""
    try:
        seconds, calls = path.read_text().split()
        return float(seconds), int(calls)
    except (OSError, ValueError):
        return 0.0, 0


def _install() -> None:
    from tasks.apigateway import controller

    # the registered factory reads the module's ``reconcile`` when the registry first builds it
    controller.reconcile = timed(controller.reconcile)


if os.environ.get(PATH_ENV):
    _install()
