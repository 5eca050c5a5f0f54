"""The AWS RedisCluster flow's I/O (``pkg/kcp/provider/aws/rediscluster``): the cluster-mode ElastiCache
client of a turn and the reads of :func:`~tasks.cloud.aws.redis_common.read` (shared with the
RedisInstance); the decisions are the pure plans of :mod:`tasks.cloud.aws.rediscluster_plan`, declared as the
KCP RedisCluster's ``aws`` provider (:data:`SIDE`).

The read asks :class:`~tasks.cloud.aws.rediscluster_client.ElastiCacheCluster` for every piece by its
name (``cm-<kcpName>``), the IpRange being the one the kind's KCP read found (``turn.seen.iprange``); the
executor makes the plan's calls in order (:func:`kube.toolkit.execute`).
"""

from __future__ import annotations

from tasks.cloud.aws.redis_common import read, side
from tasks.cloud.aws.rediscluster_client import elasticache_cluster_for
from tasks.cloud.aws.rediscluster_plan import plan_create, plan_delete

__all__ = ["SIDE", "read"]

#: The KCP RedisCluster's ``aws`` provider: a new auth token is drawn by the side, so the plan stays pure.
SIDE = side(elasticache_cluster_for, plan_create, plan_delete)
