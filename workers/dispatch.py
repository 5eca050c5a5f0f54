"""Running reconciles in a worker process: take keys, hold their leases, fence them, record results.

Three parts, kept free of Celery so that they can be read and tested on their own (the Celery
worker hosts them through :mod:`workers.consumer`):

- :class:`Dispatcher`: one thread per process that takes ready keys from Redis (``fetch.lua``) as
  reconcile slots free up, and blocks on the queues' wake-up lists (``BLPOP``) when there is nothing
  to take: an idle process makes about one Redis command per second.
- :class:`LeaseKeeper`: one thread per process that renews the leases of every running reconcile in
  one round trip every ``lease / 3`` seconds, for as long as the reconcile really runs. A renewal
  that fails tells the reconcile's :class:`fencing.Fence` (``lost``), so the ``kube`` layer refuses
  its next write; a renewal that cannot reach Redis lets the fence lapse locally *before* the lease
  can lapse in Redis.
- :func:`run_reconcile`: one reconcile under its fence, with the result recorded by ``done.lua``.

The guarantee (README, "The workqueue"): at any moment at most one reconcile of a key holds a valid
lease, and only a reconcile holding one writes through ``kube``. Its one assumption: the clocks of
the worker and of Redis run at rates that differ by less than ``LEASE_MARGIN`` of a lease.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import redis
import structlog

import fencing
from kube.toolkit.metrics import Children
from workers import flower, metrics
from workers.controller import Result, ResultKind, TerminalError
from workers.workqueue import Finish, Taken, WorkQueue, outcome_of

log = structlog.get_logger("reconcilery.worker")

#: Share of the lease a holder gives up locally: a lease renewed at local time t is trusted until
#: ``t + lease * (1 - LEASE_MARGIN)``, while Redis keeps it until at least ``t + lease``.
LEASE_MARGIN = 0.25


class TaskEvents(Protocol):
    """Where reconciles are reported as Celery task events (Flower's task view)."""

    def send(self, type: str, **fields: Any) -> None: ...


class Heartbeat:
    """Touches ``path`` (at most every ``every`` seconds) while the process is healthy: its Redis
    connection works and no reconcile is stuck. ``reconcilery probe worker`` reads its age."""

    def __init__(self, path: str | None, every: float = 5.0) -> None:
        self.path = Path(path) if path else None
        self.every = every
        self._last = 0.0
        self.stuck = False

    def beat(self) -> None:
        if self.path is None or self.stuck:
            return
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        try:
            self.path.touch()
        except OSError as exc:
            log.warning("heartbeat not written", path=str(self.path), error=str(exc))


@dataclass
class _Held:
    taken: Taken
    fence: fencing.Fence
    started: float = field(default_factory=time.monotonic)
    overdue_logged: bool = False


class LeaseKeeper:
    """Renews the leases of the reconciles running in this process (one thread, one round trip per
    round). ``hung_grace``: seconds past its deadline after which a reconcile that still runs counts
    as stuck (logged, counted, and the heartbeat stops so that a liveness probe restarts the process;
    its lease is still renewed: the key is never handed to another worker while the thread lives).
    """

    def __init__(self, wq: WorkQueue, lease_seconds: float, hung_grace: float = 120.0,
                 heartbeat: Heartbeat | None = None) -> None:
        self.wq = wq
        self.lease_seconds = lease_seconds
        self.hung_grace = hung_grace
        self.heartbeat = heartbeat
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def valid_until(self, sent: float) -> float:
        """Until when a lease granted or renewed by a request sent at monotonic ``sent`` is trusted."""
        return sent + self.lease_seconds * (1.0 - LEASE_MARGIN)

    def hold(self, taken: Taken, fence: fencing.Fence) -> None:
        with self._lock:
            self._held[(taken.controller, taken.token)] = _Held(taken, fence)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()

    def release(self, taken: Taken) -> None:
        with self._lock:
            self._held.pop((taken.controller, taken.token), None)

    def held(self) -> list[_Held]:
        with self._lock:
            return list(self._held.values())

    def stop(self) -> None:
        self._stop.set()

    def renew_once(self) -> None:
        """One renewal round (the thread calls it every ``lease / 3`` seconds)."""
        held = self.held()
        now = time.monotonic()
        stuck = 0
        for h in held:
            if now > h.fence.deadline + self.hung_grace:
                stuck += 1
                if not h.overdue_logged:
                    h.overdue_logged = True
                    log.error("reconcile stuck past its deadline", controller=h.taken.controller,
                              key=str(h.taken.key), seconds=round(now - h.started, 1))
        metrics.STUCK.set(stuck)
        if self.heartbeat is not None:
            self.heartbeat.stuck = stuck > 0
        if not held:
            return
        sent = time.monotonic()
        try:
            flags = self.wq.renew([(h.taken.controller, h.taken.key, h.taken.token) for h in held],
                                  self.lease_seconds)
        except redis.RedisError as exc:  # the fences lapse locally before Redis could hand the keys on
            log.warning("lease renewal failed", keys=len(held), error=str(exc))
            return
        for h, ok in zip(held, flags, strict=True):
            if ok:
                h.fence.extend(self.valid_until(sent))
            else:
                h.fence.mark_lost("the key was recovered by another worker after the lease lapsed")
        if self.heartbeat is not None:
            self.heartbeat.beat()

    def _run(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                self.renew_once()
            except Exception:  # the keeper must not die
                log.exception("lease keeper failed")


# labelled once per controller: a ``labels()`` lookup costs a lock and a validation, three per reconcile
_queue_duration = Children(metrics.QUEUE_DURATION)
_reconcile_time = Children(metrics.RECONCILE_TIME)
_reconcile_total = Children(metrics.RECONCILE_TOTAL)


def run_reconcile(wq: WorkQueue, taken: Taken, fence: fencing.Fence, events: TaskEvents | None = None) -> str:
    """Reconcile one taken key under ``fence`` and record the result; returns what happened.

    Returns ``lost`` (the key was recovered meanwhile: nothing recorded) or the :class:`ResultKind`
    value. Exceptions of the reconcile are errors (backoff); :class:`TerminalError` is a terminal
    error; :class:`fencing.DeadlineExceeded` (raised by ``kube`` past the deadline) is an error with
    backoff. Never raises for a reconcile failure: the workqueue owns the retry, not Celery.
    """
    ctrl = wq.controllers.get(taken.controller)
    key = taken.key
    uuid = f"rq-{taken.token}"
    _queue_duration(ctrl.name).observe(taken.waited)
    if events is not None:
        events.send("task-received", uuid=uuid, name=flower.reconcile_name(ctrl.name),
                    args=flower.key_repr(key), kwargs="{}", retries=taken.failures,
                    eta=None, expires=None, root_id=uuid, parent_id=None)
        events.send("task-started", uuid=uuid)
    t0 = time.perf_counter()
    try:
        with fencing.fenced(fence):
            result = outcome_of(ctrl.reconcile(key))
    except TerminalError as exc:
        result = Result.terminal(str(exc))
    except fencing.DeadlineExceeded:
        result = Result.error(f"reconcile deadline exceeded ({time.perf_counter() - t0:.1f} s)")
    except fencing.LeaseLost as exc:
        result = Result.error(str(exc))
    except Exception as exc:
        log.exception("reconcile raised", controller=ctrl.name, cluster=key.cluster, key=key.ref,
                      attempt=taken.failures + 1)
        result = Result.error(f"{type(exc).__name__}: {exc}")
    elapsed = time.perf_counter() - t0
    _reconcile_time(ctrl.name).observe(elapsed)
    finish = _done(wq, taken, result)
    if finish is None or finish.lost:
        metrics.LEASES_LOST.labels(ctrl.name).inc()
        log.warning("key was recovered by another worker before the reconcile ended; result dropped",
                    controller=ctrl.name, cluster=key.cluster, key=key.ref, token=taken.token,
                    outcome=result.outcome.value)
        if events is not None:
            events.send("task-failed", uuid=uuid, exception="LeaseLost", traceback="")
        return "lost"
    _reconcile_total(ctrl.name, result.outcome.value).inc()
    if result.outcome in (ResultKind.ERROR, ResultKind.TERMINAL):
        metrics.RECONCILE_ERRORS.labels(ctrl.name).inc()
    if result.outcome is ResultKind.ERROR:
        metrics.RETRIES.labels(ctrl.name).inc()
        log.warning("reconcile failed", controller=ctrl.name, cluster=key.cluster, key=key.ref,
                    attempt=finish.failures, retry_in=round(finish.delay, 3), error=result.message)
    elif result.outcome is ResultKind.TERMINAL:
        log.error("reconcile failed, not retried", controller=ctrl.name, cluster=key.cluster, key=key.ref,
                  error=result.message)
    else:
        log.debug("reconciled", controller=ctrl.name, cluster=key.cluster, key=key.ref,
                  seconds=round(elapsed, 4), requeue_after=result.requeue_after)
    if events is not None:
        if result.outcome in (ResultKind.ERROR, ResultKind.TERMINAL):
            events.send("task-failed", uuid=uuid, exception=result.message, traceback="")
        else:
            events.send("task-succeeded", uuid=uuid, result=repr(result.outcome.value), runtime=elapsed)
    return result.outcome.value


def _done(wq: WorkQueue, taken: Taken, result: Result, attempts: int = 8) -> Finish | None:
    """``wq.done`` retried through a Redis outage (a few seconds); None when Redis stayed away (the
    lease then lapses and the key is recovered, so nothing is lost)."""
    delay = 0.1
    for attempt in range(attempts):
        try:
            return wq.done(taken, result)
        except redis.RedisError as exc:
            if attempt == attempts - 1:
                log.error("could not record a reconcile's result", key=str(taken.key), error=str(exc))
                return None
            time.sleep(delay)
            delay = min(2.0, delay * 2)
    return None


class Dispatcher:
    """Takes keys of ``queues`` from Redis and runs their reconciles on ``concurrency`` threads.

    Args:
        wq: the workqueue.
        queues: Celery queue names this process serves (it must run every controller of each).
        concurrency: reconciles at once.
        lease_seconds: lease of a taken key; renewed every third of it while the reconcile runs.
        default_timeout: deadline of a reconcile whose controller sets no ``timeout`` (seconds).
        idle_wait: longest block on the wake-up lists (seconds); bounds how late a lapsed lease or a
            repaired entry is noticed when nothing else happens.
        audit_interval: seconds between audits of the ready lists (repairs lost entries).
        hung_grace, heartbeat: see :class:`LeaseKeeper`.
        events: Celery task events sink (``None``: no events).
        max_lapses: lease lapses in a row after which a key is parked (0: never; see
            :meth:`WorkQueue.fetch`).
    """

    def __init__(self, wq: WorkQueue, queues: Sequence[str], concurrency: int, *, lease_seconds: float,
                 default_timeout: float, idle_wait: float = 2.0, audit_interval: float = 2.0,
                 hung_grace: float = 120.0, heartbeat: Heartbeat | None = None,
                 events: TaskEvents | None = None, max_lapses: int = 3) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.wq = wq
        self.queues = list(queues)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.default_timeout = default_timeout
        self.idle_wait = idle_wait
        self.audit_interval = audit_interval
        self.heartbeat = heartbeat or Heartbeat(None)
        self.leases = LeaseKeeper(wq, lease_seconds, hung_grace, self.heartbeat)
        self.events = events
        self.max_lapses = max_lapses
        self._cond = threading.Condition()
        self._running = 0
        self._suspects = 0  # running keys whose last run lapsed: at most one (see WorkQueue.fetch)
        self._stopping = threading.Event()
        self._executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="reconcile")
        self._thread = threading.Thread(target=self._loop, name="dispatcher", daemon=True)
        self.epoch = ""
        #: Called with ``(old, new)`` when Redis lost its data set (its epoch changed) under us.
        self.on_epoch_change: Callable[[str, str], None] | None = None

    def start(self) -> Dispatcher:
        self._thread.start()
        return self

    @property
    def running(self) -> int:
        """Reconciles running now."""
        return self._running

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking keys and wait up to ``timeout`` seconds for running reconciles to end (their
        results are recorded); reconciles still running after it keep their threads, and their leases
        lapse when the process exits."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        self._thread.join(timeout=self.idle_wait + 1)
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._running and time.monotonic() < deadline:
                self._cond.wait(0.1)
        self.leases.stop()
        self._executor.shutdown(wait=False)

    def _loop(self) -> None:
        order = list(self.queues)
        last_audit = 0.0
        backoff = 0.2
        while not self._stopping.is_set():
            with self._cond:
                while self._running >= self.concurrency and not self._stopping.is_set():
                    self._cond.wait(self.idle_wait)
                free = self.concurrency - self._running
                suspects = self._suspects
            if self._stopping.is_set():
                break
            audit = time.monotonic() - last_audit >= self.audit_interval
            sent = time.monotonic()
            try:
                got = self.wq.fetch(order, free, self.lease_seconds, audit=audit, known_epoch=self.epoch,
                                    max_lapses=self.max_lapses, suspects=suspects)
            except redis.RedisError as exc:
                log.warning("fetch failed", queues=",".join(self.queues), error=str(exc), retry_in=backoff)
                self._stopping.wait(backoff)
                backoff = min(5.0, backoff * 2)
                continue
            backoff = 0.2
            if audit:
                last_audit = sent
            if got.recovered:
                metrics.RECOVERED.inc(got.recovered)
                log.warning("recovered keys whose lease lapsed; each counts as a failure", count=got.recovered)
            for p in got.parked:
                metrics.PARKED_TOTAL.labels(p.controller).inc()
                metrics.PARKED.labels(p.controller).inc()
                log.error("key parked: its reconcile took its worker down repeatedly; a fresh enqueue "
                          "un-parks it", controller=p.controller, cluster=p.key.cluster, key=p.key.ref,
                          lapses=p.lapses)
            if got.repaired:
                metrics.REPAIRED.inc(got.repaired)
                log.warning("queued waiting keys that had lost their ready entry", count=got.repaired)
            self.heartbeat.beat()
            if got.epoch != self.epoch:
                old, self.epoch = self.epoch, got.epoch
                if old:
                    metrics.REDIS_RESTARTS.inc()
                    log.warning("Redis lost its data: keys are held back for one lease", quiet=got.quiet)
                    if self.on_epoch_change is not None:
                        self.on_epoch_change(old, got.epoch)
            order = order[1:] + order[:1]
            for taken in got.taken:
                self._submit(taken, sent)
            if got.held and len(got.taken) < free:
                # the rest is suspects left for a process that runs none: a wake-up token would only
                # bring them back here, so wait for a reconcile of ours to end (or idle_wait)
                with self._cond:
                    if self._suspects and not self._stopping.is_set():
                        self._cond.wait(self.idle_wait)
                continue
            if len(got.taken) < free:
                wait = self.idle_wait if got.next_due is None else max(0.0, min(self.idle_wait, got.next_due))
                try:
                    self.wq.wait(self.queues, wait)
                except redis.RedisError as exc:
                    log.warning("wait failed", error=str(exc))
                    self._stopping.wait(backoff)

    def _submit(self, taken: Taken, sent: float) -> None:
        ctrl = self.wq.controllers.get(taken.controller)
        timeout = ctrl.timeout if ctrl.timeout is not None else self.default_timeout
        fence = fencing.Fence(token=taken.token, deadline=sent + timeout, valid_until=self.leases.valid_until(sent))
        with self._cond:
            self._running += 1
            self._suspects += taken.suspect
        self.leases.hold(taken, fence)
        self._executor.submit(self._run_one, taken, fence)

    def _run_one(self, taken: Taken, fence: fencing.Fence) -> None:
        try:
            run_reconcile(self.wq, taken, fence, self.events)
        except Exception:  # recorded by run_reconcile; a bug here must not leak the slot
            log.exception("dispatch failed", controller=taken.controller, key=str(taken.key))
        finally:
            self.leases.release(taken)
            with self._cond:
                self._running -= 1
                self._suspects -= taken.suspect
                self._cond.notify()

