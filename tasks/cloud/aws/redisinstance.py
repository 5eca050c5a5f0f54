"""The AWS RedisInstance flow's I/O (``pkg/kcp/provider/aws/redisinstance``): the ElastiCache client of a
turn and the reads of :func:`~tasks.cloud.aws.redis_common.read` (shared with the RedisCluster); the
decisions are the pure plans of :mod:`tasks.cloud.aws.redisinstance_plan`, declared as the kind's ``aws``
provider (:data:`SIDE`).

The read asks :class:`~tasks.cloud.aws.redisinstance_client.ElastiCache` for every piece by its name
(``cm-<kcpName>``); the executor makes the plan's calls in order (:func:`kube.toolkit.execute`).
"""

from __future__ import annotations

from tasks.cloud.aws.redis_common import read, side
from tasks.cloud.aws.redisinstance_client import elasticache_for
from tasks.cloud.aws.redisinstance_plan import plan_create, plan_delete

__all__ = ["SIDE", "read"]

#: The kind's ``aws`` provider: a new auth token is drawn by the side, so the plan stays pure.
SIDE = side(elasticache_for, plan_create, plan_delete)
