"""The SKR AwsNfsVolumeBackup plan: one AWS Backup job of an AwsNfsVolume's EFS file system into the
runtime's vault, copied into the vault of ``spec.location`` when that is another region (pure; cloud-manager's
``pkg/skr/awsnfsvolumebackup``). The kind has no KCP mirror: the plan's provider calls go straight to AWS
Backup with the Scope's credentials (methods of :class:`tasks.cloud.aws.nfsbackup_client.Backup`, the
original's ``client.Client`` in snake case, as :class:`~kube.toolkit.Call` s; the client ``""`` is the
Scope's region, a client named by a region is that region's).

:func:`plan` decides over :class:`Seen`; its provider reads are made as the plan needs them
(:func:`tasks.cloud.calls.need`: the reads of :mod:`tasks.cloud.skr.awsnfsbackup` fill what the decision
looks at, one at a time, all before any write). One turn, in the original's order
(``reconciler.go``):

1. ``shortCircuitCompleted``: ``Failed`` -> nothing more; ``Ready`` and the capacity not due
   (``status.lastCapacityUpdate`` younger than the capacity check interval, 1 h) -> back when it is due;
2. ``markFailed``: an ``Error`` backup of a schedule (labels ``scheduleName`` / ``scheduleNamespace``) with a
   newer backup of the same schedule -> ``Failed``, Error ``BackupFailed`` ``<previous error>\\nBackup moved to
   Failed state as more recent backup(s) is available.``, nothing more;
3. house rules: ``spec.location`` must look like an AWS region (``InvalidLocation``: it names the endpoint the
   copy's client talks to), ids in the status must look like AWS ids (``InvalidId``: they name request paths);
   the quota of a new backup (no job yet; none by default, as the original: a schedule keeps up to 100
   Ready backups; a configured one applies): ``QuotaExceeded``;
4. the finalizer; ``loadSkrAwsNfsVolume``: the volume ``spec.source.volume`` (namespace: the backup's) missing
   -> Error ``MissingNfsVolume`` ``AwsNfsVolume <ns>/<name> does not exist``; not Ready -> Error
   ``NfsVolumeNotReady`` ``The AwsNfsVolume is not ready``; ``loadKcpAwsNfsInstance``: the volume's own KCP
   NfsInstance (:func:`tasks.cloud.skr.kind.mirror`: its owner labels name this runtime and volume) missing
   -> Error ``MissingNfsVolume`` ``NfsInstance <id> does not exist`` (each: nothing more until the next
   connect);
5. ``setIdempotencyToken``: a fresh UUID in ``status.idempotencyToken``, written before any job starts;
6. ``loadVault``: before the job starts, the vault ``cm-<scope>`` (listed by name) is created when missing
   (tag ``cloud-resources.kyma-project.io/scope``);
7. ``createAwsBackup``: no ``id`` and no ``jobId`` -> ``StartBackupJob`` of
   ``arn:<partition>:elasticfilesystem:<region>:<account>:file-system/<fsId>`` into the vault with the
   backup role, the idempotency token, ``spec.lifecycle`` and the tags ``Name`` (``<ns>/<name>``),
   ``cloud-manager.kyma-project.io/name``, scope and shoot; ``status.jobId``, ``status.id`` (the recovery
   point's id), ``locations`` += the region, state ``Creating``;
8. the job (``DescribeBackupJob``) and the recovery point (``DescribeRecoveryPoint``);
9. a remote ``location``: once the local recovery point is ``COMPLETED``, the vault of that region (made
   likewise), then ``StartCopyJob`` into it (``copyJobId``, state ``CreatingRemote``); the copy job
   ``FAILED`` / ``PARTIAL`` -> Error ``BackupFailed`` with its message; its destination recovery point ->
   ``status.remoteId``, ``locations`` += the location;
10. ``updateCapacity``: when due and the recovery point(s) are complete, ``status.capacity`` = their
    ``BackupSizeInBytes`` (a binary-SI quantity), ``lastCapacityUpdate`` = now;
11. ``updateStatus``: the job done (or gone) and the recovery point(s) ``COMPLETED`` -> Ready ``Backup is
    ready for use.``, back when the capacity is due; the job ``ABORTING`` / ``ABORTED`` / ``PARTIAL`` /
    ``FAILED`` / ``EXPIRED`` or the recovery point ``EXPIRED`` / ``PARTIAL`` -> Error ``AWS RecoveryPoint
    State: <s>. Message: <m>`` (or ``AWS BackupJob State: ...``); else back in 1 s.

Deletion (the finalizer): the remote recovery point is deleted (state ``DeletingRemote``), then the local one
(``Deleting``); both are waited for (and one still ``CREATING`` first: AWS refuses to delete it while its job
runs); the finalizer goes once the local one is gone. Only the recovery
points whose ids this backup recorded, in this runtime's vault, are ever deleted (an id that is no AWS id
was not recorded by us: it is left, and does not hold the deletion up).

Deliberate differences: the copy job starts once the local recovery point is complete (the original starts
it at once and fails with backoff until it is); ``spec.lifecycle`` reaches the backup and copy jobs (the
original declares it and never passes it); a remote backup is Ready once its copy is complete too; a
recovery point not found while its job still runs is waited for (the original fails); the vaults are listed
only before a job starts (the original lists them in every turn); the capacity is read once the recovery
points are complete (the original may record the size of one still being made, ``0``, for the next hour);
refused calls set an Error condition with AWS's words instead of only logging; the location, the ids and
the idempotency token are validated.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.aws.nfsinstance_plan import binary_quantity
from tasks.cloud.calls import UNREAD, KwCall, need, with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["REASON_BACKUP_FAILED", "REASON_MISSING_NFS_VOLUME", "REASON_NFS_VOLUME_NOT_READY", "STATE_FAILED",
           "Seen", "Where", "backup_role_arn", "capacity_due_in", "efs_arn", "is_aws_id", "location", "parse_arn_id",
           "plan", "recovery_point_arn", "remote", "short_circuit", "valid_region", "vault_arn", "vault_name",
           "volume_ref"]

Timing = Callable[[float], float]

STATE_FAILED = "Failed"
STATE_CREATING_REMOTE = "CreatingRemote"
STATE_DELETING_REMOTE = "DeletingRemote"
REASON_MISSING_NFS_VOLUME = "MissingNfsVolume"
REASON_NFS_VOLUME_NOT_READY = "NfsVolumeNotReady"
REASON_BACKUP_FAILED = "BackupFailed"
REASON_INVALID_LOCATION = "InvalidLocation"
REASON_INVALID_ID = "InvalidId"
READY_MESSAGE = "Backup is ready for use."
FAILED_LATER_MESSAGE = "Backup moved to Failed state as more recent backup(s) is available."
#: The vault's tag naming the Scope (``loadVault``).
VAULT_SCOPE_TAG = "cloud-resources.kyma-project.io/scope"
#: ``TagCloudManagerName`` (``pkg/common``): the backup's ``<ns>/<name>``.
TAG_CLOUD_MANAGER_NAME = "cloud-manager.kyma-project.io/name"

_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
#: An AWS id as this plan accepts it in a status (job ids, recovery point ids, EFS ids).
_AWS_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_JOB_FAILED = ("ABORTING", "ABORTED", "PARTIAL", "FAILED", "EXPIRED")
_POINT_FAILED = ("EXPIRED", "PARTIAL")


@dataclass(frozen=True)
class Where:
    """The runtime the backup lives in, from its Scope: ``scope`` (the Scope's name: the vault is
    ``cm-<scope>``), ``region``, ``account``, ``shoot``; ``partition`` of ARNs; ``backup_role`` (the role AWS
    Backup assumes, ``CloudManagerBackupServiceRole``); ``capacity_check`` seconds between capacity reads."""

    scope: str
    region: str
    account: str
    shoot: str = ""
    partition: str = "aws"
    backup_role: str = "CloudManagerBackupServiceRole"
    capacity_check: float = 3600.0


@dataclass(frozen=True)
class Seen:
    """What one turn decides over.

    Attributes:
        obj: the AwsNfsVolumeBackup as read.
        where: its runtime.
        volume: the SKR AwsNfsVolume it names (``None``: missing; not read while deleting).
        instance: that volume's own KCP NfsInstance (``None``: missing or not the volume's).
        newer_in_schedule: a newer backup of the same schedule exists (``markFailed``).
        everyone: the SKR's AwsNfsVolumeBackups (quota); quota: the quota (``None``: unlimited).
        vaults: the local region's vaults (``ListBackupVaults``), dest_vaults: the location's.
        job: ``DescribeBackupJob`` (``None``: not found), point: the local recovery point
            (``DescribeRecoveryPoint``), copy_job: ``DescribeCopyJob``, dest_point: the remote recovery point.

    The provider fields start :data:`~tasks.cloud.calls.UNREAD` (read as the plan needs them); a refused
    read is its :class:`~kube.refusal.Failure`.
    """

    obj: Mapping[str, Any]
    where: Where
    volume: Mapping[str, Any] | None = None
    instance: Mapping[str, Any] | None = None
    newer_in_schedule: bool = False
    everyone: Sequence[Mapping[str, Any]] = field(default_factory=list)
    quota: int | None = None
    vaults: Any = UNREAD
    dest_vaults: Any = UNREAD
    job: Any = UNREAD
    point: Any = UNREAD
    copy_job: Any = UNREAD
    dest_point: Any = UNREAD


#: Seconds between looks at a running job or a recovery point still going: past the connect's in-window wait
#: (``context.MAX_WAIT_IN_WINDOW``, 1 s), so a job of minutes is looked at once per connect instead of
#: holding the connect's worker in 1 s turns (the original's controller polls every second on its own).
JOB_POLL = 5.0


# ---- names and ARNs (``pkg/kcp/provider/aws/util/arn.go``) ----------------------------------------

def vault_name(scope: str) -> str:
    """``cm-<scope>``: the runtime's vault."""
    return f"cm-{scope}"



def efs_arn(where: Where, fs_id: str) -> str:
    """``arn:<partition>:elasticfilesystem:<region>:<account>:file-system/<fsId>``."""
    return f"arn:{where.partition}:elasticfilesystem:{where.region}:{where.account}:file-system/{fs_id}"


def vault_arn(where: Where, region: str) -> str:
    """``arn:<partition>:backup:<region>:<account>:backup-vault:cm-<scope>``."""
    return f"arn:{where.partition}:backup:{region}:{where.account}:backup-vault:{vault_name(where.scope)}"


def recovery_point_arn(where: Where, region: str, point_id: str) -> str:
    """``arn:<partition>:backup:<region>:<account>:recovery-point:<id>``."""
    return f"arn:{where.partition}:backup:{region}:{where.account}:recovery-point:{point_id}"


def backup_role_arn(where: Where) -> str:
    """``arn:<partition>:iam::<account>:role/<backup role>``."""
    return f"arn:{where.partition}:iam::{where.account}:role/{where.backup_role}"


def parse_arn_id(arn: str) -> str:
    """The resource id of an ARN (``ParseArnResourceId``: the part after the resource type's ``:`` or
    ``/``), ``""`` for no ARN."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return ""
    pieces = re.split(r"[:/]", parts[5])
    return pieces[0] if len(pieces) == 1 else pieces[1]


def volume_ref(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace, name)`` of the volume the backup names (namespace: the backup's when not given)."""
    ref = ((obj.get("spec") or {}).get("source") or {}).get("volume") or {}
    return (str(ref.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""),
            str(ref.get("name") or ""))


def location(obj: Mapping[str, Any]) -> str:
    """``spec.location``."""
    return str((obj.get("spec") or {}).get("location") or "")


def remote(obj: Mapping[str, Any], where: Where) -> str:
    """The region of the copy (``requiresRemoteBackup``), ``""`` for none."""
    loc = location(obj)
    return loc if loc and loc != where.region else ""


def _get(answer: Any, key: str) -> str:
    if isinstance(answer, Mapping):
        return str(answer.get(key) or "")
    return str(getattr(answer, key, "") or "")


def _lifecycle(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = (obj.get("spec") or {}).get("lifecycle") or {}
    return {"delete_after_days": spec.get("deleteAfterDays"), "cold_after_days": spec.get("moveToColdStorageAfterDays")}


def _seconds_since(stamp: str, now: str) -> float | None:
    try:
        then = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        current = dt.datetime.fromisoformat(now.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (current - then).total_seconds()


def capacity_due_in(obj: Mapping[str, Any], where: Where, now: str) -> float:
    """Seconds until the capacity is read again (``isTimeForCapacityUpdate``; 0: due now)."""
    last = str((obj.get("status") or {}).get("lastCapacityUpdate") or "")
    elapsed = _seconds_since(last, now) if last else None
    if elapsed is None or elapsed < 0:
        return 0.0
    return max(0.0, where.capacity_check - elapsed)


def _has_vault(vaults: Sequence[Mapping[str, Any]], name: str) -> bool:
    return any(str(v.get("BackupVaultName") or "") == name for v in vaults or [])


def valid_region(name: str) -> bool:
    """Whether ``name`` looks like an AWS region (``eu-central-1``): what may select a client's endpoint."""
    return bool(_REGION.match(name))


def is_aws_id(value: str) -> bool:
    """Whether ``value`` looks like an AWS id (a job, recovery point or file system id): what a status may
    carry into a request path or an ARN."""
    return bool(_AWS_ID.match(value))


def _invalid_id(status: Mapping[str, Any]) -> str | None:
    for key in ("id", "jobId", "remoteId", "copyJobId"):
        value = str(status.get(key) or "")
        if value and not _AWS_ID.match(value):
            return f"status.{key} {value[:64]!r} is not an AWS id"
    return None


def _call(method: str, message: str, *, client: str = "", retry: float | None = 60.0, **kwargs: Any) -> KwCall:
    """``<client>.<method>(**kwargs)``; refused: an Error ``Error`` ``<message><AWS message>``."""
    return KwCall(method, kwargs, message, names.REASON_ERROR, with_cause=True, retry=retry, client=client)


def _refused(run: StepBuilder, failure: Failure, t: Timing, what: str) -> Outcome:
    """A refused read: transient -> back in 10 s, the status as planned; else Error ``<what>: <message>``
    (back at the next connect)."""
    if failure.retryable:
        return run.step(requeue_after=t(failure.delay if failure.delay is not None else 10.0))
    return run.fail(names.REASON_ERROR, f"{what}: {failure.message}", requeue_after=t(60))


def _found(value: Any) -> Mapping[str, Any] | None:
    """A read's answer: the object, ``None`` when not found (a not-found refusal too)."""
    if isinstance(value, Failure):
        return None
    return value


def short_circuit(obj: Mapping[str, Any], where: Where, now: str) -> Outcome | None:
    """``shortCircuitCompleted``: a ``Failed`` backup is left alone, a ``Ready`` one comes back when its
    capacity is due (``None``: the turn goes on; deleting: never settled). The reads skip what such a turn
    does not look at."""
    if deleting(obj):
        return None
    status = obj.get("status") or {}
    if status.get("state") == STATE_FAILED:
        return Outcome()
    if status.get("state") == names.STATE_READY and cond.is_true(status.get("conditions") or [], names.COND_READY):
        due = capacity_due_in(obj, where, now)
        if due > 0:
            return Outcome(requeue_after=due)
    return None


def plan(seen: Seen, new_id: str, t: Timing, now: str) -> Outcome:
    """One turn of the backup (module doc). ``new_id``: the idempotency token to assign; ``t`` scales
    seconds; ``now``: RFC 3339."""
    obj, where = seen.obj, seen.where
    run = StepBuilder(obj, now)
    if deleting(obj):
        return _delete(seen, run, t)
    settled = short_circuit(obj, where, now)  # 1
    if settled is not None:
        return settled
    state = run.status.get("state")
    if state == names.STATE_ERROR and seen.newer_in_schedule:  # 2
        previous = cond.find(run.conditions, names.COND_ERROR)
        message = f"{previous['message']}\n{FAILED_LATER_MESSAGE}" if previous and previous.get("message") \
            else FAILED_LATER_MESSAGE
        return run.fail(REASON_BACKUP_FAILED, message, state=STATE_FAILED)
    loc = location(obj)  # 3
    if loc and not _REGION.match(loc):
        return run.fail(REASON_INVALID_LOCATION, f"Location {loc[:64]!r} is not an AWS region")
    bad = _invalid_id(run.status)
    if bad is not None:
        return run.fail(REASON_INVALID_ID, bad)
    fresh = not run.status.get("id") and not run.status.get("jobId")
    if fresh and (over := run.over_quota(seen.everyone, seen.quota)) is not None:
        return over
    add = None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER  # 4
    outcome = _provision(seen, run, new_id, t, now)
    return outcome if add is None else replace(outcome, add_finalizer=add)


def _provision(seen: Seen, run: StepBuilder, new_id: str, t: Timing, now: str) -> Outcome:
    obj, where = seen.obj, seen.where
    namespace, name = volume_ref(obj)
    if seen.volume is None:
        return run.fail(REASON_MISSING_NFS_VOLUME, f"AwsNfsVolume {namespace}/{name} does not exist")
    if not cond.is_true((seen.volume.get("status") or {}).get("conditions") or [], names.COND_READY):
        return run.fail(REASON_NFS_VOLUME_NOT_READY, "The AwsNfsVolume is not ready")
    fs_id = str(((seen.instance or {}).get("status") or {}).get("id") or "")
    if seen.instance is None or not fs_id:
        ident = str((seen.volume.get("status") or {}).get("id") or "")
        return run.fail(REASON_MISSING_NFS_VOLUME, f"NfsInstance {ident} does not exist")
    if not _AWS_ID.match(fs_id):
        return run.fail(REASON_INVALID_ID, f"file system id {fs_id[:64]!r} is not an AWS id")
    token = str(run.status.get("idempotencyToken") or "").strip()
    if not is_aws_id(token):  # 5: written before any job starts (one that is no token is replaced)
        run.set(idempotencyToken=new_id)
        return run.step(requeue_after=t(0.1))
    status = run.status
    if not status.get("id") and not status.get("jobId"):
        vaults = need(seen, "vaults")  # 6: only before the job starts (the original lists them every turn)
        if isinstance(vaults, Failure):
            return _refused(run, vaults, t, "Error listing AWS Backup Vaults")
        if not _has_vault(vaults, vault_name(where.scope)):
            return _create_vault(run, t, where, "")
        return _start_backup(seen, run, t, fs_id, token)  # 7
    job = _found(need(seen, "job")) if status.get("jobId") else None  # 8
    job_failure = seen.job if isinstance(seen.job, Failure) and not seen.job.not_found else None
    if job_failure is not None:
        return _refused(run, job_failure, t, "Error loading AWS Backup Job")
    point: Mapping[str, Any] | None = None
    if status.get("id"):
        read = need(seen, "point")
        if isinstance(read, Failure) and not read.not_found:
            return _refused(run, read, t, "Error loading the Recovery Point")
        point = _found(read)
        if point is None and (job is None or str(job.get("State") or "") == "COMPLETED"):
            return run.fail(names.REASON_ERROR, f"Recovery point {status.get('id')} does not exist")
    dest = remote(obj, where)
    dest_point: Mapping[str, Any] | None = None
    if dest and point is not None and str(point.get("Status") or "") == "COMPLETED":  # 9
        copied = _copy(seen, run, t, dest, token)
        if isinstance(copied, Outcome):
            return copied
        dest_point = copied
    _capacity(seen, run, point, dest_point, now)  # 10
    return _status(seen, run, t, job, point, dest, dest_point, now)  # 11


def _create_vault(run: StepBuilder, t: Timing, where: Where, client: str) -> Outcome:
    """``CreateBackupVault`` of ``cm-<scope>`` through ``client`` (``""``: the Scope's region); one that
    already exists (another backup's turn made it) is fine."""
    outcome = with_calls(run, t, run.step(requeue_after=t(0.1)), [
        _call("create_vault", "Error creating AWS Backup Vault: ", client=client,
              name=vault_name(where.scope), tags={VAULT_SCOPE_TAG: where.scope})])
    refused = outcome.refused

    def exists(write: Any, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        if failure.code == "AlreadyExistsException":
            return run.step(requeue_after=t(0.1))
        return refused(write, failure, answers) if refused is not None else None

    return replace(outcome, refused=exists)


def _start_backup(seen: Seen, run: StepBuilder, t: Timing, fs_id: str, token: str) -> Outcome:
    obj, where = seen.obj, seen.where
    ref = f"{run.namespace}/{run.name}"
    tags = {"Name": ref, TAG_CLOUD_MANAGER_NAME: ref, names.TAG_SCOPE: where.scope, names.TAG_SHOOT: where.shoot}

    def started(answers: Sequence[Any]) -> Outcome:
        answer = answers[-1] if answers else None
        locations = [*(run.status.get("locations") or []), where.region]
        run.set(jobId=_get(answer, "BackupJobId") or None, id=parse_arn_id(_get(answer, "RecoveryPointArn")) or None,
                state=names.STATE_CREATING, locations=locations, conditions=[])
        return run.step(requeue_after=t(1))

    call = _call("start_backup_job", "Error creating AWS Backup: ", retry=60.0,
                 vault=vault_name(where.scope), resource_arn=efs_arn(where, fs_id),
                 role_arn=backup_role_arn(where), idempotency_token=token, tags=tags, **_lifecycle(obj))
    return replace(with_calls(run, t, run.step(requeue_after=t(1)), [call]), then=started)


def _copy(seen: Seen, run: StepBuilder, t: Timing, dest: str, token: str) -> Outcome | Mapping[str, Any] | None:
    """The remote copy: an Outcome to end the turn with, or the remote recovery point (``None``: none yet)."""
    where, status = seen.where, run.status
    vault = vault_name(where.scope)
    if not status.get("copyJobId") and not status.get("remoteId"):
        vaults = need(seen, "dest_vaults")
        if isinstance(vaults, Failure):
            return _refused(run, vaults, t, "Error listing AWS Backup Vaults")
        if not _has_vault(vaults, vault):
            return _create_vault(run, t, where, dest)

        def started(answers: Sequence[Any]) -> Outcome:
            run.set(copyJobId=_get(answers[-1] if answers else None, "CopyJobId") or None,
                    state=STATE_CREATING_REMOTE, conditions=[])
            return run.step(requeue_after=t(10))

        point_arn = recovery_point_arn(where, where.region, str(status.get("id")))
        call = _call("start_copy_job", "Error creating AWS destination backup: ",
                     source_vault=vault, recovery_point_arn=point_arn,
                     destination_vault_arn=vault_arn(where, dest), role_arn=backup_role_arn(where),
                     idempotency_token=token, **_lifecycle(seen.obj))
        return replace(with_calls(run, t, run.step(requeue_after=t(10)), [call]), then=started)
    if not status.get("remoteId"):
        read = need(seen, "copy_job")
        if isinstance(read, Failure) and not read.not_found:
            return _refused(run, read, t, "Error loading AWS Copy Job")
        job = _found(read)
        if job is None:
            return run.fail(REASON_BACKUP_FAILED, f"AWS Copy Job {status.get('copyJobId')} does not exist")
        if str(job.get("State") or "") in ("FAILED", "PARTIAL"):
            return run.fail(REASON_BACKUP_FAILED, str(job.get("StatusMessage") or "AWS Copy Job failed"))
        remote_id = parse_arn_id(str(job.get("DestinationRecoveryPointArn") or ""))
        if not remote_id or not _AWS_ID.match(remote_id):
            return run.step(requeue_after=t(10))
        run.set(remoteId=remote_id, locations=[*(status.get("locations") or []), dest])
        return run.step(requeue_after=t(1))
    read = need(seen, "dest_point")
    if isinstance(read, Failure) and not read.not_found:
        return _refused(run, read, t, "Error loading the remote Recovery Point")
    return _found(read)


def _capacity(seen: Seen, run: StepBuilder, point: Mapping[str, Any] | None, dest_point: Mapping[str, Any] | None,
              now: str) -> None:
    if point is None or str(point.get("Status") or "") != "COMPLETED" or capacity_due_in(seen.obj, seen.where, now) > 0:
        return
    if remote(seen.obj, seen.where) and str((dest_point or {}).get("Status") or "") != "COMPLETED":
        return
    size = int(point.get("BackupSizeInBytes") or 0) + int((dest_point or {}).get("BackupSizeInBytes") or 0)
    run.set(capacity=binary_quantity(size), lastCapacityUpdate=now)


def _status(seen: Seen, run: StepBuilder, t: Timing, job: Mapping[str, Any] | None,
            point: Mapping[str, Any] | None, dest: str, dest_point: Mapping[str, Any] | None, now: str) -> Outcome:
    job_state = str((job or {}).get("State") or "")
    point_state = str((point or {}).get("Status") or "")
    remote_done = not dest or str((dest_point or {}).get("Status") or "") == "COMPLETED"
    if job_state in ("", "COMPLETED") and point_state == "COMPLETED" and remote_done:
        run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY)
        return run.step(requeue_after=seen.where.capacity_check)
    if job_state in _JOB_FAILED or point_state in _POINT_FAILED:
        if point is not None:
            message = f"AWS RecoveryPoint State: {point_state}. Message: {point.get('StatusMessage') or ''}"
        else:
            message = f"AWS BackupJob State: {job_state}. Message: {(job or {}).get('StatusMessage') or ''}"
        return run.fail(names.REASON_ERROR, message)
    return run.step(requeue_after=t(JOB_POLL))


def _delete(seen: Seen, run: StepBuilder, t: Timing) -> Outcome:
    """Deletion: the remote recovery point, then the local one, each waited for; then the finalizer."""
    obj, where, status = seen.obj, seen.where, run.status
    if not has_finalizer(obj, names.FINALIZER):
        return run.step()
    vault = vault_name(where.scope)
    dest = remote(obj, where) if _REGION.match(location(obj)) else ""
    for key, field_name, region, state in (("remoteId", "dest_point", dest, STATE_DELETING_REMOTE),
                                           ("id", "point", where.region, names.STATE_DELETING)):
        ident = str(status.get(key) or "")
        if not ident or not region or not is_aws_id(ident):  # never a request path from an id that is no AWS id
            continue
        read = need(seen, field_name)
        if isinstance(read, Failure) and not read.not_found:
            return _refused(run, read, t, "Error loading the Recovery Point")
        point = _found(read)
        if point is None:
            continue
        run.set(state=state, conditions=[])
        if str(point.get("Status") or "") in ("DELETING", "CREATING"):  # going, or its job still makes it
            return run.step(requeue_after=t(JOB_POLL))
        client = "" if region == where.region else region
        return with_calls(run, t, run.step(requeue_after=t(1)), [
            _call("delete_recovery_point", "Error deleting the Recovery Point: ", client=client,
                  vault=vault, arn=recovery_point_arn(where, region, ident))])
    return run.step(remove_finalizer=names.FINALIZER)
