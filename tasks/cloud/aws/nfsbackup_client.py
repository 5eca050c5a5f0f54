"""The AWS Backup I/O of the AWS layer (the NFS backup kinds' calls, cloud-manager's
``pkg/skr/awsnfsvolumebackup/client`` and ``pkg/skr/awsnfsvolumerestore/client``).

As :mod:`tasks.cloud.aws.client`, whose clients, credentials, timeouts and errors it shares: every failure an
:class:`~tasks.cloud.aws.client.AwsError`, :func:`fencing.check` before every write. A read of something that
does not exist answers ``None``; a delete of something gone is done.
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
    _unless_gone,
    attempt_timeout,
    is_not_found,
)
from tasks.cloud.settings import CloudSettings

__all__ = ["BACKUP_ROLE_NAME", "Backup", "backup_for"]

#: The role AWS Backup assumes in the runtime's account (``awsconfig.BackupRoleName``'s default).
BACKUP_ROLE_NAME = "CloudManagerBackupServiceRole"


@_guarded
def backup_for(settings: CloudSettings, account: str, region: str) -> Backup:
    """The AWS Backup layer for ``account`` in ``region`` (role assumed when configured)."""
    key, secret, token = _credentials(settings, account, region)
    return Backup(lambda timeout: _client("backup", region, key, secret, token, settings.aws_endpoint_url, timeout))


def _lifecycle(delete_after_days: int | None, move_to_cold_storage_after_days: int | None) -> dict[str, Any]:
    life = {k: v for k, v in (("DeleteAfterDays", delete_after_days),
                              ("MoveToColdStorageAfterDays", move_to_cold_storage_after_days)) if v is not None}
    return {"Lifecycle": life} if life else {}


@_guard_methods
class Backup:
    """The NFS backup kinds' AWS Backup calls. Raises :class:`~tasks.cloud.aws.client.AwsError` (and
    :class:`fencing.FenceError` when the reconcile must stop).

    Args:
        clients: the boto3 ``backup`` client for a per-attempt timeout in seconds.
    """

    def __init__(self, clients: Callable[[float], Any]) -> None:
        self._clients = clients

    def _svc(self, write: bool = False) -> Any:
        if write:
            fencing.check()
        return self._clients(attempt_timeout(write))

    def _read(self, method: str, **params: Any) -> dict[str, Any] | None:
        try:
            return dict(getattr(self._svc(), method)(**params))
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return None
            raise

    def list_backup_vaults(self) -> list[dict[str, Any]]:
        """``ListBackupVaults``: the vaults of the region."""
        return [dict(v) for v in self._svc().list_backup_vaults().get("BackupVaultList") or []]

    def create_backup_vault(self, name: str, tags: Mapping[str, str]) -> str:
        """``CreateBackupVault`` (creator request id = the name); its ARN."""
        out = self._svc(write=True).create_backup_vault(BackupVaultName=name, BackupVaultTags=dict(tags),
                                                        CreatorRequestId=name)
        return str(out.get("BackupVaultArn") or "")

    def start_backup_job(self, backup_vault_name: str, resource_arn: str, iam_role_arn: str, idempotency_token: str,
                         recovery_point_tags: Mapping[str, str], delete_after_days: int | None = None,
                         move_to_cold_storage_after_days: int | None = None) -> dict[str, Any]:
        """``StartBackupJob``: ``BackupJobId``, ``RecoveryPointArn``."""
        return dict(self._svc(write=True).start_backup_job(
            BackupVaultName=backup_vault_name, ResourceArn=resource_arn, IamRoleArn=iam_role_arn,
            IdempotencyToken=idempotency_token, RecoveryPointTags=dict(recovery_point_tags),
            **_lifecycle(delete_after_days, move_to_cold_storage_after_days)))

    def describe_backup_job(self, backup_job_id: str) -> dict[str, Any] | None:
        """``DescribeBackupJob`` (``None``: not found)."""
        return self._read("describe_backup_job", BackupJobId=backup_job_id)

    def describe_recovery_point(self, account_id: str, backup_vault_name: str,
                                recovery_point_arn: str) -> dict[str, Any] | None:
        """``DescribeRecoveryPoint`` (``None``: not found)."""
        return self._read("describe_recovery_point", BackupVaultName=backup_vault_name,
                          RecoveryPointArn=recovery_point_arn, BackupVaultAccountId=account_id)

    def delete_recovery_point(self, backup_vault_name: str, recovery_point_arn: str) -> None:
        """``DeleteRecoveryPoint`` (one already gone is fine)."""
        _unless_gone(self._svc(write=True).delete_recovery_point, BackupVaultName=backup_vault_name,
                     RecoveryPointArn=recovery_point_arn)

    def start_copy_job(self, source_backup_vault_name: str, destination_backup_vault_arn: str,
                       recovery_point_arn: str, iam_role_arn: str, idempotency_token: str,
                       delete_after_days: int | None = None,
                       move_to_cold_storage_after_days: int | None = None) -> dict[str, Any]:
        """``StartCopyJob``: ``CopyJobId``."""
        return dict(self._svc(write=True).start_copy_job(
            SourceBackupVaultName=source_backup_vault_name, DestinationBackupVaultArn=destination_backup_vault_arn,
            RecoveryPointArn=recovery_point_arn, IamRoleArn=iam_role_arn, IdempotencyToken=idempotency_token,
            **_lifecycle(delete_after_days, move_to_cold_storage_after_days)))

    def describe_copy_job(self, copy_job_id: str) -> dict[str, Any] | None:
        """``DescribeCopyJob``: the ``CopyJob`` (``None``: not found)."""
        found = self._read("describe_copy_job", CopyJobId=copy_job_id)
        return None if found is None else dict(found.get("CopyJob") or {})

    def get_recovery_point_restore_metadata(self, account_id: str, backup_vault_name: str,
                                            recovery_point_arn: str) -> dict[str, Any] | None:
        """``GetRecoveryPointRestoreMetadata``: ``RestoreMetadata`` (``None``: not found)."""
        return self._read("get_recovery_point_restore_metadata", BackupVaultName=backup_vault_name,
                          RecoveryPointArn=recovery_point_arn, BackupVaultAccountId=account_id)

    def start_restore_job(self, iam_role_arn: str, idempotency_token: str, recovery_point_arn: str,
                          restore_metadata: Mapping[str, str]) -> dict[str, Any]:
        """``StartRestoreJob`` of type ``EFS``: ``RestoreJobId``."""
        return dict(self._svc(write=True).start_restore_job(
            IamRoleArn=iam_role_arn, IdempotencyToken=idempotency_token, RecoveryPointArn=recovery_point_arn,
            ResourceType="EFS", Metadata=dict(restore_metadata)))

    def describe_restore_job(self, restore_job_id: str) -> dict[str, Any] | None:
        """``DescribeRestoreJob`` (``None``: not found)."""
        return self._read("describe_restore_job", RestoreJobId=restore_job_id)
