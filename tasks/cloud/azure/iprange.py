"""The KCP IpRange on Azure: one turn is read → pure plan → the planned ARM calls → Outcome, the recipe
of every Cloud kind (docs/cloud.md), as AWS's. The turn covers the Cloud Manager network, the KCP
VpcPeering with the shoot VNet it depends on (said in the Outcome, made by the KCP controllers) and the
IpRange's own resources; the flow, reasons and messages are documented in
:mod:`tasks.cloud.azure.iprange_plan`.

Contract::

    step = reconcile(iprange, scope, client)          # -> kube.toolkit.Outcome

- ``iprange``: the KCP IpRange dict (``metadata.name``, ``metadata.deletionTimestamp``, ``spec.cidr``,
  ``spec.network.name`` — ``<scope>--cm`` on Azure, as the SKR loop projects it —, ``status``). The
  common part (Scope, finalizer, CIDR allocation, delete-while-used) runs before; creating needs
  ``status.cidr`` or ``spec.cidr``. ``network_type`` (the KCP Network's ``spec.type``) may be passed
  when the controller knows it; otherwise the network name decides. ``kyma_peering``: the KCP
  VpcPeering ``<scope>`` as the controller read it (``None``: missing); the Outcome is a
  :class:`~tasks.cloud.step.ChildStep` when it must be created (the CM VNet is ``Succeeded``) or deleted
  (everything but the CM VNet and group is gone).
- ``scope``: the KCP Scope dict (``metadata.name``, ``spec.region``, ``spec.shootName``,
  ``spec.scope.azure.{subscriptionId, vpcNetwork}``).
- ``client``: a :class:`tasks.cloud.azure.client.AzureClient` for the Scope's subscription.

:func:`read` asks ARM for the resources of the chain the plan looks at, one request at a time in the
plan's order (creating: resource group, VNet, security group, subnet, DNS zone, link;
deleting: the reverse), up to where the plan stops (:func:`tasks.cloud.calls.read_as_needed`: the
original's requests, all before any write); a refused read is data
(:class:`~tasks.cloud.calls.Refused`). :func:`apply` makes the planned writes in order (a missing
resource group and VNet in one turn); the first refused one ends the turn with its
Error or requeue. Writes do not wait for ARM (``polling=False``): the next turn reads
``provisioningState`` again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kube.clock import now_rfc3339
from kube.toolkit.outcome import Outcome
from tasks.cloud.azure import iprange_plan
from tasks.cloud.azure.client import AzureApiError
from tasks.cloud.azure.iprange_plan import (
    DNS_ZONE,
    DNS_ZONE_CHINA,
    Plan,
    Read,
    Target,
    Timing,
    private_dns_zone_name,
    vnet_id,
)
from tasks.cloud.calls import Refused, make_calls, read_as_needed

__all__ = ["DNS_ZONE", "DNS_ZONE_CHINA", "IpRangeClient", "Timing", "apply", "private_dns_zone_name", "read",
           "reconcile", "refused", "vnet_id"]


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


def refused(err: AzureApiError) -> Refused:
    """A client error as the plan's plain data (``text``: ``(Code) message``)."""
    return Refused(err.status, err.message, str(err))


def read(client: IpRangeClient, iprange: Mapping[str, Any], target: Target,
         needs: Callable[[Read], str | None]) -> Read:
    """What the plan ``needs``, read one request at a time in its walk's order (see the module doc); a
    refused read is a :class:`~tasks.cloud.calls.Refused`. Raises ``fencing.FenceError`` when the
    reconcile must stop."""
    cm, zone = target.cm, target.zone
    name = str(iprange["metadata"]["name"])
    fetch: dict[str, Callable[[], Any]] = {
        "group": lambda: client.get_resource_group(cm),
        "vnet": lambda: client.get_vnet(cm, cm),
        "nsg": lambda: client.get_security_group(cm, cm),
        "subnet": lambda: client.get_subnet(cm, cm, cm),
        "zone": lambda: client.get_private_dns_zone(cm, zone),
        "link": lambda: client.get_vnet_link(cm, zone, name),
    }
    return read_as_needed(Read(), needs, fetch, AzureApiError, refused)


def apply(client: IpRangeClient, plan: Plan) -> Outcome:
    """Make the plan's calls in order; the Outcome they lead to (a refused call's Error or requeue)."""
    return make_calls(client, plan, AzureApiError, refused)


def reconcile(iprange: dict[str, Any], scope: dict[str, Any], client: IpRangeClient, *, now: str | None = None,
              timing: Timing = Timing(), cloud: str = "AzureCloud", network_type: str | None = None,
              kyma_peering: Mapping[str, Any] | None = None) -> Outcome:
    """One turn of a KCP IpRange on Azure: :func:`read` → :func:`~tasks.cloud.azure.iprange_plan.plan` →
    :func:`apply`. ``now``: the turn's time (RFC 3339; default: the clock), for the conditions;
    ``timing``: the waits; ``cloud``: ``AzureChina`` picks its DNS zone; ``kyma_peering``: the KCP
    VpcPeering ``<scope>`` as read (see the module doc).

    Never raises for cloud errors (they become conditions or requeues); raises ``fencing.FenceError``
    when the reconcile must stop writing and ``ValueError`` for a Scope without the Azure fields.
    """
    target = Target.of(scope, client.subscription_id, cloud)
    now = now or now_rfc3339()

    def decide(found: Read) -> Plan:
        return iprange_plan.plan(iprange, scope, found, timing, now=now, subscription=client.subscription_id,
                                 cloud=cloud, network_type=network_type, kyma_peering=kyma_peering)

    return apply(client, decide(read(client, iprange, target, lambda found: decide(found).need)))
