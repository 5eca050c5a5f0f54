"""The SKR GcpNfsVolumeBackup reads: what :func:`~.gcpnfsvolumebackup_plan.plan` decides over, once per
connect per backup (cloud-manager's ``loadScope``, ``loadNfsBackup``, ``loadGcpNfsVolume``,
``checkBackupOperation``'s read, ``markFailed``'s list).

Filestore is read only when the plan will look (:func:`~.gcpnfsvolumebackup_plan.needs_provider`: a Ready
backup is not read again before its capacity is due). The source volume is read only while there is no
backup, and only in this SKR; its instance comes from its own KCP NfsInstance
(:func:`tasks.cloud.skr.kind.mirror`: the volume's ``status.id`` checked by the mirror's owner labels), never
from the volume's status. A refused Filestore read reaches the plan as a :class:`~kube.refusal.Failure`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource
from kube.clock import now_rfc3339
from kube.refusal import Failure
from tasks.cloud import names
from tasks.cloud.calls import attempt
from tasks.cloud.gcp import clients
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
from tasks.cloud.ownership import invalid_id
from tasks.cloud.registry import Summary
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.gcpnfsvolumebackup_plan import Seen, needs_provider
from tasks.cloud.skr.kind import mirror
from tasks.cloud.skr.nfsvolume_plan import valid_name

__all__ = ["client", "read", "source_instance", "summary"]


def client(ctx: SkrContext) -> dict[str, Any]:
    """The turn's clients: the process's Filestore backup client."""
    return {"": clients.of(FileBackupClient, ctx.settings)}


def source_instance(ctx: SkrContext, volume: Mapping[str, Any] | None) -> str | None:
    """The Filestore instance of the SKR GcpNfsVolume ``volume``: ``cm-<kcp name>`` in the location of its
    own KCP NfsInstance (``None``: no volume, no id, or a mirror that is not this volume's)."""
    if volume is None:
        return None
    kcp = mirror(ctx.kcp_reads, names.NFS_INSTANCE, volume, ctx.kyma)
    if kcp is None:
        return None
    location = str(((((kcp.get("spec") or {}).get("instance") or {}).get("gcp") or {}).get("location")) or "")
    return fs.instance_path(fs.project(ctx.scope), location, f"cm-{kcp['metadata']['name']}")


def _newer(ctx: SkrContext, res: Resource, obj: Mapping[str, Any]) -> bool:
    """A later backup of the same schedule in the namespace (``markFailed``)."""
    meta = obj.get("metadata") or {}
    schedule = (meta.get("labels") or {}).get(names.LABEL_SCHEDULE_NAME)
    if not schedule or (obj.get("status") or {}).get("state") != names.STATE_ERROR:
        return False
    created = str(meta.get("creationTimestamp") or "")
    return any(((o.get("metadata") or {}).get("labels") or {}).get(names.LABEL_SCHEDULE_NAME) == schedule
               and (o.get("metadata") or {}).get("namespace") == meta.get("namespace")
               and str((o.get("metadata") or {}).get("creationTimestamp") or "") > created
               for o in ctx.objects(res))


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs of ``obj``. Raises ``kube.ApiError``."""
    scope = ctx.scope
    base = Seen(obj=obj, scope=scope, retry=ctx.settings.gcp_retry_wait, newer=_newer(ctx, res, obj),
                everyone=ctx.objects(res), quota=ctx.quota(res))
    status = obj.get("status") or {}
    ident = str(status.get("id") or "")
    if not needs_provider(obj, scope, now_rfc3339()) or not ident or invalid_id(ident) is not None:
        return base
    name = fs.backup_path(fs.project(scope), str(status.get("location") or ""), fs.backup_id(ident))
    if name is None:
        return base
    backups: FileBackupClient = client(ctx)[""]
    failure: Failure | None = None
    operation = None
    op_name = str(status.get("opIdentifier") or "")
    if op_name:
        operation, failure = attempt(backups.get_operation, op_name)
    backup, failed = attempt(backups.get_backup, name)
    failure = failure or failed
    volume, instance, share = None, None, ""
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if backup is None and failure is None and not deleting:
        ref = ((obj.get("spec") or {}).get("source") or {}).get("volume") or {}
        namespace = str(ref.get("namespace") or (obj.get("metadata") or {}).get("namespace") or "")
        if valid_name(str(ref.get("name") or "")) and valid_name(namespace):
            volume = ctx.skr.get(names.GCP_NFS_VOLUME, str(ref["name"]), namespace)
            instance = source_instance(ctx, volume)
            share = str(((volume or {}).get("spec") or {}).get("fileShareName") or "")
    return Seen(obj=obj, scope=scope, volume=volume, instance=instance, file_share=share, backup=backup,
                operation=operation, failure=failure, newer=base.newer, retry=base.retry, everyone=base.everyone,
                quota=base.quota)


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the Filestore backup (``<location>/cm-<id>``) and its size."""
    status = obj.get("status") or {}
    if not status.get("id"):
        return Summary("")
    size = f", {status['capacity']}" if status.get("capacity") else ""
    return Summary(f"backup {status.get('location')}/{fs.backup_id(str(status['id']))}{size}")
