"""The I/O the AWS RedisInstance and RedisCluster flows share: the reads of every ElastiCache piece of a
KCP object and the kind's ``aws`` provider side around its pure plans (:mod:`tasks.cloud.aws.redis_common_plan`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud.aws.redis_common_plan import Read, read_failed, resource_names
from tasks.cloud.aws.redisinstance_client import ElastiCache
from tasks.cloud.registry import ProviderSide, Turn
from tasks.cloud.settings import CloudSettings

__all__ = ["read", "side"]


def read(found: Mapping[str, Any], turn: Turn) -> Read:
    """Every AWS piece of the KCP RedisInstance / RedisCluster of ``turn`` by its name (``None`` for a missing
    one; ``found[""]``: its :class:`~tasks.cloud.aws.redisinstance_client.ElastiCache`), the security group
    in the VPC of the IpRange the kind's KCP read found (``turn.seen.iprange``). Raises
    :class:`~tasks.cloud.aws.client.AwsError`."""
    ec: ElastiCache = found[""]
    n = resource_names(turn.name)
    group = ec.replication_group(n["group"])
    iprange = getattr(turn.seen, "iprange", None) or {}
    vpc_id = str((iprange.get("status") or {}).get("vpcId") or "")
    security_group = ec.security_group(vpc_id, n["security_group"], f"{turn.namespace}/{turn.name}") if vpc_id else None
    return Read(subnet_group=ec.subnet_group(n["subnet_group"]), main=ec.parameter_group(n["parameter_group"]),
                temp=ec.parameter_group(n["temp_parameter_group"]), token=ec.auth_token(n["secret"]),
                user_group=ec.user_group(n["user_group"]), security_group=security_group, group=group,
                members=ec.members([str(m) for m in (group or {}).get("MemberClusters") or []], n["group"]))


PlanCreate = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], Read, str, Callable[[float], float]],
                      Outcome]
PlanDelete = Callable[[Mapping[str, Any], Read, Callable[[float], float]], Outcome]


def side(layer_for: Callable[[CloudSettings, str, str], ElastiCache], plan_create: PlanCreate,
         plan_delete: PlanDelete) -> ProviderSide:
    """The kind's ``aws`` provider: the ElastiCache layer ``layer_for(settings, account, region)`` of the
    Scope's account and region, :func:`read`, and the plans (a new auth token is drawn here, so the plans
    stay pure)."""

    def clients(turn: Turn) -> dict[str, Any]:
        spec = turn.scope.get("spec") or {}
        account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
        return {"": layer_for(turn.settings, account, str(spec.get("region") or ""))}

    return ProviderSide(
        clients=clients, read=read,
        create=lambda found, turn: plan_create(turn.obj, turn.scope, getattr(turn.seen, "iprange", None) or {},
                                               found, secrets.token_urlsafe(32), turn.t),
        delete=lambda found, turn: plan_delete(turn.obj, found, turn.t),
        read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t))
