"""The workqueue: controller-runtime's guarantees across processes, kept in Redis.

Every operation is one Lua script (``workers/lua/*.lua``; ``lib.lua`` documents the key layout and
the invariant every script keeps), so it is atomic and one round trip, and many keys go in one call
(a burst of adds or the watch engine's initial list is one round trip per batch).

Workers do not get one Celery message per key. A worker process's dispatcher
(:mod:`workers.dispatch`) *takes* ready keys straight from the queue's Redis lists with
``fetch.lua``, which hands each key out with a fresh fencing token and a lease in the same atomic
step. There is therefore no message that could be lost between marking a key waiting and
publishing it, no redelivered message that could run a key twice, and priorities are exact (fresh
changes before the resync backlog). The argument is in the README ("The workqueue").

Times come from the Redis server clock (``TIME``), so worker clocks need not agree.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import redis

from workers import metrics
from workers.controller import Controller, Key, Registry, Result, ResultKind, registry
from workers.redis_client import redis_client
from workers.settings import load

_SCRIPTS = ("add", "add_after", "fetch", "renew", "done", "epoch")
#: Items per script call in batched operations (one round trip each).
BATCH = 1000


def _load_script(name: str) -> str:
    lua = resources.files("workers").joinpath("lua")
    return lua.joinpath("lib.lua").read_text() + "\n" + lua.joinpath(f"{name}.lua").read_text()


def controller_key(controller: str, part: str) -> str:
    """Redis key of one of a controller's structures (``waiting``, ``processing``, ...)."""
    return f"rq:ctl:{controller}:{part}"


def queue_key(queue: str, part: str) -> str:
    """Redis key of one of a queue's structures (``ready``, ``ready-resync``, ``wake``, ...)."""
    return f"rq:{queue}:{part}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Taken:
    """A key handed to this process by :meth:`WorkQueue.fetch`.

    Attributes:
        controller: the controller's name.
        key: the key.
        token: the fencing token (decimal string, strictly increasing across the whole Redis).
        waited: seconds the key waited since it was enqueued.
        failures: consecutive failures so far (the backoff of a failure now uses ``failures + 1``).
        suspect: its last run lapsed (it may be what took its worker down): the caller runs no other
            suspect beside it (``suspects`` of :meth:`WorkQueue.fetch`).
    """

    controller: str
    key: Key
    token: str
    waited: float
    failures: int
    suspect: bool = False


@dataclass(frozen=True)
class Parked:
    """A key parked by :meth:`WorkQueue.fetch`: its lease lapsed ``lapses`` times in a row (its
    reconcile took its worker down each time). It is not retried until a fresh add."""

    controller: str
    key: Key
    lapses: int


@dataclass(frozen=True)
class Fetch:
    """Answer of :meth:`WorkQueue.fetch`: keys taken, seconds until the next delayed key, lease
    expiry or end of a quiet period (None: nothing scheduled), leases recovered, ready entries
    rebuilt by the audit, the data set's epoch, seconds left of a quiet period (0: none; keys
    are held back for one lease after Redis restarted or lost data, see ``lib.lua``), and the keys
    this fetch parked, and ``held``: suspect keys (their last run lapsed) were left for a caller that
    runs no suspect, so the caller should wait for its own suspect to end rather than for a wake-up."""

    taken: list[Taken]
    next_due: float | None
    recovered: int
    repaired: int
    epoch: str = ""
    quiet: float = 0.0
    parked: list[Parked] = field(default_factory=list)
    held: bool = False


@dataclass(frozen=True)
class Finish:
    """Answer of :meth:`WorkQueue.done`: ``again`` (it was re-added while running and is queued
    again), ``lost`` (the token no longer held the key; nothing recorded), failure count, delay in s."""

    again: bool
    lost: bool
    failures: int
    delay: float


@dataclass(frozen=True)
class QueueStatus:
    """One controller's queue: waiting keys (of which ``resync`` are waiting at low priority), keys in
    progress, delayed keys (requeue/backoff), failing keys (>= 1 consecutive failure), parked keys
    (their reconcile took its worker down ``max_lapses`` times in a row)."""

    controller: str
    queue: str
    waiting: int
    resync: int
    in_progress: int
    delayed: int
    failing: int
    parked: int = 0


class WorkQueue:
    """Redis workqueue of every registered controller.

    Args:
        client: a ``redis.Redis`` (``decode_responses`` is not required).
        controllers: where controller names are resolved (queue, backoff, sync delay).
    """

    def __init__(self, client: redis.Redis, controllers: Registry = registry) -> None:
        self.redis = client
        self.controllers = controllers
        self._scripts = {n: client.register_script(_load_script(n)) for n in _SCRIPTS}

    @classmethod
    def from_url(cls, url: str, controllers: Registry = registry) -> WorkQueue:
        """A workqueue on the Redis at ``url`` (see :func:`workers.redis_client.redis_client`)."""
        return cls(redis_client(url), controllers)

    # -- producers ---------------------------------------------------------------------------------

    def add(self, controller: str, key: Key, *, resync: bool = False) -> bool:
        """Enqueue ``key`` for ``controller``. Returns True when it was not already waiting (or was
        waiting only at resync priority and this add is fresh).

        A key already waiting is not enqueued twice; a key being reconciled runs again right after.
        Controllers with a ``sync_delay`` get the key after a random delay in that range instead.
        ``resync=True`` enqueues at low priority: fresh adds overtake it. Raises ``KeyError`` for an
        unknown controller.
        """
        return self.add_batch([(controller, key)], resync=resync) == 1

    def add_many(self, controller: str, keys: Iterable[Key], *, resync: bool = False) -> int:
        """Enqueue many keys of one controller; returns how many were not already waiting."""
        return self.add_batch(((controller, k) for k in keys), resync=resync)

    def add_batch(self, items: Iterable[tuple[str, Key]], *, resync: bool = False) -> int:
        """Enqueue ``(controller, key)`` pairs of any controllers, :data:`BATCH` per round trip.

        Returns how many keys were newly waiting (a key with a ``sync_delay`` counts as new: it is
        scheduled). Raises ``KeyError`` for an unknown controller (nothing of the batch is sent).
        """
        flag = "1" if resync else "0"
        delayed: list[tuple[str, Key, float]] = []
        groups: list[tuple[str, str, list[str]]] = []  # runs of one controller, in order
        size = 0
        count = 0
        for name, key in items:
            ctrl = self.controllers.get(name)
            if ctrl.sync_delay is not None and not resync:
                delayed.append((name, key, random.uniform(*ctrl.sync_delay)))
                continue
            if not groups or groups[-1][0] != name:
                groups.append((name, ctrl.queue, []))
            groups[-1][2].append(key.encode())
            size += 1
            if size >= BATCH:
                count += self._add(groups, flag)
                groups, size = [], 0
        if groups:
            count += self._add(groups, flag)
        if delayed:
            self.add_after_batch(delayed)
            count += len(delayed)
        return count

    def _add(self, groups: list[tuple[str, str, list[str]]], resync: str) -> int:
        args: list[str | int] = [len(groups)]
        for name, queue, keys in groups:
            args += (name, queue, resync, len(keys), *keys)
        flags = self._scripts["add"](args=args)
        total, pos = 0, 0
        for name, _, keys in groups:
            added = sum(int(f) for f in flags[pos:pos + len(keys)])
            pos += len(keys)
            if added:
                metrics.ADDS.labels(name).inc(added)
                total += added
        return total

    def add_after(self, controller: str, key: Key, seconds: float) -> float:
        """Enqueue ``key`` once ``seconds`` have passed; an earlier due time already set wins.
        Returns the due time in effect (Redis server clock, epoch seconds)."""
        return self.add_after_batch([(controller, key, seconds)])[0]

    def add_after_batch(self, items: Sequence[tuple[str, Key, float]]) -> list[float]:
        """:meth:`add_after` for many ``(controller, key, seconds)``; due times in effect, in order."""
        out: list[float] = []
        for start in range(0, len(items), BATCH):
            args: list[Any] = []
            for name, key, seconds in items[start:start + BATCH]:
                args += (name, self.controllers.get(name).queue, key.encode(), max(0.0, float(seconds)))
            out += [float(d) for d in self._scripts["add_after"](args=[len(args) // 4, *args])]
        return out

    # -- consumers ---------------------------------------------------------------------------------

    def queues_of(self, queues: Sequence[str]) -> list[tuple[str, list[str]]]:
        """``(queue, controllers registered here for it)`` for each of ``queues``."""
        return [(q, [c.name for c in self.controllers if c.queue == q]) for q in queues]

    def fetch(self, queues: Sequence[str], limit: int, lease_seconds: float, *, audit: bool = False,
              known_epoch: str = "", max_lapses: int = 3, suspects: int = 0) -> Fetch:
        """Promote due keys, recover lapsed leases, (``audit``) repair the ready lists, and take up
        to ``limit`` keys of ``queues`` (fresh before resync, round robin in the order given).

        Each :class:`Taken` key is held under a new fencing token with a lease of ``lease_seconds``
        until :meth:`done`; renew it with :meth:`renew` or it is recovered once the lease lapses.
        A recovered key counts as a failure of its reconcile (it took its worker down, or the
        worker lost Redis): it is retried after its controller's backoff, and after ``max_lapses``
        lapses in a row (0: never) it is parked (:attr:`Fetch.parked`) until a fresh :meth:`add`.
        Until its next run ends it is a suspect (:attr:`Taken.suspect`): it is taken only by a caller
        that runs no suspect (``suspects``: suspects the caller runs now), one per fetch, so two
        suspects never share a process and a key that merely shared the dying worker with a poison key
        lapses once, never ``max_lapses`` times (:attr:`Fetch.held`).
        ``known_epoch``: the epoch of the last fetch; a Redis that lost its data under the caller
        (or restarted) holds back takes for one lease (:attr:`Fetch.quiet`).
        """
        layout = self.queues_of(queues)
        args: list[Any] = [lease_seconds, max(0, limit), "1" if audit else "0", known_epoch, uuid.uuid4().hex,
                           max(0, max_lapses), random.random(), max(0, suspects), len(layout)]
        args += [q for q, _ in layout]
        for _, names in layout:
            args.append(len(names))
            for name in names:
                b = self.controllers.get(name).backoff
                args += [name, b.base, b.cap, b.jitter]
        raw = self._scripts["fetch"](args=args)
        next_due = float(_text(raw[0]))
        n = int(raw[6])
        parked = [Parked(_text(raw[i]), Key.decode(_text(raw[i + 1])), int(raw[i + 2]))
                  for i in range(7, 7 + 3 * n, 3)]
        taken = [
            Taken(_text(raw[i]), Key.decode(_text(raw[i + 1])), _text(raw[i + 2]), float(_text(raw[i + 3])),
                  int(_text(raw[i + 4])), _text(raw[i + 5]) == "1")
            for i in range(7 + 3 * n, len(raw), 6)
        ]
        return Fetch(taken, None if next_due < 0 else next_due, int(raw[1]), int(raw[2]), _text(raw[3]),
                     float(_text(raw[4])), parked, _text(raw[5]) == "1")

    def check_epoch(self, known_epoch: str, quiet_seconds: float) -> tuple[str, str]:
        """``(epoch, run_id)`` of the Redis now; notices a restart or a loss of data under a caller
        that knew ``known_epoch`` and then holds back takes for ``quiet_seconds`` (see ``lib.lua``)."""
        epoch, run_id = self._scripts["epoch"](args=[quiet_seconds, known_epoch, uuid.uuid4().hex])
        return _text(epoch), _text(run_id)

    def wait(self, queues: Sequence[str], timeout: float) -> bool:
        """Block until a wake-up token arrives on one of ``queues`` or ``timeout`` seconds pass
        (one ``BLPOP``); True when woken."""
        if timeout <= 0:
            return True
        keys = [queue_key(q, "wake") for q in queues]
        return self.redis.blpop(keys, timeout=max(0.01, timeout)) is not None

    def renew(self, held: Sequence[tuple[str, Key, str]], lease_seconds: float) -> list[bool]:
        """Extend the leases of ``(controller, key, token)`` in one round trip; False where the
        token no longer holds the key (it was recovered after its lease lapsed)."""
        if not held:
            return []
        args: list[Any] = [lease_seconds, len(held)]
        for name, key, token in held:
            args += (name, key.encode(), token)
        return [bool(int(f)) for f in self._scripts["renew"](args=args)]

    def done(self, taken: Taken, result: Result) -> Finish:
        """Release a taken key after a reconcile that ended with ``result``.

        Success forgets the failure count; ``requeue_after`` schedules the key (earliest due time
        wins); an error schedules it after ``Backoff.delay(failures + 1)``; a terminal error forgets
        and does not retry. A key re-added meanwhile is queued again at once. A token that lost the
        key (lease lapsed and recovered) records nothing: ``Finish.lost``.
        """
        ctrl = self.controllers.get(taken.controller)
        backoff = ctrl.backoff.delay(taken.failures + 1) if result.outcome is ResultKind.ERROR else 0.0
        again, failures, delay = self._scripts["done"](args=[
            taken.controller, ctrl.queue, taken.key.encode(), taken.token, result.outcome.value,
            result.requeue_after or 0, backoff,
        ])
        if int(again) == -1:
            return Finish(again=False, lost=True, failures=0, delay=0.0)
        return Finish(again=bool(int(again)), lost=False, failures=int(failures), delay=float(_text(delay)))

    # -- inspection --------------------------------------------------------------------------------

    def status(self, controller: str) -> QueueStatus:
        """Counts of one controller's queue (one pipelined round trip)."""
        ctrl = self.controllers.get(controller)
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcard(controller_key(controller, "waiting"))
        pipe.scard(controller_key(controller, "resync"))
        pipe.hlen(controller_key(controller, "processing"))
        pipe.zcard(controller_key(controller, "delayed"))
        pipe.hlen(controller_key(controller, "failures"))
        pipe.zcard(controller_key(controller, "parked"))
        w, lo, p, d, f, pk = pipe.execute()
        return QueueStatus(controller, ctrl.queue, w, lo, p, d, f, pk)

    def parked(self, controller: str, limit: int = 100) -> list[tuple[Key, float]]:
        """Up to ``limit`` parked keys of ``controller``, oldest first, with when they were parked
        (Redis server clock, epoch seconds)."""
        rows: Any = self.redis.zrange(controller_key(controller, "parked"), 0, max(0, limit) - 1,
                                      withscores=True)
        return [(Key.decode(_text(k)), float(t)) for k, t in rows]

    def ready_depth(self, queue: str) -> tuple[int, int]:
        """Entries on ``queue``'s fresh and resync ready lists (what KEDA scales on)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.llen(queue_key(queue, "ready"))
        pipe.llen(queue_key(queue, "ready-resync"))
        fresh, resync = pipe.execute()
        return int(fresh), int(resync)

    def holder(self, controller: str, key: Key) -> str | None:
        """The fencing token holding ``key`` now, or None."""
        value = self.redis.hget(controller_key(controller, "processing"), key.encode())
        return None if value is None else _text(value)

    def next_due(self, controller: str) -> float | None:
        """Seconds until the earliest delayed key of ``controller`` is due (None: nothing delayed)."""
        first = self.redis.zrange(controller_key(controller, "delayed"), 0, 0, withscores=True)
        if not first:
            return None
        secs, micros = self.redis.time()
        return float(first[0][1]) - (secs + micros / 1e6)

    def failures(self, controller: str, key: Key) -> int:
        """Consecutive failures of ``key`` (0 when it last succeeded)."""
        value: Any = self.redis.hget(controller_key(controller, "failures"), key.encode())
        return int(value or 0)

    def due_in(self, controller: str, key: Key) -> float | None:
        """Seconds until ``key`` is due from the delayed set (negative when overdue), None if not delayed."""
        score = self.redis.zscore(controller_key(controller, "delayed"), key.encode())
        if score is None:
            return None
        secs, micros = self.redis.time()
        return float(score) - (secs + micros / 1e6)


def outcome_of(result: Result | None) -> Result:
    """``None`` returned by a reconcile means done."""
    return Result.done() if result is None else result


# ---- the process's workqueue -------------------------------------------------------------------

_current_lock = threading.Lock()
_provider: Callable[[], WorkQueue] | None = None
_by_url: dict[str, WorkQueue] = {}


def provide(factory: Callable[[], WorkQueue] | None) -> None:
    """Make ``factory`` the source of :func:`current` (the Celery app installs its own; ``None``
    restores the default)."""
    global _provider
    with _current_lock:
        _provider = factory


def current() -> WorkQueue:
    """This process's :class:`WorkQueue`: the one the Celery app of this process uses when it runs one
    (:mod:`workers.app` provides it), else one on ``RECONCILERY_REDIS_URL`` (one client per URL, created
    on first use).

    This is how domain code enqueues (a webhook's caBundle sync, the SKR sweep, a runtime-watcher
    notification) without importing the Celery app. Raises ``ValueError`` for a bad setting."""
    provider = _provider
    if provider is not None:
        return provider()
    url = load().redis_url
    with _current_lock:
        found = _by_url.get(url)
        if found is None:
            found = _by_url[url] = WorkQueue(redis_client(url))
        return found


__all__ = [
    "BATCH",
    "Controller",
    "Fetch",
    "Finish",
    "Parked",
    "QueueStatus",
    "ResultKind",
    "Taken",
    "WorkQueue",
    "controller_key",
    "current",
    "outcome_of",
    "provide",
    "queue_key",
]
