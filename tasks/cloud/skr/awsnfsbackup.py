"""The reads of the SKR AwsNfsVolumeBackup and AwsNfsVolumeRestore (no KCP mirror): what
:mod:`tasks.cloud.aws.nfsbackup_plan` / :mod:`tasks.cloud.aws.nfsrestore_plan` decide over, once per connect
per object, and the AWS Backup clients their calls go through.

The SKR objects they name are read from this SKR only (the connect's snapshot); the volume's KCP NfsInstance
only when it is that volume's own (:func:`tasks.cloud.skr.kind.mirror`: its owner labels name this runtime and
the volume), so a name or id in an SKR object never selects another tenant's file system. The AWS Backup
reads are made one at a time as the plan needs them (:func:`tasks.cloud.calls.read_as_needed`), through the
Scope's credentials, in the Scope's region and (a copy) in the backup's ``location`` (a region-shaped name
only: it selects the endpoint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kube import Resource
from kube.clock import now_rfc3339
from kube.toolkit.outcome import deleting
from tasks.cloud import names
from tasks.cloud.aws import nfsbackup_plan as bp
from tasks.cloud.aws import nfsrestore_plan as rp
from tasks.cloud.aws.nfsbackup_client import BACKUP_ROLE_NAME, Backup, backup_for
from tasks.cloud.calls import needed, read_as_needed
from tasks.cloud.registry import Summary
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.kind import mirror
from tasks.cloud.skr.nfsvolume_plan import valid_name

__all__ = ["Clients", "backup_summary", "clients", "read_backup", "read_restore", "restore_summary", "valid_ref",
           "where"]


def where(ctx: SkrContext) -> bp.Where:
    """The runtime of the connect, from its Scope."""
    spec = ctx.scope.get("spec") or {}
    aws = ((spec.get("scope") or {}).get("aws")) or {}
    return bp.Where(scope=str((ctx.scope.get("metadata") or {}).get("name") or ""),
                    region=str(spec.get("region") or ""), account=str(aws.get("accountId") or ""),
                    shoot=str(spec.get("shootName") or ""), partition=ctx.settings.aws_partition,
                    backup_role=BACKUP_ROLE_NAME, capacity_check=ctx.settings.efs_capacity_check_interval)


class Clients(Mapping[str, Backup]):
    """The AWS Backup clients of one turn by name: ``""`` the Scope's region, a region's name that region
    (only region-shaped names; a copy's vault lives there). Built on first use (a client that cannot be built
    raises the client layer's refusal where it is used: a read's or a call's failure)."""

    def __init__(self, ctx: SkrContext) -> None:
        self._ctx = ctx
        self._where = where(ctx)
        self._built: dict[str, Backup] = {}

    def __getitem__(self, name: str) -> Backup:
        region = name or self._where.region
        if name and not bp.valid_region(name):
            raise KeyError(name)
        if region not in self._built:
            self._built[region] = backup_for(self._ctx.settings, self._where.account, region)
        return self._built[region]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)

    def __bool__(self) -> bool:  # clients are there before the first is built (the executor tests ``clients or {}``)
        return True


def clients(ctx: SkrContext) -> Clients:
    """The executor's clients of a turn (:attr:`tasks.cloud.registry.SkrSide.clients`)."""
    return Clients(ctx)


def valid_ref(namespace: str, name: str) -> bool:
    """Whether ``namespace/name`` can name an object (DNS-1123): only such refs become request paths."""
    return valid_name(namespace) and valid_name(name)


def _volume(ctx: SkrContext, namespace: str, name: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The SKR AwsNfsVolume ``namespace/name`` of this SKR and its own KCP NfsInstance."""
    if not valid_ref(namespace, name):
        return None, None
    volume = ctx.get(names.AWS_NFS_VOLUME, name, namespace)
    if volume is None:
        return None, None
    return volume, mirror(ctx.kcp_reads, names.NFS_INSTANCE, volume, ctx.kyma)


def _newer_in_schedule(ctx: SkrContext, res: Resource, obj: Mapping[str, Any]) -> bool:
    """``markFailed``: an Error backup of a schedule with a newer backup of the same schedule."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    schedule = labels.get(names.LABEL_SCHEDULE_NAME)
    if (obj.get("status") or {}).get("state") != names.STATE_ERROR or not schedule:
        return False
    created = str(meta.get("creationTimestamp") or "")
    for other in ctx.objects(res):
        other_meta = other.get("metadata") or {}
        other_labels = other_meta.get("labels") or {}
        if (other_meta.get("namespace") == meta.get("namespace")
                and other_labels.get(names.LABEL_SCHEDULE_NAME) == schedule
                and other_labels.get(names.LABEL_SCHEDULE_NAMESPACE) == meta.get("namespace")
                and str(other_meta.get("creationTimestamp") or "") > created):
            return True
    return False


def _filled(seen: Any, plan: Callable[..., Any], ctx: SkrContext, fetch: Mapping[str, Callable[[], Any]]) -> Any:
    now, t = now_rfc3339(), ctx.settings.t
    return read_as_needed(seen, lambda s: needed(lambda: plan(s, "", t, now)), fetch)


def read_backup(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> bp.Seen:
    """What the backup plan needs of ``obj``. Raises ``kube.ApiError``."""
    w = where(ctx)
    volume = instance = None
    if not deleting(obj) and bp.short_circuit(obj, w, now_rfc3339()) is None:  # a settled backup reads nothing
        volume, instance = _volume(ctx, *bp.volume_ref(obj))
    seen = bp.Seen(obj=obj, where=w, volume=volume, instance=instance,
                   newer_in_schedule=_newer_in_schedule(ctx, res, obj), everyone=ctx.objects(res),
                   quota=ctx.quota(res))
    backups = Clients(ctx)
    status = obj.get("status") or {}
    vault = bp.vault_name(w.scope)
    dest = bp.remote(obj, w)

    def point(region: str, key: str) -> Callable[[], Any]:
        return lambda: backups["" if region == w.region else region].recovery_point(
            w.account, vault, bp.recovery_point_arn(w, region, str(status.get(key) or "")))

    return _filled(seen, bp.plan, ctx, {
        "vaults": lambda: backups[""].list_vaults(),
        "dest_vaults": lambda: backups[dest].list_vaults(),
        "job": lambda: backups[""].backup_job(str(status.get("jobId") or "")),
        "point": point(w.region, "id"),
        "copy_job": lambda: backups[""].copy_job(str(status.get("copyJobId") or "")),
        "dest_point": point(dest, "remoteId"),
    })


def read_restore(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> rp.Seen:
    """What the restore plan needs of ``obj``: its backup and the backup's volume (this SKR's), the volume's
    own NfsInstance. Raises ``kube.ApiError``."""
    w = where(ctx)
    backup = volume = instance = None
    namespace, name = rp.backup_ref(obj)
    if not rp.finished(obj) and valid_ref(namespace, name):
        backup = ctx.get(names.AWS_NFS_VOLUME_BACKUP, name, namespace)
        if backup is not None:
            volume, instance = _volume(ctx, *bp.volume_ref(backup))
    seen = rp.Seen(obj=obj, where=w, backup=backup, volume=volume, instance=instance, everyone=ctx.objects(res),
                   quota=ctx.quota(res))
    backups = Clients(ctx)
    point_id = str(((backup or {}).get("status") or {}).get("id") or "")
    return _filled(seen, rp.plan, ctx, {
        "metadata": lambda: backups[""].restore_metadata(
            w.account, bp.vault_name(w.scope), bp.recovery_point_arn(w, w.region, point_id)),
        "job": lambda: backups[""].restore_job(str((obj.get("status") or {}).get("jobId") or "")),
    })


def backup_summary(skr: Any, kcp: Any, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail of a backup (no reads): its recovery point, locations and capacity."""
    status = obj.get("status") or {}
    if not status.get("id"):
        return Summary(f"job {status['jobId']}" if status.get("jobId") else "")
    where = ", ".join(str(x) for x in status.get("locations") or [])
    return Summary(f"recovery point {status['id']} in {where or '?'}; capacity {status.get('capacity') or '?'}")


def restore_summary(skr: Any, kcp: Any, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail of a restore (no reads): its job and the directory it restored into."""
    status = obj.get("status") or {}
    detail = f"restore job {status['jobId']}" if status.get("jobId") else ""
    if status.get("restoredDir"):
        detail += f" into /{status['restoredDir']}"
    return Summary(detail)
