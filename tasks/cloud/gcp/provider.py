"""The GCP provider of Cloud Resources (``gcp`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from the
shoot's service account (:mod:`.scope`) and the shoot's Cloud NAT IPs (the Scope's exposed data). The KCP
IpRange's provisioning, a global address reserved for Private Service Access, is the IpRange kind's ``gcp``
provider (:mod:`.iprange`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.cloud.gcp import clients, scope
from tasks.cloud.gcp.client import GcpApiError
from tasks.cloud.gcp.exposeddata_client import ExposedDataClient
from tasks.cloud.providers import LayerProvider, ProviderError
from tasks.cloud.settings import current as current_settings

__all__ = ["GcpProvider", "nat_ips"]


def nat_ips(addresses: Iterable[Mapping[str, Any]]) -> list[str]:
    """The sorted unique ``address`` values of Compute address resources, empty ones skipped (the original's
    ``exposedDataSetToScope``)."""
    return sorted({str(a.get("address") or "") for a in addresses} - {""})


class GcpProvider(LayerProvider):
    """The ``gcp`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "gcp"
    scope_layer = scope

    def nat_gateway_ips(self, scope: Mapping[str, Any]) -> list[str]:
        """The Cloud NAT IPs of the shoot's VPC, as the original's ``pkg/kcp/provider/gcp/exposedData``
        (``routersLoad``, ``addressesLoad``): the routers of project ``spec.scope.gcp.project`` in region
        ``spec.region`` whose network matches ``.*<spec.scope.gcp.vpcNetwork>``, then per router the
        regional ``NAT_AUTO`` addresses it uses (:class:`~.exposeddata_client.ExposedDataClient`); sorted,
        unique. No router: ``[]``. Raises :class:`ProviderError` with the API's message (``retryable`` for
        0/429/5xx) when a read fails."""
        spec = scope.get("spec") or {}
        gcp = (spec.get("scope") or {}).get("gcp") or {}
        project, vpc, region = str(gcp.get("project") or ""), str(gcp.get("vpcNetwork") or ""), \
            str(spec.get("region") or "")
        if not (project and vpc and region):
            raise ProviderError("the Scope names no GCP project, VPC network or region")
        try:
            client = clients.of(ExposedDataClient, current_settings())
        except (OSError, ValueError) as exc:  # an unusable key file
            raise ProviderError(f"GCP client: {exc}") from exc
        try:
            addresses: list[dict[str, Any]] = []
            for router in client.vpc_routers(project, region, vpc):
                addresses += client.router_nat_addresses(project, region, str(router.get("name") or ""))
        except GcpApiError as exc:
            raise ProviderError(exc.message, retryable=exc.failure.retryable, code=str(exc.status)) from exc
        return nat_ips(addresses)
