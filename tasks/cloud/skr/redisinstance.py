"""The SKR Redis instance reads (AwsRedisInstance, GcpRedisInstance, AzureRedisInstance): what
:func:`~.redisinstance_plan.plan` decides over, once per connect per object.

The object; the instances of its kind and its quota; its IpRange through
:mod:`tasks.cloud.skr.defaultiprange` (which creates the default IpRange when missing and gives a not-Ready
IpRange its turn); the KCP RedisInstance named by its id (never for an id that is not a UUID); the auth
Secret. The plan's writes (id label, finalizer, KCP mirror, auth Secret, status) are carried out by the
connect's executor. As cloud-manager's ``pkg/skr/{aws,gcp,azure}redisinstance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource, resources
from tasks.cloud import names
from tasks.cloud.registry import Summary
from tasks.cloud.skr import defaultiprange, redis_common
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.redisinstance_plan import Seen, identity, secret_name

__all__ = ["read", "summary"]


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs (the KCP object only for a UUID id). Raises ``kube.ApiError``."""
    kcp_obj = ctx.mirror(names.REDIS_INSTANCE, identity(obj))
    namespace = str(obj["metadata"].get("namespace") or "")
    secret = ctx.skr.get(resources.SECRET, secret_name(obj), namespace)
    return Seen(obj=obj, provider=ctx.provider, kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace,
                iprange=defaultiprange.resolve(ctx, obj), kcp=kcp_obj, secret=secret,
                overrides=ctx.settings.redis_instance_tier_machine_types, everyone=ctx.objects(res),
                quota=ctx.quota(res))


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the auth Secret's keys in the SKR and the KCP primary endpoint."""
    return redis_common.summary(names.REDIS_INSTANCE, "primaryEndpoint", skr, kcp, kyma, obj)
