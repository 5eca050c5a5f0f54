"""Metrics per Cloud kind, recorded where every declared kind's reconcile ends: the KCP controller
(:mod:`tasks.cloud.kcp.kind`) and the SKR turn (:mod:`tasks.cloud.skr.kind`) / connect
(:mod:`tasks.cloud.skr.connect`), never inside a kind.

- ``reconcilery_cloud_objects{kind,state}`` (gauge): KCP and SKR Cloud objects by ``status.state``.
- ``reconcilery_cloud_time_to_ready_seconds{kind}`` (histogram, seconds): ``metadata.creationTimestamp``
  to the reconcile that first wrote ``state: Ready`` (the object was Ready never before, as far as it
  shows: its state was empty, ``Creating`` or ``Processing`` and it had no ``Ready`` condition).
- ``reconcilery_cloud_requeues_total{kind,reason}`` (counter): reconciles that end asking to come back,
  ``reason`` one of :data:`REASONS`: ``wait`` (the plan waits for the provider or a dependency),
  ``retry`` / ``throttled`` (a provider's transient failure / throttling), ``not_found``, ``refused``
  (a refused write), ``error`` (the reconcile failed: backoff).

``kind`` is ``<kind in lower case>.<group>`` (SkrStatus's ``objKindGroup``: ``iprange.cloud-control.kyma-
project.io`` is the KCP IpRange, ``iprange.cloud-resources.kyma-project.io`` the SKR one); ``state`` is
one of :data:`STATES` (an SKR's owner may write any status: anything else counts as ``other``).

Objects by state, the design: the counts live in Redis (hash-tagged ``{objects}``), one entry per *owner*
(a KCP object; an SKR for all its objects, written once per connect) holding its ``{kind|state: n}``, and
the totals beside them, both replaced by one Lua script (``lua/objects.lua``) so the totals stay exact
across every worker process. Per reconcile it costs nothing while the state is unchanged (a bounded
per-process memo of what was last written) and one round trip when it changes; a deleted KCP object (its
finalizer removed, or found gone) and a deactivated SKR remove their entry. Memory: one small entry per
KCP object and per active SKR in Redis, at most :data:`MEMO` entries per process. A process-local map
would count an object once per process that ever reconciled it, since every object moves between
workers. Every process exporting the gauge reads the same totals at scrape (one ``HGETALL`` of
``kinds x states`` fields): aggregate with ``max by (kind, state)``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

import redis
import structlog
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kube.toolkit.execute import Executed
from kube.toolkit.metrics import counter, histogram
from workers.controller import ResultKind

log = structlog.get_logger("tasks.cloud.metrics")

__all__ = ["OBJECTS", "REASONS", "REQUEUES", "STATES", "TIME_TO_READY", "first_ready", "forget_skr",
           "kind_label", "record", "record_skr", "requeue_reason", "state_label"]

#: ``state`` label values (the states our plans write; ``none``: no state yet; ``other``: anything else).
STATES = ("Ready", "Error", "Warning", "Processing", "Creating", "Updating", "Deleting", "none", "other")
#: ``reason`` label values of the requeues counter.
REASONS = ("wait", "retry", "throttled", "not_found", "refused", "error")
#: Owners whose last written counts a process remembers (to skip unchanged ones).
MEMO = 65_536
KEYS = ("cloud:{objects}:owners", "cloud:{objects}:totals")

TIME_TO_READY = histogram(
    "reconcilery_cloud_time_to_ready_seconds",
    "Seconds from a Cloud object's creationTimestamp to the reconcile that first made it Ready, by kind.",
    ["kind"], buckets=(5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200))
REQUEUES = counter(
    "reconcilery_cloud_requeues_total",
    "Cloud reconciles that ended asking to come back, by kind and reason (wait, retry, throttled, not_found, "
    "refused, error).", ["kind", "reason"])


def kind_label(kind: str, group: str) -> str:
    """``<kind lower>.<group>`` (bounded: the registry's kinds)."""
    return f"{kind.lower()}.{group}"


def state_label(state: Any) -> str:
    """``state`` if it is one of :data:`STATES`, ``none`` when empty, else ``other``."""
    text = str(state or "")
    if not text:
        return "none"
    return text if text in STATES else "other"


def _state(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("status") or {}).get("state") or "")


def _ready_before(obj: Mapping[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" for c in conditions)


def first_ready(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                now: datetime.datetime) -> float | None:
    """Seconds from ``after``'s creationTimestamp to ``now`` when this reconcile made it Ready for the first
    time (see the module doc), else ``None`` (also for a missing or unreadable timestamp)."""
    if before is None or after is None or _state(after) != "Ready":
        return None
    if _state(before) not in ("", "Creating", "Processing") or _ready_before(before):
        return None
    created = str((after.get("metadata") or {}).get("creationTimestamp") or "")
    try:
        at = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        return None
    return max(0.0, (now - at).total_seconds())


def requeue_reason(done: Executed) -> str | None:
    """The :data:`REASONS` value of a reconcile that asks to come back; ``None`` when it does not."""
    outcome = done.result.outcome
    if outcome not in (ResultKind.REQUEUE_AFTER, ResultKind.ERROR):
        return None
    if done.refused is not None:
        return done.refused[1].kind  # FailureKind: retry, throttled, not_found, refused
    return "wait" if outcome is ResultKind.REQUEUE_AFTER else "error"


# -- objects by state (Redis) ------------------------------------------------------------------------------

class _Objects(Collector):
    """The Redis side and the gauge's collector."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._memo: OrderedDict[str, str] = OrderedDict()
        self._client: Any = None
        self._script: Any = None

    def _redis(self) -> Any:
        if self._client is None:
            from workers.settings import load

            client = redis.Redis.from_url(load().redis_url)
            # the script first: a thread that sees the client set must find the script too (a connect
            # of a fresh worker failed with "'NoneType' object is not callable" at 100 threads)
            self._script = client.register_script(
                resources.files("tasks.cloud").joinpath("lua/objects.lua").read_text())
            self._client = client
        return self._client

    def put(self, owner: str, counts: Mapping[str, int], unchanged: bool = False) -> None:
        """Replace ``owner``'s counts (``{}``: gone). ``unchanged``: the reconcile read the state it wrote,
        so the write is skipped when this process last wrote the same (another process writes only on a
        change, which the read would have shown)."""
        body = json.dumps(dict(sorted(counts.items())), separators=(",", ":")) if counts else ""
        with self._lock:
            if unchanged and self._memo.get(owner) == body:
                self._memo.move_to_end(owner)
                return
        try:
            self._redis()
            self._script(keys=list(KEYS), args=[owner, body])
        except redis.RedisError as exc:  # a metric never fails a reconcile
            log.warning("object states not recorded", owner=owner, error=str(exc))
            return
        with self._lock:
            self._memo[owner] = body
            self._memo.move_to_end(owner)
            while len(self._memo) > MEMO:
                self._memo.popitem(last=False)

    def totals(self) -> dict[tuple[str, str], int]:
        """``(kind, state) -> n`` of every owner."""
        raw = self._redis().hgetall(KEYS[1])
        out: dict[tuple[str, str], int] = {}
        for field, n in raw.items():
            kind, _, state = (field.decode() if isinstance(field, bytes) else str(field)).rpartition("|")
            out[(kind, state)] = int(n)
        return out

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield self._family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        try:
            totals = self.totals()
        except redis.RedisError:
            totals = {}
        for (kind, state), n in sorted(totals.items()):
            family.add_metric([kind, state], n)
        yield family

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("reconcilery_cloud_objects",
                                 "Cloud objects (KCP and SKR) by kind and status state, from the counts every "
                                 "worker keeps in Redis (each process exports the same totals: use max).",
                                 labels=["kind", "state"])


OBJECTS = _Objects()
with contextlib.suppress(ValueError):  # registered already (the module imported twice)
    REGISTRY.register(OBJECTS)


def record(kind: str, key: str, before: Mapping[str, Any] | None, done: Executed,
           now: datetime.datetime | None = None, owner: bool = True) -> None:
    """Record one reconcile of the object ``key`` (``namespace/name``) of ``kind`` (:func:`kind_label`):
    ``before`` as read, ``done`` as :func:`kube.toolkit.execute` answered. ``owner``: its state is its own
    entry of the objects gauge (KCP objects; an SKR's objects are recorded per connect, :func:`record_skr`)."""
    now = now or datetime.datetime.now(datetime.UTC)
    reason = requeue_reason(done)
    if reason is not None:
        REQUEUES.labels(kind, reason).inc()
    seconds = first_ready(before, done.obj, now)
    if seconds is not None:
        TIME_TO_READY.labels(kind).observe(seconds)
    if owner:
        gone = done.obj is None or bool(done.outcome.remove_finalizer)
        after = _state(done.obj)
        OBJECTS.put(f"kcp/{kind}/{key}", {} if gone else {f"{kind}|{state_label(after)}": 1},
                    unchanged=not gone and before is not None and _state(before) == after)


def record_skr(kyma: str, counts: Mapping[tuple[str, str], int]) -> None:
    """The SKR ``kyma``'s objects as one connect found them: ``(kind, state label) -> n``."""
    OBJECTS.put(f"skr/{kyma}", {f"{k}|{s}": n for (k, s), n in counts.items() if n > 0})


def forget_skr(kyma: str) -> None:
    """A deactivated SKR's objects leave the gauge."""
    OBJECTS.put(f"skr/{kyma}", {})
