"""The AWS Backup I/O of the NFS backup flows (AwsNfsVolumeBackup / AwsNfsVolumeRestore and Nuke's AWS
backups): ``pkg/skr/awsnfsvolumebackup/client``, ``pkg/skr/awsnfsvolumerestore/client`` and
``pkg/kcp/provider/aws/nuke/client`` of the original, in one class.

As :mod:`tasks.cloud.aws.client`, whose clients, credentials (the Scope's account, the default role
assumed when configured, as the original's ``NewSkrConfig``), timeouts and errors it shares: every
failure an :class:`~tasks.cloud.aws.client.AwsError` (``ResourceNotFoundException`` is its
``not_found``; :func:`is_already_exists` reads ``AlreadyExistsException``), :func:`fencing.check`
before every write. Answers are boto3's dicts (``ResponseMetadata`` dropped).

The original's names live here too: :func:`vault_name` (one vault per Scope and region),
:data:`VAULT_SCOPE_TAG`, :func:`backup_role_arn` (the IAM role AWS Backup assumes), :func:`efs_arn`,
:func:`vault_arn`, :func:`recovery_point_arn` and :func:`arn_resource_id`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import botocore.exceptions

import fencing
from tasks.cloud.aws.client import (
    _client,
    _credentials,
    _guard_methods,
    _guarded,
    attempt_timeout,
    error_code,
    is_not_found,
)
from tasks.cloud.settings import CloudSettings

__all__ = ["BACKUP_ROLE_NAME", "VAULT_SCOPE_TAG", "Backup", "arn_resource_id", "backup_for", "backup_role_arn",
           "efs_arn", "is_already_exists", "recovery_point_arn", "vault_arn", "vault_name"]

#: The IAM role AWS Backup assumes for the jobs (``AwsConfig.BackupRoleName``, default of
#: ``pkg/kcp/provider/aws/config/config.go``; the original reads ``AWS_BACKUP_ROLE_NAME`` over it).
BACKUP_ROLE_NAME = "CloudManagerBackupServiceRole"
#: The tag a vault carries with its Scope's name (``pkg/skr/awsnfsvolumebackup/loadVault.go``; note
#: ``cloud-resources``, not the ``cloud-manager`` prefix of the resources' tags).
VAULT_SCOPE_TAG = "cloud-resources.kyma-project.io/scope"
#: The restore job's resource type (``pkg/skr/awsnfsvolumerestore/client/client.go``).
RESOURCE_TYPE = "EFS"


def vault_name(scope: str) -> str:
    """The backup vault of a Scope: ``cm-<scope name>``, in each region that holds its backups
    (``State.GetVaultName`` of ``pkg/skr/awsnfsvolumebackup/state.go`` and ``pkg/kcp/provider/aws/nuke``)."""
    return f"cm-{scope}"


def backup_role_arn(account: str, partition: str = "aws", role: str = BACKUP_ROLE_NAME) -> str:
    """``arn:<partition>:iam::<account>:role/<role>``: the role of the backup, copy and restore jobs
    (``awsutil.RoleArnBackup``, ``pkg/kcp/provider/aws/util/arn.go``)."""
    return f"arn:{partition}:iam::{account}:role/{role}"


def efs_arn(region: str, account: str, fs_id: str, partition: str = "aws") -> str:
    """``arn:<partition>:elasticfilesystem:<region>:<account>:file-system/<fs id>`` (``awsutil.EfsArn``)."""
    return f"arn:{partition}:elasticfilesystem:{region}:{account}:file-system/{fs_id}"


def vault_arn(region: str, account: str, vault: str, partition: str = "aws") -> str:
    """``arn:<partition>:backup:<region>:<account>:backup-vault:<vault>`` (``awsutil.BackupVaultArn``)."""
    return f"arn:{partition}:backup:{region}:{account}:backup-vault:{vault}"


def recovery_point_arn(region: str, account: str, point_id: str, partition: str = "aws") -> str:
    """``arn:<partition>:backup:<region>:<account>:recovery-point:<id>`` (``awsutil.BackupRecoveryPointArn``)."""
    return f"arn:{partition}:backup:{region}:{account}:recovery-point:{point_id}"


def arn_resource_id(arn: str) -> str:
    """The id of an ARN's resource: ``recovery-point:<id>`` -> ``<id>``, ``file-system/<id>`` -> ``<id>``;
    ``""`` for what is no ARN (``awsutil.ParseArnResourceId``: the resource's second ``:``/``/`` part)."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn" or not parts[5]:
        return ""
    resource = parts[5].replace("/", ":").split(":")
    return resource[1] if len(resource) > 1 else resource[0]


def is_already_exists(exc: BaseException) -> bool:
    """An ``AlreadyExistsException`` (the original's ``IsAlreadyExists``)."""
    return error_code(exc) == "AlreadyExistsException"


@_guarded
def backup_for(settings: CloudSettings, account: str, region: str) -> Backup:
    """The AWS Backup layer for ``account`` in ``region`` (role assumed when configured); each call uses
    the client of the timeout the reconcile has left then."""
    key, secret, token = _credentials(settings, account, region)
    return Backup(lambda timeout: _client("backup", region, key, secret, token, settings.aws_endpoint_url, timeout))


def _answer(out: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in out.items() if k != "ResponseMetadata"}


def _lifecycle(delete_after_days: int | None, cold_after_days: int | None) -> dict[str, Any]:
    """The ``Lifecycle`` parameter (none when neither is set), as the original builds it."""
    if delete_after_days is None and cold_after_days is None:
        return {}
    cycle = {k: v for k, v in (("DeleteAfterDays", delete_after_days),
                               ("MoveToColdStorageAfterDays", cold_after_days)) if v is not None}
    return {"Lifecycle": cycle}


@_guard_methods
class Backup:
    """The NFS backup flows' calls: vaults, backup / copy / restore jobs, recovery points, tags. Raises
    :class:`~tasks.cloud.aws.client.AwsError` (and :class:`fencing.FenceError` when the reconcile must
    stop); the describes of one object answer ``None`` when AWS says it is not found.

    Args:
        clients: the boto3 Backup client for a per-attempt timeout in seconds.
    """

    def __init__(self, clients: Callable[[float], Any]) -> None:
        self._clients = clients

    def _backup(self, write: bool = False) -> Any:
        if write:
            fencing.check()
        return self._clients(attempt_timeout(write))

    def _found(self, method: str, **params: Any) -> dict[str, Any] | None:
        try:
            return _answer(getattr(self._backup(), method)(**params))
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return None
            raise

    # ---- tags and vaults

    def list_tags(self, resource_arn: str) -> dict[str, str]:
        """The tags of a vault or recovery point (``ListTags``, every page)."""
        tags: dict[str, str] = {}
        token = ""
        for _ in range(100):
            out = self._backup().list_tags(ResourceArn=resource_arn, **({"NextToken": token} if token else {}))
            tags.update(out.get("Tags") or {})
            token = str(out.get("NextToken") or "")
            if not token:
                break
        return tags

    def list_vaults(self) -> list[dict[str, Any]]:
        """The region's backup vaults (``ListBackupVaults``, every page): ``BackupVaultListMember`` dicts."""
        vaults: list[dict[str, Any]] = []
        token = ""
        for _ in range(100):
            out = self._backup().list_backup_vaults(**({"NextToken": token} if token else {}))
            vaults.extend(dict(v) for v in out.get("BackupVaultList") or [])
            token = str(out.get("NextToken") or "")
            if not token:
                break
        return vaults

    def vault(self, name: str) -> dict[str, Any] | None:
        """``DescribeBackupVault`` of ``name``, or ``None``."""
        return self._found("describe_backup_vault", BackupVaultName=name)

    def create_vault(self, name: str, tags: Mapping[str, str]) -> str:
        """``CreateBackupVault`` with tags (``CreatorRequestId`` the name, as the original); its ARN.
        An existing vault answers ``AlreadyExistsException`` (:func:`is_already_exists`)."""
        out = self._backup(write=True).create_backup_vault(BackupVaultName=name, BackupVaultTags=dict(tags),
                                                           CreatorRequestId=name)
        return str(out.get("BackupVaultArn") or "")

    def delete_vault(self, name: str) -> None:
        """``DeleteBackupVault`` (one already gone is fine; one holding recovery points is refused:
        ``InvalidRequestException``)."""
        try:
            self._backup(write=True).delete_backup_vault(BackupVaultName=name)
        except botocore.exceptions.ClientError as exc:
            if not is_not_found(exc):
                raise

    # ---- backup jobs

    def start_backup_job(self, vault: str, resource_arn: str, role_arn: str, *, idempotency_token: str = "",
                         tags: Mapping[str, str] | None = None, delete_after_days: int | None = None,
                         cold_after_days: int | None = None) -> dict[str, Any]:
        """``StartBackupJob`` of ``resource_arn`` (an EFS file system's ARN, :func:`efs_arn`) into
        ``vault`` with the role ``role_arn`` (:func:`backup_role_arn`); ``{BackupJobId,
        RecoveryPointArn, CreationDate}``. The same ``idempotency_token`` answers the same job."""
        params: dict[str, Any] = {"BackupVaultName": vault, "ResourceArn": resource_arn, "IamRoleArn": role_arn,
                                  **_lifecycle(delete_after_days, cold_after_days)}
        if idempotency_token:
            params["IdempotencyToken"] = idempotency_token
        if tags:
            params["RecoveryPointTags"] = dict(tags)
        return _answer(self._backup(write=True).start_backup_job(**params))

    def backup_job(self, job_id: str) -> dict[str, Any] | None:
        """``DescribeBackupJob`` (``State``: ``CREATED`` / ``PENDING`` / ``RUNNING`` / ``COMPLETED`` /
        ``FAILED`` / ``ABORTED`` ..., ``StatusMessage``, ``RecoveryPointArn``), or ``None``."""
        return self._found("describe_backup_job", BackupJobId=job_id)

    # ---- copy jobs

    def start_copy_job(self, source_vault: str, recovery_point_arn: str, destination_vault_arn: str,
                       role_arn: str, *, idempotency_token: str = "", delete_after_days: int | None = None,
                       cold_after_days: int | None = None) -> dict[str, Any]:
        """``StartCopyJob`` of a recovery point of ``source_vault`` into the vault of
        ``destination_vault_arn`` (another region's, :func:`vault_arn`); ``{CopyJobId, CreationDate}``."""
        params: dict[str, Any] = {"SourceBackupVaultName": source_vault, "RecoveryPointArn": recovery_point_arn,
                                  "DestinationBackupVaultArn": destination_vault_arn, "IamRoleArn": role_arn,
                                  **_lifecycle(delete_after_days, cold_after_days)}
        if idempotency_token:
            params["IdempotencyToken"] = idempotency_token
        return _answer(self._backup(write=True).start_copy_job(**params))

    def copy_job(self, job_id: str) -> dict[str, Any] | None:
        """The ``CopyJob`` of ``DescribeCopyJob`` (``State``, ``StatusMessage``,
        ``DestinationRecoveryPointArn``), or ``None``."""
        out = self._found("describe_copy_job", CopyJobId=job_id)
        return dict(out.get("CopyJob") or {}) if out is not None else None

    # ---- recovery points

    def recovery_point(self, account: str, vault: str, arn: str) -> dict[str, Any] | None:
        """``DescribeRecoveryPoint`` (``Status``: ``CREATING`` / ``COMPLETED`` / ``DELETING`` ...,
        ``BackupSizeInBytes``), or ``None``."""
        return self._found("describe_recovery_point", BackupVaultName=vault, RecoveryPointArn=arn,
                           BackupVaultAccountId=account)

    def recovery_points(self, account: str, vault: str) -> list[dict[str, Any]]:
        """The recovery points of ``vault`` (``ListRecoveryPointsByBackupVault``, every page;
        ``RecoveryPointByBackupVault`` dicts); none when the vault is gone."""
        points: list[dict[str, Any]] = []
        token = ""
        for _ in range(1000):
            params: dict[str, Any] = {"BackupVaultName": vault, "BackupVaultAccountId": account}
            if token:
                params["NextToken"] = token
            out = self._found("list_recovery_points_by_backup_vault", **params)
            if out is None:
                return []
            points.extend(dict(p) for p in out.get("RecoveryPoints") or [])
            token = str(out.get("NextToken") or "")
            if not token:
                break
        return points

    def delete_recovery_point(self, vault: str, arn: str) -> None:
        """``DeleteRecoveryPoint`` (one already gone is fine; it is ``DELETING`` afterwards;
        ``InvalidResourceStateException`` while a job uses it)."""
        try:
            self._backup(write=True).delete_recovery_point(BackupVaultName=vault, RecoveryPointArn=arn)
        except botocore.exceptions.ClientError as exc:
            if not is_not_found(exc):
                raise

    def restore_metadata(self, account: str, vault: str, arn: str) -> dict[str, Any]:
        """``GetRecoveryPointRestoreMetadata``: ``{RecoveryPointArn, RestoreMetadata, ...}``."""
        return _answer(self._backup().get_recovery_point_restore_metadata(
            BackupVaultName=vault, RecoveryPointArn=arn, BackupVaultAccountId=account))

    # ---- restore jobs

    def start_restore_job(self, recovery_point_arn: str, role_arn: str, metadata: Mapping[str, str], *,
                          idempotency_token: str = "") -> str:
        """``StartRestoreJob`` of an EFS recovery point (``ResourceType`` ``EFS``) with ``metadata`` (the
        restore metadata, ``newFileSystem`` ``"false"`` and ``file-system-id`` to restore in place, as
        ``startAwsRestore.go``); the restore job id."""
        params: dict[str, Any] = {"RecoveryPointArn": recovery_point_arn, "IamRoleArn": role_arn,
                                  "Metadata": dict(metadata), "ResourceType": RESOURCE_TYPE}
        if idempotency_token:
            params["IdempotencyToken"] = idempotency_token
        return str(self._backup(write=True).start_restore_job(**params).get("RestoreJobId") or "")

    def restore_job(self, job_id: str) -> dict[str, Any] | None:
        """``DescribeRestoreJob`` (``Status``: ``PENDING`` / ``RUNNING`` / ``COMPLETED`` / ``ABORTED`` /
        ``FAILED``, ``StatusMessage``, ``CreatedResourceArn``), or ``None``."""
        return self._found("describe_restore_job", RestoreJobId=job_id)

