"""The SKR rotation in Redis: who is active, who is due, and the notification path.

The original's cyclic sleeve, spread over the ``cloud-skr`` pool instead of one worker
(``pkg/skr/runtime/looper``). Six Redis structures (hash-tagged ``{skr}``), each operation one Lua
script (``tasks/cloud/lua``):

- ``cloud:{skr}:rotation`` ZSET kyma -> due time: the active SKRs waiting for their turn; its order is
  the rotation's order;
- ``cloud:{skr}:inflight`` ZSET kyma -> dispatch time: active SKRs whose rotation connect is queued or
  running. Active = in one of the two (the membership is the source of truth, as the cyclic queue's);
- ``cloud:{skr}:failures`` HASH kyma -> consecutive failed connects (backoff inside the rotation);
- ``cloud:{skr}:notified`` HASH kyma -> end of the last notification-driven connect (rate limit);
- ``cloud:{skr}:pending`` SET of kymas with an accepted notification not yet served;
- ``cloud:{skr}:health`` HASH kyma -> ``<status>|<since>`` of its last connect (the fleet metrics,
  :mod:`tasks.cloud.skr.fleet`; removed on deactivation).

The guarantees:

- **idempotent activation**: activating a member changes nothing (no second place in the rotation);
- **strict rotation**: the sweep (beat's tick, :func:`tick`) moves due SKRs to in-flight oldest first and
  enqueues one ``connect`` key each, at resync priority, in that order; a finished rotation connect puts
  its SKR back at the tail. New SKRs join at the tail. No SKR is visited twice before every other due
  SKR once;
- **one connect per SKR at a time**: the workqueue's per-key exclusivity (the key is the SKR);
- **cyclicMinInterval**: below the fleet-size threshold a finished SKR is due again only after the min
  interval; a failed connect adds its backoff; the SKR never leaves the rotation for failing;
- **notifications never reorder the rotation**: they enqueue a fresh connect only for an active SKR
  whose rotation connect is not in flight, at most once per ``notif_min_interval`` after the previous
  notification-driven connect, and their finish never writes the rotation;
- **no stranding**: an in-flight SKR whose connect never reports back (its message lost) is dispatched
  again after ``stranded_after``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis

from tasks.cloud import settings as cloud_settings
from tasks.cloud.rotation import cyclic_threshold
from tasks.cloud.settings import CloudSettings
from tasks.cloud.skr.fleet import STATUS_BY_RESULT
from workers.controller import LOCAL_CLUSTER, Key, Result
from workers.settings import load
from workers.workqueue import current as workqueue

__all__ = ["CONNECT", "SWEEP", "Finish", "Rotation", "connect_keys", "reconcile", "rotation"]

#: The controllers of the SKR loop (registered in :mod:`tasks.cloud.controller`).
CONNECT = "cloud-skr-connect"
SWEEP = "cloud-skr-sweep"
_SCRIPTS = ("activate", "deactivate", "dispatch", "finish", "notify")
PREFIX = "cloud:{skr}:"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Finish:
    """How a connect's end was recorded: ``kind`` ``rotation`` (back at the tail after ``delay`` s),
    ``notification`` (rotation untouched) or ``inactive`` (dropped); ``failures`` in a row."""

    kind: str
    failures: int
    delay: float


class Rotation:
    """The rotation's Redis structures and scripts on one ``redis.Redis`` client."""

    def __init__(self, client: redis.Redis, settings: CloudSettings) -> None:
        self.redis = client
        self.settings = settings
        self.keys = {n: f"{PREFIX}{n}" for n in ("rotation", "inflight", "failures", "notified", "pending", "health")}
        self._scripts = {n: client.register_script(
            resources.files("tasks.cloud").joinpath(f"lua/{n}.lua").read_text()) for n in _SCRIPTS}

    def _k(self, *names: str) -> list[str]:
        return [self.keys[n] for n in names]

    def activate(self, kyma: str) -> bool:
        """Add ``kyma`` to the rotation's tail unless it is a member; True when newly active."""
        return bool(self._scripts["activate"](keys=self._k("rotation", "inflight"), args=[kyma]))

    def deactivate(self, kyma: str) -> bool:
        """Remove ``kyma`` (a running connect is not aborted); True when it was active."""
        keys = self._k("rotation", "inflight", "failures", "notified", "pending", "health")
        return bool(self._scripts["deactivate"](keys=keys, args=[kyma]))

    def is_active(self, kyma: str) -> bool:
        pipe = self.redis.pipeline(transaction=False)
        pipe.zscore(self.keys["rotation"], kyma)
        pipe.zscore(self.keys["inflight"], kyma)
        return any(v is not None for v in pipe.execute())

    def members(self) -> list[str]:
        """Every active SKR: in flight first (dispatch order), then the rotation (due order)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrange(self.keys["inflight"], 0, -1)
        pipe.zrange(self.keys["rotation"], 0, -1)
        inflight, waiting = pipe.execute()
        return [_text(k) for k in [*inflight, *waiting]]

    def fleet(self) -> int:
        """How many SKRs are active."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcard(self.keys["rotation"])
        pipe.zcard(self.keys["inflight"])
        return int(sum(pipe.execute()))

    def dispatch(self, limit: int = 10_000) -> list[str]:
        """Due SKRs (oldest due first) moved to in-flight, plus stranded in-flight ones."""
        out = self._scripts["dispatch"](keys=self._k("rotation", "inflight"),
                                        args=[limit, self.settings.stranded_after])
        return [_text(k) for k in out]

    def finish(self, kyma: str, ok: bool, result: str | None = None) -> Finish:
        """Record the end of a connect of ``kyma`` (see :class:`Finish`). With the connect's ``result``
        (``ok`` / ``not_ready`` / ``failed``) the SKR's health entry ``<status>|<since>`` is kept in the same
        script call (``finish.lua``, the one place that writes it): its since stays while its status does,
        an inactive SKR's entry is removed, another result leaves it alone."""
        s = self.settings
        threshold = cyclic_threshold(s.cyclic_workers, s.cyclic_min_interval, s.reconcile_timeout)
        args: list[str | int | float] = [
            kyma, "1" if ok else "0", threshold, s.cyclic_min_interval, s.connect_backoff_base, s.connect_backoff_cap]
        if result is None:
            keys = self._k("rotation", "inflight", "failures", "notified", "pending")
        else:
            keys = self._k("rotation", "inflight", "failures", "notified", "pending", "health")
            args.append(STATUS_BY_RESULT.get(result, ""))
        kind, failures, delay = self._scripts["finish"](keys=keys, args=args)
        return Finish(_text(kind), int(failures), float(_text(delay)))

    def notify(self, kyma: str) -> str:
        """A notification for ``kyma``: ``accepted`` (enqueue a connect) or why it was dropped."""
        keys = self._k("rotation", "inflight", "notified", "pending")
        return _text(self._scripts["notify"](keys=keys, args=[kyma, self.settings.notif_min_interval]))

    def health(self) -> dict[str, str]:
        """Every active SKR's health entry: kyma -> ``<status>|<since>``."""
        return {_text(k): _text(v) for k, v in self.redis.hgetall(self.keys["health"]).items()}

    def failures(self, kyma: str) -> int:
        return int(self.redis.hget(self.keys["failures"], kyma) or 0)

    def due(self, kyma: str) -> float | None:
        """The due time (Redis clock, epoch s) of a waiting SKR; ``None`` when in flight or inactive."""
        score = self.redis.zscore(self.keys["rotation"], kyma)
        return None if score is None else float(score)

    def clear(self) -> None:
        """Forget every SKR (tests, benchmarks)."""
        self.redis.delete(*self.keys.values())


_lock = threading.Lock()
_rotations: dict[tuple[str, int], Rotation] = {}


_urls: dict[tuple[tuple[str, str], ...], str] = {}


def _redis_url() -> str:
    """The engine settings' Redis URL, loaded again only when a ``RECONCILERY_*`` variable changed (loading
    the settings on every connect cost ~1 ms of CPU)."""
    ident = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("RECONCILERY_")))
    found = _urls.get(ident)
    if found is None:
        found = load().redis_url
        with _lock:
            if len(_urls) > 64:
                _urls.clear()
            _urls[ident] = found
    return found


def rotation(settings: CloudSettings, url: str | None = None) -> Rotation:
    """This process's :class:`Rotation` on the workqueue's Redis (``RECONCILERY_REDIS_URL``)."""
    if url is None:
        url = _redis_url()
    ident = (url, id(settings))
    with _lock:
        found = _rotations.get(ident)
        if found is None:
            found = _rotations[ident] = Rotation(redis.Redis.from_url(url), settings)
        return found


def connect_keys(kymas: Sequence[str], namespace: str) -> list[Key]:
    """The ``connect`` workqueue keys of ``kymas`` (``local/<kcp namespace>/<kyma>``)."""
    return [Key(LOCAL_CLUSTER, namespace, k) for k in kymas]


def reconcile(key: Key) -> Result:
    """The sweep (beat's tick): dispatch the due SKRs, enqueue their connect keys in rotation order at
    resync priority (a notification's fresh connect goes first), look again after ``sweep_tick``."""
    s = cloud_settings.current()
    due = rotation(s).dispatch()
    if due:
        workqueue().add_many(CONNECT, connect_keys(due, s.kcp_namespace), resync=True)
    return Result.requeue(s.sweep_tick)
