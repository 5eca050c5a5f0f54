"""The SKR GcpNfsVolumeRestore reads: what :func:`~.gcpnfsvolumerestore_plan.plan` decides over, once per
connect per restore (cloud-manager's ``loadGcpNfsVolume``, ``populateBackupUrl``, ``loadBackup``,
``checkRestoreOperation``'s and ``findRestoreOperation``'s reads, the lease of ``acquireLease``).

A finished restore reads only its lease; a running one its operation. Before a restore starts: the
destination volume and source backup of this SKR (names checked before they are asked for), the volume's
instance from its own KCP NfsInstance (:func:`tasks.cloud.skr.gcpnfsvolumebackup.source_instance`), the
Filestore backup (its labels decide the ownership rule) and a restore of the instance already running.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kube import Kube, Resource, resources
from kube.refusal import Failure
from tasks.cloud import names
from tasks.cloud.calls import attempt
from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
from tasks.cloud.registry import Summary
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.gcpnfsvolumebackup import client, source_instance
from tasks.cloud.skr.gcpnfsvolumerestore_plan import (
    STATE_DONE,
    STATE_FAILED,
    Seen,
    destination,
    lease_name,
    source_path,
    source_ref,
)
from tasks.cloud.skr.nfsvolume_plan import valid_name

__all__ = ["client", "read", "summary"]


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs of ``obj``. Raises ``kube.ApiError``."""
    status = obj.get("status") or {}
    namespace, volume_name = destination(obj)
    names_ok = valid_name(namespace) and valid_name(volume_name) and valid_name(lease_name(obj))
    lease = ctx.skr.get(resources.LEASE, lease_name(obj), namespace) if names_ok else None
    base = Seen(obj=obj, scope=ctx.scope, lease=lease, retry=ctx.settings.gcp_retry_wait,
                everyone=ctx.objects(res), quota=ctx.quota(res))
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if deleting or status.get("state") in (STATE_DONE, STATE_FAILED):
        return base
    backups: FileBackupClient = client(ctx)[""]
    op_name = str(status.get("opIdentifier") or "")
    if op_name:
        operation, refused = attempt(backups.get_operation, op_name)
        return replace(base, operation=operation, failure=refused)
    volume = ctx.skr.get(names.GCP_NFS_VOLUME, volume_name, namespace) if names_ok else None
    instance = source_instance(ctx, volume)
    share = str(((volume or {}).get("spec") or {}).get("fileShareName") or "")
    source = None
    ref = source_ref(obj)
    if ref is not None and valid_name(ref[0]) and valid_name(ref[1]):
        source = ctx.skr.get(names.GCP_NFS_VOLUME_BACKUP, ref[1], ref[0])
    seen = replace(base, volume=volume, instance=instance, file_share=share, source=source)
    path, _ = source_path(seen)
    failure: Failure | None = None
    backup = running = None
    if path is not None and instance is not None:
        backup, failed = attempt(backups.get_backup, path)
        if failed is not None and failed.retryable:
            failure = failed  # a transient refusal: the permission check waits for an answer
        running, not_listed = attempt(backups.find_restore_operation, instance)
        failure = failure or not_listed
    return replace(seen, backup=backup, running=running, failure=failure)


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: what is restored into which volume."""
    source = (obj.get("spec") or {}).get("source") or {}
    ref = source_ref(obj)
    what = f"backup {ref[0]}/{ref[1]}" if ref is not None else str(source.get("backupUrl") or "")
    namespace, name = destination(obj)
    return Summary(f"{what} -> volume {namespace}/{name}")
