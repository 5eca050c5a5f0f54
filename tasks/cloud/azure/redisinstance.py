"""The Azure RedisInstance flow's I/O (``pkg/kcp/provider/azure/redisinstance``): the ARM client of a turn
(:class:`~tasks.cloud.azure.redisinstance_client.AzureRedisClient`) and the reads of :func:`read`; the
decisions are the pure plans of :mod:`tasks.cloud.azure.redisinstance_plan`, declared as the kind's
``azure`` provider (:data:`SIDE`). A 429 comes back after 60 s and a 5xx after 10 s, both without a
status change; another refused call is its step's Error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.azure import clients as azure_clients
from tasks.cloud.azure.redisinstance_client import AzureRedisClient
from tasks.cloud.azure.redisinstance_plan import Read, plan_create, plan_delete, read_failed, targets
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "read"]


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """The cache, the private endpoint, its DNS zone group and (once provisioned) the primary key.
    Raises :class:`~tasks.cloud.azure.client.AzureApiError`."""
    client: AzureRedisClient = clients[""]
    n = targets(turn.scope, turn.name)
    redis = client.get_redis(n["group"], n["name"])
    endpoint = client.get_private_endpoint(n["group"], n["name"])
    zone_group = client.get_dns_zone_group(n["group"], n["name"], n["name"]) if endpoint is not None else None
    ready = ((redis or {}).get("properties") or {}).get("provisioningState") == "Succeeded"
    return Read(redis, endpoint, zone_group, client.primary_key(n["group"], n["name"]) if ready else "")


#: The kind's ``azure`` provider.
SIDE = ProviderSide(
    clients=lambda turn: {"": azure_clients.on_network(AzureRedisClient, turn.settings, turn.scope)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, found, turn.t),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t))
