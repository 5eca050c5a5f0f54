"""The SKR GcpNfsVolumeBackup plan: one turn's decision over what was read (pure).

As cloud-manager's ``pkg/skr/gcpnfsvolumebackup/v2`` (no KCP mirror: the Filestore calls are this plan's
writes, made by the connect's executor through :class:`~tasks.cloud.gcp.nfsbackup_client.FileBackupClient`).
In the original's order:

1. a ``Failed`` backup is left alone (``StopAndForget``); an ``Error`` one of a schedule
   (``scheduleName`` label) with a newer backup of that schedule becomes ``Failed`` (``BackupFailed``
   ``Backup moved to Failed state as more recent backup(s) is available.``, ``markFailed``);
2. a ``Ready`` backup whose ``status.accessibleFrom`` and ``fileStoreBackupLabels`` are current is not
   looked at again before its capacity is due (``lastCapacityUpdate`` older than the capacity interval,
   1 h: ``GcpCapacityCheckInterval``): no provider request (:func:`needs_provider`);
3. the finalizer; the id: ``status.id`` a fresh UUID and ``status.location`` = ``spec.location`` or the
   Scope's region, written before the create (so a lost status write never makes two backups); an id that
   is not a UUID is an Error ``InvalidId`` (ownership before action: never part of a request path);
4. the operation of ``status.opIdentifier``: running -> come back; gone -> Error ``GCPError`` (identifier
   cleared); failed -> Error ``GCPError`` ``Operation failed``; done -> ``Deleted`` (deleting) or Ready
   ``Backup operation finished successfully: <op>``;
5. no backup: the source volume ``spec.source.volume`` (namespace: the backup's) of this SKR, Ready, whose
   KCP NfsInstance (found by the volume's ``status.id`` and checked by its owner labels) names the
   instance ``cm-<kcp name>`` in the mirror's location: else Error ``GCPError`` ``Error loading
   GcpNfsVolume`` / ``GcpNfsVolume is not ready`` (looked at again at the next connect, where the original
   comes back after the retry wait: a wait on another object holds no connect's window); then ``CreateBackup``
   ``cm-<id>`` in ``projects/<p>/locations/<status.location>`` with the share ``fileShareName`` and the
   labels of :func:`~tasks.cloud.gcp.nfsbackup_plan.labels_for`, state ``Creating``;
6. ``CREATING``: come back; a backup whose labels are not this object's own (``managed-by``,
   ``scope-name``, and the backup name / namespace labels when present) is ``NotOwned``: never patched or
   deleted; labels not current (``HasProperLabels``: a changed ``accessibleFrom``) -> ``UpdateBackup``
   of the labels, ``status.accessibleFrom`` the sorted list joined by ``,``;
7. Ready (``Backup is ready for use.``), ``capacity`` = ``storageBytes`` (binary SI) and
   ``lastCapacityUpdate`` when due, ``fileStoreBackupLabels`` the backup's labels.

Deleting: ``DeleteBackup`` of the backup (state ``Deleting``) when it is this object's own, wait until it is
gone, then the finalizer. A refused call or read: transient -> back after the retry wait; else Error
``GCPError`` with the API's message, back after the retry wait.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.calls import KwCall, with_calls
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.ownership import REASON_INVALID_ID, REASON_NOT_OWNED, invalid_id
from tasks.cloud.step import StepBuilder

__all__ = ["CAPACITY_INTERVAL", "KINDS", "Seen", "capacity_due", "needs_provider", "plan", "quantity",
           "short_circuit"]

Timing = Callable[[float], float]
#: The SKR resource (GCP SKRs only).
KINDS = {"gcp": names.GCP_NFS_VOLUME_BACKUP}
REASON_GCP_ERROR = "GCPError"
REASON_BACKUP_FAILED = "BackupFailed"
STATE_FAILED = "Failed"
STATE_DELETED = "Deleted"
READY_MESSAGE = "Backup is ready for use."
#: Seconds between two reads of a Ready backup's size (``GcpCapacityCheckInterval``).
CAPACITY_INTERVAL = 3600.0


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the GcpNfsVolumeBackup.
        scope: the runtime's KCP Scope.
        volume: the source GcpNfsVolume of this SKR (``None``: none, or not read: a backup exists).
        instance: the Filestore instance of that volume, from its own KCP NfsInstance (``None``: none).
        file_share: the volume's ``spec.fileShareName``.
        backup: the Filestore backup ``cm-<id>`` (``None``: none or not read).
        operation: the operation of ``status.opIdentifier`` (``None``: none or gone).
        failure: a refused provider read (the plan's Error), ``None`` for none.
        newer: a later backup of the same schedule exists (``markFailed``).
        retry: the GCP retry wait, seconds (unscaled).
        everyone, quota: the SKR's backups and their quota (``None``: unlimited).
    """

    obj: Mapping[str, Any]
    scope: Mapping[str, Any]
    volume: Mapping[str, Any] | None = None
    instance: str | None = None
    file_share: str = ""
    backup: Mapping[str, Any] | None = None
    operation: Mapping[str, Any] | None = None
    failure: Failure | None = None
    newer: bool = False
    retry: float = 5.0
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=list)
    quota: int | None = None


def _parse(ts: str) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def capacity_due(obj: Mapping[str, Any], now: str) -> bool:
    """Whether the backup's size is to be read again (``isTimeForCapacityUpdate``)."""
    last = _parse(str((obj.get("status") or {}).get("lastCapacityUpdate") or ""))
    at = _parse(now)
    return last is None or at is None or (at - last).total_seconds() > CAPACITY_INTERVAL


def _joined(obj: Mapping[str, Any]) -> str:
    return ",".join(fs.accessible_from(obj))


def _status_labels_current(obj: Mapping[str, Any], scope: Mapping[str, Any]) -> bool:
    """``HasAllStatusLabels``: ``status.fileStoreBackupLabels`` are what the backup's labels should be."""
    have = (obj.get("status") or {}).get("fileStoreBackupLabels")
    if not isinstance(have, Mapping):
        return False
    want = fs.labels_for(scope, obj, have)
    return dict(have) == want


def short_circuit(obj: Mapping[str, Any], scope: Mapping[str, Any], now: str) -> bool:
    """``ShouldShortCircuit``: Ready, ``accessibleFrom`` unchanged, capacity not due, status labels current."""
    status = obj.get("status") or {}
    return (status.get("state") == names.STATE_READY and str(status.get("accessibleFrom") or "") == _joined(obj)
            and not capacity_due(obj, now) and _status_labels_current(obj, scope))


def needs_provider(obj: Mapping[str, Any], scope: Mapping[str, Any], now: str) -> bool:
    """Whether this turn reads Filestore at all (the read asks; the plan decides the same way)."""
    meta = obj.get("metadata") or {}
    state = str((obj.get("status") or {}).get("state") or "")
    if meta.get("deletionTimestamp"):
        return has_finalizer(obj, names.FINALIZER)
    return state != STATE_FAILED and not short_circuit(obj, scope, now)


_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def quantity(size: int) -> str:
    """``size`` bytes as Kubernetes prints a binary-SI quantity (``resource.NewQuantity(size, BinarySI)``):
    the largest exact power-of-1024 suffix, else the plain number."""
    for suffix, unit in _SUFFIXES:
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def _owned(backup: Mapping[str, Any], obj: Mapping[str, Any], scope: Mapping[str, Any]) -> bool:
    """Whether the Filestore ``backup`` is this object's: managed by us for this Scope, and (when it
    carries them) labelled with this object's name and namespace."""
    labels = backup.get("labels") or {}
    if not isinstance(labels, Mapping):
        return False
    want = fs.labels_for(scope, obj)  # the values as labels hold them (lower case, bounded)
    return (labels.get(fs.MANAGED_BY_KEY) == fs.MANAGED_BY and bool(want[fs.SCOPE_NAME_KEY])
            and labels.get(fs.SCOPE_NAME_KEY) == want[fs.SCOPE_NAME_KEY]
            and all(labels.get(key, want[key]) == want[key] for key in (fs.BACKUP_NAME_KEY, fs.BACKUP_NAMESPACE_KEY)))


def _call(run: StepBuilder, t: Timing, seen: Seen, step: Outcome, method: str, *, operation: bool = True,
          **kwargs: Any) -> Outcome:
    """``step`` after ``FileBackupClient.<method>(**kwargs)`` (its operation's name to ``opIdentifier``);
    refused: transient -> back after the retry wait; else Error ``GCPError`` with the API's message (state
    Error), back after the retry wait."""
    call = KwCall(method, kwargs, "", REASON_GCP_ERROR, with_cause=True, retry=seen.retry)
    return with_calls(run, t, step, [call], operation=operation, transient=seen.retry)


def _failed_read(run: StepBuilder, seen: Seen, t: Timing) -> Outcome:
    assert seen.failure is not None
    if seen.failure.retryable:
        return run.step(requeue_after=t(seen.retry))
    return run.fail(REASON_GCP_ERROR, seen.failure.message, requeue_after=t(seen.retry))


def _operation(run: StepBuilder, seen: Seen, t: Timing) -> Outcome | None:
    """Step 4: an Outcome to stop with, or ``None`` to go on."""
    op_name = str(run.status.get("opIdentifier") or "")
    if not op_name:
        return None
    op = seen.operation
    if op is None:
        run.set(opIdentifier=None)
        return run.fail(REASON_GCP_ERROR, f"operation {op_name} not found", requeue_after=t(seen.retry))
    if not op.get("done"):
        return run.step(requeue_after=t(seen.retry))
    run.set(opIdentifier=None)
    if op.get("error"):
        return run.fail(REASON_GCP_ERROR, "Operation failed")
    if run.status.get("state") == names.STATE_DELETING:
        run.set(state=STATE_DELETED, conditions=[])
        return None
    run.exclusive(names.COND_READY, True, names.REASON_READY,
                  f"Backup operation finished successfully: {op_name}", names.STATE_READY)
    return None


def plan(seen: Seen, new_id: str, t: Timing, now: str) -> Outcome:
    """One turn of the backup (see the module doc)."""
    obj, scope = seen.obj, seen.scope
    run = StepBuilder(obj, now)
    finalized = has_finalizer(obj, names.FINALIZER)
    if run.deleting:
        return _delete(seen, run, t) if finalized else Outcome()
    state = str(run.status.get("state") or "")
    if state == STATE_FAILED:  # 1
        return Outcome()
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if state == names.STATE_ERROR and labels.get(names.LABEL_SCHEDULE_NAME) and seen.newer:
        error = cond.find(run.conditions, names.COND_ERROR)
        message = "Backup moved to Failed state as more recent backup(s) is available."
        if error is not None and error.get("message"):
            message = f"{error['message']}\n{message}"
        return run.fail(REASON_BACKUP_FAILED, message, state=STATE_FAILED)
    if short_circuit(obj, scope, now):  # 2
        return Outcome()
    add = None if finalized else names.FINALIZER  # 3
    ident = str(run.status.get("id") or "")
    if not ident:
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return over
        where = str((obj.get("spec") or {}).get("location") or "") or str((scope.get("spec") or {}).get("region") or "")
        run.set(id=new_id, location=where, conditions=[])
        return run.step(add_finalizer=add, requeue_after=t(0.1))
    if invalid_id(ident) is not None:
        return run.fail(REASON_INVALID_ID, f"GcpNfsVolumeBackup {invalid_id(ident)}")
    name = fs.backup_path(fs.project(scope), str(run.status.get("location") or ""), fs.backup_id(ident))
    if name is None:
        return run.fail(REASON_GCP_ERROR, f"invalid backup location {run.status.get('location')!r}")
    if seen.failure is not None:
        return _failed_read(run, seen, t)
    stop = _operation(run, seen, t)  # 4
    if stop is not None:
        return Outcome(status=stop.status, event=stop.event, add_finalizer=add, requeue_after=stop.requeue_after)
    backup = seen.backup
    if backup is None:  # 5
        if run.status.get("opIdentifier"):
            return run.step(add_finalizer=add, requeue_after=t(seen.retry))
        if seen.volume is None:
            return _volume_error(run, seen, t, "Error loading GcpNfsVolume", add)
        if not cond.is_true(list((seen.volume.get("status") or {}).get("conditions") or []), names.COND_READY) \
                or seen.instance is None:
            return _volume_error(run, seen, t, "GcpNfsVolume is not ready", add)
        parent, _, bid = name.rpartition("/backups/")
        body = {"sourceInstance": seen.instance, "sourceFileShare": seen.file_share,
                "labels": fs.labels_for(scope, obj)}
        run.set(state=names.STATE_CREATING, conditions=[])
        return _call(run, t, seen, run.step(add_finalizer=add, requeue_after=t(seen.retry)), "create_backup",
                     parent=parent, backup_id=bid, backup=body)
    if not _owned(backup, obj, scope):  # 6
        return run.fail(REASON_NOT_OWNED, f"Filestore backup {name} is not this GcpNfsVolumeBackup's")
    backup_state = str(backup.get("state") or "")
    if backup_state == "CREATING":
        return run.step(add_finalizer=add, requeue_after=t(seen.retry))
    current = {str(k): str(v) for k, v in (backup.get("labels") or {}).items()}
    want = fs.labels_for(scope, obj, current)
    if current != want:
        run.set(accessibleFrom=_joined(obj))
        return _call(run, t, seen, run.step(add_finalizer=add, requeue_after=t(seen.retry)), "update_backup_labels",
                     name=name, labels=want)
    if str(run.status.get("accessibleFrom") or "") != _joined(obj):
        run.set(accessibleFrom=_joined(obj))
    if backup_state != "READY":
        return run.step(add_finalizer=add, requeue_after=t(seen.retry))
    fields: dict[str, Any] = {}  # 7
    if capacity_due(obj, now):
        fields.update(capacity=quantity(int(backup.get("storageBytes") or 0)), lastCapacityUpdate=now)
    if dict(run.status.get("fileStoreBackupLabels") or {}) != current:
        fields["fileStoreBackupLabels"] = current
    ready = cond.find(run.conditions, names.COND_READY)
    message = str(ready.get("message")) if ready is not None and ready.get("status") == "True" else READY_MESSAGE
    run.exclusive(names.COND_READY, True, names.REASON_READY, message, names.STATE_READY, **fields)
    return run.step(add_finalizer=add)


def _volume_error(run: StepBuilder, seen: Seen, t: Timing, message: str, add: str | None) -> Outcome:
    failed = run.fail(REASON_GCP_ERROR, message)  # another object's state: looked at again at the next connect
    return Outcome(status=failed.status, event=failed.event, add_finalizer=add, requeue_after=failed.requeue_after)


def _delete(seen: Seen, run: StepBuilder, t: Timing) -> Outcome:
    """Deleting: the backup goes (only this object's own), then the finalizer."""
    obj, scope = seen.obj, seen.scope
    ident = str(run.status.get("id") or "")
    name = fs.backup_path(fs.project(scope), str(run.status.get("location") or ""), fs.backup_id(ident)) \
        if ident and invalid_id(ident) is None else None
    if name is None:
        return run.step(remove_finalizer=names.FINALIZER)
    if seen.failure is not None:
        return _failed_read(run, seen, t)
    stop = _operation(run, seen, t)
    if stop is not None and seen.backup is not None:
        return stop
    backup = seen.backup
    if backup is None or not _owned(backup, obj, scope):
        return run.step(remove_finalizer=names.FINALIZER)
    run.set(state=names.STATE_DELETING)
    if str(backup.get("state") or "") == "DELETING" or run.status.get("opIdentifier"):
        return run.step(requeue_after=t(seen.retry))
    return _call(run, t, seen, run.step(requeue_after=t(seen.retry)), "delete_backup", name=name)
