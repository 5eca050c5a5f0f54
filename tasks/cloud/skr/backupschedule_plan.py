"""The NFS backup schedule plan, provider-independent (pure): cloud-manager's ``pkg/skr/backupschedule/v1``
(``reconciler.go``: ``checkCompleted`` ... ``removeFinalizer``) as one decision per turn.

A schedule (``GcpNfsBackupSchedule``, ``AwsNfsBackupSchedule``) makes backup objects of one NFS volume of
its SKR at the times of a cron expression (empty: one backup at ``startTime`` or now), and deletes the
backups it made beyond the retention limits. The providers differ only by a small declared part
(:class:`BackupKind`: which source and backup resources, and how a backup's spec is built from the
schedule: ``backupImplGcpNfs.go``, ``backupImplAwsNfs.go``). One turn, in the original's order:

1. deleting: with ``deleteCascade`` the schedule's own backups are deleted (state ``Deleting``, back after
   1 s; 15 s while all left are already being deleted) until none is listed, then the finalizer goes
   (``deleteCascade.go``, ``removeFinalizer.go``);
2. the finalizer (``addFinalizer.go``); state ``Done``: nothing more (``checkCompleted.go``); ``endTime``
   past: ``Done``, no next run times; a one-time schedule that ran and has no backup left: ``Done``;
3. ``suspend``: ``Suspended``, no next run or delete times (``checkSuspension.go``);
4. the quota (declared default :data:`QUOTA` per kind and SKR, older wins): ``QuotaExceeded``;
5. validation (``validateSchedule.go``, ``validateTimes.go``): the cron expression in the original's
   dialect (gorhill/cronexpr: 5 fields, 6 with a year, 7 with seconds first and a year, the ``@`` macros;
   ``L``, ``W``, ``#``) -> ``InvalidCronExpression``; ``startTime`` before the creation (1 s tolerance) ->
   ``InvalidStartTime``; ``endTime`` before the start -> ``InvalidEndTime``; also (not in the original) a
   prefix or volume reference that cannot name an object -> ``InvalidPrefix`` / ``NfsVolumeNotFound``, a
   schedule name too long for the label its backups carry (63) -> ``InvalidName``;
6. the next run times (``calculateOnetimeSchedule.go``, ``calculateRecurringSchedule.go``):
   :data:`MAX_SCHEDULES` cron times after ``max(startTime, now)`` when none are set or the cron changed
   (state ``Active``, ``status.schedule``); a one-time schedule runs at ``startTime`` or now, and after its
   backup once a day (the next day, the hour after its run) to apply the retention;
7. the first next run time not due (more than 1 s ahead): back exactly then (``evaluateNextRun.go``);
8. due: the source volume must exist and be Ready (``NfsVolumeNotFound`` / ``NfsVolumeNotReady``, back
   after 10 s, ``loadSource.go``); the backup ``<prefix>-<index>-<YYYYmmdd-HHMMSS of the run time>`` is
   created with the schedule's labels (``createBackup.go``), and in the same turn the retention is applied
   (``deleteBackups.go``): newest first, a backup older than ``maxRetentionDays`` or past ``maxReadyBackups``
   Ready / ``maxFailedBackups`` Failed ones is deleted. Status: ``lastCreateRun``, ``lastCreatedBackup``,
   ``backupIndex``, ``backupCount``, ``lastDeleteRun``, ``lastDeletedBackups``, ``nextDeleteTimes``, and the
   next run times after now; back at the first of them.

Deliberate differences (issue 28):

- **no pile-up**: while the backup created last is listed and neither ``Ready``, ``Failed`` nor ``Error``
  (an Error backup retries at every connect and turns Failed only once a newer one exists), a due run
  waits (condition ``Warning`` ``BackupInProgress`` naming it, back after 30 s); it runs once that backup
  is done;
- **a missed run runs once**: a run due long ago (workers down for N periods) makes one backup (named by
  the run time it stands for) and the next run times start after now: never N backups;
- **one backup per run time**: the name is a function of the status as read (index and run time), so a
  retried or concurrent turn makes the same name and its ``AlreadyExists`` is success;
- a run's create and retention are one turn (the original: two reconciles); ``nextDeleteTimes`` names the
  (at most 3) retained backups that expire first (the original: the 3 newest, deleted ones included);
- only the schedule's own backups are listed or deleted: its namespace, both schedule labels and a name
  of the schedule's pattern (:func:`own`);
- a cron with no run within :data:`CRON_HORIZON_YEARS` years (``0 0 30 2 *``) is invalid (the original
  computes a zero time).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from croniter import croniter
from croniter.croniter import CroniterError

from kube.refusal import Failure
from kube.resources import Resource
from kube.toolkit.actions import Action, Write
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.step import StepBuilder
from tasks.cloud.validate import DNS_LABEL, DNS_SUBDOMAIN, quota_exceeded

__all__ = ["CRON_HORIZON_YEARS", "MAX_SCHEDULES", "QUOTA", "BackupKind", "Cron", "Retention", "Seen", "backup_name",
           "cron", "due", "fmt", "next_run_times", "own", "parse_time", "plan", "retention", "utc", "validate"]

#: How many next run times the status shows, and next delete times (the original's ``MaxSchedules``).
MAX_SCHEDULES = 3
#: Seconds within which a run time counts as now (the original's ``ToleranceInterval``).
TOLERANCE = 1.0
#: Longest cron expression accepted (customer input: parsed in time linear in its size).
MAX_CRON_LENGTH = 200
#: A cron expression whose next run is further than this is invalid.
CRON_HORIZON_YEARS = 5
#: Declared quota of schedules per kind and SKR (the original has none: a bound on the timed keys).
QUOTA = 100

STATE_ACTIVE = "Active"
STATE_DONE = "Done"
STATE_SUSPENDED = "Suspended"
STATE_DELETING = names.STATE_DELETING
STATE_ERROR = names.STATE_ERROR

REASON_INVALID_CRON = "InvalidCronExpression"
REASON_INVALID_START = "InvalidStartTime"
REASON_INVALID_END = "InvalidEndTime"
REASON_INVALID_PREFIX = "InvalidPrefix"
REASON_INVALID_NAME = "InvalidName"
REASON_TIME_PARSE = "TimeParseError"
REASON_NOT_FOUND = "NfsVolumeNotFound"
REASON_NOT_READY = "NfsVolumeNotReady"
REASON_CREATE_FAILED = "GCPError"  # sic: the original's ReasonGcpError for every provider
REASON_IN_PROGRESS = "BackupInProgress"

#: Seconds (scaled) before a schedule whose volume is missing or not Ready looks again (``T10000ms``).
SOURCE_WAIT = 10.0
#: Seconds (scaled) between the turns of a cascading deletion (``T1000ms``).
CASCADE_WAIT = 1.0
#: Seconds (scaled) between looks while every backup left is already being deleted (the original: 1 s; a
#: backup whose provider is slow to let go must not hold a connect's window).
CASCADE_GONE_WAIT = 15.0
#: Seconds (scaled) between two looks at a backup still in progress while a run waits for it.
IN_PROGRESS_WAIT = 30.0
#: Seconds before a run time at which the read loads the volume and the backups (the plan then has them).
READ_AHEAD = 5.0

_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly")
_STAMP = "%Y%m%d-%H%M%S"
#: Room a backup name needs beyond its prefix: ``-<index>-YYYYmmdd-HHMMSS``.
_NAME_ROOM = 30


@dataclass(frozen=True)
class BackupKind:
    """The provider's part of a schedule (``backupImpl*.go``).

    Attributes:
        schedule: the schedule's SKR resource.
        source: the SKR resource of the volume it backs up (``spec.nfsVolumeRef``).
        backup: the SKR resource of the backups it makes.
        spec: ``(schedule spec, volume namespace, volume name) -> backup spec`` (pure).
    """

    schedule: Resource
    source: Resource
    backup: Resource
    spec: Callable[[Mapping[str, Any], str, str], dict[str, Any]]


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the schedule.
        kind: its provider's part.
        now: the read's clock (epoch seconds): the plan's "now".
        loaded: the volume and the backups were read (deleting, or a run due within :data:`READ_AHEAD`).
        source: the volume (``None``: missing, or not loaded).
        backups: the schedule's own backups (:func:`own`), as listed.
        everyone: the schedules of this kind in the SKR (the quota).
        quota: schedules allowed (``None``: unlimited).
    """

    obj: Mapping[str, Any]
    kind: BackupKind
    now: float
    loaded: bool = False
    source: Mapping[str, Any] | None = None
    backups: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    quota: int | None = None


# ---- times -------------------------------------------------------------------------------------------

def parse_time(value: Any) -> dt.datetime | None:
    """An RFC 3339 time (``2026-11-28T10:00:00Z``, offsets and fractions accepted) in UTC; ``None`` for
    anything else (empty, not a string, not a time)."""
    if not isinstance(value, str) or not value or len(value) > 40:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(dt.UTC)


def fmt(moment: dt.datetime) -> str:
    """``moment`` as Go's ``time.RFC3339`` writes a UTC time (seconds, ``Z``)."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc(epoch: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, dt.UTC)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression: :meth:`next_n` times strictly after a moment."""

    expression: str
    seconds_first: bool

    def next_n(self, after: dt.datetime, n: int) -> list[dt.datetime]:
        """The next ``n`` run times after ``after`` (UTC). Raises ``CroniterError`` when there is none
        within :data:`CRON_HORIZON_YEARS` years."""
        it = croniter(self.expression, after.astimezone(dt.UTC), second_at_beginning=self.seconds_first,
                      max_years_between_matches=CRON_HORIZON_YEARS)
        return [it.get_next(dt.datetime).astimezone(dt.UTC) for _ in range(n)]


def cron(expression: str) -> Cron | str:
    """The cron expression of ``spec.schedule`` in gorhill/cronexpr's dialect (the original's parser):
    5 fields (minute hour day-of-month month day-of-week), 6 (and a year), 7 (a second first, then the 5,
    then a year), or a macro (``@daily`` ...). The parsed :class:`Cron`, or the error message."""
    text = expression.strip()
    if len(text) > MAX_CRON_LENGTH:
        return f"cron expression longer than {MAX_CRON_LENGTH} characters"
    if text.startswith("@"):
        if text.lower() not in _MACROS:
            return f"unknown macro {text!r} (one of {', '.join(_MACROS)})"
        parsed = Cron(text.lower(), False)
    else:
        fields = text.split()
        if len(fields) == 5:
            parsed = Cron(" ".join(fields), False)
        elif len(fields) == 6:  # cronexpr: the sixth field is the year; croniter's seventh is
            parsed = Cron(" ".join([*fields[:5], "0", fields[5]]), False)
        elif len(fields) == 7:
            parsed = Cron(" ".join(fields), True)
        else:
            return f"expected 5 to 7 fields, got {len(fields)}"
    try:
        valid = croniter.is_valid(parsed.expression, second_at_beginning=parsed.seconds_first)
    except (CroniterError, ValueError, KeyError, OverflowError):
        valid = False
    if not valid:
        return f"syntax error in cron expression {text!r}"[:300]
    return parsed


def due(obj: Mapping[str, Any], now: float) -> bool:
    """Whether a turn at ``now`` (epoch seconds) may run the schedule: deleting, no next run time (or the
    cron changed), or the first one within :data:`READ_AHEAD` seconds. The read loads the volume and the
    backups only then (a schedule waiting for its time costs one object read)."""
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return True
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if spec.get("suspend") or status.get("state") == STATE_DONE:
        return False
    times = status.get("nextRunTimes") or []
    if not isinstance(times, list) or not times:
        return True
    if str(spec.get("schedule") or "") and spec.get("schedule") != status.get("schedule"):
        return True
    first = parse_time(times[0])
    return first is None or first.timestamp() - now <= READ_AHEAD


# ---- validation ----------------------------------------------------------------------------------------

def source_ref(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace, name)`` of the volume ``spec.nfsVolumeRef`` names (its namespace defaults to the
    schedule's, as the original's ``getSourceRef``)."""
    ref = (obj.get("spec") or {}).get("nfsVolumeRef") or {}
    ref = ref if isinstance(ref, Mapping) else {}
    own_ns = str((obj.get("metadata") or {}).get("namespace") or "")
    return str(ref.get("namespace") or own_ns), str(ref.get("name") or "")


def prefix_of(obj: Mapping[str, Any]) -> str:
    """The backups' name prefix: ``spec.prefix``, else the schedule's name."""
    return str((obj.get("spec") or {}).get("prefix") or "") or str((obj.get("metadata") or {}).get("name") or "")


def validate(obj: Mapping[str, Any], now: dt.datetime) -> tuple[str, str] | None:
    """``(reason, message)`` of the first problem of the schedule's spec (module doc, step 5); ``None``
    when it is valid."""
    spec = obj.get("spec") or {}
    expression = str(spec.get("schedule") or "")
    if expression:
        parsed = cron(expression)
        if isinstance(parsed, str):
            return REASON_INVALID_CRON, parsed
    start, end = parse_time(spec.get("startTime")), parse_time(spec.get("endTime"))
    if spec.get("startTime") and start is None:
        return REASON_INVALID_START, "Start time is not an RFC 3339 time."
    if spec.get("endTime") and end is None:
        return REASON_INVALID_END, "End time is not an RFC 3339 time."
    ref_time = parse_time((obj.get("metadata") or {}).get("creationTimestamp")) or now
    if start is not None and (ref_time - start).total_seconds() > TOLERANCE:
        return REASON_INVALID_START, "Start time cannot be before creation time."
    if start is not None:
        ref_time = start
    if end is not None and (ref_time - end).total_seconds() > TOLERANCE:
        return REASON_INVALID_END, "End time cannot be before start/creation time."
    if expression and not isinstance(parsed, str):
        try:
            parsed.next_n(start if start is not None and start > now else now, 1)
        except (CroniterError, ValueError, OverflowError):
            return REASON_INVALID_CRON, f"no run time within {CRON_HORIZON_YEARS} years"
    if len(str((obj.get("metadata") or {}).get("name") or "")) > 63:
        return REASON_INVALID_NAME, "The schedule's name labels its backups: at most 63 characters."
    prefix = prefix_of(obj)
    if len(prefix) > 253 - _NAME_ROOM or not DNS_SUBDOMAIN.fullmatch(prefix):
        return REASON_INVALID_PREFIX, (f"Prefix must be a lower case RFC 1123 name of at most "
                                       f"{253 - _NAME_ROOM} characters.")
    namespace, name = source_ref(obj)
    if not DNS_LABEL.fullmatch(namespace) or len(name) > 253 or not DNS_SUBDOMAIN.fullmatch(name):
        return REASON_NOT_FOUND, "Error loading SourceRef"
    return None


# ---- run times -----------------------------------------------------------------------------------------

def next_run_times(obj: Mapping[str, Any], now: dt.datetime) -> list[str]:
    """The run times a schedule without them gets (module doc, step 6), RFC 3339; ``[]`` for an invalid
    cron (validated before)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    start = parse_time(spec.get("startTime"))
    expression = str(spec.get("schedule") or "")
    if not expression:
        last = parse_time(status.get("lastCreateRun"))
        if int(status.get("backupCount") or 0) > 0 and last is not None:
            day = dt.datetime(now.year, now.month, now.day, tzinfo=dt.UTC) + dt.timedelta(days=1)
            return [fmt(day + dt.timedelta(hours=last.hour + 1))]
        return [fmt(start if start is not None else now)]
    parsed = cron(expression)
    if isinstance(parsed, str):
        return []
    base = start if start is not None and start > now else now
    try:
        return [fmt(t) for t in parsed.next_n(base, MAX_SCHEDULES)]
    except (CroniterError, ValueError, OverflowError):
        return []


def backup_name(prefix: str, index: int, run: dt.datetime) -> str:
    """A backup's name: ``<prefix>-<index>-<YYYYmmdd-HHMMSS>`` (the run time, UTC): one name per run."""
    return f"{prefix}-{index}-{run.astimezone(dt.UTC).strftime(_STAMP)}"


def own(obj: Mapping[str, Any], backup: Mapping[str, Any]) -> bool:
    """Whether ``backup`` is one the schedule ``obj`` made: in its namespace, with both schedule labels
    naming it, and a name ``<prefix>-<index>-<YYYYmmdd-HHMMSS>`` of its prefix."""
    meta, bmeta = obj.get("metadata") or {}, backup.get("metadata") or {}
    labels = bmeta.get("labels") or {}
    if bmeta.get("namespace") != meta.get("namespace") or not isinstance(labels, Mapping):
        return False
    if labels.get(names.LABEL_SCHEDULE_NAME) != meta.get("name") or \
            labels.get(names.LABEL_SCHEDULE_NAMESPACE) != meta.get("namespace"):
        return False
    prefix = prefix_of(obj)
    name = str(bmeta.get("name") or "")
    return name.startswith(prefix + "-") and re.fullmatch(r"\d{1,9}-\d{8}-\d{6}", name[len(prefix) + 1:]) is not None


# ---- retention -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Retention:
    """What the retention decides: the backups to delete, how many are kept, and the next delete times of
    the kept ones that expire first (``namespace/name`` -> RFC 3339)."""

    delete: tuple[Mapping[str, Any], ...]
    kept: int
    next_delete_times: dict[str, str]


def _created(backup: Mapping[str, Any]) -> dt.datetime:
    return parse_time((backup.get("metadata") or {}).get("creationTimestamp")) or dt.datetime.max.replace(tzinfo=dt.UTC)


def retention(backups: Sequence[Mapping[str, Any]], spec: Mapping[str, Any], now: dt.datetime) -> Retention:
    """The retention of ``deleteBackups.go`` over the schedule's own backups: newest first (by creation,
    then name), a backup is deleted when it is older than ``maxRetentionDays`` (default 375) or is the
    next Ready one beyond ``maxReadyBackups`` (100) or Failed one beyond ``maxFailedBackups`` (5); the others
    are counted and kept. Backups already being deleted are neither deleted again nor counted as kept."""
    days = _positive(spec.get("maxRetentionDays"), 375)
    max_ready = _positive(spec.get("maxReadyBackups"), 100)
    max_failed = _positive(spec.get("maxFailedBackups"), 5)
    keep_for = dt.timedelta(days=days)
    ordered = sorted((b for b in backups if not (b.get("metadata") or {}).get("deletionTimestamp")),
                     key=lambda b: (_created(b), str((b.get("metadata") or {}).get("name"))), reverse=True)
    ready = failed = 0
    delete: list[Mapping[str, Any]] = []
    kept: list[Mapping[str, Any]] = []
    for backup in ordered:
        state = str((backup.get("status") or {}).get("state") or "")
        if now - _created(backup) > keep_for or (state == names.STATE_READY and ready >= max_ready) or \
                (state == "Failed" and failed >= max_failed):
            delete.append(backup)
            continue
        ready += state == names.STATE_READY
        failed += state == "Failed"
        kept.append(backup)
    first = sorted(kept, key=lambda b: (_created(b), str((b.get("metadata") or {}).get("name"))))[:MAX_SCHEDULES]
    times = {f"{b['metadata'].get('namespace', '')}/{b['metadata'].get('name', '')}": fmt(_created(b) + keep_for)
             for b in first if _created(b).year < 9000}
    return Retention(tuple(delete), len(kept), times)


def _positive(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else default


# ---- the plan --------------------------------------------------------------------------------------------

def _ref(backup: Mapping[str, Any]) -> dict[str, str]:
    meta = backup.get("metadata") or {}
    return {"name": str(meta.get("name") or ""), "namespace": str(meta.get("namespace") or "")}


def _in_progress(seen: Seen) -> Mapping[str, Any] | None:
    """The backup created last when it is listed, not being deleted, and neither Ready, Failed nor Error (an
    Error backup is settled for the schedule: waiting for it would stop the schedule for good)."""
    last = (seen.obj.get("status") or {}).get("lastCreatedBackup") or {}
    name = str(last.get("name") or "") if isinstance(last, Mapping) else ""
    for backup in seen.backups:
        meta = backup.get("metadata") or {}
        if name and meta.get("name") == name and not meta.get("deletionTimestamp"):
            state = str((backup.get("status") or {}).get("state") or "")
            return None if state in (names.STATE_READY, "Failed", names.STATE_ERROR) else backup
    return None


def _deleting(seen: Seen, run: StepBuilder, t: Callable[[float], float]) -> Outcome:
    if not has_finalizer(seen.obj, names.FINALIZER):
        return Outcome()
    if not (seen.obj.get("spec") or {}).get("deleteCascade") or not seen.backups:
        return run.step(remove_finalizer=names.FINALIZER)
    writes = [Action.named("delete", seen.kind.backup, m["name"], m["namespace"]) for b in seen.backups
              if not (b.get("metadata") or {}).get("deletionTimestamp") for m in [_ref(b)]]
    run.set(state=STATE_DELETING, conditions=None)
    wait = CASCADE_WAIT if writes else CASCADE_GONE_WAIT  # only backups already deleting: look less often
    return run.step(requeue_after=t(wait), refused=_ignore).also(*writes)


def _ignore(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
    return None  # a delete the API server refused is tried again at the next turn (as the original)


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now_text: str) -> Outcome:
    """One turn of a backup schedule (see the module doc). ``new_id`` is unused (a schedule has no KCP
    mirror); ``t`` scales the waits that are not run times (the run times are wall clock); the clock is
    the read's (:attr:`Seen.now`), ``now_text`` only stamps conditions."""
    obj = seen.obj
    run = StepBuilder(obj, now_text)
    if run.deleting:
        return _deleting(seen, run, t)
    add = None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER
    now = utc(seen.now)
    spec, status = run.spec, run.status
    one_time = not str(spec.get("schedule") or "")
    if status.get("state") == STATE_DONE:
        return run.step(add_finalizer=add)
    end = parse_time(spec.get("endTime"))
    if end is not None and end < now:
        return run.set(state=STATE_DONE, nextRunTimes=None).step(add_finalizer=add)
    if one_time and status.get("lastCreateRun") and not int(status.get("backupCount") or 0):
        return run.set(state=STATE_DONE, nextRunTimes=None).step(add_finalizer=add)
    if spec.get("suspend"):
        return run.set(state=STATE_SUSPENDED, nextRunTimes=None, nextDeleteTimes=None).step(add_finalizer=add)
    if quota_exceeded(obj, seen.everyone, seen.quota):
        run.exclusive(names.COND_QUOTA_EXCEEDED, True, names.REASON_QUOTA_EXCEEDED,
                      f"Maximum number of {seen.quota} resources exceeded", STATE_ERROR)
        return run.step(add_finalizer=add)
    problem = validate(obj, now)
    if problem is not None:
        return _with(run.fail(*problem), add)
    if status.get("state") in (STATE_ERROR, STATE_SUSPENDED, None, "") or \
            any(c.get("type") in (names.COND_ERROR, names.COND_QUOTA_EXCEEDED) for c in run.conditions):
        run.set(state=STATE_ACTIVE, conditions=None)  # valid again: an old error goes
    times = status.get("nextRunTimes")
    if not isinstance(times, list) or not times or (not one_time and spec.get("schedule") != status.get("schedule")):
        times = next_run_times(obj, now)
        run.set(state=STATE_ACTIVE, nextRunTimes=times, schedule=None if one_time else spec.get("schedule"))
    first = parse_time(times[0]) if times else None
    if first is None:
        run.exclusive(names.COND_ERROR, True, REASON_TIME_PARSE if times else "ScheduleError",
                      "BackupSchedule has no valid next run time", STATE_ERROR)
        return run.step(add_finalizer=add)
    wait = (first - now).total_seconds()
    if wait > TOLERANCE:
        return run.step(add_finalizer=add, requeue_after=wait)
    return _run(seen, run, add, first, now, t)


def _run(seen: Seen, run: StepBuilder, add: str | None, at: dt.datetime, now: dt.datetime,
         t: Callable[[float], float]) -> Outcome:
    """The run due at ``at`` (module doc, step 8)."""
    obj, kind = seen.obj, seen.kind
    spec, status = run.spec, run.status
    one_time = not str(spec.get("schedule") or "")
    last_create = parse_time(status.get("lastCreateRun"))
    created = last_create == at or (one_time and last_create is not None)
    if created and parse_time(status.get("lastDeleteRun")) == at:  # this run is over: the next ones
        return _advance(run, add, now)
    if not seen.loaded:
        return run.step(add_finalizer=add, requeue_after=0.1)  # read again: this turn did not load them
    writes: list[Write] = []
    count = 0
    if not created:
        namespace, name = source_ref(obj)
        if seen.source is None:
            return _with(run.fail(REASON_NOT_FOUND, "Error loading SourceRef", requeue_after=t(SOURCE_WAIT)), add)
        ready = [c for c in (seen.source.get("status") or {}).get("conditions") or []
                 if isinstance(c, Mapping) and c.get("type") == names.COND_READY]
        if not ready or ready[0].get("status") != "True":
            return _with(run.fail(REASON_NOT_READY, "SourceRef is not ready", requeue_after=t(SOURCE_WAIT)), add)
        waiting = _in_progress(seen)
        if waiting is not None:
            ref = _ref(waiting)
            state = str((waiting.get("status") or {}).get("state") or "") or "none"
            run.exclusive(names.COND_WARNING, True, REASON_IN_PROGRESS,
                          f"The run due at {fmt(at)} waits for backup {ref['namespace']}/{ref['name']} "
                          f"(state {state}) to be Ready or Failed", STATE_ACTIVE)
            return run.step(add_finalizer=add, requeue_after=t(IN_PROGRESS_WAIT))
        index = int(status.get("backupIndex") or 0) + 1
        bname = backup_name(prefix_of(obj), index, at)
        meta = obj.get("metadata") or {}
        bns = str(meta.get("namespace") or "")
        backup = {"apiVersion": kind.backup.api_version, "kind": kind.backup.kind,
                  "metadata": {"name": bname, "namespace": bns,
                               "labels": {names.LABEL_SCHEDULE_NAME: str(meta.get("name") or ""),
                                          names.LABEL_SCHEDULE_NAMESPACE: bns}},
                  "spec": kind.spec(spec, namespace, name)}
        listed = any((b.get("metadata") or {}).get("name") == bname for b in seen.backups)
        if not listed:
            writes.append(Action.on("create", kind.backup, backup))
            count = 1
        run.set(backupIndex=index, lastCreateRun=fmt(at),
                lastCreatedBackup={"kind": kind.backup.kind, "namespace": bns, "name": bname})
    kept = retention(seen.backups, spec, now)
    writes += [Action.named("delete", kind.backup, m["name"], m["namespace"]) for b in kept.delete for m in [_ref(b)]]
    count += kept.kept
    run.set(state=STATE_ACTIVE, conditions=None, lastDeleteRun=fmt(at), backupCount=count,
            lastDeletedBackups=[_ref(b) for b in kept.delete] or None, nextDeleteTimes=kept.next_delete_times or None)
    if one_time and count == 0:
        return run.set(state=STATE_DONE, nextRunTimes=None).step(add_finalizer=add).also(*writes)
    return _advance(run, add, now, refused=_create_refused(run, t)).also(*writes)


def _advance(run: StepBuilder, add: str | None, now: dt.datetime, **kwargs: Any) -> Outcome:
    """The next run times after ``now`` (over the status as this turn leaves it), and back at the first."""
    after = {**run.obj, "status": {**run.status, **run.changes}}
    times = next_run_times(after, now)
    run.set(nextRunTimes=times or None)
    first = parse_time(times[0]) if times else None
    wait = max(0.0, (first - now).total_seconds()) if first is not None else None
    return run.step(add_finalizer=add, requeue_after=wait, **kwargs)


def _with(outcome: Outcome, add: str | None) -> Outcome:
    """``outcome`` that also adds the finalizer ``add``."""
    return replace(outcome, add_finalizer=add)


def _create_refused(run: StepBuilder,
                    t: Callable[[float], float]) -> Callable[[Write, Failure, Sequence[Any]], Outcome | None]:
    """A create whose name exists is done (a retried or concurrent run made it); any other refused create
    is an Error with the API's words, back after 10 s (``createBackup.go``); a refused delete is tried
    again at the next run."""
    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        if not isinstance(write, Action) or write.verb != "create" or failure.code == "AlreadyExists" \
                or failure.status == 409:
            return None
        failed = StepBuilder(run.obj, run.now)
        return _with(failed.fail(REASON_CREATE_FAILED, failure.message or failure.text or str(failure),
                                 requeue_after=t(SOURCE_WAIT)), None)
    return refused
