"""The SKR GcpNfsVolumeRestore plan: one turn's decision over what was read (pure).

As cloud-manager's ``pkg/skr/gcpnfsvolumerestore/v2`` (no KCP mirror: ``RestoreInstance`` is this plan's
write, made by the connect's executor through :class:`~tasks.cloud.gcp.nfsbackup_client.FileBackupClient`).
In the original's order:

1. ``Done`` / ``Failed``: left alone (``StopAndForget``), but a lease still held (a turn that ended before
   ``releaseLease``) is released;
2. the finalizer;
3. the operation of ``status.opIdentifier``: running -> come back after the retry wait; gone -> Error
   ``NfsRestoreFailed`` (identifier cleared); failed -> ``Failed`` (``GCPError``, the operation's message);
   done -> ``Done``, Ready ``Restore operation finished successfully: <op>``; both release the lease;
4. the destination ``spec.destination.volume`` (namespace: the restore's) of this SKR, Ready, whose own KCP
   NfsInstance names the instance (:func:`tasks.cloud.skr.kind.mirror`): else Error ``MissingNfsVolume`` /
   ``NfsVolumeNotReady`` ``Error loading GcpNfsVolume`` (looked at again at the next connect, where the
   original comes back after the retry wait: a wait on another object holds no connect's window);
5. the source: ``source.backup`` (a GcpNfsVolumeBackup of this SKR, Ready: else Error
   ``MissingNfsVolumeBackup`` ``Error loading GcpNfsVolumeBackup`` / ``NfsVolumeBackupNotReady``
   ``GcpNfsVolumeBackup is not ready``) or ``source.backupUrl`` ``<location>/<backup>`` in the Scope's
   project (malformed: Error ``Error`` ``Invalid SourceBackupUrl format: ...``);
6. the ownership rule (``checkRestorePermissions``, also for a backup by reference, whose status an SKR
   can write): the Filestore backup is managed by Cloud Manager and this shoot's, or carries
   ``cm-allow-<shoot>`` / ``cm-allow-all``: else ``Failed`` ``Not allowed to restore from the specified
   backup`` (``Failed to get backup details for permission check`` when it cannot be read);
7. state ``Processing``; the lease ``restore-<volume>`` in the volume's namespace (holder
   ``<namespace>/<name>``, ``acquireLease``): held by another restore and not expired -> come back in 10 s;
8. a running restore of the instance found by listing its operations (``findRestoreOperation``, a restart
   after the call) -> its name to ``opIdentifier``;
9. ``RestoreInstance`` of the instance's share from the backup, state ``InProgress``, the operation's name
   to ``opIdentifier``; refused: transient -> back after the retry wait, else Error ``GCPError``.

Deleting: the lease is released (only this restore's), then the finalizer.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.resources as resources
import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.actions import Action, Write
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.calls import KwCall, with_calls
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.step import StepBuilder

__all__ = ["KINDS", "LEASE_DURATION", "Seen", "holder", "lease_name", "plan"]

Timing = Callable[[float], float]
KINDS = {"gcp": names.GCP_NFS_VOLUME_RESTORE}
STATE_DONE, STATE_FAILED, STATE_IN_PROGRESS = "Done", "Failed", "InProgress"
REASON_GCP_ERROR = "GCPError"
REASON_RESTORE_FAILED = "NfsRestoreFailed"
REASON_MISSING_VOLUME = "MissingNfsVolume"
REASON_VOLUME_NOT_READY = "NfsVolumeNotReady"
REASON_MISSING_BACKUP = "MissingNfsVolumeBackup"
REASON_BACKUP_NOT_READY = "NfsVolumeBackupNotReady"
NOT_ALLOWED = "Not allowed to restore from the specified backup"
NOT_READABLE = "Failed to get backup details for permission check"
#: Seconds a restore holds its volume's lease (``SkrLockingLeaseDuration``, 10 minutes).
LEASE_DURATION = 600
#: Seconds before a restore whose volume another one holds looks again (``util.Timing.T10000ms``).
LEASE_WAIT = 10.0


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the GcpNfsVolumeRestore.
        scope: the runtime's KCP Scope.
        volume: the destination GcpNfsVolume (``None``: none or not read).
        instance: its Filestore instance from its own KCP NfsInstance (``None``: none).
        file_share: its ``spec.fileShareName``.
        source: the GcpNfsVolumeBackup of ``source.backup`` (``None``: none or not read).
        backup: the Filestore backup the source names (``None``: none or not read).
        operation: the operation of ``status.opIdentifier`` (``None``: none or gone).
        running: a running restore of the instance (``findRestoreOperation``), ``None`` for none.
        lease: the volume's restore lease (``None``: none).
        failure: a refused provider read, ``None`` for none.
        retry: the GCP retry wait, seconds (unscaled).
        everyone, quota: the SKR's restores and their quota.
    """

    obj: Mapping[str, Any]
    scope: Mapping[str, Any]
    volume: Mapping[str, Any] | None = None
    instance: str | None = None
    file_share: str = ""
    source: Mapping[str, Any] | None = None
    backup: Mapping[str, Any] | None = None
    operation: Mapping[str, Any] | None = None
    running: Mapping[str, Any] | None = None
    lease: Mapping[str, Any] | None = None
    failure: Failure | None = None
    retry: float = 5.0
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=list)
    quota: int | None = None


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def destination(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace, name)`` of the destination volume (namespace: the restore's when unset)."""
    ref = (_spec(obj).get("destination") or {}).get("volume") or {}
    return str(ref.get("namespace") or _meta(obj).get("namespace") or ""), str(ref.get("name") or "")


def source_ref(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(namespace, name)`` of ``source.backup`` (``None``: a ``backupUrl`` restore)."""
    ref = (_spec(obj).get("source") or {}).get("backup") or {}
    if not ref.get("name"):
        return None
    return str(ref.get("namespace") or _meta(obj).get("namespace") or ""), str(ref["name"])


def lease_name(obj: Mapping[str, Any]) -> str:
    """``restore-<volume name>`` (``getLeaseName``)."""
    return f"restore-{destination(obj)[1]}"


def holder(obj: Mapping[str, Any]) -> str:
    """``<namespace>/<name>`` of the restore (``getHolderName``)."""
    return f"{_meta(obj).get('namespace') or ''}/{_meta(obj).get('name') or ''}"


def source_path(seen: Seen) -> tuple[str | None, tuple[str, str] | None]:
    """The full name of the backup to restore from, or ``(None, (reason, message))`` why there is none."""
    obj = seen.obj
    project = fs.project(seen.scope)
    if source_ref(obj) is not None:
        source = seen.source
        if source is None:
            return None, (REASON_MISSING_BACKUP, "Error loading GcpNfsVolumeBackup")
        if not cond.is_true(list((source.get("status") or {}).get("conditions") or []), names.COND_READY):
            return None, (REASON_BACKUP_NOT_READY, "GcpNfsVolumeBackup is not ready")
        status = source.get("status") or {}
        path = fs.backup_path(project, str(status.get("location") or ""), fs.backup_id(str(status.get("id") or "")))
        if path is None or not status.get("id"):
            return None, (REASON_BACKUP_NOT_READY, "GcpNfsVolumeBackup is not ready")
        return path, None
    url = str((_spec(obj).get("source") or {}).get("backupUrl") or "")
    path = fs.backup_url(project, url)
    if path is None:
        return None, (names.REASON_ERROR, "Invalid SourceBackupUrl format: " + fs.BACKUP_URL_MESSAGE % url)
    return path, None


def _parse(ts: Any) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return None


def _lease_free(lease: Mapping[str, Any] | None, me: str, now: str) -> bool:
    """Whether this restore may hold the lease: none, its own, or another's that expired."""
    if lease is None:
        return True
    spec = lease.get("spec") or {}
    if spec.get("holderIdentity") in (me, None, ""):
        return True
    renewed, at = _parse(spec.get("renewTime") or spec.get("acquireTime") or ""), _parse(now)
    duration = int(spec.get("leaseDurationSeconds") or LEASE_DURATION)
    return renewed is None or at is None or (at - renewed).total_seconds() > duration


def _micro(now: str) -> str:
    """``now`` as a Lease's MicroTime (``2026-11-28T11:00:00.000000Z``)."""
    at = _parse(now)
    return now if at is None else at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _acquire(seen: Seen, now: str) -> Write | None:
    """The write that takes or renews the lease (``None``: nothing to write)."""
    obj = seen.obj
    namespace, _ = destination(obj)
    spec = {"holderIdentity": holder(obj), "leaseDurationSeconds": LEASE_DURATION, "renewTime": _micro(now)}
    if seen.lease is None:
        return Action.on("create", resources.LEASE, {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": lease_name(obj), "namespace": namespace},
            "spec": {**spec, "acquireTime": _micro(now)}})
    body: dict[str, Any] = {"spec": spec}
    rv = _meta(seen.lease).get("resourceVersion")
    if rv:
        body["metadata"] = {"resourceVersion": rv}  # taken over only as read
    if (seen.lease.get("spec") or {}).get("holderIdentity") != holder(obj):
        body["spec"]["acquireTime"] = _micro(now)
    return Action.named("patch", resources.LEASE, lease_name(obj), namespace, body=body)


def _release(seen: Seen) -> tuple[Write, ...]:
    """The write that releases the lease when this restore holds it (``releaseLease``)."""
    lease = seen.lease
    if lease is None or (lease.get("spec") or {}).get("holderIdentity") != holder(seen.obj):
        return ()
    namespace, _ = destination(seen.obj)
    return (Action.named("delete", resources.LEASE, lease_name(seen.obj), namespace),)


def plan(seen: Seen, new_id: str, t: Timing, now: str) -> Outcome:
    """One turn of the restore (see the module doc)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    finalized = has_finalizer(obj, names.FINALIZER)
    if run.deleting:
        return Outcome(remove_finalizer=names.FINALIZER, writes=_release(seen)) if finalized else Outcome()
    state = str(run.status.get("state") or "")
    if state in (STATE_DONE, STATE_FAILED):  # 1
        return Outcome(writes=_release(seen))
    add = None if finalized else names.FINALIZER  # 2
    if state != STATE_IN_PROGRESS and not run.status.get("opIdentifier"):  # a new restore within the quota
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return over
    if seen.failure is not None:
        if seen.failure.retryable:
            return run.step(add_finalizer=add, requeue_after=t(seen.retry))
        return _with(run.fail(REASON_GCP_ERROR, seen.failure.message, requeue_after=t(seen.retry)), add)
    op_name = str(run.status.get("opIdentifier") or "")
    if op_name:  # 3
        op = seen.operation
        if op is None:
            run.set(opIdentifier=None)
            return _with(run.fail(REASON_RESTORE_FAILED, f"operation {op_name} not found",
                                  requeue_after=t(seen.retry)), add)
        if not op.get("done"):
            return run.step(add_finalizer=add, requeue_after=t(seen.retry))
        run.set(opIdentifier=None)
        error = op.get("error")
        if error:
            message = str((error or {}).get("message") or "restore failed")
            return _with(run.fail(REASON_GCP_ERROR, message, state=STATE_FAILED), add).also(*_release(seen))
        run.exclusive(names.COND_READY, True, names.REASON_READY,
                      f"Restore operation finished successfully: {op_name}", STATE_DONE)
        return run.step(add_finalizer=add).also(*_release(seen))
    volume = seen.volume  # 4
    if volume is None:
        return _with(run.fail(REASON_MISSING_VOLUME, "Error loading GcpNfsVolume"), add)
    if not cond.is_true(list((volume.get("status") or {}).get("conditions") or []), names.COND_READY) \
            or seen.instance is None:
        return _with(run.fail(REASON_VOLUME_NOT_READY, "Error loading GcpNfsVolume"), add)
    path, why = source_path(seen)  # 5
    if path is None:
        assert why is not None
        return _with(run.fail(*why), add)
    if not fs.allowed(seen.backup, seen.scope):  # 6
        message = NOT_ALLOWED if seen.backup is not None else NOT_READABLE
        return _with(run.fail(names.REASON_ERROR, message, state=STATE_FAILED), add)
    if not state:  # 7
        run.set(state=names.STATE_PROCESSING, conditions=[])
    if not _lease_free(seen.lease, holder(obj), now):
        return run.step(add_finalizer=add, requeue_after=t(LEASE_WAIT))
    lease = _acquire(seen, now)
    if seen.running is not None:  # 8
        run.set(opIdentifier=str(seen.running.get("name") or ""), state=STATE_IN_PROGRESS)
        return run.step(add_finalizer=add, requeue_after=t(seen.retry))
    run.set(state=STATE_IN_PROGRESS)  # 9
    call = KwCall("restore_instance", {"name": seen.instance, "file_share": seen.file_share, "source_backup": path},
                  "", REASON_GCP_ERROR, with_cause=True, retry=seen.retry)
    step = with_calls(run, t, run.step(add_finalizer=add, requeue_after=t(seen.retry)), [call], operation=True,
                      transient=seen.retry)
    if lease is None:
        return step
    inner = step.refused

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        if write is lease:  # another restore took it first: look again later
            return Outcome(requeue_after=t(LEASE_WAIT))
        return inner(write, failure, answers) if inner is not None else None

    return replace(step.first(lease), refused=refused)


def _with(outcome: Outcome, add: str | None) -> Outcome:
    """``outcome`` adding the finalizer first."""
    return Outcome(status=outcome.status, event=outcome.event, add_finalizer=add, requeue_after=outcome.requeue_after,
                   error=outcome.error, writes=outcome.writes)
