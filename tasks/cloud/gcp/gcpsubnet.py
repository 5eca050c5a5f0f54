"""The GCP GcpSubnet flow's I/O (``pkg/kcp/provider/gcp/subnet``): the client of a turn
(:class:`~tasks.cloud.gcp.gcpsubnet_client.SubnetClient`) and the reads of :func:`read` (the creation
operation, the subnetwork, the service connection policy, each refusal kept for the plan); the decisions
are the pure plans of :mod:`tasks.cloud.gcp.gcpsubnet_plan`, declared as the kind's ``gcp`` provider
(:data:`SIDE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.calls import attempt
from tasks.cloud.gcp import clients
from tasks.cloud.gcp.gcpsubnet_client import SubnetClient
from tasks.cloud.gcp.gcpsubnet_plan import Read, plan_create, plan_delete, read_failed, subnet_name, where
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "read"]


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """The creation operation (when ``status.subnetCreationOperationName`` names one), the subnetwork and
    the policy; the first refused read stops the reads and is recorded in :attr:`Read.failed`. The
    operation is read first (the original reads it last): a subnetwork read before an operation that then
    reads ``DONE`` would be inserted a second time."""
    client: SubnetClient = clients[""]
    at = where(turn.scope)
    operation = None
    name = str((turn.obj.get("status") or {}).get("subnetCreationOperationName") or "")
    if name:
        operation, err = attempt(client.get_region_operation, at.project, at.region, name)
        if err is not None:
            return Read(failed=("operation", err))
    subnet, err = attempt(client.get_subnetwork, at.project, at.region, subnet_name(turn.name))
    if err is not None:
        return Read(operation=operation, failed=("subnet", err))
    policy, err = attempt(client.get_connection_policy, at.policy)
    if err is not None:
        return Read(subnet, operation=operation, failed=("policy", err))
    return Read(subnet, policy, operation)


def _wait(turn: Turn) -> float:
    return turn.settings.gcp_retry_wait


#: The kind's ``gcp`` provider.
SIDE = ProviderSide(
    clients=lambda turn: {"": clients.of(SubnetClient, turn.settings)}, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, found, turn.t, retry_wait=_wait(turn)),
    delete=lambda found, turn: plan_delete(turn.obj, turn.scope, found, turn.t, retry_wait=_wait(turn)),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t, _wait(turn)))
