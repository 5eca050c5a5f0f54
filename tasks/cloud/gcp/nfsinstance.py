"""The GCP NfsInstance flow's I/O (``pkg/kcp/provider/gcp/nfsinstance/v2``): the Filestore client of a turn
(:class:`~tasks.cloud.gcp.nfsinstance_client.FilestoreClient`) and the reads of :func:`read`; the decisions
are the pure plans of :mod:`tasks.cloud.gcp.nfsinstance_plan`, declared as the kind's ``gcp`` provider
(:data:`SIDE`). A refused call or read is an Error ``GCPError`` with the API's message (429 and 5xx: come
back after the GCP retry wait without one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.gcp import clients
from tasks.cloud.gcp.nfsinstance_client import FilestoreClient
from tasks.cloud.gcp.nfsinstance_plan import Read, instance_name, plan_create, plan_delete, read_failed
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "read"]


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """The instance and the tracked operation. Raises :class:`~tasks.cloud.gcp.client.GcpApiError`."""
    client: FilestoreClient = clients[""]
    op_name = str((turn.obj.get("status") or {}).get("opIdentifier") or "")
    return Read(client.get_instance(instance_name(turn.obj, turn.scope)),
                client.get_operation(op_name) if op_name else None)


def _wait(turn: Turn) -> float:
    return turn.settings.gcp_retry_wait


#: The kind's ``gcp`` provider (Filestore).
SIDE = ProviderSide(
    clients=lambda turn: {"": clients.of(FilestoreClient, turn.settings)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, getattr(turn.seen, "iprange", None) or {}, found,
                                           turn.t, _wait(turn)),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t, _wait(turn)),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t, _wait(turn)))
