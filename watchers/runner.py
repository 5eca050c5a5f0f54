"""Process entry point of ``reconcilery watch``: run the selected registrations until a signal."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from kube import Kube
from watchers.engine import Enqueue, EnqueueMany, WatchManager, WatchRegistration, select_registrations
from watchers.health import DEFAULT_MAX_SILENCE_S, HealthServer
from workers.controller import LOCAL_CLUSTER

log = logging.getLogger(__name__)


def run(controllers: Sequence[str] | None, registrations: Sequence[WatchRegistration], enqueue: Enqueue,
        health_port: int | None = None, *, cluster: str = LOCAL_CLUSTER, kube: Kube | None = None,
        stop: threading.Event | None = None, max_silence_s: float = DEFAULT_MAX_SILENCE_S,
        health_host: str = "0.0.0.0", enqueue_many: EnqueueMany | None = None,
        redis_check: Callable[[], bool] | None = None, redis_check_interval: float = 2.0) -> None:
    """Watch until SIGTERM/SIGINT (or ``stop`` is set), then close every watch and return.

    Args:
        controllers: run the registrations feeding these controllers (``None``: all).
        registrations: every known registration (the domains' ``REGISTRATIONS`` lists).
        enqueue: ``(controller, key)``, e.g. ``WorkQueue.from_url(url).add``.
        health_port: port of ``/readyz``, ``/livez``, ``/metrics`` (``None``: no server).
        cluster, kube: the cluster watched (default the local one).
        stop: an event that ends the run (tests, embedding); signals set it too when called from
            the main thread.
        enqueue_many: ``[(controller, key), ...]``, e.g. ``WorkQueue.add_batch`` (batches).
        redis_check: returns True when Redis restarted or lost its data since the last call
            (``workers.epoch.RedisEpoch.check``); every cached object is then enqueued again.

    Raises ``ValueError`` when no registration feeds ``controllers``.
    """
    selected = select_registrations(registrations, controllers)
    if not selected:
        raise ValueError(f"no watch registration feeds controllers {sorted(controllers or [])}")
    stop = stop or threading.Event()
    manager = WatchManager(selected, enqueue, cluster=cluster, kube=kube, enqueue_many=enqueue_many)
    health = HealthServer(manager, health_port, health_host, max_silence_s) if health_port is not None else None
    previous: dict[signal.Signals, object] = {}

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("watch stopping signal=%d", signum)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, _on_signal)
    try:
        if health is not None:
            health.start()
        manager.start()
        log.info("watching registrations=%s cluster=%s", ",".join(r.name for r in selected), cluster)
        if redis_check is None:
            stop.wait()
        while not stop.wait(redis_check_interval):
            _check_redis(manager, redis_check)
    finally:
        manager.stop()
        if health is not None:
            health.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _check_redis(manager: WatchManager, redis_check: Callable[[], bool] | None) -> None:
    """Enqueue every cached object again when Redis restarted or lost its data."""
    if redis_check is None:
        return
    try:
        lost = redis_check()
    except Exception as exc:  # Redis away: the enqueues retry on their own; check again later
        log.warning("Redis check failed: %s", exc)
        return
    if lost:
        log.warning("Redis restarted or lost its data: enqueueing every cached object again")
        log.info("re-enqueued keys=%d", manager.resync_all())
