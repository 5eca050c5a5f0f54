"""The Celery app: settings, queues and routes, the reconcile step, resync, beat.

Reconciles do not travel as Celery messages: every worker hosts :class:`workers.consumer.ReconcileStep`,
which takes keys from the Redis workqueue directly (see :mod:`workers.workqueue` for why). Celery runs
the worker processes, the resync tasks beat sends (``reconcilery.resync``, idempotent: it only
enqueues keys), remote control, and the task events Flower shows (reconciles included).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import structlog
from celery import Celery, signals
from celery.schedules import schedule
from kombu import Queue

from workers import domains, flower, metrics
from workers import workqueue as workqueues
from workers.consumer import ReconcileStep
from workers.controller import import_installed, registry
from workers.logs import configure_logging
from workers.redis_client import celery_broker_settings, redbeat_settings
from workers.settings import EngineSettings, current
from workers.sharded import open_workqueue
from workers.workqueue import WorkQueue

RECONCILE_TASK = "reconcilery.reconcile"
RESYNC_TASK = "reconcilery.resync"
#: The queue when no domain is installed (Celery's own default): the app still configures and starts.
NO_DOMAIN_QUEUE = "celery"

log = structlog.get_logger("reconcilery.worker")


def load_domains(modules: tuple[str, ...] | None = None) -> list[str]:
    """Import the modules that register controllers (default: the ``domains`` setting, else every
    installed domain's, :mod:`workers.domains`); returns those found (a module not installed is
    skipped, an import error inside a domain is raised)."""
    if modules is None:
        modules = settings_of().domain_modules or domains.controller_modules()
    return [module.__name__ for module in import_installed(modules)]


def route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any) -> dict[str, str] | None:
    """Celery router: a resync task goes to the queue of the controller it names."""
    if name == RESYNC_TASK and args:
        return {"queue": registry.get(args[0]).queue}
    return None


class ReconcileryCelery(Celery):
    """The Celery app whose configuration comes from :mod:`workers.settings`, read on first use of
    ``conf`` (not at import: see :mod:`config`)."""

    _settings: EngineSettings | None = None

    @property
    def reconcilery_settings(self) -> EngineSettings:
        """The settings :func:`configure` applied, else this process's (:func:`workers.settings.current`)."""
        return self._settings if self._settings is not None else current()

    @reconcilery_settings.setter
    def reconcilery_settings(self, settings: EngineSettings) -> None:
        self._settings = settings


def celery_conf(settings: EngineSettings) -> dict[str, Any]:
    """The Celery configuration of ``settings``: the queues are the installed domains' (:func:`workers.domains.queues`,
    the first one the default), or Celery's own default queue when no domain is installed."""
    queues = domains.queues() or (NO_DOMAIN_QUEUE,)
    return dict(
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
            # only resync tasks are Celery messages now: an idle worker need not sweep every second
            "unacked_restore_interval": 10,
        }),
        broker_connection_retry_on_startup=True,
        # one queue per installed domain's pool (a plug-in domain brings its own), so each pool scales on its own
        task_queues=[Queue(q, routing_key=q) for q in queues],
        task_default_queue=queues[0],
        task_routes=(route,),
        task_create_missing_queues=False,
        worker_send_task_events=settings.task_events,
        task_send_sent_event=False,
        worker_hijack_root_logger=False,
        **redbeat_settings(settings.redis_url),
        redbeat_lock_timeout=settings.redbeat_lock_timeout,
        beat_scheduler="workers.beat:Scheduler",
        beat_max_loop_interval=5,
    )


def configure(app: Celery, settings: EngineSettings) -> None:
    """Apply ``settings`` to ``app`` (also used by tests that point the app at their own Redis)."""
    app.conf.update(celery_conf(settings))
    app.reconcilery_settings = settings


app = ReconcileryCelery("reconcilery")
app.add_defaults(lambda: celery_conf(current()))  # read when ``conf`` is first used, not at import
app.steps["consumer"].add(ReconcileStep)


def settings_of(celery_app: Celery = app) -> EngineSettings:
    return celery_app.reconcilery_settings


_state: dict[str, Any] = {}
_state_lock = threading.Lock()


def workqueue() -> WorkQueue:
    """This process's :class:`WorkQueue` on the app's Redis (created on first use)."""
    with _state_lock:
        if "wq" not in _state:
            _state["wq"] = open_workqueue(app.conf.broker_url, settings_of().redis_shard_urls)
        return _state["wq"]


app.reconcilery_workqueue = workqueue
workqueues.provide(workqueue)  # domain code reaches it as workers.workqueue.current()


@app.task(name=RESYNC_TASK, ignore_result=True)
def resync(controller: str) -> int:
    """Enqueue every key of ``controller`` at resync priority; fresh changes overtake them."""
    ctrl = registry.get(controller)
    if ctrl.list_keys is None:
        return 0
    added = workqueue().add_many(controller, ctrl.list_keys(), resync=True)
    log.info("resync enqueued", controller=controller, added=added)
    return added


def beat_schedule() -> dict[str, dict[str, Any]]:
    """One RedBeat entry per controller with a resync interval."""
    return {
        f"resync-{c.name}": {"task": RESYNC_TASK, "schedule": schedule(c.resync_interval), "args": [c.name],
                             "options": {"queue": c.queue, "shadow": flower.resync_name(c.name)}}
        for c in registry if c.resync_interval
    }


@signals.worker_init.connect
def _load_domains_in_worker(**_: Any) -> None:
    load_domains()


@signals.after_setup_logger.connect
def _structured_logs(**_: Any) -> None:
    configure_logging(logging.getLogger().level or logging.INFO)


#: Redis set of the pids of worker processes that are ready (for tests and ``up``).
WORKERS_READY = "reconcilery:workers-ready"


def serve_metrics(settings: EngineSettings) -> int | None:
    """Serve this process's Prometheus metrics on ``settings.metrics_bind_address:metrics_port`` (a
    daemon thread); returns the port, or ``None`` when ``metrics_port`` is 0 (off). Raises ``OSError``
    when the port is taken."""
    if not settings.metrics_port:
        return None
    from prometheus_client import start_http_server

    start_http_server(settings.metrics_port, addr=settings.metrics_bind_address)
    return settings.metrics_port


@signals.worker_ready.connect
def _ready(**_: Any) -> None:
    # the main process: the dispatcher's reconciles run here whatever the pool (prefork's children only
    # run resync tasks), so its registry is the worker's
    try:
        if serve_metrics(settings_of()) is not None:
            threading.Thread(target=_depth_gauges, name="depth-gauges", daemon=True).start()
    except OSError as exc:  # a taken port costs the metrics, never the reconciles
        log.error("metrics not served", port=settings_of().metrics_port, error=str(exc))
    workqueue().redis.sadd(WORKERS_READY, str(os.getpid()))


@signals.worker_shutdown.connect
def _not_ready(**_: Any) -> None:
    try:
        workqueue().redis.srem(WORKERS_READY, str(os.getpid()))
    except Exception as exc:  # Redis gone at shutdown: nothing to clean
        log.debug("could not unregister worker", error=str(exc))


def _depth_gauges(interval: float = 10.0) -> None:
    """Refresh ``workqueue_depth`` and the parked keys gauge (only where metrics are served: it costs
    one round trip)."""
    stop = threading.Event()
    while True:  # at once, then every interval: the first scrape already sees every controller's depth
        try:
            for ctrl in registry:
                status = workqueue().status(ctrl.name)
                metrics.DEPTH.labels(ctrl.name).set(status.waiting)
                metrics.PARKED.labels(ctrl.name).set(status.parked)
        except Exception as exc:
            log.debug("depth gauges not refreshed", error=str(exc))
        if stop.wait(interval):
            return
