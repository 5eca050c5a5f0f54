"""The Azure RedisCluster flow's I/O (``pkg/kcp/provider/azure/rediscluster``): the ARM client of a turn
(:class:`~tasks.cloud.azure.redisinstance_client.AzureRedisClient`, the original's cluster client is the
instance one) and the reads of the RedisInstance flow (:func:`tasks.cloud.azure.redisinstance.read`: the
cache, the private endpoint, its DNS zone group, the primary key once provisioned); the decisions are the
pure plans of :mod:`tasks.cloud.azure.rediscluster_plan`, declared as the KCP RedisCluster's ``azure``
provider (:data:`SIDE`). A 429 comes back after 60 s and a 5xx after 10 s, both without a status change;
another refused call is its step's Error.
"""

from __future__ import annotations

from tasks.cloud.azure import clients as azure_clients
from tasks.cloud.azure.rediscluster_plan import plan_create, plan_delete, read_failed
from tasks.cloud.azure.redisinstance import read
from tasks.cloud.azure.redisinstance_client import AzureRedisClient
from tasks.cloud.registry import ProviderSide

__all__ = ["SIDE"]

#: The KCP RedisCluster's ``azure`` provider.
SIDE = ProviderSide(
    clients=lambda turn: {"": azure_clients.on_network(AzureRedisClient, turn.settings, turn.scope)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, found, turn.t),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t))
