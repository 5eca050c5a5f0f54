"""The NFS backup schedule reads (``pkg/skr/backupschedule/v1``'s ``loadSource.go``, ``loadBackups.go``):
what :func:`~.backupschedule_plan.plan` decides over, and the two providers' declared parts
(``backupImplGcpNfs.go``, ``backupImplAwsNfs.go``).

A schedule waiting for its next run time costs no read beyond itself and the quota's list; when a run is
due (or it is being deleted) the read loads its volume (``spec.nfsVolumeRef``, its namespace defaulting to
the schedule's: one object of this SKR, never read for a name that cannot be one) and the backups of its
namespace that carry its labels (a label-selected list: never the SKR's other backups), keeping only its own
(:func:`~.backupschedule_plan.own`); a schedule whose spec is invalid reads no backups unless it is being
deleted. The clock of the turn
is the read's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource
from kube.errors import ResourceMissing
from tasks.cloud import names
from tasks.cloud.registry import Summary
from tasks.cloud.skr.backupschedule_plan import REASON_NOT_FOUND, BackupKind, Seen, due, own, source_ref, utc, validate
from tasks.cloud.skr.context import SkrContext

__all__ = ["AWS", "GCP", "read", "summary"]


def _location(spec: Mapping[str, Any]) -> dict[str, Any]:
    location = str(spec.get("location") or "")
    return {"location": location} if location else {}


def _gcp_spec(spec: Mapping[str, Any], namespace: str, name: str) -> dict[str, Any]:
    """A GcpNfsVolumeBackup's spec: the volume, the schedule's location and ``accessibleFrom``."""
    out: dict[str, Any] = {**_location(spec), "source": {"volume": {"name": name, "namespace": namespace}}}
    accessible = spec.get("accessibleFrom")
    if isinstance(accessible, list) and accessible:
        out["accessibleFrom"] = [str(a) for a in accessible[:10]]
    return out


def _aws_spec(spec: Mapping[str, Any], namespace: str, name: str) -> dict[str, Any]:
    """An AwsNfsVolumeBackup's spec: the volume and the schedule's location."""
    return {**_location(spec), "source": {"volume": {"name": name, "namespace": namespace}}}


GCP = BackupKind(names.GCP_NFS_BACKUP_SCHEDULE, names.GCP_NFS_VOLUME, names.GCP_NFS_VOLUME_BACKUP, _gcp_spec)
AWS = BackupKind(names.AWS_NFS_BACKUP_SCHEDULE, names.AWS_NFS_VOLUME, names.AWS_NFS_VOLUME_BACKUP, _aws_spec)
_BY_KIND = {k.schedule.kind: k for k in (GCP, AWS)}


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs (module doc). Raises ``kube.ApiError``."""
    kind = _BY_KIND[res.kind]
    now = time.time()
    everyone = ctx.objects(res)
    if not due(obj, now):
        return Seen(obj=obj, kind=kind, now=now, everyone=everyone, quota=ctx.quota(res))
    meta = obj["metadata"]
    source = None
    problem = validate(obj, utc(now))
    if problem is None or problem[0] != REASON_NOT_FOUND:
        namespace, name = source_ref(obj)
        if name:
            try:
                source = ctx.get(kind.source, name, namespace)
            except ResourceMissing:
                source = None
    selector = f"{names.LABEL_SCHEDULE_NAME}={meta['name']},{names.LABEL_SCHEDULE_NAMESPACE}={meta['namespace']}"
    try:
        listed = ctx.skr.list(kind.backup, str(meta["namespace"]), label_selector=selector) \
            if len(str(meta["name"])) <= 63 and (problem is None or meta.get("deletionTimestamp")) else []
    except ResourceMissing:
        listed = []
    backups = tuple(b for b in listed if own(obj, b))
    return Seen(obj=obj, kind=kind, now=now, loaded=True, source=source, backups=backups, everyone=everyone,
                quota=ctx.quota(res))


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the next run, the last backup and how many there are."""
    status = obj.get("status") or {}
    times = status.get("nextRunTimes") or []
    last = (status.get("lastCreatedBackup") or {}).get("name") or "-"
    nxt = times[0] if isinstance(times, list) and times else "-"
    return Summary(f"next {nxt}; last {last}; backups {int(status.get('backupCount') or 0)}")
