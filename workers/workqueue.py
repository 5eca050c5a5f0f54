"""The workqueue: controller-runtime's guarantees across processes, kept in Redis.

Per controller ``c`` the state is five Redis structures (hash-tagged so that they share a slot):

- ``rq:{c}:waiting``    ZSET key -> time it was enqueued; a key is in it at most once (dedupe);
- ``rq:{c}:low``        SET of waiting keys whose only message is a resync (low priority) one;
- ``rq:{c}:processing`` HASH key -> token (Celery task id) of the worker reconciling it;
- ``rq:{c}:leases``     ZSET key -> lease expiry; a running reconcile renews it, a dead one lets it lapse;
- ``rq:{c}:delayed``    ZSET key -> due time (``requeue_after`` and failure backoff; earliest wins);
- ``rq:{c}:failures``   HASH key -> consecutive failures (forgotten on success).

Every operation is one Lua script (``workers/lua/*.lua``), so it is atomic and one round trip; a
duplicate enqueue costs exactly one. Celery messages only carry ``(controller, key)``: when a script
says a key needs a message, :class:`WorkQueue` publishes one through the ``publish`` callable.
Times come from the Redis server clock, so worker clocks may differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import redis

from workers.controller import Controller, Key, Outcome, Registry, Result, registry
from workers.redis_client import redis_client
from workers.settings import PRIORITY_FRESH, PRIORITY_RESYNC

#: ``publish(controller, key, priority)``: sends the Celery message for one key.
Publish = Callable[[Controller, Key, int], None]

_SCRIPTS = ("add", "add_after", "start", "renew", "done", "pump")


def _load_script(name: str) -> str:
    return resources.files("workers").joinpath(f"lua/{name}.lua").read_text()


def _keys(controller: str, *names: str) -> list[str]:
    return [f"rq:{{{controller}}}:{n}" for n in names]


@dataclass(frozen=True)
class Start:
    """Answer of :meth:`WorkQueue.start`: ``status`` is ``ok`` (reconcile now), ``busy`` or ``stale``
    (drop the message); ``waited`` is seconds the key waited since it was enqueued."""

    status: Literal["ok", "busy", "stale"]
    waited: float


@dataclass(frozen=True)
class Finish:
    """Answer of :meth:`WorkQueue.done`: ``again`` (it was re-added while running, a message was
    published), ``lost`` (the lease was taken over; nothing recorded), failure count, delay in s."""

    again: bool
    lost: bool
    failures: int
    delay: float


@dataclass(frozen=True)
class QueueStatus:
    """One controller's queue: waiting keys (of which ``resync`` are waiting at low priority), keys in
    progress, delayed keys (requeue/backoff), failing keys (>= 1 consecutive failure)."""

    controller: str
    queue: str
    waiting: int
    resync: int
    in_progress: int
    delayed: int
    failing: int


class WorkQueue:
    """Redis workqueue of every registered controller.

    Args:
        client: a ``redis.Redis`` (``decode_responses`` is not required).
        publish: sends a Celery message; defaults to :func:`workers.app.publish`.
        controllers: where controller names are resolved (queue, backoff, sync delay).
    """

    def __init__(self, client: redis.Redis, publish: Publish | None = None,
                 controllers: Registry = registry) -> None:
        self.redis = client
        self._publish = publish
        self.controllers = controllers
        self._scripts = {n: client.register_script(_load_script(n)) for n in _SCRIPTS}

    @classmethod
    def from_url(cls, url: str, publish: Publish | None = None, controllers: Registry = registry) -> WorkQueue:
        """A workqueue on the Redis at ``url`` (``redis://host:port/db``, or Sentinels: see
        :mod:`workers.redis_client`)."""
        return cls(redis_client(url), publish, controllers)

    # -- publishing --------------------------------------------------------------------------------

    def publish(self, controller: Controller, key: Key, priority: int = PRIORITY_FRESH) -> None:
        if self._publish is None:
            from workers.app import publish  # late: the Celery app imports this module

            self._publish = publish
        self._publish(controller, key, priority)

    # -- producers ---------------------------------------------------------------------------------

    def add(self, controller: str, key: Key, *, resync: bool = False) -> bool:
        """Enqueue ``key`` for ``controller``. Returns True when it was not already waiting.

        A key already waiting is not enqueued twice; a key being reconciled runs again right after.
        Controllers with a ``sync_delay`` get the key after a random delay in that range instead.
        ``resync=True`` enqueues at low priority: fresh adds overtake it. Raises ``KeyError`` for an
        unknown controller.
        """
        ctrl = self.controllers.get(controller)
        if ctrl.sync_delay is not None and not resync:
            self.add_after(controller, key, random.uniform(*ctrl.sync_delay))
            return True
        keys = _keys(controller, "waiting", "processing", "low")
        if self._scripts["add"](keys=keys, args=[key.encode(), "1" if resync else "0"]):
            self.publish(ctrl, key, PRIORITY_RESYNC if resync else PRIORITY_FRESH)
            return True
        return False

    def add_many(self, controller: str, keys: Iterable[Key], *, resync: bool = False,
                 batch: int = 1000) -> int:
        """Enqueue many keys with pipelined scripts (``batch`` per round trip). Returns how many
        messages were published. Meant for resyncs; ``sync_delay`` is not applied."""
        ctrl = self.controllers.get(controller)
        rkeys = _keys(controller, "waiting", "processing", "low")
        script = self._scripts["add"]
        priority = PRIORITY_RESYNC if resync else PRIORITY_FRESH
        published = 0
        chunk: list[Key] = []

        def flush() -> int:
            pipe = self.redis.pipeline(transaction=False)
            for k in chunk:
                script(keys=rkeys, args=[k.encode(), "1" if resync else "0"], client=pipe)
            sent = 0
            for k, need in zip(chunk, pipe.execute(), strict=True):
                if need:
                    self.publish(ctrl, k, priority)
                    sent += 1
            chunk.clear()
            return sent

        for k in keys:
            chunk.append(k)
            if len(chunk) >= batch:
                published += flush()
        if chunk:
            published += flush()
        return published

    def add_after(self, controller: str, key: Key, seconds: float) -> float:
        """Enqueue ``key`` once ``seconds`` have passed; an earlier due time already set wins.
        Returns the due time in effect (Redis server clock, epoch seconds)."""
        self.controllers.get(controller)
        (delayed,) = _keys(controller, "delayed")
        return float(self._scripts["add_after"](keys=[delayed], args=[key.encode(), max(0.0, seconds)]))

    # -- consumers ---------------------------------------------------------------------------------

    def start(self, controller: str, key: Key, token: str, lease_seconds: float) -> Start:
        """Try to take ``key`` for reconciling under ``token``; see :class:`Start`."""
        keys = _keys(controller, "waiting", "processing", "leases", "low")
        status, waited = self._scripts["start"](keys=keys, args=[key.encode(), token, lease_seconds])
        text = status.decode() if isinstance(status, bytes) else str(status)
        if text not in ("ok", "busy", "stale"):
            raise RuntimeError(f"workqueue start script answered {text!r}")
        return Start(text, float(waited))  # type: ignore[arg-type]

    def renew(self, controller: str, key: Key, token: str, lease_seconds: float) -> bool:
        """Extend the lease; False when another worker took the key over."""
        keys = _keys(controller, "processing", "leases")
        return bool(self._scripts["renew"](keys=keys, args=[key.encode(), token, lease_seconds]))

    def done(self, controller: str, key: Key, token: str, result: Result) -> Finish:
        """Release ``key`` after a reconcile that ended with ``result``.

        Success forgets the failure count; ``requeue_after`` schedules the key (earliest due time
        wins); an error schedules it after the controller's backoff for its failure count; a terminal
        error forgets and does not retry. A key re-added meanwhile is published again at once.
        """
        ctrl = self.controllers.get(controller)
        jitter_factor = 1.0 - ctrl.backoff.jitter * random.random() if ctrl.backoff.jitter else 1.0
        keys = _keys(controller, "waiting", "processing", "leases", "delayed", "failures", "low")
        again, failures, delay = self._scripts["done"](keys=keys, args=[
            key.encode(), token, result.outcome.value, result.requeue_after or 0,
            ctrl.backoff.base, ctrl.backoff.cap, jitter_factor,
        ])
        if again == -1:
            return Finish(again=False, lost=True, failures=0, delay=0.0)
        if again:
            low = bool(self.redis.sismember(_keys(controller, "low")[0], key.encode()))
            self.publish(ctrl, key, PRIORITY_RESYNC if low else PRIORITY_FRESH)
        return Finish(again=bool(again), lost=False, failures=int(failures), delay=float(delay))

    def pump(self, controller: str, limit: int = 500, orphan_seconds: float = 300.0) -> tuple[int, float | None]:
        """Publish due delayed keys, keys of dead workers (lapsed lease) and orphaned waiting keys.

        Returns ``(published, seconds until the next due key or None)``. Safe to run in every worker:
        the script is atomic, so a key is moved once.
        """
        ctrl = self.controllers.get(controller)
        keys = _keys(controller, "waiting", "processing", "leases", "delayed", "low")
        out = self._scripts["pump"](keys=keys, args=[limit, orphan_seconds])
        next_due = float(out[-1])
        for raw in out[:-1]:
            self.publish(ctrl, Key.decode(raw.decode() if isinstance(raw, bytes) else raw))
        return len(out) - 1, (None if next_due < 0 else next_due)

    # -- inspection --------------------------------------------------------------------------------

    def status(self, controller: str) -> QueueStatus:
        """Counts of one controller's queue (one pipelined round trip)."""
        ctrl = self.controllers.get(controller)
        waiting, low, processing, delayed, failures = _keys(
            controller, "waiting", "low", "processing", "delayed", "failures")
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcard(waiting)
        pipe.scard(low)
        pipe.hlen(processing)
        pipe.zcard(delayed)
        pipe.hlen(failures)
        w, lo, p, d, f = pipe.execute()
        return QueueStatus(controller, ctrl.queue, w, lo, p, d, f)

    def next_due(self, controller: str) -> float | None:
        """Seconds until the earliest delayed key of ``controller`` is due (None: nothing delayed)."""
        first = self.redis.zrange(_keys(controller, "delayed")[0], 0, 0, withscores=True)
        if not first:
            return None
        secs, micros = self.redis.time()
        return float(first[0][1]) - (secs + micros / 1e6)

    def failures(self, controller: str, key: Key) -> int:
        """Consecutive failures of ``key`` (0 when it last succeeded)."""
        value: Any = self.redis.hget(_keys(controller, "failures")[0], key.encode())
        return int(value or 0)

    def due_in(self, controller: str, key: Key) -> float | None:
        """Seconds until ``key`` is due from the delayed set (negative when overdue), None if not delayed."""
        score = self.redis.zscore(_keys(controller, "delayed")[0], key.encode())
        if score is None:
            return None
        secs, micros = self.redis.time()
        return float(score) - (secs + micros / 1e6)


def outcome_of(result: Result | None) -> Result:
    """``None`` returned by a reconcile means done."""
    return Result.done() if result is None else result


__all__ = ["Finish", "Outcome", "Publish", "QueueStatus", "Start", "WorkQueue", "outcome_of"]
