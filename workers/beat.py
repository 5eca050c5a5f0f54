"""Beat's scheduler: RedBeat (one active scheduler, standbys take over its Redis lock), made to
survive a Redis that restarted or lost its data.

RedBeat keeps the schedule and its lock in Redis. After a wipe the lock key is gone (RedBeat's
``tick`` would raise ``LockNotOwnedError`` and beat would exit) and so are the static entries (beat
would run but never send a task). :class:`Scheduler` notices both (``workers.epoch``) and re-acquires
the lock and re-installs the schedule.

Its metrics (served by ``reconcilery beat`` on ``RECONCILERY_METRICS_PORT``): the tasks it sent and
failed to send per schedule entry (entries are the installed controllers' resyncs: bounded), whether
it is the active scheduler, the time of its last tick and its recoveries.
"""

from __future__ import annotations

import time
from typing import Any

import structlog
from redbeat import RedBeatScheduler
from redbeat.schedulers import get_redis
from redis.exceptions import LockError

from kube.toolkit.metrics import counter, gauge
from workers.epoch import RedisEpoch

log = structlog.get_logger("reconcilery.beat")

SENT = counter("reconcilery_beat_sent", "Tasks beat sent, by schedule entry (resync-<controller>).", ["entry"])
SEND_ERRORS = counter("reconcilery_beat_send_errors",
                      "Due tasks beat failed to send (broker unreachable), by schedule entry.", ["entry"])
ACTIVE = gauge("reconcilery_beat_active",
               "1 while this beat is the active scheduler (holds RedBeat's lock and ticks), 0 on standby.")
LAST_TICK = gauge("reconcilery_beat_last_tick_timestamp_seconds",
                  "Unix time of this beat's last completed tick (a stalled active beat's value stops moving).")
RECOVERIES = counter("reconcilery_beat_recoveries",
                     "Schedule re-installs by reason (redis_restarted, lock_vanished).", ["reason"])


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

    def _recover(self, reason: str, label: str) -> None:
        log.warning("re-installing the beat schedule", reason=reason)
        RECOVERIES.labels(label).inc()
        if self.lock is not None and not self.lock.owned():
            self.lock.acquire()  # blocks while a standby that took over holds it
        self.setup_schedule()

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if self._redis_changed():
            self._recover("Redis restarted or lost its data", "redis_restarted")
        try:
            wait = float(super().tick(*args, **kwargs))
        except LockError:
            self._recover("the beat lock vanished", "lock_vanished")
            wait = float(super().tick(*args, **kwargs))
        ACTIVE.set(1)  # a tick extends the lock first: only the lock holder gets here
        LAST_TICK.set_to_current_time()
        return wait

    def apply_async(self, entry: Any, producer: Any = None, advance: bool = True, **kwargs: Any) -> Any:
        try:
            result = super().apply_async(entry, producer=producer, advance=advance, **kwargs)
        except Exception:
            SEND_ERRORS.labels(entry.name).inc()
            raise
        SENT.labels(entry.name).inc()
        return result

    def close(self) -> None:
        ACTIVE.set(0)
        super().close()
