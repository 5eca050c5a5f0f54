"""The GCP RedisInstance flow's I/O (``pkg/kcp/provider/gcp/redisinstance``): the Memorystore client of a
turn (:class:`~tasks.cloud.gcp.redisinstance_client.MemorystoreClient`) and the reads of :func:`read`;
the decisions are the pure plans of :mod:`tasks.cloud.gcp.redisinstance_plan`, declared as the kind's
``gcp`` provider (:data:`SIDE`). A 429 or 5xx comes back after the GCP retry wait without a status
change; another refused call is its Error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.gcp import clients
from tasks.cloud.gcp.redisinstance_client import MemorystoreClient
from tasks.cloud.gcp.redisinstance_plan import Read, instance_name, plan_create, plan_delete, read_failed
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "read"]


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """The instance and, when AUTH is on, its AUTH string. Raises :class:`~tasks.cloud.gcp.client.GcpApiError`."""
    client: MemorystoreClient = clients[""]
    _, name = instance_name(turn.scope, turn.name)
    instance = client.get(name)
    auth = client.auth_string(name) if instance and instance.get("authEnabled") and \
        instance.get("state") == "READY" else ""
    return Read(instance, auth)


def _wait(turn: Turn) -> float:
    return turn.settings.gcp_retry_wait


#: The kind's ``gcp`` provider.
SIDE = ProviderSide(
    clients=lambda turn: {"": clients.of(MemorystoreClient, turn.settings)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, getattr(turn.seen, "iprange", None) or {}, found,
                                           turn.t, retry_wait=_wait(turn)),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t, retry_wait=_wait(turn)),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t, _wait(turn)))
