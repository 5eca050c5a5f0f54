"""The reads of a GcpNfsVolume created from a backup (:mod:`.gcpnfsvolume_source_plan` decides): the
GcpNfsVolumeBackup it names in this SKR and the Filestore backup (whose labels the ownership rule reads).
Read only while the volume has no KCP NfsInstance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud import names
from tasks.cloud.calls import attempt
from tasks.cloud.gcp import clients
from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.gcpnfsvolume_source_plan import SourceUse, decide, path_of, reference, wanted
from tasks.cloud.skr.nfsvolume_plan import valid_name

__all__ = ["resolve"]


def resolve(ctx: SkrContext, obj: Mapping[str, Any]) -> SourceUse | None:
    """The source backup of the volume ``obj`` (``None``: it names none). A transient refusal of the
    Filestore read is an Error to look at again. Raises ``kube.ApiError``."""
    if not wanted(obj):
        return None
    ref = reference(obj)
    source = ctx.skr.get(names.GCP_NFS_VOLUME_BACKUP, ref[1], ref[0]) \
        if ref is not None and valid_name(ref[0]) and valid_name(ref[1]) else None
    use = path_of(obj, ctx.scope, source)
    if use.path is None:
        return use
    backup, failure = attempt(clients.of(FileBackupClient, ctx.settings).get_backup, use.path)
    if failure is not None and failure.retryable:
        return SourceUse(error=("GCPError", failure.message), retry=True)
    return decide(obj, ctx.scope, source, backup)
