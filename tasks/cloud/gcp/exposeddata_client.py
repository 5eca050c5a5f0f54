"""The GCP I/O of the Scope's exposed data (``pkg/kcp/provider/gcp/exposedData/client/client.go``): the Cloud
Routers of the shoot's VPC in the Scope's region and the Cloud NAT IPs Compute allocated for them, through
``google-cloud-compute``'s ``RoutersClient`` and (regional) ``AddressesClient`` on transport ``rest``.

As :mod:`tasks.cloud.gcp.client`: plain data out (the API's camelCase JSON), every failure a
:class:`~tasks.cloud.gcp.client.GcpApiError`, the original's 8 s API timeout bounded by the fence. Reads only.
"""

from __future__ import annotations

from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, GcpClient, _translate
from tasks.cloud.guard import guarded

__all__ = ["NAT_AUTO_FILTER", "ExposedDataClient", "routers_filter"]

_guarded = guarded(_translate)

#: The original's addresses filter: auto-allocated Cloud NAT IPs only ("the API does not work with users
#: filter", so the router is matched on ``users`` afterwards).
NAT_AUTO_FILTER = 'purpose="NAT_AUTO"'


def routers_filter(vpc: str) -> str:
    """The original's routers filter ``network eq .*<vpc>``: a regular expression matching the whole network
    URL, so every router whose network URL ends with ``vpc``."""
    return f"network eq .*{vpc}"


class ExposedDataClient(GcpClient):
    """The calls of the exposed-data read on top of :class:`~tasks.cloud.gcp.client.GcpClient` (same
    arguments: ``endpoint`` aims every API at the stand-in, else Google with the key file or the default
    credentials)."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None,
                 credentials_file: str | None = None) -> None:
        super().__init__(endpoint, credentials, credentials_file)
        self._routers, self._regional_addresses = self._compute("RoutersClient", "AddressesClient")

    @_guarded
    def vpc_routers(self, project: str, region: str, vpc: str) -> list[dict[str, Any]]:
        """The routers of ``project`` in ``region`` on the VPC ``vpc`` (``name``, ``network``, ``nats[]``,
        ...), all pages: ``routers.list`` with :func:`routers_filter` (the original's ``GetVpcRouters``)."""
        request = self._types.ListRoutersRequest(project=project, region=region, filter=routers_filter(vpc))
        return [self._plain(r) for r in self._routers.list(request=request, timeout=fencing.timeout(API_TIMEOUT))]

    @_guarded
    def router_nat_addresses(self, project: str, region: str, router: str) -> list[dict[str, Any]]:
        """The Cloud NAT IPs Compute allocated for ``router``: the regional addresses of ``region`` with purpose
        ``NAT_AUTO`` (:data:`NAT_AUTO_FILTER`) one of whose ``users`` ends with ``/<router>`` (the original's
        ``GetRouterIpAddresses``; manually assigned NAT IPs are not read, as there)."""
        request = self._types.ListAddressesRequest(project=project, region=region, filter=NAT_AUTO_FILTER)
        found = self._regional_addresses.list(request=request, timeout=fencing.timeout(API_TIMEOUT))
        return [plain for plain in (self._plain(a) for a in found)
                if any(str(user).endswith(f"/{router}") for user in plain.get("users") or [])]
