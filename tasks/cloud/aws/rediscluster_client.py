"""The RedisCluster flow's AWS calls: the RedisInstance's ElastiCache layer
(:class:`~tasks.cloud.aws.redisinstance_client.ElastiCache`: subnet and parameter groups, the token in
Secrets Manager, the user group, the security group) with the cluster-mode calls of cloud-manager's
``pkg/kcp/provider/aws/client/elastiCacheClient.go`` (``CreateElastiCacheReplicationGroup`` with
``ClusterMode: true``, ``ModifyElastiCacheClusterShardConfiguration``,
``ModifyElastiCacheClusterReplicaConfiguration``). Clients, credentials, timeouts and errors are
:mod:`tasks.cloud.aws.client`'s (every failure an ``AwsError``, ``fencing.check`` before a write)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tasks.cloud.aws import client as layer
from tasks.cloud.aws.redisinstance_client import ElastiCache, layer_for
from tasks.cloud.settings import CloudSettings

__all__ = ["ElastiCacheCluster", "elasticache_cluster_for"]

#: Above this many member clusters, :meth:`ElastiCacheCluster.members` lists the region's cache clusters
#: a page (100) at a time instead of describing each member (the original describes each one).
LIST_ABOVE = 5


@layer._guarded
def elasticache_cluster_for(settings: CloudSettings, account: str, region: str) -> ElastiCacheCluster:
    """The cluster-mode ElastiCache layer (with Secrets Manager and EC2) for ``account`` in ``region``."""
    return layer_for(ElastiCacheCluster, settings, account, region)


@layer._guard_methods
class ElastiCacheCluster(ElastiCache):
    """:class:`ElastiCache` with the cluster-mode calls. Raises :class:`~tasks.cloud.aws.client.AwsError`
    (and :class:`fencing.FenceError` before a write)."""

    def members(self, ids: Sequence[str], group: str = "") -> list[dict[str, Any]]:
        """The member clusters ``ids`` of the replication group ``group`` (``CacheClusters``): each described
        (as the original) while they are few, else the region's cache clusters listed a page at a time and
        those of ``group`` kept (a 500-shard cluster: tens of calls, not thousands)."""
        if len(ids) <= LIST_ABOVE or not group:
            return ElastiCache.members(self, ids)
        wanted = set(ids)
        pages = self._c("elasticache").get_paginator("describe_cache_clusters").paginate(
            PaginationConfig={"PageSize": 100})
        return [dict(c) for page in pages for c in page.get("CacheClusters") or []
                if c.get("ReplicationGroupId") == group and c.get("CacheClusterId") in wanted]

    def create_cluster_group(self, name: str, subnet_group: str, parameter_group: str, node_type: str,
                             engine_version: str, auto_minor: bool, auth_token: str | None,
                             maintenance_window: str | None, security_groups: Sequence[str], shards: int,
                             replicas: int, tags: Mapping[str, str]) -> None:
        """``CreateReplicationGroup`` in cluster mode: ``shards`` node groups of ``replicas`` replicas,
        automatic failover, encrypted in transit and at rest."""
        self._create_group(name, subnet_group, parameter_group, node_type, engine_version, auto_minor, auth_token,
                           maintenance_window, security_groups, shards, replicas, "enabled", True, tags)

    def modify_shard_configuration(self, name: str, shards: int, remove: Sequence[str] = ()) -> None:
        """``ModifyReplicationGroupShardConfiguration`` (online resharding, at once) to ``shards`` node
        groups, removing ``remove`` when shrinking."""
        options: dict[str, Any] = {"ReplicationGroupId": name, "NodeGroupCount": shards, "ApplyImmediately": True}
        if remove:
            options["NodeGroupsToRemove"] = list(remove)
        self._c("elasticache", True).modify_replication_group_shard_configuration(**options)

    def increase_replica_count(self, name: str, replicas: int) -> None:
        """``IncreaseReplicaCount`` of every shard to ``replicas``, at once."""
        self._c("elasticache", True).increase_replica_count(ReplicationGroupId=name, NewReplicaCount=replicas,
                                                            ApplyImmediately=True)

    def decrease_replica_count(self, name: str, replicas: int | None = None, remove: Sequence[str] = ()) -> None:
        """``DecreaseReplicaCount`` at once: every shard to ``replicas``, or the named replicas ``remove``."""
        options: dict[str, Any] = {"ReplicationGroupId": name, "ApplyImmediately": True}
        if remove:
            options["ReplicasToRemove"] = list(remove)
        else:
            options["NewReplicaCount"] = replicas
        self._c("elasticache", True).decrease_replica_count(**options)
