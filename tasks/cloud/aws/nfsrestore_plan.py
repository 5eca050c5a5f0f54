"""The SKR AwsNfsVolumeRestore plan: an AWS Backup restore job of an AwsNfsVolumeBackup's recovery point into
its source volume's EFS file system, in place (pure; cloud-manager's ``pkg/skr/awsnfsvolumerestore``). No KCP
mirror: the calls go to AWS Backup in the Scope's region (:class:`tasks.cloud.aws.nfsbackup_client.Backup`).

:func:`plan` decides over :class:`Seen` (provider reads as the plan needs them,
:func:`tasks.cloud.calls.need`). One turn, in the original's order (``reconciler.go``):

0. ``Done`` / ``Failed`` (``CompletedRestorePredicate``): the finalizer goes, nothing more; deleting before
   that: the finalizer goes too (a restore job cannot be stopped);
1. the quota of a new restore (no job yet; default 5, the original has none): ``QuotaExceeded``; the
   finalizer;
2. ``loadSkrAwsNfsVolumeBackup``: the backup ``spec.source.backup`` (namespace: the restore's) missing ->
   Error ``MissingNfsVolumeBackup`` ``AwsNfsVolumeBackup <ns>/<name> does not exist``; not Ready -> Error
   ``NfsVolumeBackupNotReady`` ``The AwsNfsVolumeBackup is not ready``;
3. ``loadSkrAwsNfsVolume``: the backup's volume (namespace: the backup's) missing -> Error
   ``MissingNfsVolume``; not Ready -> Error ``NfsVolumeNotReady`` ``The AwsNfsVolume is not ready``; its own
   KCP NfsInstance missing -> Error ``MissingNfsVolume`` ``NfsInstance <id> does not exist`` (each: nothing
   more until the next connect);
4. ``setIdempotencyToken``: a fresh UUID in ``status.idempotencyToken``, written before the job starts;
5. ``startAwsRestore``: no ``jobId`` -> ``GetRecoveryPointRestoreMetadata`` of the backup's recovery point in
   the runtime's vault (refused -> Error with AWS's words, nothing more), then ``StartRestoreJob`` (type
   ``EFS``, the backup role, the token, the metadata with ``newFileSystem=false`` and ``file-system-id`` = the
   volume's file system); ``status.jobId``, state ``InProgress``;
6. ``checkRestoreJob``: ``DescribeRestoreJob``: ``COMPLETED`` -> ``Done``, Ready ``Restore Job completed
   successfully``, ``status.restoredDir`` and the finalizer goes; ``FAILED`` -> ``Failed``, Error ``Restore Job
   failed: <message>``; ``ABORTED`` -> ``Failed`` ``Restore Job aborted: <message>``; not found -> ``Failed``;
   else back in 1 s.

Deliberate differences: the backup's volume namespace falls back to the backup's namespace (the original
uses the restore's); ``file-system-id`` is set to the volume's own file system (the original trusts the
metadata); ``status.restoredDir`` is filled (declared, never set by the original): AWS restores in place into
``aws-backup-restore_<datetime>`` off the root, the job's creation time as ``YYYY-MM-DDTHH-MM-SS``; the
not-ready message names the backup (the original's says ``The AwsNfsVolume is not ready``). Like the original,
AWS restores of one volume may run side by side (each into its own directory).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.aws.nfsbackup_plan import (
    JOB_POLL,
    REASON_MISSING_NFS_VOLUME,
    REASON_NFS_VOLUME_NOT_READY,
    Where,
    backup_role_arn,
    is_aws_id,
    recovery_point_arn,
    volume_ref,
)
from tasks.cloud.calls import UNREAD, KwCall, need, with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["REASON_BACKUP_NOT_READY", "REASON_MISSING_BACKUP", "STATE_DONE", "STATE_FAILED", "STATE_IN_PROGRESS",
           "Seen", "backup_ref", "finished", "plan", "restored_dir"]

Timing = Callable[[float], float]

STATE_DONE = "Done"
STATE_FAILED = "Failed"
STATE_IN_PROGRESS = "InProgress"
REASON_MISSING_BACKUP = "MissingNfsVolumeBackup"
REASON_BACKUP_NOT_READY = "NfsVolumeBackupNotReady"
DONE_MESSAGE = "Restore Job completed successfully"
_COMPLETED = (STATE_DONE, STATE_FAILED)


@dataclass(frozen=True)
class Seen:
    """What one turn decides over.

    Attributes:
        obj: the AwsNfsVolumeRestore as read.
        where: its runtime (:class:`~tasks.cloud.aws.nfsbackup_plan.Where`).
        backup: the SKR AwsNfsVolumeBackup it names (``None``: missing).
        volume: the backup's SKR AwsNfsVolume (``None``: missing).
        instance: that volume's own KCP NfsInstance (``None``: missing or not the volume's).
        everyone, quota: the SKR's restores and the quota (``None``: unlimited).
        metadata: ``GetRecoveryPointRestoreMetadata``; job: ``DescribeRestoreJob`` (``None``: not found).
            Both :data:`~tasks.cloud.calls.UNREAD` until the plan needs them; a refused read is its
            :class:`~kube.refusal.Failure`.
    """

    obj: Mapping[str, Any]
    where: Where
    backup: Mapping[str, Any] | None = None
    volume: Mapping[str, Any] | None = None
    instance: Mapping[str, Any] | None = None
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=list)
    quota: int | None = None
    metadata: Any = UNREAD
    job: Any = UNREAD


def backup_ref(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace, name)`` of the backup the restore names (namespace: the restore's when not given)."""
    ref = ((obj.get("spec") or {}).get("source") or {}).get("backup") or {}
    return (str(ref.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""),
            str(ref.get("name") or ""))


def restored_dir(created: Any) -> str:
    """``aws-backup-restore_<YYYY-MM-DDTHH-MM-SS>`` of a restore job created at ``created`` (a datetime or an
    RFC 3339 string; ``""`` when unknown)."""
    if isinstance(created, str):
        try:
            created = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
        except ValueError:
            return ""
    if not isinstance(created, dt.datetime):
        return ""
    if created.tzinfo is not None:
        created = created.astimezone(dt.UTC)
    return f"aws-backup-restore_{created.strftime('%Y-%m-%dT%H-%M-%S')}"


def _get(answer: Any, key: str) -> Any:
    if isinstance(answer, Mapping):
        return answer.get(key)
    return getattr(answer, key, None)


def finished(obj: Mapping[str, Any]) -> bool:
    """``Done`` / ``Failed`` (``CompletedRestorePredicate``) or deleting: only the finalizer may still go (the
    reads skip everything else)."""
    return deleting(obj) or (obj.get("status") or {}).get("state") in _COMPLETED


def plan(seen: Seen, new_id: str, t: Timing, now: str) -> Outcome:
    """One turn of the restore (module doc). ``new_id``: the idempotency token to assign; ``t`` scales
    seconds; ``now``: RFC 3339."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    mine = has_finalizer(obj, names.FINALIZER)
    if finished(obj):  # 0
        return run.step(remove_finalizer=names.FINALIZER if mine else None)
    if not run.status.get("jobId") and (over := run.over_quota(seen.everyone, seen.quota)) is not None:  # 1
        return over
    outcome = _turn(seen, run, new_id, t)
    return outcome if mine else replace(outcome, add_finalizer=names.FINALIZER)


def _turn(seen: Seen, run: StepBuilder, new_id: str, t: Timing) -> Outcome:
    where, status = seen.where, run.status
    namespace, name = backup_ref(seen.obj)
    backup = seen.backup
    if backup is None:  # 2
        return run.fail(REASON_MISSING_BACKUP, f"AwsNfsVolumeBackup {namespace}/{name} does not exist")
    backup_status = backup.get("status") or {}
    if not cond.is_true(backup_status.get("conditions") or [], names.COND_READY):
        return run.fail(REASON_BACKUP_NOT_READY, "The AwsNfsVolumeBackup is not ready")
    point_id = str(backup_status.get("id") or "")
    if not is_aws_id(point_id):
        return run.fail(REASON_BACKUP_NOT_READY, "The AwsNfsVolumeBackup has no recovery point")
    vol_namespace, vol_name = volume_ref(backup)  # 3
    if seen.volume is None:
        return run.fail(REASON_MISSING_NFS_VOLUME, f"AwsNfsVolume {vol_namespace}/{vol_name} does not exist")
    if not cond.is_true((seen.volume.get("status") or {}).get("conditions") or [], names.COND_READY):
        return run.fail(REASON_NFS_VOLUME_NOT_READY, "The AwsNfsVolume is not ready")
    fs_id = str(((seen.instance or {}).get("status") or {}).get("id") or "")
    if seen.instance is None or not is_aws_id(fs_id):
        ident = str((seen.volume.get("status") or {}).get("id") or "")
        return run.fail(REASON_MISSING_NFS_VOLUME, f"NfsInstance {ident} does not exist")
    token = str(status.get("idempotencyToken") or "").strip()
    if not is_aws_id(token):  # 4 (one that is no token is replaced)
        run.set(idempotencyToken=new_id)
        return run.step(requeue_after=t(0.1))
    job_id = str(status.get("jobId") or "")
    if not job_id:  # 5
        metadata = need(seen, "metadata")
        if isinstance(metadata, Failure) or metadata is None:
            message = metadata.message if isinstance(metadata, Failure) else "no restore metadata"
            if isinstance(metadata, Failure) and metadata.retryable:
                return run.step(requeue_after=t(metadata.delay if metadata.delay is not None else 10.0))
            return run.fail(names.REASON_ERROR, message, state=names.STATE_ERROR)
        restore = {str(k): str(v) for k, v in dict(_get(metadata, "RestoreMetadata") or {}).items()}
        restore.update({"newFileSystem": "false", "file-system-id": fs_id})

        def started(answers: Sequence[Any]) -> Outcome:
            answer = answers[-1] if answers else None  # the job id (or an answer carrying ``RestoreJobId``)
            job = answer if isinstance(answer, str) else str(_get(answer, "RestoreJobId") or "")
            run.set(jobId=job or None, state=STATE_IN_PROGRESS, conditions=[])
            return run.step(requeue_after=t(1))

        call = KwCall("start_restore_job", {
            "recovery_point_arn": recovery_point_arn(where, where.region, point_id),
            "role_arn": backup_role_arn(where), "metadata": restore, "idempotency_token": token},
            "Error starting AWS Restore: ", names.REASON_ERROR, with_cause=True, retry=60.0)
        return replace(with_calls(run, t, run.step(requeue_after=t(1)), [call]), then=started)
    if not is_aws_id(job_id):
        return run.fail("InvalidId", f"status.jobId {job_id[:64]!r} is not an AWS id")
    job = need(seen, "job")  # 6
    if isinstance(job, Failure) and not job.not_found:
        return run.step(requeue_after=t(job.delay if job.retryable and job.delay is not None else 1.0))
    if job is None or isinstance(job, Failure):
        return run.fail(names.REASON_ERROR, f"Restore Job {job_id} does not exist", state=STATE_FAILED)
    state = str(_get(job, "Status") or "")
    message = str(_get(job, "StatusMessage") or "")
    if state == "COMPLETED":
        run.exclusive(names.COND_READY, True, names.REASON_READY, DONE_MESSAGE, STATE_DONE,
                      restoredDir=restored_dir(_get(job, "CreationDate")) or None)
        return run.step(remove_finalizer=names.FINALIZER)
    if state == "FAILED":
        return run.fail(names.REASON_ERROR, f"Restore Job failed: {message}", state=STATE_FAILED)
    if state == "ABORTED":
        return run.fail(names.REASON_ERROR, f"Restore Job aborted: {message}", state=STATE_FAILED)
    return run.step(requeue_after=t(JOB_POLL))
