"""The SKR NFS volume reconcilers (AwsNfsVolume, GcpNfsVolume), run once per connect per volume:
read → :func:`~.nfsvolume_plan.plan` → apply.

The decisions are the pure plan in :mod:`tasks.cloud.skr.nfsvolume_plan`; this module reads what it
needs (the volume, its IpRange through :mod:`tasks.cloud.skr.defaultiprange`, its KCP NfsInstance, its
PV and PVC, the other volumes for the quota) and makes the plan's writes in order: the id label, the
finalizer, the KCP object, the PV and PVC, then the volume's status and Event, the finalizer's removal
last.

Deliberate difference: a quota-exceeded volume is checked again at the next connect.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from typing import Any

from kube import Resource, resources
from kube.clock import now_rfc3339
from kube.diff import label_selector
from kube.toolkit import add_finalizer, execute, remove_finalizer
from tasks.cloud import names
from tasks.cloud.kcp.common import ignored
from tasks.cloud.ownership import invalid_id, owner_labels
from tasks.cloud.skr import defaultiprange
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.nfsvolume_plan import AWS, GCP, Seen, SkrPlan, claim_name, plan, pv_name, valid_name
from workers.controller import Result

__all__ = ["apply", "read", "reconcile_aws", "reconcile_gcp"]

_KINDS = {AWS: names.AWS_NFS_VOLUME, GCP: names.GCP_NFS_VOLUME}
_LABEL_VALUE_MAX = 63


def _kcp_of(ctx: SkrContext, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The KCP NfsInstance: by the id (a UUID only: ownership before action); GCP without an id: by its
    owner labels, the lexicographically first."""
    meta = obj["metadata"]
    ident = str((obj.get("status") or {}).get("id") or "")
    if kind == AWS and not ident:
        ident = str((meta.get("labels") or {}).get(names.LABEL_SKR_ID) or "")
    if ident:
        return ctx.kcp.get(names.NFS_INSTANCE, ident, ctx.kcp_namespace) if invalid_id(ident) is None else None
    if kind == AWS:
        return None
    labels = owner_labels(ctx.kyma, str(meta["name"]), str(meta.get("namespace") or ""))
    if any(len(v) > _LABEL_VALUE_MAX for v in labels.values()):
        return None
    found = ctx.kcp.list(names.NFS_INSTANCE, ctx.kcp_namespace, label_selector=label_selector(labels))
    found = [o for o in found if invalid_id(str(o["metadata"]["name"])) is None]
    return min(found, key=lambda o: str(o["metadata"]["name"])) if found else None


def _labelled_pvs(ctx: SkrContext, kind: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """GCP: the PVs with the volume's ``nfsVolumeName`` / ``nfsVolumeNamespace`` labels (the original's
    ``loadPersistenceVolume``); the plan decides which of them are the volume's."""
    meta = obj["metadata"]
    labels = {names.LABEL_NFS_VOLUME_NAME: str(meta["name"]),
              names.LABEL_NFS_VOLUME_NAMESPACE: str(meta.get("namespace") or "")}
    if kind != GCP or any(len(v) > _LABEL_VALUE_MAX for v in labels.values()):
        return []
    return ctx.skr.list(resources.PERSISTENT_VOLUME, label_selector=label_selector(labels))


def read(ctx: SkrContext, kind: str, obj: dict[str, Any]) -> Seen:
    """What the plan needs (the IpRange's read may create the default IpRange). Raises ``kube.ApiError``."""
    namespace = str(obj["metadata"].get("namespace") or "")
    pv, pvc = pv_name(obj), claim_name(obj)  # untrusted names: read only valid ones (the plan refuses the rest)
    return Seen(kind=kind, obj=obj, kcp=_kcp_of(ctx, kind, obj), iprange=defaultiprange.resolve(ctx, obj),
                kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace,
                pv=ctx.skr.get(resources.PERSISTENT_VOLUME, pv) if valid_name(pv) else None,
                pvc=ctx.skr.get(resources.PERSISTENT_VOLUME_CLAIM, pvc, namespace) if valid_name(pvc) else None,
                labelled_pvs=_labelled_pvs(ctx, kind, obj),
                everyone=ctx.objects(_KINDS[kind]) if kind == AWS else [],
                quota=ctx.settings.quota(ctx.kyma, names.AWS_NFS_VOLUME_QUOTA_KEY) if kind == AWS else None,
                scope=ctx.scope, zone_pick=random.randrange(1 << 16))


def _release(ctx: SkrContext, res: Resource, local: dict[str, Any] | None) -> None:
    if local is not None:
        remove_finalizer(ctx.skr, res, local, names.FINALIZER)


def apply(ctx: SkrContext, kind: str, obj: dict[str, Any], seen: Seen, decided: SkrPlan) -> dict[str, Any] | None:
    """Make ``decided``'s writes in order (see :class:`~.nfsvolume_plan.SkrPlan`). Returns the volume as
    last written (``None`` once gone). Raises ``kube.ApiError``."""
    res = _KINDS[kind]
    name, namespace = str(obj["metadata"]["name"]), str(obj["metadata"].get("namespace") or "")
    current = obj
    if decided.label_id is not None:
        current = ctx.skr.patch(res, name, {"metadata": {"labels": {names.LABEL_SKR_ID: decided.label_id}}}, namespace)
    step = decided.step
    if step.add_finalizer:
        current = add_finalizer(ctx.skr, res, current, step.add_finalizer)
    if decided.kcp_create is not None:
        ctx.kcp.create(names.NFS_INSTANCE, decided.kcp_create)
    if decided.kcp_patch is not None and seen.kcp is not None:
        ctx.kcp.patch(names.NFS_INSTANCE, str(seen.kcp["metadata"]["name"]), decided.kcp_patch, ctx.kcp_namespace)
    if decided.kcp_delete is not None:
        ctx.kcp.delete(names.NFS_INSTANCE, decided.kcp_delete, ctx.kcp_namespace)
    if decided.pv_create is not None:
        ctx.skr.create(resources.PERSISTENT_VOLUME, decided.pv_create)
    if decided.pv_patch is not None and seen.pv is not None:
        ctx.skr.patch(resources.PERSISTENT_VOLUME, str(seen.pv["metadata"]["name"]), decided.pv_patch)
    if decided.pvc_create is not None:
        ctx.skr.create(resources.PERSISTENT_VOLUME_CLAIM, decided.pvc_create)
    if decided.pvc_patch is not None and seen.pvc is not None:
        ctx.skr.patch(resources.PERSISTENT_VOLUME_CLAIM, str(seen.pvc["metadata"]["name"]), decided.pvc_patch,
                      namespace)
    if decided.pvc_release:
        _release(ctx, resources.PERSISTENT_VOLUME_CLAIM, dict(seen.pvc or {}) or None)
    if decided.pvc_delete and seen.pvc is not None:
        ctx.skr.delete(resources.PERSISTENT_VOLUME_CLAIM, str(seen.pvc["metadata"]["name"]), namespace)
    if decided.pv_release:
        _release(ctx, resources.PERSISTENT_VOLUME, dict(seen.pv or {}) or None)
    if decided.pv_delete and seen.pv is not None:
        ctx.skr.delete(resources.PERSISTENT_VOLUME, str(seen.pv["metadata"]["name"]))
    stale = {str(pv["metadata"]["name"]): pv for pv in seen.labelled_pvs}
    if decided.stale_pv_release is not None:
        _release(ctx, resources.PERSISTENT_VOLUME, dict(stale.get(decided.stale_pv_release) or {}) or None)
    if decided.stale_pv_delete is not None and decided.stale_pv_delete in stale:
        ctx.skr.delete(resources.PERSISTENT_VOLUME, decided.stale_pv_delete)
    return execute(replace(step, add_finalizer=None), ctx.skr, res, current).obj


def _reconcile(ctx: SkrContext, kind: str, namespace: str, name: str) -> Result:
    res = _KINDS[kind]
    obj = ctx.get(res, name, namespace)
    if obj is None or ignored(obj):
        return Result.done()
    seen = read(ctx, kind, obj)
    decided = plan(seen, str(uuid.uuid4()), ctx.settings.t, now_rfc3339())
    written = apply(ctx, kind, obj, seen, decided)
    ctx.track(f"{namespace}/{name}", written or obj)
    return decided.step.as_result()


def reconcile_aws(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the AwsNfsVolume ``namespace/name``: read, plan, apply."""
    return _reconcile(ctx, AWS, namespace, name)


def reconcile_gcp(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the GcpNfsVolume ``namespace/name``: read, plan, apply."""
    return _reconcile(ctx, GCP, namespace, name)
