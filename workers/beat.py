"""Beat's scheduler: RedBeat (one active scheduler, standbys take over its Redis lock), made to
survive a Redis that restarted or lost its data.

RedBeat keeps the schedule and its lock in Redis. After a wipe the lock key is gone (RedBeat's
``tick`` would raise ``LockNotOwnedError`` and beat would exit) and so are the static entries (beat
would run but never send a task). :class:`Scheduler` notices both (``workers.epoch``) and re-acquires
the lock and re-installs the schedule.
"""

from __future__ import annotations

import time
from typing import Any

import structlog
from redbeat import RedBeatScheduler
from redbeat.schedulers import get_redis
from redis.exceptions import LockError

from workers.epoch import RedisEpoch

log = structlog.get_logger("reconcilery.beat")


class Scheduler(RedBeatScheduler):
    """RedBeat with recovery from Redis restarts and data loss (checked every few seconds)."""

    check_interval = 2.0

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(app, *args, **kwargs)
        self._epoch: RedisEpoch | None = None
        self._checked = 0.0

    def _redis_changed(self) -> bool:
        now = time.monotonic()
        if now - self._checked < self.check_interval:
            return False
        self._checked = now
        if self._epoch is None:
            self._epoch = RedisEpoch(get_redis(self.app), self.app.reconcilery_settings.lease_seconds)
        try:
            return self._epoch.check()
        except Exception as exc:  # Redis away: RedBeat's own calls will tell
            log.warning("Redis check failed", error=str(exc))
            return False

    def _recover(self, reason: str) -> None:
        log.warning("re-installing the beat schedule", reason=reason)
        if self.lock is not None and not self.lock.owned():
            self.lock.acquire()  # blocks while a standby that took over holds it
        self.setup_schedule()

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if self._redis_changed():
            self._recover("Redis restarted or lost its data")
        try:
            return float(super().tick(*args, **kwargs))
        except LockError:
            self._recover("the beat lock vanished")
            return float(super().tick(*args, **kwargs))
