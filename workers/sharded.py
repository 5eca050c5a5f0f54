"""The workqueue over N independent Redis servers: each key on the shard ``crc32(key) mod N``.

Opt-in (``RECONCILERY_REDIS_SHARD_URLS``; empty: one :class:`~workers.workqueue.WorkQueue` on
``RECONCILERY_REDIS_URL``, as before). Each shard is a whole workqueue with the same Lua scripts, its
own fencing counter, epoch and quiet period, so every guarantee that holds per key on one Redis holds
here: a key always lives on one shard, and that shard's scripts keep it exclusive, deduplicated and
fenced (its tokens come from one counter). What is spread is the load: producers send each key to its
shard (one ``add.lua`` call per shard and batch), and a dispatcher consumes from every shard (one
``fetch.lua`` call per shard per fetch, the free threads handed to the shards in turn, starting with a
different shard each time). A shard that restarts or loses its data holds back only its own keys for
one lease; the other shards go on.

Not covered (docs/engine.md, "Horizontal scale"): the SKR rotation (``tasks/cloud/sweep.py``), the
Celery broker, RedBeat and the watchers' restart guard (:mod:`workers.epoch`) stay on the first URL
(``RECONCILERY_REDIS_URL``); changing the number of shards moves keys between shards, so it needs the
queues drained first (no resharding); priorities (fresh before resync) hold per shard, not across shards.
"""

from __future__ import annotations

import contextlib
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

import redis

from workers.controller import Key, Registry, Result, registry
from workers.redis_client import redis_client
from workers.workqueue import Fetch, Finish, QueueStatus, Taken, WorkQueue, queue_key

__all__ = ["ShardedWorkQueue", "open_workqueue", "shard_of", "shard_urls"]

#: A shard is fetched from at least this often (seconds) even while the shards asked before it fill every
#: fetch's limit: its delayed keys are promoted and its lapsed leases recovered that late at worst.
IDLE_FETCH = 1.0
#: Separates the shards' epochs (and run ids) in the one epoch string a dispatcher keeps.
_SEP = "|"


def shard_of(key: Key, shards: int) -> int:
    """The shard of ``key`` among ``shards``: ``crc32(key.encode()) mod shards`` (stable across processes
    and Python versions, unlike ``hash``). Every controller's copy of one object shares its shard."""
    return zlib.crc32(key.encode().encode()) % shards


def shard_urls(setting: str) -> list[str]:
    """The URLs of ``RECONCILERY_REDIS_SHARD_URLS`` (comma-separated; blanks ignored)."""
    return [u.strip() for u in setting.split(",") if u.strip()]


class ShardedWorkQueue(WorkQueue):
    """A :class:`~workers.workqueue.WorkQueue` whose keys are spread over ``clients`` (one per shard).

    Same methods and answers as the one-Redis workqueue; :attr:`redis` is the first shard's client (the
    epoch claims of :mod:`workers.consumer` use it). The epoch a :meth:`fetch` answers is the shards'
    epochs joined by ``|``: it changes when any shard restarts or loses its data.

    Raises ``ValueError`` without a client.
    """

    def __init__(self, clients: Sequence[redis.Redis], controllers: Registry = registry) -> None:
        if not clients:
            raise ValueError("a sharded workqueue needs at least one Redis")
        super().__init__(clients[0], controllers)
        self.shards = [WorkQueue(c, controllers) for c in clients]
        self._start = 0
        self._waiters = [ThreadPoolExecutor(1, thread_name_prefix=f"wake-{i}") for i in range(len(self.shards))]
        self._pending: list[Future[Any] | None] = [None] * len(self.shards)
        self._lock = threading.Lock()
        self._asked = [0.0] * len(self.shards)  # monotonic time of each shard's last fetch
        self._epochs = [""] * len(self.shards)  # each shard's epoch at its last fetch
        #: Seconds a shard may go without a fetch while the shards before it fill the limit.
        self.idle_fetch = IDLE_FETCH

    def _call(self, i: int, name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.shards[i], name)(*args, **kwargs)

    def shard(self, key: Key) -> int:
        """The shard index of ``key``."""
        return shard_of(key, len(self.shards))

    # -- producers ---------------------------------------------------------------------------------

    def add_batch(self, items: Iterable[tuple[str, Key]], *, resync: bool = False) -> int:
        """:meth:`WorkQueue.add_batch` with every pair sent to its key's shard (order kept per shard)."""
        groups: list[list[tuple[str, Key]]] = [[] for _ in self.shards]
        for name, key in items:
            self.controllers.get(name)  # an unknown controller fails the batch before anything is sent
            groups[self.shard(key)].append((name, key))
        return sum(self._call(i, "add_batch", g, resync=resync) for i, g in enumerate(groups) if g)

    def add_after_batch(self, items: Sequence[tuple[str, Key, float]]) -> list[float]:
        """:meth:`WorkQueue.add_after_batch` per shard; due times in the order of ``items``."""
        groups: list[list[int]] = [[] for _ in self.shards]
        for n, (_, key, _) in enumerate(items):
            groups[self.shard(key)].append(n)
        out = [0.0] * len(items)
        for i, idx in enumerate(groups):
            if idx:
                for n, due in zip(idx, self._call(i, "add_after_batch", [items[n] for n in idx]), strict=True):
                    out[n] = due
        return out

    # -- consumers ---------------------------------------------------------------------------------

    def fetch(self, queues: Sequence[str], limit: int, lease_seconds: float, *, audit: bool = False,
              known_epoch: str = "", max_lapses: int = 3, suspects: int = 0) -> Fetch:
        """:meth:`WorkQueue.fetch` on the shards in turn from a rotating first shard, each given what is left
        of ``limit`` (each promotes, recovers and audits its own keys); answers merged. Once ``limit`` is
        reached the remaining shards are skipped unless one was not fetched from for :data:`IDLE_FETCH`
        seconds (a busy dispatcher then pays about one round trip per fetch, not one per shard)."""
        known = known_epoch.split(_SEP) if known_epoch else []
        if len(known) != len(self.shards):
            known = [""] * len(self.shards)
        with self._lock:
            start = self._start
            self._start = (start + 1) % len(self.shards)
        taken: list[Taken] = []
        parked = []
        recovered = repaired = 0
        due: list[float] = []
        epochs = [""] * len(self.shards)
        quiet = 0.0
        held = False
        now = time.monotonic()
        for j in range(len(self.shards)):
            i = (start + j) % len(self.shards)
            if len(taken) >= limit and self._epochs[i] and now - self._asked[i] < self.idle_fetch:
                epochs[i] = self._epochs[i]  # nothing left to take: its housekeeping waits for its turn
                continue
            self._asked[i] = now
            got = self._call(i, "fetch", queues, max(0, limit - len(taken)), lease_seconds, audit=audit,
                             known_epoch=known[i], max_lapses=max_lapses,
                             suspects=suspects + sum(t.suspect for t in taken))
            taken += got.taken
            parked += got.parked
            recovered += got.recovered
            repaired += got.repaired
            if got.next_due is not None:
                due.append(got.next_due)
            epochs[i] = self._epochs[i] = got.epoch
            quiet = max(quiet, got.quiet)
            held = held or got.held
        return Fetch(taken, min(due) if due else None, recovered, repaired, _SEP.join(epochs), quiet, parked, held)

    def check_epoch(self, known_epoch: str, quiet_seconds: float) -> tuple[str, str]:
        """:meth:`WorkQueue.check_epoch` of every shard: epochs and run ids joined by ``|``."""
        known = known_epoch.split(_SEP) if known_epoch else []
        if len(known) != len(self.shards):
            known = [""] * len(self.shards)
        got = [self._call(i, "check_epoch", known[i], quiet_seconds) for i in range(len(self.shards))]
        return _SEP.join(e for e, _ in got), _SEP.join(r for _, r in got)

    def wait(self, queues: Sequence[str], timeout: float) -> bool:
        """Block until a wake-up token arrives on one of ``queues`` of any shard, or ``timeout`` seconds
        pass. One ``BLPOP`` per shard at a time, each on its own thread; a token taken by a ``BLPOP``
        that ended after the last call returned wakes the next call at once (never lost)."""
        if timeout <= 0:
            return True
        keys = [queue_key(q, "wake") for q in queues]
        with self._lock:
            futures: list[Future[Any]] = []
            for i, pending in enumerate(self._pending):
                if pending is None:
                    pending = self._pending[i] = self._waiters[i].submit(
                        self.shards[i].redis.blpop, keys, timeout=max(0.01, timeout))
                futures.append(pending)
        done, _ = wait_futures(futures, timeout=timeout + 0.05, return_when=FIRST_COMPLETED)
        woken = False
        with self._lock:
            for i, f in enumerate(futures):
                if f in done:
                    self._pending[i] = None
                    with contextlib.suppress(redis.RedisError):  # the shard's next fetch reports it
                        woken = woken or f.result() is not None
        return woken

    def renew(self, held: Sequence[tuple[str, Key, str]], lease_seconds: float) -> list[bool]:
        """:meth:`WorkQueue.renew` per shard (one call each); answers in the order of ``held``."""
        groups: list[list[int]] = [[] for _ in self.shards]
        for n, (_, key, _) in enumerate(held):
            groups[self.shard(key)].append(n)
        out = [False] * len(held)
        for i, idx in enumerate(groups):
            if idx:
                for n, ok in zip(idx, self._call(i, "renew", [held[n] for n in idx], lease_seconds), strict=True):
                    out[n] = ok
        return out

    def done(self, taken: Taken, result: Result) -> Finish:
        """:meth:`WorkQueue.done` on the key's shard."""
        return self._call(self.shard(taken.key), "done", taken, result)

    # -- inspection --------------------------------------------------------------------------------

    def status(self, controller: str) -> QueueStatus:
        """The counts of every shard, added."""
        parts = [self._call(i, "status", controller) for i in range(len(self.shards))]
        first = parts[0]
        return QueueStatus(first.controller, first.queue, *(sum(getattr(p, f) for p in parts) for f in (
            "waiting", "resync", "in_progress", "delayed", "failing", "parked")))

    def parked(self, controller: str, limit: int = 100) -> list[tuple[Key, float]]:
        """Up to ``limit`` parked keys of every shard, oldest first."""
        rows = [r for i in range(len(self.shards)) for r in self._call(i, "parked", controller, limit)]
        return sorted(rows, key=lambda r: r[1])[:max(0, limit)]

    def ready_depth(self, queue: str) -> tuple[int, int]:
        """The ready lists' lengths of every shard, added."""
        parts = [self._call(i, "ready_depth", queue) for i in range(len(self.shards))]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def holder(self, controller: str, key: Key) -> str | None:
        return self._call(self.shard(key), "holder", controller, key)

    def next_due(self, controller: str) -> float | None:
        dues = [d for i in range(len(self.shards)) if (d := self._call(i, "next_due", controller)) is not None]
        return min(dues) if dues else None

    def failures(self, controller: str, key: Key) -> int:
        return self._call(self.shard(key), "failures", controller, key)

    def due_in(self, controller: str, key: Key) -> float | None:
        return self._call(self.shard(key), "due_in", controller, key)

    def close(self) -> None:
        """Stop the wake-up threads (a ``BLPOP`` under way ends within its timeout)."""
        for w in self._waiters:
            w.shutdown(wait=False, cancel_futures=True)


def open_workqueue(url: str, shards: str = "", controllers: Registry = registry) -> WorkQueue:
    """The process's workqueue: one on ``url`` when ``shards`` (``RECONCILERY_REDIS_SHARD_URLS``) is
    empty, else a :class:`ShardedWorkQueue` over those URLs (list ``url`` first: the first shard also
    serves the epoch claims). Raises ``ValueError`` for a malformed URL."""
    urls = shard_urls(shards)
    if not urls:
        return WorkQueue(redis_client(url), controllers)
    return ShardedWorkQueue([redis_client(u) for u in urls], controllers)
