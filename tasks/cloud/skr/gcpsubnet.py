"""The SKR GcpSubnet reads: what :func:`~.gcpsubnet_plan.plan` decides over, once per connect per object
(``pkg/skr/gcpsubnet``'s ``loadKcpGcpSubnet`` and ``preventDeleteOnGcpRedisClusterUsage``).

The KCP GcpSubnet named by the object's id (never for an id that is not a UUID) and, while it is being
deleted, the SKR's GcpRedisClusters (none while that kind is not served). The plan's writes (id label,
finalizer, KCP mirror, status) are carried out by the connect's executor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource
from kube.errors import ResourceMissing
from kube.toolkit import deleting
from tasks.cloud import names
from tasks.cloud.registry import Summary
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.gcpsubnet_plan import SKR_GCP_REDIS_CLUSTER, Seen, identity, using
from tasks.cloud.skr.kind import mirror

__all__ = ["read", "summary"]


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs. Raises ``kube.ApiError``."""
    kcp_obj = ctx.mirror(names.GCP_SUBNET, identity(obj))
    used: list[str] = []
    if deleting(obj):
        try:
            clusters = ctx.objects(SKR_GCP_REDIS_CLUSTER)
        except ResourceMissing:
            clusters = []
        name = str(obj["metadata"]["name"])
        used = [f"{c['metadata'].get('namespace', '')}/{c['metadata']['name']}" for c in clusters if using(c) == name]
    return Seen(obj=obj, kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace, kcp=kcp_obj, used_by=used)


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the CIDR and the subnetwork's name (the KCP GcpSubnet's ``status.id``)."""
    found = mirror(kcp, names.GCP_SUBNET, obj, kyma)
    if found is None:
        return Summary("")
    kst = found.get("status") or {}
    return Summary(f"cidr {kst.get('cidr') or '?'}; subnetwork {kst.get('id') or '?'}")
