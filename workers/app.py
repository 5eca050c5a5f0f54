"""The Celery app: settings, queues and routes, the one generic reconcile task, resync, the pump.

Reliability settings (see ``shared/spec/test-infrastructure.md`` §2): late acknowledgement, reject on
worker loss, prefetch 1, JSON only, time limits below the visibility timeout, and kombu's unacked
restore every second, so a reconcile whose worker was SIGKILLed is delivered again within seconds.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Any

import structlog
from celery import Celery, signals
from celery.schedules import schedule
from kombu import Queue

from workers import metrics
from workers.controller import Controller, Key, registry
from workers.dispatch import LeaseKeeper, run_reconcile
from workers.logs import configure_logging
from workers.redis_client import celery_broker_settings, redbeat_settings
from workers.settings import PRIORITY_FRESH, QUEUES, Settings, load
from workers.workqueue import WorkQueue

RECONCILE_TASK = "reconcilery.reconcile"
RESYNC_TASK = "reconcilery.resync"

log = structlog.get_logger("reconcilery.worker")


def load_domains(modules: tuple[str, ...] | None = None) -> list[str]:
    """Import the modules that register controllers (default: the ``domains`` setting); returns
    those found (a domain not yet installed is skipped, an import error inside a domain is raised)."""
    loaded = []
    if modules is None:
        modules = settings_of().domain_modules
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
            continue
        loaded.append(name)
    return loaded


def route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any) -> dict[str, str] | None:
    """Celery router: the reconcile and resync tasks go to the queue of the controller they name."""
    if name in (RECONCILE_TASK, RESYNC_TASK) and args:
        return {"queue": registry.get(args[0]).queue}
    return None


def configure(app: Celery, settings: Settings) -> None:
    """Apply ``settings`` to ``app`` (also used by tests that point the app at their own Redis)."""
    app.conf.update(
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_time_limit=settings.task_time_limit,
        task_soft_time_limit=settings.task_soft_time_limit,
        **celery_broker_settings(settings.redis_url, {
            "visibility_timeout": settings.visibility_timeout,
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
            "priority_steps": [0, 9],
            "queue_order_strategy": "round_robin",
        }),
        broker_connection_retry_on_startup=True,
        task_queues=[Queue(q, routing_key=q) for q in QUEUES],
        task_default_queue=QUEUES[0],
        task_routes=(route,),
        task_create_missing_queues=False,
        worker_send_task_events=settings.task_events,
        task_send_sent_event=False,
        worker_hijack_root_logger=False,
        **redbeat_settings(settings.redis_url),
        redbeat_lock_timeout=settings.redbeat_lock_timeout,
        beat_scheduler="redbeat.RedBeatScheduler",
        beat_max_loop_interval=5,
    )
    app.reconcilery_settings = settings


app = Celery("reconcilery")
configure(app, load())


def settings_of(celery_app: Celery = app) -> Settings:
    return celery_app.reconcilery_settings


def publish(controller: Controller, key: Key, priority: int = PRIORITY_FRESH) -> None:
    """Send the Celery message for one key to the controller's queue."""
    app.send_task(RECONCILE_TASK, args=[controller.name, key.encode()], queue=controller.queue,
                  priority=priority)
    metrics.ADDS.labels(controller.name).inc()


_state: dict[str, Any] = {}
_state_lock = threading.Lock()


def workqueue() -> WorkQueue:
    """This process's :class:`WorkQueue` on the app's Redis (created on first use)."""
    with _state_lock:
        if "wq" not in _state:
            _state["wq"] = WorkQueue.from_url(app.conf.broker_url)
        return _state["wq"]


def lease_keeper() -> LeaseKeeper:
    """This process's :class:`LeaseKeeper`, renewing leases on :func:`workqueue`."""
    wq = workqueue()
    with _state_lock:
        if "leases" not in _state:
            s = settings_of()
            _state["leases"] = LeaseKeeper(wq, s.lease_seconds, s.task_time_limit)
        return _state["leases"]


@app.task(name=RECONCILE_TASK, bind=True, acks_late=True, ignore_result=True)
def reconcile(self: Any, controller: str, key: str) -> str:
    """Reconcile one key of one controller (every controller shares this task)."""
    return run_reconcile(workqueue(), lease_keeper(), controller, Key.decode(key), self.request.id)


@app.task(name=RESYNC_TASK, ignore_result=True)
def resync(controller: str) -> int:
    """Enqueue every key of ``controller`` at resync priority; fresh changes overtake them."""
    ctrl = registry.get(controller)
    if ctrl.list_keys is None:
        return 0
    published = workqueue().add_many(controller, ctrl.list_keys(), resync=True)
    log.info("resync enqueued", controller=controller, published=published)
    return published


def beat_schedule() -> dict[str, dict[str, Any]]:
    """One RedBeat entry per controller with a resync interval."""
    return {
        f"resync-{c.name}": {"task": RESYNC_TASK, "schedule": schedule(c.resync_interval), "args": [c.name],
                             "options": {"queue": c.queue}}
        for c in registry if c.resync_interval
    }


class Pump:
    """Moves due keys (requeue_after, backoff, lapsed leases, orphans) into Celery, in a thread.

    Every worker process runs one; the scripts are atomic, so several pumps never publish a key twice.
    """

    def __init__(self, wq: WorkQueue, interval: float, orphan_seconds: float) -> None:
        self.wq = wq
        self.interval = interval
        self.orphan_seconds = orphan_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workqueue-pump", daemon=True)

    def start(self) -> Pump:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def tick(self) -> float:
        """One pass over every controller; returns seconds to sleep."""
        sleep = self.interval
        for ctrl in registry:
            _, due = self.wq.pump(ctrl.name, orphan_seconds=self.orphan_seconds)
            if due is not None:
                sleep = min(sleep, max(0.005, due))
            metrics.DEPTH.labels(ctrl.name).set(self.wq.status(ctrl.name).waiting)
        return sleep

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                sleep = self.tick()
            except Exception:
                log.exception("pump failed")
                sleep = 1.0
            self._stop.wait(sleep)


@signals.worker_init.connect
def _load_domains_in_worker(**_: Any) -> None:
    load_domains()


@signals.after_setup_logger.connect
def _structured_logs(**_: Any) -> None:
    configure_logging(logging.getLogger().level or logging.INFO)


#: Redis set of the pids of worker processes that are ready (for tests and ``queue status``).
WORKERS_READY = "reconcilery:workers-ready"


@signals.worker_ready.connect
def _start_pump(**_: Any) -> None:
    s = settings_of()
    workqueue().redis.sadd(WORKERS_READY, str(os.getpid()))
    if s.metrics_port:
        from prometheus_client import start_http_server

        start_http_server(s.metrics_port, addr="0.0.0.0")
    _state["pump"] = Pump(workqueue(), s.pump_interval, s.orphan_seconds).start()


@signals.worker_shutdown.connect
def _stop_pump(**_: Any) -> None:
    workqueue().redis.srem(WORKERS_READY, str(os.getpid()))
    pump = _state.pop("pump", None)
    if pump is not None:
        pump.stop()
