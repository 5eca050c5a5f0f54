"""The Celery worker's reconcile step: hosts a :class:`~workers.dispatch.Dispatcher` in every worker.

A consumer bootstep, so every ``celery worker`` of the app (``reconcilery worker``, and
``celery.contrib.testing.worker.start_worker`` in tests) takes keys of the queues it consumes
(``-Q``) and runs ``-c`` reconciles at once, beside Celery's own consumer (which runs the resync
tasks beat sends). Reconciles are reported as Celery task events when events are on, so Flower
shows them as ``reconcile[<controller>]`` tasks with the key as arguments (:mod:`workers.flower`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from celery import bootsteps

from workers import epoch as redis_epoch
from workers.controller import registry
from workers.dispatch import Dispatcher, Heartbeat
from workers.settings import EngineSettings
from workers.workqueue import WorkQueue

log = structlog.get_logger("reconcilery.worker")


class _CeleryEvents:
    """Sends task events through a dispatcher of its own (the consumer's buffers task events for its
    event loop, which our threads must not touch). Thread-safe: the dispatcher publishes under a lock."""

    def __init__(self, app: Any, hostname: str) -> None:
        self._connection = app.connection_for_write()
        self._dispatcher = app.events.Dispatcher(self._connection, hostname=hostname, enabled=True,
                                                 buffer_while_offline=False)

    def send(self, type: str, **fields: Any) -> None:
        try:
            self._dispatcher.send(type, **fields)
        except Exception as exc:  # events are best effort
            log.debug("task event not sent", type=type, error=repr(exc))

    def close(self) -> None:
        self._dispatcher.close()
        self._connection.release()


def resync_after_loss(wq: WorkQueue, queues: list[str]) -> Callable[[str, str], None]:
    """The dispatcher's ``on_epoch_change``: after Redis lost its data, re-enqueue every key of the
    controllers of ``queues`` that list their own keys (one process per controller and loss does it;
    watchers re-enqueue the watched kinds themselves)."""

    def resync(_old: str, new: str) -> None:
        for ctrl in registry:
            if ctrl.queue not in queues or ctrl.list_keys is None:
                continue
            try:
                if redis_epoch.claim(wq.redis, new, f"resync:{ctrl.name}"):
                    added = wq.add_many(ctrl.name, ctrl.list_keys(), resync=True)
                    log.warning("re-enqueued keys after a Redis loss", controller=ctrl.name, added=added)
            except Exception as exc:  # the periodic resync will catch up
                log.warning("re-enqueue after a Redis loss failed", controller=ctrl.name, error=str(exc))

    return resync


class ReconcileStep(bootsteps.StartStopStep):
    """Starts the dispatcher once the consumer knows its queues; stops it at worker shutdown
    (waiting for running reconciles so their results are recorded)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)
    label = "Reconciles"

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.dispatcher: Dispatcher | None = None

    def start(self, parent: Any) -> None:
        if self.dispatcher is not None:  # a broker reconnect restarts consumer steps: keep running
            return
        settings: EngineSettings = parent.app.reconcilery_settings
        queues = sorted(parent.app.amqp.queues.consume_from)
        concurrency = int(getattr(parent.controller, "concurrency", None) or 1)
        wq: WorkQueue = parent.app.reconcilery_workqueue()
        self.dispatcher = Dispatcher(
            wq, queues, concurrency, lease_seconds=settings.lease_seconds,
            default_timeout=settings.reconcile_timeout, idle_wait=settings.idle_wait,
            hung_grace=settings.hung_grace, heartbeat=Heartbeat(settings.heartbeat_file),
            max_lapses=settings.max_lapses,
            events=_CeleryEvents(parent.app, parent.hostname) if parent.app.conf.worker_send_task_events else None,
        )
        self.dispatcher.on_epoch_change = resync_after_loss(wq, queues)
        self.dispatcher.start()
        log.info("reconciling", queues=",".join(queues), concurrency=concurrency,
                 controllers=",".join(c.name for c in registry if c.queue in queues))

    def stop(self, parent: Any) -> None:
        pass

    def shutdown(self, parent: Any) -> None:
        if self.dispatcher is not None:
            self.dispatcher.stop(timeout=parent.app.reconcilery_settings.reconcile_timeout)
            if isinstance(self.dispatcher.events, _CeleryEvents):
                self.dispatcher.events.close()
            self.dispatcher = None
