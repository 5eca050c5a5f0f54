"""The Azure I/O layer: the only code of Reconcilery that talks to Azure Resource Manager.

``azure-mgmt-resource`` (resource groups), ``azure-mgmt-network`` (virtual networks, subnets, VNet
peerings, network security groups) and ``azure-mgmt-privatedns`` (private DNS zones and virtual network
links), for one subscription. Results are plain dicts in ARM's wire shape (``id``, ``name``,
``properties.provisioningState``, ``properties.peeringState``, ...); a missing resource is ``None``;
every failure is an :class:`AzureApiError` (``status``, ARM ``code``, ``message``), so callers need no SDK import.

Writes start the long-running operation and return at once (``polling=False``): the reconcile step
re-reads ``provisioningState`` on its next run instead of holding a worker while ARM works. Before
every write :func:`fencing.check` is called; each request's connect/read timeouts are
:func:`fencing.timeout` of :data:`API_TIMEOUT`.

``base_url`` aims the clients elsewhere (``standins.azure`` locally). Over plain ``http://`` the SDK's
bearer policy refuses to send a token (``Bearer token authentication is not permitted for non-TLS
protected (non-https) URLs``, test-infrastructure.md §4), so then this layer installs its own policy
that adds the header; over HTTPS (``connection_verify`` = the stand-in's CA) the SDK's own policy is used.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import fencing
from kube.refusal import Failure, HttpStatus, Refusal
from tasks.cloud.azure import metrics as azure_metrics
from tasks.cloud.guard import guarded

#: Per-request connect/read timeout (seconds).
API_TIMEOUT = 30.0
MANAGEMENT_SCOPE = "https://management.azure.com/.default"
#: :attr:`AzureApiError.code` of a credential that could not get a token.
UNAUTHENTICATED = "ClientAuthenticationError"


class AzureApiError(HttpStatus, Refusal):
    """An ARM call failed: HTTP ``status`` (0 when no answer came), ARM error ``code``, ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"({code}) {message}" if code else message)
        self.status = status
        self.code = code
        self.message = message

    @property
    def failure(self) -> Failure:
        """The one classification by HTTP status (:meth:`kube.refusal.Failure.of_http`): a 429 comes back
        after 60 s, no answer or a 5xx after 10 s (the original's Azure waits)."""
        delay = 60.0 if self.status == 429 else 10.0 if self.status == 0 or self.status >= 500 else None
        return Failure.of_http(self.status, self.message, code=self.code, text=str(self), delay=delay)

    @property
    def response(self) -> bool:
        """Whether ARM answered (the Go SDK's ``azcore.ResponseError``), rather than the transport or
        the credential failing."""
        return self.status > 0

    @property
    def unauthorized(self) -> bool:
        """ARM code ``AuthorizationFailed`` (the original's ``IsUnauthorized``)."""
        return self.code == "AuthorizationFailed"

    @property
    def unauthenticated(self) -> bool:
        """No token could be had (azure-identity's failure; the original's ``IsUnauthenticated``), e.g.
        the service principal does not exist in the remote tenant."""
        return self.status == 0 and self.code == UNAUTHENTICATED


class StaticTokenCredential:
    """A ``TokenCredential`` with a fixed token (for stand-ins, which only check that one is sent)."""

    def __init__(self, token: str = "reconcilery-stand-in") -> None:
        self.token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self.token, int(time.time()) + 3600)


def _bearer_over_http(credential: Any) -> Any:
    """An azure-core policy that sends the credential's bearer token without insisting on TLS."""
    from azure.core.pipeline.policies import SansIOHTTPPolicy

    class BearerOverHttp(SansIOHTTPPolicy):
        def on_request(self, request: Any) -> None:
            token = credential.get_token(MANAGEMENT_SCOPE).token
            request.http_request.headers["Authorization"] = f"Bearer {token}"

    return BearerOverHttp()


def _translate(exc: BaseException) -> AzureApiError:
    from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError

    if isinstance(exc, AzureApiError):
        return exc
    if isinstance(exc, ClientAuthenticationError) and not exc.status_code:
        return AzureApiError(0, UNAUTHENTICATED, str(exc.message or exc))
    if isinstance(exc, HttpResponseError):
        error = getattr(exc, "error", None)
        code = str(getattr(error, "code", "") or "")
        message = str(getattr(error, "message", "") or exc.message or exc)
        return AzureApiError(int(exc.status_code or 0), code, message)
    if isinstance(exc, AzureError):
        return AzureApiError(0, type(exc).__name__, str(exc))
    return AzureApiError(0, type(exc).__name__, str(exc))


#: Every failure of a client method as :class:`AzureApiError` (fencing errors pass through).
_guarded = guarded(_translate)


def _plain(model: Any) -> dict[str, Any] | None:
    return None if model is None else dict(model.as_dict())


def call_timeouts(write: bool = False) -> dict[str, Any]:
    """The ``connection_timeout``/``read_timeout`` keywords of one ARM call (the original's 8 s, bounded by
    the reconcile's deadline); a ``write`` checks the fence first (:func:`fencing.check`)."""
    if write:
        fencing.check()
    t = fencing.timeout(API_TIMEOUT, write=write)
    return {"connection_timeout": t, "read_timeout": t}


def get_or_none(plain: Callable[[Any], dict[str, Any] | None], call: Any, *args: Any) -> dict[str, Any] | None:
    """``plain(call(*args))``, a read with :func:`call_timeouts`; None when ARM answers 404."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        return plain(call(*args, **call_timeouts()))
    except ResourceNotFoundError:
        return None


class AzureClient:
    """ARM clients for one subscription.

    Args:
        subscription_id: the subscription (Scope ``spec.scope.azure.subscriptionId``).
        credential: an azure-core ``TokenCredential``. When None: a client-secret credential from
            ``tenant_id``/``client_id``/``client_secret`` (the original's default creds), or, with
            ``base_url``, a :class:`StaticTokenCredential`.
        base_url: ARM endpoint (default ``https://management.azure.com``).
        connection_verify: CA bundle path (or False) for HTTPS endpoints.
        retry_total: azure-core's retries of 408/429/5xx per request, before an error reaches the step.
        auxiliary_tenants: tenants whose tokens (same client id and secret) go along in
            ``x-ms-authorization-auxiliary``, for a peering across tenants (the original's auxiliary
            tenants; not sent over plain HTTP, where the stand-in needs none).
    """

    def __init__(self, subscription_id: str, *, credential: Any = None, tenant_id: str = "", client_id: str = "",
                 client_secret: str = "", base_url: str | None = None, connection_verify: Any = None,
                 retry_total: int = 2, auxiliary_tenants: tuple[str, ...] = ()) -> None:
        from azure.mgmt.network import NetworkManagementClient
        from azure.mgmt.privatedns import PrivateDnsManagementClient
        from azure.mgmt.resource.resources import ResourceManagementClient

        aux: list[Any] = []
        if credential is None and client_id and client_secret:
            from azure.identity import ClientSecretCredential

            # any tenant: the original's WithAnyTenant, so auxiliary tenants' tokens can be had
            credential = ClientSecretCredential(tenant_id, client_id, client_secret, additionally_allowed_tenants=["*"])
            aux = [ClientSecretCredential(t, client_id, client_secret) for t in auxiliary_tenants if t]
        if credential is None:
            if not base_url:
                raise ValueError("an Azure credential (or client id and secret) is required")
            credential = StaticTokenCredential()
        kwargs: dict[str, Any] = {"retry_total": retry_total, "polling_interval": 0}
        if base_url:
            kwargs["base_url"] = base_url.rstrip("/")
            if base_url.startswith("http://"):
                kwargs["authentication_policy"] = _bearer_over_http(credential)
                aux = []
        if connection_verify is not None:
            kwargs["connection_verify"] = connection_verify
        if aux:
            from azure.mgmt.core.policies import AuxiliaryAuthenticationPolicy

            kwargs["custom_hook_policy"] = AuxiliaryAuthenticationPolicy(aux, MANAGEMENT_SCOPE)
        self.subscription_id = subscription_id
        self.credential = credential  # the kinds' clients on this one (clients.on_network) share it
        # each client's attempts counted (tasks.cloud.provider_metrics); a policy instance per pipeline
        self._resources = ResourceManagementClient(credential, subscription_id, **kwargs,
                                                   per_retry_policies=azure_metrics.policies())
        self._network = NetworkManagementClient(credential, subscription_id, **kwargs,
                                                per_retry_policies=azure_metrics.policies())
        self._dns = PrivateDnsManagementClient(credential, subscription_id, **kwargs,
                                               per_retry_policies=azure_metrics.policies())

    @staticmethod
    def _timeouts(write: bool) -> dict[str, Any]:
        return call_timeouts(write)

    def _get(self, call: Any, *args: Any) -> dict[str, Any] | None:
        return get_or_none(_plain, call, *args)

    def _begin(self, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        poller = call(*args, polling=False, **kwargs, **self._timeouts(True))
        result = poller.result()
        return _plain(result) if hasattr(result, "as_dict") else None

    # -- resource groups ---------------------------------------------------------------------------------

    @_guarded
    def get_resource_group(self, name: str) -> dict[str, Any] | None:
        return self._get(self._resources.resource_groups.get, name)

    @_guarded
    def create_resource_group(self, name: str, location: str, tags: dict[str, str] | None = None) -> dict[str, Any]:
        from azure.mgmt.resource.resources.models import ResourceGroup

        body: dict[str, Any] = {"location": location, **({"tags": tags} if tags else {})}
        group = self._resources.resource_groups.create_or_update(name, ResourceGroup(body), **self._timeouts(True))
        return dict(group.as_dict())

    @_guarded
    def delete_resource_group(self, name: str) -> None:
        self._begin(self._resources.resource_groups.begin_delete, name)

    # -- virtual networks and peerings ---------------------------------------------------------------

    @_guarded
    def get_vnet(self, rg: str, name: str) -> dict[str, Any] | None:
        return self._get(self._network.virtual_networks.get, rg, name)

    @_guarded
    def create_vnet(self, rg: str, name: str, location: str, cidr: str,
                    tags: dict[str, str] | None = None) -> dict[str, Any] | None:
        from azure.mgmt.network.models import VirtualNetwork

        body: dict[str, Any] = {"location": location, "properties": {"addressSpace": {"addressPrefixes": [cidr]}}}
        if tags:
            body["tags"] = tags
        return self._begin(self._network.virtual_networks.begin_create_or_update, rg, name, VirtualNetwork(body))

    @_guarded
    def delete_vnet(self, rg: str, name: str) -> None:
        self._begin(self._network.virtual_networks.begin_delete, rg, name)

    @_guarded
    def get_peering(self, rg: str, vnet: str, name: str) -> dict[str, Any] | None:
        return self._get(self._network.virtual_network_peerings.get, rg, vnet, name)

    @_guarded
    def list_peerings(self, rg: str, vnet: str) -> list[dict[str, Any]]:
        """The peerings of the VNet ``rg/vnet`` (ARM's shape: ``name``, ``properties.peeringState``...)."""
        found = self._network.virtual_network_peerings.list(rg, vnet, **self._timeouts(False))
        return [dict(p.as_dict()) for p in found]

    @_guarded
    def create_peering(self, rg: str, vnet: str, name: str, remote_vnet_id: str, *, allow_vnet_access: bool = True,
                       use_remote_gateways: bool = False, allow_gateway_transit: bool = False) -> dict[str, Any] | None:
        """Create/update a VNet peering as the original's ``CreateOrUpdatePeering`` (forwarded traffic
        allowed, ``syncRemoteAddressSpace=true``)."""
        from azure.mgmt.network.models import VirtualNetworkPeering

        peering = VirtualNetworkPeering({"properties": {
            "remoteVirtualNetwork": {"id": remote_vnet_id}, "allowVirtualNetworkAccess": allow_vnet_access,
            "allowForwardedTraffic": True, "allowGatewayTransit": allow_gateway_transit,
            "useRemoteGateways": use_remote_gateways}})
        return self._begin(self._network.virtual_network_peerings.begin_create_or_update, rg, vnet, name, peering,
                           sync_remote_address_space="true")

    @_guarded
    def delete_peering(self, rg: str, vnet: str, name: str) -> None:
        self._begin(self._network.virtual_network_peerings.begin_delete, rg, vnet, name)

    # -- security groups and subnets -------------------------------------------------------------------

    @_guarded
    def get_security_group(self, rg: str, name: str) -> dict[str, Any] | None:
        return self._get(self._network.network_security_groups.get, rg, name)

    @_guarded
    def create_security_group(self, rg: str, name: str, location: str) -> dict[str, Any] | None:
        from azure.mgmt.network.models import NetworkSecurityGroup

        return self._begin(self._network.network_security_groups.begin_create_or_update, rg, name,
                           NetworkSecurityGroup({"location": location}))

    @_guarded
    def delete_security_group(self, rg: str, name: str) -> None:
        self._begin(self._network.network_security_groups.begin_delete, rg, name)

    @_guarded
    def get_subnet(self, rg: str, vnet: str, name: str) -> dict[str, Any] | None:
        return self._get(self._network.subnets.get, rg, vnet, name)

    @_guarded
    def create_subnet(self, rg: str, vnet: str, name: str, address_prefix: str,
                      security_group_id: str) -> dict[str, Any] | None:
        from azure.mgmt.network.models import Subnet

        return self._begin(self._network.subnets.begin_create_or_update, rg, vnet, name, Subnet({"properties": {
            "addressPrefix": address_prefix, "networkSecurityGroup": {"id": security_group_id}}}))

    @_guarded
    def delete_subnet(self, rg: str, vnet: str, name: str) -> None:
        self._begin(self._network.subnets.begin_delete, rg, vnet, name)

    # -- private DNS -----------------------------------------------------------------------------------

    @_guarded
    def get_private_dns_zone(self, rg: str, zone: str) -> dict[str, Any] | None:
        return self._get(self._dns.private_zones.get, rg, zone)

    @_guarded
    def create_private_dns_zone(self, rg: str, zone: str) -> dict[str, Any] | None:
        from azure.mgmt.privatedns.models import PrivateZone

        return self._begin(self._dns.private_zones.begin_create_or_update, rg, zone,
                           PrivateZone({"location": "global"}))

    @_guarded
    def delete_private_dns_zone(self, rg: str, zone: str) -> None:
        self._begin(self._dns.private_zones.begin_delete, rg, zone)

    @_guarded
    def get_vnet_link(self, rg: str, zone: str, name: str) -> dict[str, Any] | None:
        return self._get(self._dns.virtual_network_links.get, rg, zone, name)

    @_guarded
    def create_vnet_link(self, rg: str, zone: str, name: str, vnet_id: str) -> dict[str, Any] | None:
        from azure.mgmt.privatedns.models import VirtualNetworkLink

        link = VirtualNetworkLink({"location": "global", "properties": {
            "virtualNetwork": {"id": vnet_id}, "registrationEnabled": False}})
        return self._begin(self._dns.virtual_network_links.begin_create_or_update, rg, zone, name, link)

    @_guarded
    def delete_vnet_link(self, rg: str, zone: str, name: str) -> None:
        self._begin(self._dns.virtual_network_links.begin_delete, rg, zone, name)

    # -- NAT gateways and public IP addresses (the Scope's exposed data; reads only) ----------------------

    @_guarded
    def get_nat_gateway(self, rg: str, name: str) -> dict[str, Any] | None:
        """The NAT gateway ``rg/name`` (``properties.publicIpAddresses[].id``, ``properties.subnets[].id``,
        ...) or None when missing (``natGateways.get``, the original's ``GetNatGateway``)."""
        return self._get(self._network.nat_gateways.get, rg, name)

    @_guarded
    def get_public_ip_address(self, rg: str, name: str) -> dict[str, Any] | None:
        """The public IP address ``rg/name`` (``properties.ipAddress``, ...) or None when missing
        (``publicIPAddresses.get``, the original's ``GetPublicIpAddress``)."""
        return self._get(self._network.public_ip_addresses.get, rg, name)


__all__ = ["API_TIMEOUT", "UNAUTHENTICATED", "AzureApiError", "AzureClient", "StaticTokenCredential"]
