"""The KCP IpRange on Azure, its I/O: the ARM client of a turn and the reads of :func:`read`; the decisions
are the pure plan of :mod:`tasks.cloud.azure.iprange_plan` (the Cloud Manager network, the KCP VpcPeering
with the shoot VNet it depends on, the IpRange's own resources; its flow, reasons and messages are
documented there), declared as the IpRange's ``azure`` provider (:data:`SIDE`), the recipe of every Cloud
kind (docs/cloud.md).

:func:`read` asks ARM for the resources of the chain the plan looks at, one request at a time in the
plan's order (creating: resource group, VNet, security group, subnet, DNS zone, link; deleting: the
reverse), up to where the plan stops (:func:`tasks.cloud.calls.read_as_needed`: the original's requests,
all before any write); a refused read is data (a :class:`~kube.refusal.Failure`). The executor makes the
planned writes in order (a missing resource group and VNet in one turn); the first refused one ends the
turn with its Error or requeue. Writes do not wait for ARM (``polling=False``): the next turn reads
``provisioningState`` again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kube.refusal import Failure, Refusal
from kube.toolkit.outcome import Outcome
from tasks.cloud.azure import iprange_plan
from tasks.cloud.azure.clients import network
from tasks.cloud.azure.iprange_plan import Read, Target, Timing
from tasks.cloud.calls import needed, read_as_needed
from tasks.cloud.registry import ProviderSide, Turn
from tasks.cloud.step import StepBuilder

__all__ = ["SIDE", "IpRangeClient", "read"]


class IpRangeClient(Protocol):
    """What this flow needs of :class:`tasks.cloud.azure.client.AzureClient`."""

    subscription_id: str

    def get_resource_group(self, name: str) -> dict[str, Any] | None: ...
    def create_resource_group(self, name: str, location: str) -> dict[str, Any]: ...
    def delete_resource_group(self, name: str) -> None: ...
    def get_vnet(self, rg: str, name: str) -> dict[str, Any] | None: ...
    def create_vnet(self, rg: str, name: str, location: str, cidr: str) -> dict[str, Any] | None: ...
    def delete_vnet(self, rg: str, name: str) -> None: ...
    def get_security_group(self, rg: str, name: str) -> dict[str, Any] | None: ...
    def create_security_group(self, rg: str, name: str, location: str) -> dict[str, Any] | None: ...
    def delete_security_group(self, rg: str, name: str) -> None: ...
    def get_subnet(self, rg: str, vnet: str, name: str) -> dict[str, Any] | None: ...
    def create_subnet(self, rg: str, vnet: str, name: str, address_prefix: str,
                      security_group_id: str) -> dict[str, Any] | None: ...
    def delete_subnet(self, rg: str, vnet: str, name: str) -> None: ...
    def get_private_dns_zone(self, rg: str, zone: str) -> dict[str, Any] | None: ...
    def create_private_dns_zone(self, rg: str, zone: str) -> dict[str, Any] | None: ...
    def delete_private_dns_zone(self, rg: str, zone: str) -> None: ...
    def get_vnet_link(self, rg: str, zone: str, name: str) -> dict[str, Any] | None: ...
    def create_vnet_link(self, rg: str, zone: str, name: str, vnet_id: str) -> dict[str, Any] | None: ...
    def delete_vnet_link(self, rg: str, zone: str, name: str) -> None: ...


def read(clients: Mapping[str, Any], turn: Turn) -> Read:
    """What the plan needs, read one request at a time in its walk's order (see the module doc); a refused
    read is its :class:`~kube.refusal.Failure` (a Scope without the Azure fields: nothing is read, the plan
    says so). Raises ``fencing.FenceError`` when the reconcile must stop."""
    client: IpRangeClient = clients[""]
    try:
        target = Target.of(turn.scope)
    except ValueError:
        return Read()
    cm, zone = target.cm, target.zone
    fetch: dict[str, Callable[[], Any]] = {
        "group": lambda: client.get_resource_group(cm),
        "vnet": lambda: client.get_vnet(cm, cm),
        "nsg": lambda: client.get_security_group(cm, cm),
        "subnet": lambda: client.get_subnet(cm, cm, cm),
        "zone": lambda: client.get_private_dns_zone(cm, zone),
        "link": lambda: client.get_vnet_link(cm, zone, turn.name),
    }
    return read_as_needed(Read(), lambda found: needed(lambda: _plan(found, turn)), fetch)


def _plan(found: Read, turn: Turn) -> Outcome:
    seen = turn.seen
    network_type = str(((getattr(seen, "network", None) or {}).get("spec") or {}).get("type") or "") or None
    return iprange_plan.plan(turn.obj, turn.scope, found, Timing().scaled(1 / turn.settings.time_scale),
                             network_type=network_type, peering=getattr(seen, "peering", None))


def _clients(turn: Turn) -> Mapping[str, Any]:
    try:
        return {"": network(turn.settings, turn.scope)}
    except ValueError as exc:  # unusable credentials: the user's words in the IpRange's status
        raise Refusal(f"Failed creating Azure client: {exc}") from exc


def _client_failed(failure: Failure, turn: Turn) -> Outcome:
    if failure.retryable:
        return Outcome(requeue_after=turn.t(failure.delay if failure.delay is not None else 10.0))
    return StepBuilder(turn.obj).fail(iprange_plan.REASON_ERROR, failure.message)


#: The IpRange's ``azure`` provider.
SIDE = ProviderSide(clients=_clients, read=read, create=_plan, delete=_plan, read_failed=_client_failed)
