"""Nuke's GCP provider resources: a gone runtime's Filestore backups (cloud-manager's
``pkg/kcp/provider/gcp/nuke``, flag ``nukeBackupsGcp``, on in its GA flag file).

:data:`NUKE_SIDE` is the :class:`~tasks.cloud.registry.NukeSide` a kind declares for provider ``gcp``
(the GcpNfsVolumeBackup kind: ``provider_nuke={"gcp": nuke_backups.NUKE_SIDE}``); Nuke
(:mod:`tasks.cloud.kcp.nuke`) then lists the Scope's backups through it, deletes each in the same turn as
the KCP objects (:mod:`tasks.cloud.kcp.nuke_plan`) and stays ``Deleting`` until none is listed. What is
"this runtime's" is :mod:`.nuke_backups_plan`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud import registry
from tasks.cloud.gcp import clients as gcp_clients
from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
from tasks.cloud.gcp.nuke_backups_plan import KIND, LIST_FAILED, listing, objects
from tasks.cloud.settings import CloudSettings

__all__ = ["NUKE_SIDE", "client", "listed"]


def client(scope: Mapping[str, Any], settings: CloudSettings) -> FileBackupClient:
    """The process's Filestore backup client (GCP credentials are the process's, not the Scope's)."""
    return gcp_clients.of(FileBackupClient, settings)


def listed(backups: FileBackupClient, scope: Mapping[str, Any]) -> list[registry.ProviderObject]:
    """The runtime's backups as Nuke's provider objects (:func:`.nuke_backups_plan.objects`); none when the
    Scope says where none can be. Raises :class:`~tasks.cloud.gcp.client.GcpApiError` (a Refusal)."""
    request = listing(scope)
    if request is None:
        return []
    return objects(backups.list_backups(*request), scope)


NUKE_SIDE = registry.NukeSide(kind=KIND, clients=client, list=listed, list_failed=LIST_FAILED)
