"""The Azure provider of Cloud Resources (``azure`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from
the shoot's credentials (:mod:`.scope`) and the public IPs of the shoot's NAT gateways (the Scope's exposed
data). The KCP IpRange's provisioning, the Cloud Manager VNet with its subnet, DNS zone and link, is the
IpRange kind's ``azure`` provider (:mod:`.iprange`).

Azure's IpRange provisions the Cloud Manager network itself, so its managed KCP Network (``<kyma>--cm``)
is Ready as soon as it exists; once its VNet is there the IpRange's turn creates the KCP VpcPeering
``<kyma>`` between it and the shoot VNet (:meth:`AzureProvider.iprange_peering`), peered by the
VpcPeering kind's Azure flow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.cloud.azure import clients, scope
from tasks.cloud.azure.client import AzureApiError
from tasks.cloud.azure.vpcpeering_plan import kyma_peering
from tasks.cloud.providers import LayerProvider, ProviderError
from tasks.cloud.settings import current as current_settings

__all__ = ["AzureProvider", "nat_ips", "resource_group_and_name"]


def resource_group_and_name(resource_id: str) -> tuple[str, str] | None:
    """``(resource group, name)`` of an ARM resource id
    ``/subscriptions/<s>/resourceGroups/<rg>/providers/<namespace>/<type>/<name>[/<type>/<name>...]`` (the
    last name), or None when it is not one (the original's ``azureutil.ParseResourceID``; the original logs
    and skips such a reference)."""
    parts = resource_id.strip().strip("/").split("/")
    if len(parts) < 8 or len(parts) % 2 or [p.lower() for p in parts[0:5:2]] != [
            "subscriptions", "resourcegroups", "providers"] or not all(parts):
        return None
    return parts[3], parts[-1]


def nat_ips(public_ips: Iterable[Mapping[str, Any]]) -> list[str]:
    """The sorted unique ``properties.ipAddress`` of public IP address resources, empty ones skipped (the
    original's ``exposedDataSetToScope``)."""
    return sorted({str((ip.get("properties") or {}).get("ipAddress") or "") for ip in public_ips} - {""})


def _refs(resources: Iterable[Mapping[str, Any] | None]) -> list[tuple[str, str]]:
    """The parsable ``id`` references of ``resources``, in order, duplicates kept (as the original)."""
    return [rn for ref in resources if ref for rn in [resource_group_and_name(str(ref.get("id") or ""))] if rn]


class AzureProvider(LayerProvider):
    """The ``azure`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "azure"
    scope_layer = scope

    def iprange_peering(self, scope: Mapping[str, Any]) -> dict[str, Any] | None:
        # The kyma <-> Cloud Manager VNet peering of an Azure IpRange (the original's kymaPeeringCreate).
        return dict(kyma_peering(scope))

    def nat_gateway_ips(self, scope: Mapping[str, Any]) -> list[str]:
        """The public IPs of the NAT gateways of the shoot VNet's subnets, as the original's
        ``pkg/kcp/provider/azure/exposedData``: the VNet of the ``<kyma>--kyma`` Network (resource group =
        VNet = ``spec.scope.azure.vpcNetwork``, in subscription ``spec.scope.azure.subscriptionId``;
        ``vnetLoad``), each of its subnets read in that resource group (``subnetsLoad``), the NAT gateway each
        subnet references, by its id's resource group and name (``natGatewaysLoad``), and each public IP
        address a NAT gateway references (``publicIpAddressesLoad``); their ``ipAddress``, sorted, unique.
        Subnets without a NAT gateway and unparsable references are skipped. Raises :class:`ProviderError`
        with ARM's message when a read fails or a read resource is missing (``retryable`` for 0/404/429/5xx:
        the original requeues on any error)."""
        azure = clients.scope_azure(scope)
        vnet_name = str(azure.get("vpcNetwork") or "")
        if not vnet_name or not azure.get("subscriptionId"):
            raise ProviderError("the Scope names no Azure subscription or VNet")
        try:
            client = clients.network(current_settings(), scope)
        except ValueError as exc:  # unusable credentials
            raise ProviderError(f"Azure client: {exc}") from exc
        try:
            vnet = self._found(client.get_vnet(vnet_name, vnet_name), f"virtual network {vnet_name}")
            subnets = [self._found(client.get_subnet(vnet_name, vnet_name, str(ref.get("name") or "")),
                                   f"subnet {ref.get('name')} of {vnet_name}")
                       for ref in (vnet.get("properties") or {}).get("subnets") or []]
            gateways = [self._found(client.get_nat_gateway(rg, name), f"NAT gateway {rg}/{name}")
                        for rg, name in _refs((s.get("properties") or {}).get("natGateway") for s in subnets)]
            ips = [self._found(client.get_public_ip_address(rg, name), f"public IP address {rg}/{name}")
                   for rg, name in _refs(ref for g in gateways
                                         for ref in (g.get("properties") or {}).get("publicIpAddresses") or [])]
        except AzureApiError as exc:
            raise ProviderError(exc.message, retryable=exc.failure.retryable, code=exc.code) from exc
        return nat_ips(ips)

    @staticmethod
    def _found(resource: dict[str, Any] | None, what: str) -> dict[str, Any]:
        """``resource``, or a retryable :class:`ProviderError` when ARM answered 404 (the original requeues)."""
        if resource is None:
            raise ProviderError(f"{what} not found", retryable=True, code="NotFound")
        return resource
