"""Running one reconcile under the workqueue's rules: take the key, keep its lease, record the result.

This is the body of the single Celery task that serves every controller (``workers.app``); it is
kept free of Celery so that it can be read and tested on its own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import structlog

from workers import metrics
from workers.controller import Key, Outcome, Result, TerminalError
from workers.workqueue import WorkQueue, outcome_of

log = structlog.get_logger("reconcilery.worker")


@dataclass
class _Held:
    controller: str
    key: Key
    token: str
    deadline: float  # monotonic; the lease is not renewed after it (a stuck reconcile lets go)


class LeaseKeeper:
    """One thread per process that renews the leases of the reconciles running in it.

    Renews every ``lease_seconds / 3``; stops renewing a key after ``max_seconds`` so that a
    reconcile stuck in I/O cannot hold its key forever (the pump then hands the key to another worker).
    """

    def __init__(self, wq: WorkQueue, lease_seconds: float, max_seconds: float) -> None:
        self.wq = wq
        self.lease_seconds = lease_seconds
        self.max_seconds = max_seconds
        self._held: dict[int, _Held] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def hold(self, controller: str, key: Key, token: str) -> int:
        with self._lock:
            self._next += 1
            self._held[self._next] = _Held(controller, key, token, time.monotonic() + self.max_seconds)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()
            return self._next

    def release(self, handle: int) -> None:
        with self._lock:
            self._held.pop(handle, None)

    def _run(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            now = time.monotonic()
            with self._lock:
                held = [h for h in self._held.values() if h.deadline > now]
            for h in held:
                try:
                    self.wq.renew(h.controller, h.key, h.token, self.lease_seconds)
                except Exception:
                    log.warning("lease renewal failed", controller=h.controller, key=str(h.key))


def run_reconcile(wq: WorkQueue, leases: LeaseKeeper, controller: str, key: Key, token: str) -> str:
    """Reconcile ``key`` of ``controller`` if the workqueue hands it to us; returns what happened.

    Returns one of ``stale`` / ``busy`` (message dropped), ``lost`` (lease taken over meanwhile) or the
    :class:`Outcome` value. Exceptions of the reconcile are errors (backoff); :class:`TerminalError` is
    a terminal error. Never raises for a reconcile failure: the workqueue owns the retry, not Celery.
    """
    ctrl = wq.controllers.get(controller)
    started = wq.start(controller, key, token, leases.lease_seconds)
    if started.status != "ok":
        metrics.DROPPED.labels(controller, started.status).inc()
        return started.status
    metrics.QUEUE_DURATION.labels(controller).observe(started.waited)
    handle = leases.hold(controller, key, token)
    t0 = time.perf_counter()
    try:
        result = outcome_of(ctrl.reconcile(key))
    except TerminalError as exc:
        result = Result.terminal(str(exc))
    except Exception as exc:
        log.exception("reconcile raised", controller=controller, cluster=key.cluster, key=key.ref)
        result = Result.error(f"{type(exc).__name__}: {exc}")
    finally:
        leases.release(handle)
    elapsed = time.perf_counter() - t0
    finish = wq.done(controller, key, token, result)
    metrics.RECONCILE_TIME.labels(controller).observe(elapsed)
    if finish.lost:
        metrics.LEASES_LOST.labels(controller).inc()
        log.warning("key was taken over before the reconcile ended", controller=controller, key=str(key))
        return "lost"
    metrics.RECONCILE_TOTAL.labels(controller, result.outcome.value).inc()
    if result.outcome in (Outcome.ERROR, Outcome.TERMINAL):
        metrics.RECONCILE_ERRORS.labels(controller).inc()
    if result.outcome is Outcome.ERROR:
        metrics.RETRIES.labels(controller).inc()
        log.warning("reconcile failed", controller=controller, cluster=key.cluster, key=key.ref,
                    attempt=finish.failures, retry_in=round(finish.delay, 3), error=result.message)
    elif result.outcome is Outcome.TERMINAL:
        log.error("reconcile failed, not retried", controller=controller, cluster=key.cluster, key=key.ref,
                  error=result.message)
    else:
        log.debug("reconciled", controller=controller, cluster=key.cluster, key=key.ref,
                  seconds=round(elapsed, 4), requeue_after=result.requeue_after)
    return result.outcome.value
