"""The AWS RedisCluster flow's I/O (``pkg/kcp/provider/aws/rediscluster``): the cluster-mode ElastiCache
client of a turn and the reads of :func:`read`; the decisions are the pure plans of
:mod:`tasks.cloud.aws.rediscluster_plan`, declared as the KCP RedisCluster's ``aws`` provider (:data:`SIDE`).

:func:`read` asks :class:`~tasks.cloud.aws.rediscluster_client.ElastiCacheCluster` for every piece by its
name (``cm-<kcpName>``), the IpRange being the one the kind's KCP read found (``turn.seen.iprange``); the
executor makes the plan's calls in order (:func:`kube.toolkit.execute`).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from tasks.cloud.aws.rediscluster_client import ElastiCacheCluster, elasticache_cluster_for
from tasks.cloud.aws.rediscluster_plan import Read, plan_create, plan_delete
from tasks.cloud.aws.redisinstance_plan import read_failed, resource_names
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "clients", "read"]


def clients(turn: Turn) -> dict[str, Any]:
    """The ElastiCache client of the Scope's account and region."""
    spec = turn.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return {"": elasticache_cluster_for(turn.settings, account, str(spec.get("region") or ""))}


def read(found: Mapping[str, Any], turn: Turn) -> Read:
    """Every AWS piece of the KCP RedisCluster (``None`` for a missing one). Raises
    :class:`~tasks.cloud.aws.client.AwsError`."""
    ec: ElastiCacheCluster = found[""]
    n = resource_names(turn.name)
    group = ec.replication_group(n["group"])
    iprange = getattr(turn.seen, "iprange", None) or {}
    vpc_id = str((iprange.get("status") or {}).get("vpcId") or "")
    security_group = ec.security_group(vpc_id, n["security_group"], f"{turn.namespace}/{turn.name}") if vpc_id else None
    return Read(subnet_group=ec.subnet_group(n["subnet_group"]), main=ec.parameter_group(n["parameter_group"]),
                temp=ec.parameter_group(n["temp_parameter_group"]), token=ec.auth_token(n["secret"]),
                user_group=ec.user_group(n["user_group"]), security_group=security_group, group=group,
                members=ec.members([str(m) for m in (group or {}).get("MemberClusters") or []], n["group"]))


#: The KCP RedisCluster's ``aws`` provider: a new auth token is drawn here, so the plan stays pure.
SIDE = ProviderSide(
    clients=clients, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, getattr(turn.seen, "iprange", None) or {}, found,
                                           secrets.token_urlsafe(32), turn.t),
    delete=lambda found, turn: plan_delete(turn.obj, found, turn.t),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t))
