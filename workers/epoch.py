"""Noticing a Redis that restarted or lost its data, so that nothing waits for the next resync.

Redis is the only copy of the queue state. Two signals tell that it may have lost some of it:

- its ``run_id`` changed: the server restarted (with AOF ``everysec`` up to a second of writes can
  be gone) or a Sentinel failover promoted a replica (which may lag);
- the epoch key ``rq:epoch`` is gone or different: the data set was wiped (no persistence,
  ``FLUSHALL``) and whoever noticed first wrote a new one.

The check is the ``epoch.lua`` script (the same guard ``fetch.lua`` runs on every take): when it sees
a restart or a loss under a caller that knew the old epoch it also holds back every take for one
lease, so reconciles that held keys before are fenced before their keys are handed out again.
Watchers then enqueue every object of their caches again, dispatchers re-enqueue the keys of
controllers that list their own keys, and beat re-installs its schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from workers.workqueue import WorkQueue


@dataclass(frozen=True)
class Observation:
    """What one check saw: the data set's epoch and the server's ``run_id``."""

    epoch: str
    run_id: str


def changed(before: Observation | None, now: Observation) -> bool:
    """Whether Redis restarted or lost data between two observations (the first never counts)."""
    return before is not None and (now.run_id != before.run_id or now.epoch != before.epoch)


class RedisEpoch:
    """Watches one Redis for restarts and data loss; call :meth:`check` every few seconds.

    Args:
        client: the Redis.
        quiet_seconds: how long takes are held back after a restart or loss this check notices
            first (the workers' lease, ``RECONCILERY_LEASE_SECONDS``).
    """

    def __init__(self, client: redis.Redis, quiet_seconds: float = 10.0) -> None:
        self.client = client
        self.quiet_seconds = quiet_seconds
        self._wq = WorkQueue(client)
        self.last: Observation | None = None

    def observe(self) -> Observation:
        """The epoch (written if none) and ``run_id`` now: one round trip."""
        epoch, run_id = self._wq.check_epoch(self.last.epoch if self.last else "", self.quiet_seconds)
        return Observation(epoch, run_id)

    def check(self) -> bool:
        """True when Redis restarted or lost data since the previous check (False on the first)."""
        now = self.observe()
        before, self.last = self.last, now
        return changed(before, now)


def claim(client: redis.Redis, epoch: str, what: str, ttl: float = 3600.0) -> bool:
    """True for exactly one caller per ``(epoch, what)``: who re-enqueues after a loss."""
    return bool(client.set(f"rq:claim:{epoch}:{what}", "1", nx=True, ex=int(ttl)))
