"""The SKR Redis cluster reads (AwsRedisCluster, AzureRedisCluster, GcpRedisCluster): what
:func:`~.rediscluster_plan.plan` decides over, once per connect per object.

The object; the clusters of its kind and its quota; its network: the IpRange through
:mod:`tasks.cloud.skr.defaultiprange` (AWS, Azure), the GcpSubnet (GCP: the named one, else ``default``,
created when missing and given its turn at once, as ``pkg/skr/common/defaultgcpsubnet``); the KCP mirror
named by its id (never for an id that is not a UUID); the auth Secret. The plan's writes (id label,
finalizer, KCP mirror, auth Secret, status) are carried out by the connect's executor. As cloud-manager's
``pkg/skr/{aws,azure,gcp}rediscluster``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kube import Conflict, Kube, Resource, resources
from kube.toolkit import deleting
from tasks.cloud import names, registry
from tasks.cloud.registry import Summary
from tasks.cloud.skr import defaultiprange, kind, redis_common
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.defaultiprange_plan import IpRangeUse
from tasks.cloud.skr.gcpsubnet_plan import SKR_GCP_SUBNET
from tasks.cloud.skr.rediscluster_plan import (
    DEFAULT_SUBNET,
    KCP_KINDS,
    Seen,
    identity,
    secret_name,
    subnet_reference,
    subnet_use,
)

__all__ = ["gcp_summary", "read", "subnet", "summary"]


def subnet(ctx: SkrContext, obj: Mapping[str, Any]) -> IpRangeUse:
    """The GcpSubnet use of the GcpRedisCluster ``obj`` (:func:`~.rediscluster_plan.subnet_use`): the default
    GcpSubnet is created when the plan asks for it (one that appeared meanwhile is used) and, like a
    GcpSubnet that is not Ready yet, gets a GcpSubnet turn at once (its KCP mirror, or its Ready, in this
    connect rather than the next). Raises ``kube.ApiError``."""
    name = subnet_reference(obj) or DEFAULT_SUBNET

    def decide() -> IpRangeUse:
        found = ctx.get(SKR_GCP_SUBNET, name)
        kcp_name = str(((found or {}).get("status") or {}).get("id") or "")
        kcp_subnet = ctx.mirror(names.GCP_SUBNET, kcp_name) if kcp_name and not deleting(obj) else None
        return subnet_use(obj, found, kcp_subnet, ctx.kyma)

    use = decide()
    if use.create is not None:
        with contextlib.suppress(Conflict):  # created by another cluster of this connect meanwhile
            ctx.skr.create(SKR_GCP_SUBNET, use.create)
    if use.wait and use.not_owned is None:
        ctx.forget(SKR_GCP_SUBNET)
        kind.reconcile(ctx, "", name, kind=registry.get("gcpsubnet"), res=SKR_GCP_SUBNET)
        ctx.forget(SKR_GCP_SUBNET)
        use = decide()
    return use


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs (the KCP object only for a UUID id). Raises ``kube.ApiError``."""
    provider = ctx.provider
    kcp_obj = ctx.mirror(KCP_KINDS[provider], identity(obj))
    namespace = str(obj["metadata"].get("namespace") or "")
    secret = ctx.skr.get(resources.SECRET, secret_name(obj), namespace)
    network = subnet(ctx, obj) if provider == "gcp" else defaultiprange.resolve(ctx, obj)
    return Seen(obj=obj, provider=provider, kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace, network=network,
                kcp=kcp_obj, secret=secret, overrides=ctx.settings.redis_cluster_tier_machine_types,
                everyone=ctx.objects(res), quota=ctx.quota(res))


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail of an AwsRedisCluster / AzureRedisCluster (its KCP RedisCluster)."""
    return _summary(names.REDIS_CLUSTER, skr, kcp, kyma, obj)


def gcp_summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail of a GcpRedisCluster (its KCP GcpRedisCluster)."""
    return _summary(names.GCP_REDIS_CLUSTER, skr, kcp, kyma, obj)


def _summary(kcp_res: Resource, skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """The auth Secret's keys in the SKR and the KCP discovery endpoint (the mirror only when it is the
    object's own)."""
    return redis_common.summary(kcp_res, "discoveryEndpoint", skr, kcp, kyma, obj)
