"""The GCP GcpRedisCluster flow's I/O (``pkg/kcp/provider/gcp/rediscluster``): the Memorystore for Redis
Cluster client of a turn (:class:`~tasks.cloud.gcp.rediscluster_client.RedisClusterClient`) and the reads
of :func:`read`; the decisions are the pure plans of :mod:`tasks.cloud.gcp.rediscluster_plan`, declared as
the kind's ``gcp`` provider (:data:`SIDE`). A 429 or 5xx comes back after the GCP retry wait without a
status change; another refused call is its Error.

Provider requests: a steady turn reads the cluster and its certificate authority (2, as the original);
a create turn reads the cluster and creates it (2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.gcp import clients
from tasks.cloud.gcp.rediscluster_client import RedisClusterClient
from tasks.cloud.gcp.rediscluster_plan import Read, cluster_name, plan_create, plan_delete, read_failed
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "read"]


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """The cluster and, once ``ACTIVE`` and not deleting, its CA certificate. Raises
    :class:`~tasks.cloud.gcp.client.GcpApiError`."""
    client: RedisClusterClient = clients[""]
    _, _, name = cluster_name(turn.scope, turn.name)
    cluster = client.get(name)
    deleting = bool(turn.obj["metadata"].get("deletionTimestamp"))
    ca = client.ca_cert(name) if cluster and cluster.get("state") == "ACTIVE" and not deleting and \
        cluster.get("transitEncryptionMode") == "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION" else ""
    return Read(cluster, ca)


def _wait(turn: Turn) -> float:
    return turn.settings.gcp_retry_wait


#: The kind's ``gcp`` provider.
SIDE = ProviderSide(
    clients=lambda turn: {"": clients.of(RedisClusterClient, turn.settings)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, found, turn.t, retry_wait=_wait(turn)),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t, retry_wait=_wait(turn)),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t, _wait(turn)))
