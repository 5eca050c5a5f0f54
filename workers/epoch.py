"""Noticing a Redis that restarted or lost its data, so that nothing waits for the next resync.

Redis is the only copy of the queue state. Two signals tell that it may have lost some of it:

- its ``run_id`` changed: the server restarted (with AOF ``everysec`` up to a second of writes can
  be gone) or a Sentinel failover promoted a replica (which may lag);
- the sentinel key ``rq:epoch`` is gone or different: the data set was wiped (no persistence,
  ``FLUSHALL``) and whoever noticed first wrote a new epoch.

Watchers then enqueue every object of their caches again, dispatchers re-enqueue the keys of
controllers that list their own keys, and beat re-installs its schedule.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import redis

EPOCH_KEY = "rq:epoch"


@dataclass(frozen=True)
class Observation:
    """What one check saw: the server's ``run_id`` and the epoch (after writing a new one if none)."""

    run_id: str
    epoch: str
    created: bool


def changed(before: Observation | None, now: Observation) -> bool:
    """Whether Redis restarted or lost data between two observations (the first one never counts,
    unless it had to create the epoch of a Redis that had one before: that needs ``before``)."""
    if before is None:
        return False
    return now.run_id != before.run_id or now.epoch != before.epoch


class RedisEpoch:
    """Watches one Redis for restarts and data loss; call :meth:`check` every few seconds."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.last: Observation | None = None

    def observe(self) -> Observation:
        """Read ``run_id`` and the epoch, writing a new epoch if none exists (two or three commands)."""
        run_id = str(self.client.info("server").get("run_id", ""))
        raw = self.client.get(EPOCH_KEY)
        created = False
        if raw is None:
            created = bool(self.client.set(EPOCH_KEY, uuid.uuid4().hex, nx=True))
            raw = self.client.get(EPOCH_KEY)
        epoch = raw.decode() if isinstance(raw, bytes) else str(raw or "")
        return Observation(run_id, epoch, created)

    def check(self) -> bool:
        """True when Redis restarted or lost data since the previous check (False on the first)."""
        now = self.observe()
        before, self.last = self.last, now
        return changed(before, now)


def claim(client: redis.Redis, epoch: str, what: str, ttl: float = 3600.0) -> bool:
    """True for exactly one caller per ``(epoch, what)``: who re-enqueues after a loss."""
    return bool(client.set(f"rq:claim:{epoch}:{what}", "1", nx=True, ex=int(ttl)))
