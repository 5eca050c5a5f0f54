"""Nuke's AWS provider resources: a gone runtime's AWS Backup recovery points and its empty vault
(cloud-manager's ``pkg/kcp/provider/aws/nuke``, flag ``nukeBackupsAws``).

:data:`NUKE_SIDE` is the :class:`~tasks.cloud.registry.NukeSide` a kind declares for provider ``aws``
(the AwsNfsVolumeBackup kind: ``provider_nuke={"aws": nuke_backups.NUKE_SIDE}``); Nuke
(:mod:`tasks.cloud.kcp.nuke`) then lists the runtime's vault through it with the Scope's credentials,
deletes each recovery point in the same turn as the KCP objects (:mod:`tasks.cloud.kcp.nuke_plan`), stays
``Deleting`` until none is listed, then deletes the empty vault. What is "this runtime's" is
:mod:`.nuke_backups_plan`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud import registry
from tasks.cloud.aws.nfsbackup_client import Backup, backup_for
from tasks.cloud.aws.nuke_backups_plan import KIND, LIST_FAILED, objects, target
from tasks.cloud.settings import CloudSettings

__all__ = ["NUKE_SIDE", "client", "listed"]


def client(scope: Mapping[str, Any], settings: CloudSettings) -> Backup | None:
    """The AWS Backup client of the Scope's account and region (the default role assumed when configured,
    as the original's ``createAwsClient.go``); ``None`` when the Scope names no usable account or region
    (:func:`.nuke_backups_plan.target`). Raises :class:`~tasks.cloud.aws.client.AwsError` (a Refusal)."""
    where = target(scope)
    if where is None:
        return None
    return backup_for(settings, where.account, where.region)


def listed(backups: Backup | None, scope: Mapping[str, Any]) -> list[registry.ProviderObject]:
    """The runtime's recovery points (and, once none is left, its vault) as Nuke's provider objects
    (:func:`.nuke_backups_plan.objects`); none without a client. Raises
    :class:`~tasks.cloud.aws.client.AwsError` (a Refusal)."""
    where = target(scope)
    if backups is None or where is None:
        return []
    points = backups.recovery_points(where.account, where.vault)
    return objects(points, None if points else backups.vault(where.vault), where)


NUKE_SIDE = registry.NukeSide(kind=KIND, clients=client, list=listed, list_failed=LIST_FAILED)
