"""``reconcilery render gcpnfsbackupschedule`` / ``awsnfsbackupschedule``: what the SKR loop would do with NFS
backup schedules now, offline (pure).

Each GcpNfsBackupSchedule / AwsNfsBackupSchedule is run through one turn of its real plan
(:func:`tasks.cloud.skr.backupschedule_plan.plan`, cloud-manager's ``pkg/skr/backupschedule/v1``) at ``now``
(the current time by default), as the read (:mod:`tasks.cloud.skr.backupschedule`) would see it: the source
volume is the given manifest ``spec.nfsVolumeRef`` names (its namespace defaulting to the schedule's;
missing: ``NfsVolumeNotFound``; its ``Ready`` condition as written in the manifest decides
``NfsVolumeNotReady``), the backups are the given ones the schedule owns (its namespace, both schedule
labels, a name of its pattern: :func:`~tasks.cloud.skr.backupschedule_plan.own`), the quota counts the
schedules given. A manifest without a namespace is in ``default``. The status the turn leaves (the given
``status`` with the plan's merge patch) gives the row: its ``state`` (``Active``, ``Done``, ``Suspended``,
``Deleting`` or ``Error``), the next run times, the backup the turn would create (name and spec), the backups
the retention (or a cascading deletion) would delete, and the validation errors (``reason: message`` of an
Error/QuotaExceeded condition; a Warning such as ``BackupInProgress`` is shown too). The Scope is not used:
a schedule makes SKR objects only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube.toolkit.actions import Action
from tasks.cloud import names
from tasks.cloud.rendered import Rendered
from tasks.cloud.skr import backupschedule_plan as sp

__all__ = ["AWS_KINDS", "GCP_KINDS", "RenderedSchedule", "problems", "render_schedules"]

#: The manifests each command takes (schedules, their volumes, their existing backups).
GCP_KINDS = (names.GCP_NFS_BACKUP_SCHEDULE.kind, names.GCP_NFS_VOLUME.kind, names.GCP_NFS_VOLUME_BACKUP.kind)
AWS_KINDS = (names.AWS_NFS_BACKUP_SCHEDULE.kind, names.AWS_NFS_VOLUME.kind, names.AWS_NFS_VOLUME_BACKUP.kind)

_DEFAULT_NS = "default"
_PROBLEMS = (names.COND_ERROR, names.COND_QUOTA_EXCEEDED, names.COND_WARNING)


@dataclass(frozen=True)
class RenderedSchedule(Rendered):
    """One schedule's turn at ``now`` (module doc).

    Attributes:
        now: the turn's clock (RFC 3339).
        next_run_times: RFC 3339 times (status ``nextRunTimes`` as the turn leaves it; empty: none).
        create: the backup the turn would create: ``{"kind", "name", "namespace", "labels", "spec"}``
            (``None``: no run due, or the run waits).
        delete: ``namespace/name`` of each backup the turn would delete.
        errors: ``reason: message`` of each Error, QuotaExceeded or Warning condition.
        plan: the table's lines.
    """

    now: str = ""
    next_run_times: list[str] = field(default_factory=list)
    create: dict[str, Any] | None = None
    delete: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)


def _merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with the JSON merge patch ``patch`` (RFC 7386: ``None`` deletes, objects merge)."""
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _defaulted(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with ``metadata.namespace`` defaulted to ``default``."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "namespace": str(meta.get("namespace") or _DEFAULT_NS)}}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or _DEFAULT_NS), str(meta.get("name") or "")


def render_schedules(scope: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], kind: sp.BackupKind,
                     now: float | None = None) -> list[RenderedSchedule]:
    """One row per schedule of ``kind`` in ``docs`` (module doc); ``kind`` is the provider's part
    (:data:`tasks.cloud.skr.backupschedule.GCP` / ``AWS``, passed by the kind's declaration: this module
    stays pure); ``now``: epoch seconds (``None``: the current time). ``scope`` is unused (the command's
    shape)."""
    clock = time.time() if now is None else now
    now_text = sp.fmt(sp.utc(clock))
    schedules = [_defaulted(d) for d in docs if d.get("kind") == kind.schedule.kind]
    volumes = {_key(d): d for d in docs if d.get("kind") == kind.source.kind}
    backups = [_defaulted(d) for d in docs if d.get("kind") == kind.backup.kind]
    return [_render(obj, kind, clock, now_text, volumes, backups, schedules) for obj in schedules]


def problems(docs: Sequence[Mapping[str, Any]], kind: sp.BackupKind) -> list[str]:
    """Input the command cannot render (exit 2): a ``metadata``/``spec``/``status`` that is not an object,
    a ``status.conditions`` that is not a list of objects (the API server's schema rejects both in an SKR),
    or a schedule whose turn fails on other malformed fields (``TypeError``/``ValueError`` of the plan)."""
    out: list[str] = []
    for doc in docs:
        meta = doc.get("metadata")
        name = str(meta.get("name", "?")) if isinstance(meta, Mapping) else "?"
        bad = [part for part in ("metadata", "spec", "status") if not isinstance(doc.get(part) or {}, Mapping)]
        conditions = (doc.get("status") or {}).get("conditions") if not bad else None
        if conditions is not None and not (isinstance(conditions, list) and
                                           all(isinstance(c, Mapping) for c in conditions)):
            bad.append("status.conditions")
        out += [f"{doc.get('kind')} {name}: {part} must be " + ("a list of objects" if "." in part else "an object")
                for part in bad]
    if out:
        return out
    for doc in docs:
        if doc.get("kind") != kind.schedule.kind:
            continue
        try:
            render_schedules({}, [doc, *(d for d in docs if d.get("kind") != kind.schedule.kind)], kind)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            out.append(f"{doc.get('kind')} {_key(doc)[1]}: malformed ({type(exc).__name__}: {exc})")
    return out


def _render(obj: dict[str, Any], kind: sp.BackupKind, clock: float, now_text: str,
            volumes: Mapping[tuple[str, str], Mapping[str, Any]], backups: Sequence[Mapping[str, Any]],
            everyone: Sequence[Mapping[str, Any]]) -> RenderedSchedule:
    """The row of one schedule: one plan turn over what the read would find (module doc)."""
    name = str(obj["metadata"].get("name") or "")
    seen = sp.Seen(obj=obj, kind=kind, now=clock, loaded=True, source=volumes.get(sp.source_ref(obj)),
                   backups=tuple(b for b in backups if sp.own(obj, b)), everyone=everyone, quota=sp.QUOTA)
    outcome = sp.plan(seen, "", lambda seconds: seconds, now_text)
    status = _merge(obj.get("status") or {}, outcome.status or {})
    state = "Deleted" if outcome.remove_finalizer else str(status.get("state") or "") or "-"
    listed = status.get("nextRunTimes")
    times = [str(t) for t in listed] if isinstance(listed, list) else []
    errors = [f"{c.get('reason')}: {c.get('message')}" for c in status.get("conditions") or []
              if isinstance(c, Mapping) and c.get("type") in _PROBLEMS and c.get("status") == "True"]
    create: dict[str, Any] | None = None
    delete: list[str] = []
    plan: list[str] = []
    for write in outcome.writes:
        if not isinstance(write, Action):
            continue
        if write.verb == "create":
            meta = write.object.get("metadata") or {}
            create = {"kind": write.kind, "name": write.name, "namespace": write.namespace,
                      "labels": dict(meta.get("labels") or {}), "spec": write.object.get("spec") or {}}
            plan.append(f"create {write.kind} {write.namespace}/{write.name}: {_spec_text(create['spec'])}")
        elif write.verb == "delete":
            delete.append(f"{write.namespace}/{write.name}")
            why = "cascade" if state == sp.STATE_DELETING else "retention"
            plan.append(f"delete {write.kind} {write.namespace}/{write.name} ({why})")
    if create is None and (outcome.status or {}).get("lastCreatedBackup"):
        last = status["lastCreatedBackup"]  # the run's backup is already listed: nothing to create
        plan.append(f"backup {last.get('namespace')}/{last.get('name')} of this run exists")
    if times:
        plan.append("next runs " + ", ".join(times))
    if outcome.remove_finalizer:
        plan.append(f"remove finalizer {outcome.remove_finalizer}")
    outcome_text = "; ".join(errors) if errors else _summary(state, times, create, delete)
    return RenderedSchedule(name, kind.schedule.kind, state, outcome_text, now=now_text, next_run_times=times,
                            create=create, delete=delete, errors=errors, plan=plan)


def _spec_text(spec: Mapping[str, Any]) -> str:
    """A backup spec in one line: ``source ns/name[, location x][, accessibleFrom a,b]``."""
    volume = (spec.get("source") or {}).get("volume") or {}
    parts = [f"source {volume.get('namespace')}/{volume.get('name')}"]
    if spec.get("location"):
        parts.append(f"location {spec['location']}")
    if spec.get("accessibleFrom"):
        parts.append("accessibleFrom " + ",".join(str(a) for a in spec["accessibleFrom"]))
    return ", ".join(parts)


def _summary(state: str, times: list[str], create: Mapping[str, Any] | None, delete: list[str]) -> str:
    """The OUTCOME column of a schedule without a problem."""
    words: list[str] = []
    if create is not None:
        words.append(f"due: creates {create['name']}")
    if delete:
        words.append(f"deletes {len(delete)}")
    if times:
        words.append(f"next {times[0]}")
    return "; ".join(words) or state
