"""Which AWS Backup recovery points are a nuked runtime's, and how Nuke deletes them (pure): cloud-manager's
``pkg/kcp/provider/aws/nuke`` (``loadVault.go``, ``loadNfsBackups.go``, ``deleteNfsBackups.go``; flag
``nukeBackupsAws``).

The original, with the Scope's credentials (its account, the default role assumed) in the Scope's region,
finds the vault ``cm-<scope name>`` among ``ListBackupVaults``, lists its recovery points
(``ListRecoveryPointsByBackupVault`` with the Scope's account) and deletes each one not ``DELETING``
(status kind ``AwsNfsVolumeBackup``, id the recovery point ARN; a refused listing: reason
``ErrorListingAwsRecoveryPoints``); it waits while any is listed, and leaves the vault.

The vault is the runtime's alone (one per Scope and region, :func:`~tasks.cloud.aws.nfsbackup_client.vault_name`;
the Scope is KCP's, no SKR input names it), so its recovery points are the runtime's backups. As the
provider's answer is not what decides what we delete, we keep only recovery points whose ARN is of the
Scope's account and region and whose vault is that vault (:func:`owned`). Differences: a recovery point
still ``CREATING`` (its backup or copy job runs) is waited for, not deleted (AWS refuses it:
``InvalidResourceStateException``, which would end the turn's other deletes); and once the vault holds no
recovery point at all it is deleted too (listed as one more object of the kind, id the vault's ARN), so
Nuke leaves nothing behind in the account. Copies in other regions (``spec.location`` of a backup) are,
as in the original, not found: nothing names those regions once the runtime is gone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.cloud.kcp.nuke_plan import ProviderObject

__all__ = ["DELETE_POINT", "DELETE_VAULT", "KIND", "LIST_FAILED", "Target", "objects", "owned", "target",
           "vault_name"]

#: The Nuke's status kind of these resources (the original's ``"AwsNfsVolumeBackup"``).
KIND = "AwsNfsVolumeBackup"
#: The Nuke's Error reason when the listing is refused (``loadNfsBackups.go``).
LIST_FAILED = "ErrorListingAwsRecoveryPoints"
#: The calls that delete one recovery point / the empty vault (:class:`~tasks.cloud.aws.nfsbackup_client.Backup`).
DELETE_POINT, DELETE_VAULT = "delete_recovery_point", "delete_vault"
#: Recovery point states with no delete call: its deletion runs, or its job does (AWS refuses a delete).
_WAITING = frozenset({"DELETING", "CREATING"})
_ACCOUNT_RE = re.compile(r"^\d{12}$")
_REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
#: A name AWS Backup accepts for a vault (2-50 of ``A-Za-z0-9-_.``).
_VAULT_RE = re.compile(r"^[A-Za-z0-9_.-]{2,50}$")
_POINT_RE = re.compile(r"^arn:aws[a-z-]*:backup:([a-z0-9-]+):(\d{12}):recovery-point:[A-Za-z0-9_.:-]{1,200}$")


def vault_name(scope: str) -> str:
    """``cm-<scope name>``: the runtime's vault (the client layer's
    :func:`~tasks.cloud.aws.nfsbackup_client.vault_name`, which this pure module cannot import)."""
    return f"cm-{scope}"


@dataclass(frozen=True)
class Target:
    """Where the runtime's backups are: the Scope's account, region and vault."""

    account: str
    region: str
    vault: str


def target(scope: Mapping[str, Any]) -> Target | None:
    """The runtime's vault: ``cm-<scope name>`` in ``spec.region`` of ``spec.scope.aws.accountId``.
    ``None`` when the Scope has no well-formed account, region or name (nothing of the runtime's can be
    found there: nothing to delete)."""
    spec = scope.get("spec") or {}
    account = str(((spec.get("scope") or {}).get("aws") or {}).get("accountId") or "")
    region = str(spec.get("region") or "")
    name = str((scope.get("metadata") or {}).get("name") or "")
    if not (_ACCOUNT_RE.match(account) and _REGION_RE.match(region) and name and _VAULT_RE.match(vault_name(name))):
        return None
    return Target(account, region, vault_name(name))


def owned(point: Mapping[str, Any], where: Target) -> bool:
    """Whether ``point`` (a ``RecoveryPointByBackupVault``) is the runtime's: its ARN of the Scope's
    region and account, its vault (when named) the runtime's vault."""
    match = _POINT_RE.match(str(point.get("RecoveryPointArn") or ""))
    vault = point.get("BackupVaultName")
    return (match is not None and match.groups() == (where.region, where.account)
            and (vault is None or vault == where.vault))


def objects(points: Iterable[Mapping[str, Any]], vault: Mapping[str, Any] | None,
            where: Target) -> list[ProviderObject]:
    """The runtime's recovery points among ``points`` (the vault's listing) as Nuke's provider objects,
    oldest first (``CreationDate``, then ARN; a repeated ARN once): each deleted by
    ``delete_recovery_point(vault, arn)`` unless ``DELETING`` or ``CREATING``. With no recovery point
    listed at all and the vault still there (``vault``: ``DescribeBackupVault``'s answer, ``None`` when
    gone or not asked), the vault itself: ``delete_vault(vault)``, id its ARN (unless the vault
    is of another name or still counts recovery points)."""
    listed = list(points)
    mine: dict[str, Mapping[str, Any]] = {}
    for point in listed:
        if owned(point, where):
            mine.setdefault(str(point["RecoveryPointArn"]), point)
    ordered = sorted(mine.values(), key=lambda p: (str(p.get("CreationDate") or ""), str(p["RecoveryPointArn"])))
    found = [ProviderObject(str(p["RecoveryPointArn"]), str(p.get("Status") or "") in _WAITING, DELETE_POINT,
                            (where.vault, str(p["RecoveryPointArn"]))) for p in ordered]
    if (not listed and vault is not None and vault.get("BackupVaultName") == where.vault
            and not vault.get("NumberOfRecoveryPoints") and vault.get("BackupVaultArn")):
        found.append(ProviderObject(str(vault["BackupVaultArn"]), False, DELETE_VAULT, (where.vault,)))
    return found
