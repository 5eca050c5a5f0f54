"""The SKR NFS volume reads (AwsNfsVolume, GcpNfsVolume): what :func:`~.nfsvolume_plan.plan` decides over,
once per connect per volume.

The volume's IpRange through :mod:`tasks.cloud.skr.defaultiprange`, its KCP NfsInstance, its PV and PVC
(and, GCP, the PVs labelled as its own), the other volumes and the quota. The plan's writes (the id label,
the finalizer, the KCP object, the PV and PVC, the status and Event, the finalizer's removal last) are
carried out by the connect's executor (:mod:`tasks.cloud.skr.kind`).

Deliberate difference: a quota-exceeded volume is checked again at the next connect.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource, resources
from kube.diff import label_selector
from tasks.cloud import names
from tasks.cloud.ownership import invalid_id, owner_labels
from tasks.cloud.registry import Summary
from tasks.cloud.skr import defaultiprange, gcpnfsvolume_source
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.nfsvolume_plan import AWS, GCP, KINDS, Seen, claim_name, pv_name, valid_name

__all__ = ["read", "summary"]

_LABEL_VALUE_MAX = 63


def _kcp_of(ctx: SkrContext, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The KCP NfsInstance: by the id (a UUID only: ownership before action); GCP without an id: by its
    owner labels, the lexicographically first."""
    meta = obj["metadata"]
    ident = str((obj.get("status") or {}).get("id") or "")
    if kind == AWS and not ident:
        ident = str((meta.get("labels") or {}).get(names.LABEL_SKR_ID) or "")
    if ident:
        return ctx.kcp_reads.get(names.NFS_INSTANCE, ident, ctx.kcp_namespace) if invalid_id(ident) is None else None
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


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs of the volume ``obj`` of ``res`` (the IpRange's read may create the default
    IpRange). Raises ``kube.ApiError``."""
    kind = AWS if res == KINDS[AWS] else GCP
    namespace = str(obj["metadata"].get("namespace") or "")
    pv, pvc = pv_name(obj), claim_name(obj)  # untrusted names: read only valid ones (the plan refuses the rest)
    kcp = _kcp_of(ctx, kind, obj)
    deleting = bool(obj["metadata"].get("deletionTimestamp"))
    source = gcpnfsvolume_source.resolve(ctx, obj) if kind == GCP and kcp is None and not deleting else None
    labelled = _labelled_pvs(ctx, kind, obj)
    # the PV by name: from the labelled PVs (GCP) when it is one of them (the same object, one request less)
    volume = next((p for p in labelled if (p.get("metadata") or {}).get("name") == pv), None) if labelled else None
    if volume is None and valid_name(pv):
        volume = ctx.skr.get(resources.PERSISTENT_VOLUME, pv)
    return Seen(kind=kind, obj=obj, kcp=kcp, iprange=defaultiprange.resolve(ctx, obj), source=source,
                kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace, pv=volume,
                pvc=ctx.skr.get(resources.PERSISTENT_VOLUME_CLAIM, pvc, namespace) if valid_name(pvc) else None,
                labelled_pvs=labelled,
                everyone=ctx.objects(KINDS[kind]), quota=ctx.quota(KINDS[kind]),
                scope=ctx.scope, zone_pick=random.randrange(1 << 16))


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the PVC, its PV and the PV's NFS server and path; ``Binding`` for a volume
    Ready in the KCP whose PV and PVC are not written yet."""
    namespace = str(obj["metadata"].get("namespace") or "")
    claim = skr.get(resources.PERSISTENT_VOLUME_CLAIM, claim_name(obj), namespace)
    volume_name = str(((claim or {}).get("spec") or {}).get("volumeName") or "")
    pv = skr.get(resources.PERSISTENT_VOLUME, volume_name) if volume_name else None
    if claim is None or pv is None:
        ready = (obj.get("status") or {}).get("state") == names.STATE_READY
        return Summary("", "Binding" if ready else None)
    nfs = (pv.get("spec") or {}).get("nfs") or {}
    return Summary(f"{nfs.get('server')}:{nfs.get('path')}; pvc {claim['metadata']['name']} bound to pv {volume_name}")
