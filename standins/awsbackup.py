"""AWS Backup as the NFS backup flows use it, inside moto's server: boto3 reaches it unchanged.

moto (5.2) serves AWS Backup's vaults, plans and tags only: ``StartBackupJob`` and the rest answer
404 (no route), ``DeleteBackupVault`` of a missing or non-empty vault succeeds, and a vault never
holds a recovery point. :func:`install` gives moto's Backup responder (one method per action; answers
serialized by moto from the botocore model) and its URL map these actions over a small model of ours,
without forking moto (the vaults stay moto's):

- vaults: describe / create (moto's: ``ResourceNotFoundException``, ``AlreadyExistsException``; ours: a
  name not of 2-50 ``A-Za-z0-9-_.`` ``InvalidParameterValueException``),
  delete (ours: a missing vault ``ResourceNotFoundException``, one holding recovery points
  ``InvalidRequestException``), list, describe and list count the vault's recovery points;
- backup jobs: ``StartBackupJob`` needs an existing vault (``ResourceNotFoundException``), an IAM
  role ARN (``arn:<partition>:iam::<12 digits>:role/<name>``, else ``InvalidParameterValueException``)
  and an EFS file system ARN (``arn:<partition>:elasticfilesystem:<region>:<account>:file-system/<id>``,
  else ``InvalidParameterValueException``); the job answers at once with its recovery point ARN
  ``arn:aws:backup:<region>:<account>:recovery-point:<uuid>`` (status ``CREATING``); the job is
  ``CREATED``, then ``RUNNING``, then ``COMPLETED`` (the recovery point ``COMPLETED`` with
  ``BackupSizeInBytes``) :data:`STEP_SECONDS` apart. A file system missing from moto's EFS (this
  account and region) makes the job ``FAILED`` with a ``StatusMessage`` and the recovery point gone,
  as a backup of a deleted resource fails in AWS. ``DescribeBackupJob``: ``ResourceNotFoundException``.
- copy jobs: ``StartCopyJob`` of a ``COMPLETED`` recovery point of the source vault (missing:
  ``ResourceNotFoundException``; not completed: ``InvalidRequestException``) to a destination vault
  ARN (malformed: ``InvalidParameterValueException``); a missing destination vault fails the job
  (``FAILED``, ``StatusMessage``); else ``CREATED`` / ``RUNNING`` / ``COMPLETED`` as above, the
  destination recovery point (``DestinationRecoveryPointArn``, in the destination region's vault)
  ``COMPLETED`` with the job. ``DescribeCopyJob``: ``ResourceNotFoundException``.
- recovery points: describe, list by vault (``ByResourceArn`` filter, oldest first, ``MaxResults`` /
  ``NextToken`` pages), restore metadata (EFS:
  ``file-system-id``, ``Encrypted``, ``PerformanceMode``, ``CreationToken``, ``newFileSystem``),
  delete (``InvalidResourceStateException`` while its job runs; ``DELETING`` to the next describe
  or list, then gone); a missing vault or recovery point ``ResourceNotFoundException``.
  ``RecoveryPointTags`` tag the recovery point (``ListTags`` answers them).
- restore jobs: ``StartRestoreJob`` of an existing recovery point (``ResourceNotFoundException``)
  with EFS ``Metadata`` (``file-system-id`` of a moto file system when ``newFileSystem`` is
  ``false``, else ``InvalidParameterValueException``); ``CREATED`` / ``RUNNING`` / ``COMPLETED`` as
  above, with ``CreatedResourceArn`` the file system's ARN. ``DescribeRestoreJob``:
  ``ResourceNotFoundException``.

``IdempotencyToken``: a start repeated with the same token answers the first job. Every fault answers
the code of botocore's Backup model and its HTTP status (the model gives none, so botocore's rule:
400, 500 for ``fault`` shapes: ``ServiceUnavailableException``, ``DependencyFailureException``),
pinned by ``tests/integration/cloud/aws/test_awsbackup_conformance.py``. Errors can be injected per
action, these and ``ListTags`` (:func:`inject`: the next ``n`` calls of an action answer an error).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from standins.moto_faults import fault as _error

__all__ = ["STEP_SECONDS", "advance", "inject", "install", "reset", "set_step"]

#: Seconds between a job's states (``CREATED`` -> ``RUNNING`` -> ``COMPLETED``), fixed per job at start.
STEP_SECONDS = 0.5
#: The size a completed recovery point reports (bytes).
BACKUP_SIZE = 6144

_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_EFS_ARN = re.compile(r"^arn:aws[a-z-]*:elasticfilesystem:([a-z0-9-]+):(\d{12}):file-system/(fs-[0-9a-f]+)$")
_VAULT_ARN = re.compile(r"^arn:aws[a-z-]*:backup:([a-z0-9-]+):(\d{12}):backup-vault:([A-Za-z0-9_.-]{2,50})$")
_VAULT_NAME = re.compile(r"^[A-Za-z0-9_.-]{2,50}$")
_STATES = ("CREATED", "RUNNING", "COMPLETED")


@dataclass
class _Job:
    """A backup, copy or restore job: its state follows the clock (:data:`STEP_SECONDS` per state)."""

    ident: str
    kind: str  # backup | copy | restore
    started: float
    step: float
    fields: dict[str, Any]
    failure: str = ""  # a StatusMessage: the job fails at its end

    def state(self, now: float) -> str:
        steps = int((now - self.started) / self.step) if self.step > 0 else len(_STATES)
        if steps >= len(_STATES) - 1:
            return "FAILED" if self.failure else "COMPLETED"
        return _STATES[steps]

    def done_at(self) -> float:
        return self.started + self.step * (len(_STATES) - 1)


@dataclass
class _Point:
    """A recovery point in a vault of one region."""

    arn: str
    vault: str
    resource_arn: str
    role: str
    created: float
    job: _Job  # the backup or copy job that makes it
    source_vault_arn: str = ""
    deleting: bool = False


@dataclass
class _Region:
    jobs: dict[str, _Job] = field(default_factory=dict)
    points: dict[str, _Point] = field(default_factory=dict)  # by ARN
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, token) -> job id


_lock = threading.RLock()
_regions: dict[tuple[str, str], _Region] = {}
_injected: dict[str, list[tuple[str, str, int]]] = {}
_installed = False
_step = STEP_SECONDS
#: Seconds added to the wall clock by :func:`advance` (tests); never reset, so time never goes back.
_offset = 0.0


def reset() -> None:
    """Forget every job, recovery point and injected error, and restore :data:`STEP_SECONDS` (tests)."""
    global _step
    with _lock:
        _regions.clear()
        _injected.clear()
        _step = STEP_SECONDS


def set_step(seconds: float) -> None:
    """Seconds between a job's states for the jobs started from now on (0: complete at once)."""
    global _step
    with _lock:
        _step = max(0.0, float(seconds))


def advance(seconds: float) -> None:
    """Move the stand-in's clock ``seconds`` ahead (tests): jobs started before step on as if that much
    time had passed, so a test decides when a job completes instead of racing the wall clock."""
    global _offset
    with _lock:
        _offset += max(0.0, float(seconds))


def inject(action: str, code: str, message: str = "injected", status: int = 400, times: int = 1) -> None:
    """Make the next ``times`` calls of ``action`` (e.g. ``StartBackupJob``) answer ``code``."""
    with _lock:
        _injected.setdefault(action, []).extend([(code, message, status)] * times)


def _not_found(message: str) -> Exception:
    return _error("ResourceNotFoundException", message)


def _invalid(message: str) -> Exception:
    return _error("InvalidParameterValueException", message)


def _take_injected(action: str) -> None:
    with _lock:
        queue = _injected.get(action)
        if queue:
            code, message, status = queue.pop(0)
            raise _error(code, message, status)


def _region_of(account: str, region: str) -> _Region:
    with _lock:
        return _regions.setdefault((account, region), _Region())


def _here(resp: Any) -> tuple[str, str, _Region]:
    account, region = str(resp.current_account), str(resp.region)
    return account, region, _region_of(account, region)


def _param(resp: Any, name: str, wire: str = "") -> Any:
    """A request parameter: the JSON body's ``name``, else the URI label or query string ``wire``
    (default: ``name`` with a lower-case first letter, as the model's URI and query names mostly are)."""
    import json

    if resp.body:
        try:
            body = json.loads(resp.body)
        except (ValueError, TypeError):
            body = {}
        if isinstance(body, dict) and name in body:
            return body[name]
    label = wire or name[0].lower() + name[1:]
    if resp.uri_match and label in resp.uri_match:
        return unquote(str(resp.uri_match[label]))
    values = resp.querystring.get(label) or resp.querystring.get(name)
    return values[0] if values else None


def _required(resp: Any, name: str) -> str:
    value = _param(resp, name)
    if value in (None, ""):
        raise _error("MissingParameterValueException", f"{name} is required.")
    return str(value)


def _backend(account: str, region: str) -> Any:
    from moto.backup.models import backup_backends

    return backup_backends[account][region]


def _vault(account: str, region: str, name: str) -> Any:
    vault = _backend(account, region).vaults.get(name)
    if vault is None:
        raise _not_found(f"Backup vault {name} does not exist in {region}.")
    return vault


def _file_system(account: str, region: str, fs_id: str) -> Any | None:
    from moto.efs.models import efs_backends

    return efs_backends[account][region].file_systems_by_id.get(fs_id)


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _now() -> float:
    return time.time() + _offset


def _observe(region: _Region, now: float) -> None:
    """Drop the recovery points of failed jobs (a failed backup or copy leaves none)."""
    for arn, point in list(region.points.items()):
        if point.job.state(now) == "FAILED":
            region.points.pop(arn, None)


def _point_status(point: _Point, now: float) -> str:
    if point.deleting:
        return "DELETING"
    return "COMPLETED" if point.job.state(now) == "COMPLETED" else "CREATING"


def _point_view(account: str, region: str, point: _Point, now: float) -> dict[str, Any]:
    status = _point_status(point, now)
    view: dict[str, Any] = {
        "RecoveryPointArn": point.arn, "BackupVaultName": point.vault,
        "BackupVaultArn": _vault(account, region, point.vault).backup_vault_arn, "ResourceArn": point.resource_arn,
        "ResourceType": "EFS", "IamRoleArn": point.role, "Status": status,
        "CreationDate": _when(point.created), "IsEncrypted": True, "StorageClass": "WARM",
        "ResourceName": point.resource_arn.rsplit("/", 1)[-1], "VaultType": "BACKUP_VAULT",
    }
    if point.source_vault_arn:
        view["SourceBackupVaultArn"] = point.source_vault_arn
    if status in ("COMPLETED", "DELETING") and point.job.state(now) == "COMPLETED":
        view["CompletionDate"] = _when(point.job.done_at())
        view["BackupSizeInBytes"] = BACKUP_SIZE
    return view


def _point(account: str, region_name: str, region: _Region, vault: str, arn: str) -> _Point:
    _vault(account, region_name, vault)
    point = region.points.get(arn)
    if point is None or point.vault != vault:
        raise _not_found(f"Recovery point {arn} not found in backup vault {vault}.")
    return point


def _after_seen(account: str, region_name: str, region: _Region, points: list[_Point]) -> None:
    """A recovery point seen ``DELETING`` is gone afterwards (with its tags)."""
    for point in points:
        if point.deleting:
            region.points.pop(point.arn, None)
            _backend(account, region_name).tagger.delete_all_tags_for_resource(point.arn)


def _count_points(region: _Region, vault: Any) -> None:
    """Set moto's vault's recovery point count from ours."""
    vault.num_of_recovery_points = sum(1 for p in region.points.values() if p.vault == vault.backup_vault_name)


def _idempotent(region: _Region, kind: str, resp: Any) -> _Job | None:
    token = _param(resp, "IdempotencyToken")
    if token:
        ident = region.tokens.get((kind, str(token)))
        if ident and ident in region.jobs:
            return region.jobs[ident]
    return None


def _new_job(region: _Region, kind: str, resp: Any, fields: dict[str, Any], failure: str = "") -> _Job:
    job = _Job(ident=str(uuid.uuid4()).upper(), kind=kind, started=_now(), step=_step, fields=fields, failure=failure)
    region.jobs[job.ident] = job
    token = _param(resp, "IdempotencyToken")
    if token:
        region.tokens[(kind, str(token))] = job.ident
    return job


def _job(region: _Region, kind: str, ident: str) -> _Job:
    job = region.jobs.get(ident)
    if job is None or job.kind != kind:
        raise _not_found(f"Cannot find {kind} job {ident}.")
    return job


def _job_view(job: _Job, now: float) -> dict[str, Any]:
    state = job.state(now)
    view = {**job.fields, "CreationDate": _when(job.started), "PercentDone": "100.0" if state == "COMPLETED" else
            "0.0"}
    if state in ("COMPLETED", "FAILED"):
        view["CompletionDate"] = _when(job.done_at())
    if job.failure and state == "FAILED":
        view["StatusMessage"] = job.failure
    return view


# ---- the actions (methods of moto's BackupResponse) --------------------------------------------


def describe_backup_vault(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    with _lock:
        vault = _vault(account, region_name, _required(self, "BackupVaultName"))
        _count_points(region, vault)
        return ActionResult({**vault.to_list_dict(), "CreationDate": _when(vault.creation_date),
                             "VaultType": "BACKUP_VAULT", "VaultState": "AVAILABLE"})


def delete_backup_vault(self: Any) -> Any:
    from moto.core.responses import EmptyResult

    account, region_name, region = _here(self)
    with _lock:
        name = _required(self, "BackupVaultName")
        vault = _vault(account, region_name, name)
        _observe(region, _now())
        _count_points(region, vault)
        if vault.num_of_recovery_points:
            raise _error("InvalidRequestException",
                         f"Backup vault cannot be deleted (contains {vault.num_of_recovery_points} recovery points)")
        backend = _backend(account, region_name)
        backend.tagger.delete_all_tags_for_resource(vault.backup_vault_arn)  # a vault made again starts untagged
        backend.vaults.pop(name, None)
        return EmptyResult()


def list_backup_vaults(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    with _lock:
        vaults = list(_backend(account, region_name).vaults.values())
        for vault in vaults:
            _count_points(region, vault)
        return ActionResult({"BackupVaultList": [{**v.to_list_dict(), "CreationDate": _when(v.creation_date),
                                                   "VaultType": "BACKUP_VAULT", "VaultState": "AVAILABLE"}
                                                  for v in vaults]})


def create_backup_vault(self: Any) -> Any:
    """moto's ``CreateBackupVault`` (``AlreadyExistsException``), after an injected failure and the name's
    check (2-50 of ``A-Za-z0-9-_.``, else ``InvalidParameterValueException``)."""
    name = _required(self, "BackupVaultName")
    if not _VAULT_NAME.match(name):
        raise _invalid(f"Invalid backup vault name: {name}")
    return _MOTO_CREATE_VAULT(self)


_MOTO_CREATE_VAULT: Any = None


def start_backup_job(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    vault_name = _required(self, "BackupVaultName")
    resource_arn, role = _required(self, "ResourceArn"), _required(self, "IamRoleArn")
    with _lock:
        vault = _vault(account, region_name, vault_name)
        if not _ROLE_ARN.match(role):
            raise _invalid(f"Invalid IAM role ARN: {role}")
        match = _EFS_ARN.match(resource_arn)
        if not match:
            raise _invalid(f"Invalid resource ARN (an EFS file system's is expected): {resource_arn}")
        again = _idempotent(region, "backup", self)
        if again is not None:
            return ActionResult({"BackupJobId": again.ident, "RecoveryPointArn": again.fields["RecoveryPointArn"],
                                 "CreationDate": _when(again.started), "IsParent": False})
        fs_region, fs_account, fs_id = match.groups()
        failure = ""
        if fs_region != region_name or fs_account != account or _file_system(account, region_name, fs_id) is None:
            failure = f"Resource {resource_arn} was not found."
        point_arn = f"arn:aws:backup:{region_name}:{account}:recovery-point:{uuid.uuid4()}"
        job = _new_job(region, "backup", self, {
            "AccountId": account, "BackupVaultName": vault_name, "BackupVaultArn": vault.backup_vault_arn,
            "RecoveryPointArn": point_arn, "ResourceArn": resource_arn, "IamRoleArn": role, "ResourceType": "EFS",
            "BackupType": "", "IsParent": False, "ResourceName": fs_id}, failure)
        point = _Point(arn=point_arn, vault=vault_name, resource_arn=resource_arn, role=role, created=job.started,
                       job=job)
        region.points[point_arn] = point
        tags = _param(self, "RecoveryPointTags") or {}
        if tags:
            _backend(account, region_name).tag_resource(point_arn, dict(tags))
        return ActionResult({"BackupJobId": job.ident, "RecoveryPointArn": point_arn,
                             "CreationDate": _when(job.started), "IsParent": False})


def describe_backup_job(self: Any) -> Any:
    from moto.core.responses import ActionResult

    _, _, region = _here(self)
    with _lock:
        job, now = _job(region, "backup", _required(self, "BackupJobId")), _now()
        view = _job_view(job, now)
        view["State"] = job.state(now)
        if view["State"] == "COMPLETED":
            view["BackupSizeInBytes"] = BACKUP_SIZE
        return ActionResult(view)


def start_copy_job(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    source, point_arn = _required(self, "SourceBackupVaultName"), _required(self, "RecoveryPointArn")
    dest_arn, role = _required(self, "DestinationBackupVaultArn"), _required(self, "IamRoleArn")
    with _lock:
        now = _now()
        _observe(region, now)
        point = _point(account, region_name, region, source, point_arn)
        if not _ROLE_ARN.match(role):
            raise _invalid(f"Invalid IAM role ARN: {role}")
        match = _VAULT_ARN.match(dest_arn)
        if not match:
            raise _invalid(f"Invalid destination backup vault ARN: {dest_arn}")
        if _point_status(point, now) != "COMPLETED":
            raise _error("InvalidRequestException", f"Recovery point {point_arn} is not in COMPLETED state.")
        again = _idempotent(region, "copy", self)
        if again is not None:
            return ActionResult({"CopyJobId": again.ident, "CreationDate": _when(again.started), "IsParent": False})
        dest_region, dest_account, dest_vault = match.groups()
        failure = ""
        if dest_account != account or dest_vault not in _backend(dest_account, dest_region).vaults:
            failure = f"Destination backup vault {dest_arn} does not exist."
        dest_point = f"arn:aws:backup:{dest_region}:{dest_account}:recovery-point:{uuid.uuid4()}"
        fields = {"AccountId": account, "SourceBackupVaultArn": _vault(account, region_name, source).backup_vault_arn,
                  "SourceRecoveryPointArn": point_arn, "DestinationBackupVaultArn": dest_arn,
                  "ResourceArn": point.resource_arn, "IamRoleArn": role, "ResourceType": "EFS",
                  "IsParent": False}
        if not failure:
            fields["DestinationRecoveryPointArn"] = dest_point
        job = _new_job(region, "copy", self, fields, failure)
        if not failure:
            _region_of(dest_account, dest_region).points[dest_point] = _Point(
                arn=dest_point, vault=dest_vault, resource_arn=point.resource_arn, role=role, created=job.started,
                job=job, source_vault_arn=fields["SourceBackupVaultArn"])
        return ActionResult({"CopyJobId": job.ident, "CreationDate": _when(job.started), "IsParent": False})


def describe_copy_job(self: Any) -> Any:
    from moto.core.responses import ActionResult

    _, _, region = _here(self)
    with _lock:
        job, now = _job(region, "copy", _required(self, "CopyJobId")), _now()
        view = _job_view(job, now)
        view.pop("PercentDone", None)
        view["CopyJobId"], view["State"] = job.ident, job.state(now)
        if view["State"] == "COMPLETED":
            view["BackupSizeInBytes"] = BACKUP_SIZE
        return ActionResult({"CopyJob": view})


def describe_recovery_point(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    with _lock:
        now = _now()
        _observe(region, now)
        point = _point(account, region_name, region, _required(self, "BackupVaultName"),
                       _required(self, "RecoveryPointArn"))
        view = _point_view(account, region_name, point, now)
        _after_seen(account, region_name, region, [point])
        return ActionResult(view)


def list_recovery_points_by_backup_vault(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    with _lock:
        now, name = _now(), _required(self, "BackupVaultName")
        _vault(account, region_name, name)
        _observe(region, now)
        by_resource = _param(self, "ByResourceArn", "resourceArn")
        points = sorted((p for p in region.points.values()
                         if p.vault == name and (not by_resource or p.resource_arn == by_resource)),
                        key=lambda p: (p.created, p.arn))
        start, size = _page(self)
        page = points[start:start + size]
        views = []
        for p in page:
            view = _point_view(account, region_name, p, now)
            view.pop("StorageClass", None)
            view.pop("VaultType", None)
            views.append(view)
        _after_seen(account, region_name, region, page)
        more = {"NextToken": str(start + size)} if start + size < len(points) else {}
        return ActionResult({"RecoveryPoints": views, **more})


def _page(resp: Any) -> tuple[int, int]:
    """``(first index, size)`` of a list's page: ``NextToken`` (ours: an index), ``MaxResults`` (1-1000,
    default 1000; else ``InvalidParameterValueException``)."""
    token, size = _param(resp, "NextToken"), _param(resp, "MaxResults")
    try:
        start = int(token) if token else 0
        count = int(size) if size else 1000
    except ValueError:
        raise _invalid("Invalid NextToken or MaxResults.") from None
    if start < 0 or not 1 <= count <= 1000:
        raise _invalid("Invalid NextToken or MaxResults.")
    return start, count


def delete_recovery_point(self: Any) -> Any:
    from moto.core.responses import EmptyResult

    account, region_name, region = _here(self)
    with _lock:
        now = _now()
        _observe(region, now)
        point = _point(account, region_name, region, _required(self, "BackupVaultName"),
                       _required(self, "RecoveryPointArn"))
        if _point_status(point, now) == "CREATING":
            raise _error("InvalidResourceStateException",
                         f"Recovery point {point.arn} cannot be deleted while its backup job is running.")
        point.deleting = True
        return EmptyResult()


def get_recovery_point_restore_metadata(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    with _lock:
        now = _now()
        _observe(region, now)
        vault_name = _required(self, "BackupVaultName")
        point = _point(account, region_name, region, vault_name, _required(self, "RecoveryPointArn"))
        fs_id = point.resource_arn.rsplit("/", 1)[-1]
        fs = _file_system(account, region_name, fs_id)
        metadata = {"file-system-id": fs_id, "Encrypted": "true", "newFileSystem": "true",
                    "PerformanceMode": str(getattr(fs, "performance_mode", "") or "generalPurpose"),
                    "CreationToken": str(getattr(fs, "creation_token", "") or fs_id)}
        return ActionResult({"BackupVaultArn": _vault(account, region_name, vault_name).backup_vault_arn,
                             "RecoveryPointArn": point.arn, "RestoreMetadata": metadata, "ResourceType": "EFS"})


def start_restore_job(self: Any) -> Any:
    from moto.core.responses import ActionResult

    account, region_name, region = _here(self)
    point_arn = _required(self, "RecoveryPointArn")
    metadata = _param(self, "Metadata") or {}
    role = str(_param(self, "IamRoleArn") or "")
    with _lock:
        now = _now()
        _observe(region, now)
        point = region.points.get(point_arn)
        if point is None:
            raise _not_found(f"Recovery point {point_arn} not found.")
        if not isinstance(metadata, Mapping) or not metadata:
            raise _error("MissingParameterValueException", "Metadata is required.")
        if role and not _ROLE_ARN.match(role):
            raise _invalid(f"Invalid IAM role ARN: {role}")
        if _point_status(point, now) != "COMPLETED":
            raise _error("InvalidRequestException", f"Recovery point {point_arn} is not in COMPLETED state.")
        again = _idempotent(region, "restore", self)
        if again is not None:
            return ActionResult({"RestoreJobId": again.ident})
        new_fs = str(metadata.get("newFileSystem", "true")).lower() != "false"
        fs_id = str(metadata.get("file-system-id") or "")
        if not new_fs:
            if not fs_id:
                raise _invalid("Metadata file-system-id is required when newFileSystem is false.")
            if _file_system(account, region_name, fs_id) is None:
                raise _invalid(f"File system {fs_id} does not exist.")
        else:
            fs_id = f"fs-{uuid.uuid4().hex[:17]}"
        created = f"arn:aws:elasticfilesystem:{region_name}:{account}:file-system/{fs_id}"
        job = _new_job(region, "restore", self, {
            "AccountId": account, "RecoveryPointArn": point_arn, "SourceResourceArn": point.resource_arn,
            "BackupVaultArn": _vault(account, region_name, point.vault).backup_vault_arn, "IamRoleArn": role,
            "ResourceType": "EFS", "RecoveryPointCreationDate": _when(point.created), "IsParent": False})
        job.fields["CreatedResourceArn"] = created
        return ActionResult({"RestoreJobId": job.ident})


def describe_restore_job(self: Any) -> Any:
    from moto.core.responses import ActionResult

    _, _, region = _here(self)
    with _lock:
        job, now = _job(region, "restore", _required(self, "RestoreJobId")), _now()
        view = _job_view(job, now)
        view["RestoreJobId"], view["Status"] = job.ident, job.state(now)
        if view["Status"] == "COMPLETED":
            view["BackupSizeInBytes"] = BACKUP_SIZE
        else:
            view.pop("CreatedResourceArn", None)
        return ActionResult(view)


_ACTIONS = (describe_backup_vault, delete_backup_vault, list_backup_vaults, create_backup_vault, start_backup_job,
            describe_backup_job, start_copy_job, describe_copy_job, describe_recovery_point,
            list_recovery_points_by_backup_vault, delete_recovery_point, get_recovery_point_restore_metadata,
            start_restore_job, describe_restore_job)

#: The routes moto's Backup URL map lacks (moto's server routes a request by these before the model
#: names its action).
_PATHS = ("{0}/backup-jobs/?$", "{0}/backup-jobs/(?P<backupJobId>[^/]+)$", "{0}/copy-jobs/?$",
          "{0}/copy-jobs/(?P<copyJobId>[^/]+)$", "{0}/restore-jobs/?$", "{0}/restore-jobs/(?P<restoreJobId>[^/]+)$",
          "{0}/backup-vaults/(?P<backupVaultName>[^/]+)/recovery-points/$",
          "{0}/backup-vaults/(?P<backupVaultName>[^/]+)/recovery-points/(?P<recoveryPointArn>[^/]+)$",
          "{0}/backup-vaults/(?P<backupVaultName>[^/]+)/recovery-points/(?P<recoveryPointArn>[^/]+)/restore-metadata$")


def _injectable(action: Any, name: str) -> Any:
    """``action`` answering first what :func:`inject` queued for the API action ``name``."""
    import functools

    @functools.wraps(action)
    def run(self: Any) -> Any:
        _take_injected(name)
        return action(self)

    return run


def _api_name(method: str) -> str:
    """``start_backup_job`` -> ``StartBackupJob``."""
    return "".join(part.capitalize() for part in method.split("_"))


def install() -> None:
    """Give moto's Backup responder the actions of this module and its URL map their routes (idempotent;
    every moto server or ``mock_aws`` of this process started afterwards answers them)."""
    global _installed, _MOTO_CREATE_VAULT
    from moto.backup import urls
    from moto.backup.responses import BackupResponse

    with _lock:
        if _installed:
            return
        _MOTO_CREATE_VAULT = BackupResponse.create_backup_vault
        for action in (*_ACTIONS, BackupResponse.list_tags):
            setattr(BackupResponse, action.__name__, _injectable(action, _api_name(action.__name__)))
        for path in _PATHS:
            urls.url_paths.setdefault(path, BackupResponse.dispatch)
        _installed = True
