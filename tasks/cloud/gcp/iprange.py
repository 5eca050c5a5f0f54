"""The KCP IpRange on GCP, its I/O (``pkg/kcp/provider/gcp/iprange/v3``): the client of a turn and the
reads of :func:`read`; the decisions are the pure plan of :mod:`tasks.cloud.gcp.iprange_plan`, declared
as the IpRange's ``gcp`` provider (:data:`SIDE`), the recipe of every Cloud kind (docs/cloud.md).

:func:`read` asks the client for what the plan looks at, one request at a time in the plan's (the
original's) order, until the plan needs nothing more (:func:`tasks.cloud.calls.read_as_needed`): the
pending operation first (so what it did is seen by the reads after it), the address ``cm-<name>`` (else
the legacy name), the PSA connections and, when creating with a connection, the VPC's addresses. A turn
waiting on an operation reads only the operation, an invalid CIDR nothing. A refused read is data (a
:class:`~kube.refusal.Failure`), never an exception. All reads come before the write, which the executor
makes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kube.toolkit.outcome import Outcome
from tasks.cloud.calls import needed, read_as_needed
from tasks.cloud.gcp import iprange_plan
from tasks.cloud.gcp.client import network_filter
from tasks.cloud.gcp.clients import compute
from tasks.cloud.gcp.iprange_plan import PSA_STATES, Read, address_name, legacy_name, target
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "IpRangeClient", "read"]


class IpRangeClient(Protocol):
    """What this flow needs of :class:`tasks.cloud.gcp.client.GcpClient`."""

    def get_global_address(self, project: str, name: str) -> dict[str, Any] | None: ...
    def list_global_addresses(self, project: str, filter: str = "") -> list[dict[str, Any]]: ...
    def insert_global_address(self, project: str, vpc: str, name: str, description: str, address: str,
                              prefix_length: int) -> str: ...
    def delete_global_address(self, project: str, name: str) -> str: ...
    def get_global_operation(self, project: str, name: str) -> dict[str, Any] | None: ...
    def list_service_connections(self, project: str, vpc: str) -> list[dict[str, Any]]: ...
    def create_service_connection(self, project: str, vpc: str, ranges: list[str]) -> str: ...
    def patch_service_connection(self, project: str, vpc: str, ranges: list[str]) -> str: ...
    def delete_service_connection(self, project: str, vpc: str) -> str: ...
    def get_service_networking_operation(self, name: str) -> dict[str, Any] | None: ...


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """What the plan needs, read one request at a time in its order (see the module doc); a refused read
    is its :class:`~kube.refusal.Failure` (a Scope without a GCP project and VPC: nothing is read, the
    plan says so). Raises ``fencing.FenceError`` when the reconcile must stop."""
    client: IpRangeClient = clients[""]
    iprange, scope = turn.obj, turn.scope
    try:
        project, vpc = target(scope)
    except ValueError:
        return Read()
    status = iprange.get("status") or {}
    op_name = str(status.get("opIdentifier") or "")
    name = str(iprange["metadata"]["name"])
    fetch: dict[str, Callable[[], Any]] = {
        "operation": lambda: client.get_service_networking_operation(op_name) if status.get("state") in PSA_STATES
        else client.get_global_operation(project, op_name),
        "address": lambda: client.get_global_address(project, address_name(name)),
        "legacy": lambda: client.get_global_address(project, legacy_name(iprange)),
        "connections": lambda: client.list_service_connections(project, vpc),
        "addresses": lambda: client.list_global_addresses(project, network_filter(project, vpc)),
    }
    return read_as_needed(Read(), lambda found: needed(lambda: _plan(found, turn)), fetch)


def _plan(found: Read, turn: Turn) -> Outcome:
    return iprange_plan.plan(turn.obj, turn.scope, found, turn.t(turn.settings.gcp_retry_wait))


#: The IpRange's ``gcp`` provider.
SIDE = ProviderSide(clients=lambda turn: {"": compute(turn.settings)}, read=read,
                    create=_plan, delete=_plan)
