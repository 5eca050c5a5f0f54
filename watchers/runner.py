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
from watchers.leader import LeaderElectionConfig, LeaderElector
from workers.controller import LOCAL_CLUSTER

log = logging.getLogger(__name__)


class LeadershipLost(RuntimeError):
    """The watcher lost its Lease; the process should exit so that it is restarted as a candidate."""


class _LeaderAware:
    """The health view of a leader-elected watcher: a standby is ready and alive while it campaigns;
    the leader is as ready and alive as its watches."""

    def __init__(self, manager: WatchManager, elector: LeaderElector) -> None:
        self.manager = manager
        self.elector = elector

    def ready(self) -> bool:
        return not self.elector.leading.is_set() or self.manager.ready()

    def alive(self, max_silence_s: float) -> bool:
        return not self.elector.leading.is_set() or self.manager.alive(max_silence_s)

    def status(self) -> list[dict[str, object]]:
        leading = self.elector.leading.is_set()
        head: list[dict[str, object]] = [{"leader": leading, "identity": self.elector.identity}]
        return head + (self.manager.status() if leading else [])


def run(controllers: Sequence[str] | None, registrations: Sequence[WatchRegistration], enqueue: Enqueue,
        health_port: int | None = None, *, cluster: str = LOCAL_CLUSTER, kube: Kube | None = None,
        stop: threading.Event | None = None, max_silence_s: float = DEFAULT_MAX_SILENCE_S,
        health_host: str = "0.0.0.0", enqueue_many: EnqueueMany | None = None,
        redis_check: Callable[[], bool] | None = None, redis_check_interval: float = 2.0,
        leader_election: LeaderElectionConfig | None = None) -> None:
    """Watch until SIGTERM/SIGINT (or ``stop`` is set), then close every watch and return.

    Args:
        controllers: run the registrations feeding these controllers (``None``: all).
        registrations: every known registration (the domains' ``registrations()``).
        enqueue: ``(controller, key)``, e.g. ``WorkQueue.from_url(url).add``.
        health_port: port of ``/readyz``, ``/livez``, ``/metrics`` (``None``: no server).
        cluster, kube: the cluster watched (default the local one).
        stop: an event that ends the run (tests, embedding); signals set it too when called from
            the main thread.
        enqueue_many: ``[(controller, key), ...]``, e.g. ``WorkQueue.add_batch`` (batches).
        redis_check: returns True when Redis restarted or lost its data since the last call
            (``workers.epoch.RedisEpoch.check``); every cached object is then enqueued again.

        leader_election: run the watches only while holding this Lease (:mod:`watchers.leader`);
            a standby waits, serving its health endpoints.

    Raises ``ValueError`` when no registration feeds ``controllers``, :class:`LeadershipLost` when
    the Lease was lost (the watches are stopped first).
    """
    selected = select_registrations(registrations, controllers)
    if not selected:
        raise ValueError(f"no watch registration feeds controllers {sorted(controllers or [])}")
    stop = stop or threading.Event()
    manager = WatchManager(selected, enqueue, cluster=cluster, kube=kube, enqueue_many=enqueue_many)

    def start_watching() -> None:
        manager.start()
        log.info("watching registrations=%s cluster=%s", ",".join(r.name for r in selected), cluster)

    elector = LeaderElector(manager.kube, leader_election, start_watching, manager.stop) if leader_election else None
    view = _LeaderAware(manager, elector) if elector is not None else manager
    health = HealthServer(view, health_port, health_host, max_silence_s) if health_port is not None else None  # type: ignore[arg-type]
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
        if elector is not None:
            # the Redis check runs on the leader's renew ticks (retry period, 2 s)
            if not elector.run(stop, while_leading=lambda: _check_redis(manager, redis_check)):
                cfg = elector.config
                raise LeadershipLost(f"lost the lease {cfg.namespace}/{cfg.name} as {elector.identity}")
            return
        start_watching()
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
