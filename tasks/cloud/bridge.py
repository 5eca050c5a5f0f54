"""GCP and Azure as providers: adapters of ``tasks/cloud/gcp`` and ``tasks/cloud/azure`` (issue 10) to
:mod:`tasks.cloud.providers`.

Those layers answer one :class:`~kube.toolkit.Outcome` per turn (a status merge patch, an Event, the
finalizer decision, when to come back) and never write to Kubernetes, as every provider does
(:mod:`tasks.cloud.providers`): the adapters pass the Outcome on, and the KCP controller carries it out.
Scopes: ``scope_section`` / ``needs_rebuild`` / ``kyma_network_reference`` of each layer.

Clients (cached per process): GCP ``GcpClient(endpoint=RECONCILERY_GCP_ENDPOINT_URL,
credentials_file=GCP_SA_JSON_KEY_PATH)``; Azure ``AzureClient(<scope subscription>,
base_url=RECONCILERY_AZURE_ENDPOINT_URL, tenant/client id and secret from AZURE_TENANT_ID,
AZURE_CLIENT_ID, AZURE_CLIENT_SECRET)``. The layers' own timings are scaled with ``time_scale``.
Azure's IpRange step provisions the Cloud Manager network itself, so its managed KCP Network
(``<kyma>--cm``) is Ready as soon as it exists; once its VNet is there the step asks for the KCP
VpcPeering ``<kyma>`` between it and the shoot VNet (``iprange_peering``, created and deleted by the KCP
IpRange controller, peered by this provider's VpcPeering flow).
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import providers, settings
from tasks.cloud.providers import (
    IpRangeContext,
    NetworkContext,
    Provider,
    ProviderError,
    ScopeInputs,
)
from tasks.cloud.step import StepBuilder, gone

__all__ = ["AzureProvider", "GcpProvider"]

_lock = threading.Lock()
_clients: dict[tuple[str, ...], Any] = {}


def _cached(key: tuple[str, ...], build: Any) -> Any:
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = build()
        return client


def _gcp_cached(kind: str, build: Any) -> Any:
    """The process's ``build(endpoint=, credentials_file=)`` GCP client of ``kind`` for the configured
    ``GCP_ENDPOINT_URL`` and ``GCP_SA_JSON_KEY_PATH``."""
    env = settings.current()
    endpoint, keyfile = env.gcp_endpoint_url or None, env.gcp_sa_json_key_path or None
    return _cached((kind, endpoint or "", keyfile or ""), lambda: build(endpoint=endpoint, credentials_file=keyfile))


class _LayerProvider(Provider):
    """A provider over a ``tasks.cloud.<name>`` layer: Scope from its ``scope`` module, the IpRange from
    its ``iprange`` step (:meth:`_iprange_step`). The layer is imported on first use (its SDKs are heavy)."""

    #: Reason of the Error condition when the step refuses the object (``ValueError``).
    invalid_reason = "Error"

    def _layer(self, module: str) -> Any:
        return importlib.import_module(f"tasks.cloud.{self.name}.{module}")

    def scope_info(self, inputs: ScopeInputs) -> dict[str, Any]:
        section = self._layer("scope").scope_section(inputs.shoot, inputs.credentials)
        if section is None:
            raise ProviderError(f"the {self.name} Scope can not be built from the shoot's credentials (see the log)")
        return dict(section[self.name])

    def scope_incomplete(self, scope: Mapping[str, Any]) -> bool:
        return bool(self._layer("scope").needs_rebuild(scope))

    def network_reference(self, scope: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._layer("scope").kyma_network_reference(scope))

    def _iprange_step(self, ctx: IpRangeContext) -> Any:
        """The layer's step for the KCP IpRange of ``ctx`` (raises ``ValueError`` for an unusable one)."""
        raise NotImplementedError

    def _step(self, ctx: IpRangeContext) -> Outcome:
        try:
            return self._iprange_step(ctx)
        except ValueError as exc:
            return StepBuilder(ctx.obj).fail(self.invalid_reason, str(exc))

    def reconcile_iprange(self, ctx: IpRangeContext) -> Outcome:
        return self._step(ctx)

    def delete_iprange(self, ctx: IpRangeContext) -> Outcome:
        return self._step(ctx)


class GcpProvider(_LayerProvider):
    """The ``gcp`` provider over :mod:`tasks.cloud.gcp`."""

    name = "gcp"
    invalid_reason = "GCPError"

    def _client(self) -> Any:
        from tasks.cloud.gcp import GcpClient

        return _gcp_cached("gcp", GcpClient)

    def _iprange_step(self, ctx: IpRangeContext) -> Any:
        iprange = self._layer("iprange")
        return iprange.reconcile(ctx.obj, dict(ctx.scope), self._client(),
                                 retry_wait=ctx.settings.t(ctx.settings.gcp_retry_wait))



class AzureProvider(_LayerProvider):
    """The ``azure`` provider over :mod:`tasks.cloud.azure`."""

    name = "azure"

    def _client(self, scope: Mapping[str, Any]) -> Any:
        from tasks.cloud.azure.client import AzureClient

        azure = ((scope.get("spec") or {}).get("scope") or {}).get("azure") or {}
        subscription = str(azure.get("subscriptionId") or "")
        env = settings.current()
        base_url = env.azure_endpoint_url or None
        tenant = env.azure_tenant_id or str(azure.get("tenantId") or "")
        return _cached(("azure", subscription, base_url or ""), lambda: AzureClient(
            subscription, base_url=base_url, tenant_id=tenant, client_id=env.azure_client_id,
            client_secret=env.azure_client_secret))

    def _iprange_step(self, ctx: IpRangeContext) -> Any:
        iprange = self._layer("iprange")
        network_type = str(((ctx.network or {}).get("spec") or {}).get("type") or "") or None
        return iprange.reconcile(ctx.obj, dict(ctx.scope), self._client(ctx.scope),
                                 timing=iprange.Timing().scaled(1 / ctx.settings.time_scale),
                                 network_type=network_type, kyma_peering=ctx.peering)

    def iprange_peering(self, scope: Mapping[str, Any]) -> dict[str, Any] | None:
        # The kyma <-> Cloud Manager VNet peering of an Azure IpRange (the original's kymaPeeringCreate).
        return dict(self._layer("vpcpeering_plan").kyma_peering(scope))

    def reconcile_network(self, ctx: NetworkContext) -> Outcome:
        # The IpRange step creates and deletes the Cloud Manager VNet itself; status.network names it, as
        # the original's Network reconciler does, so a VpcPeering can peer with it.
        fields: dict[str, Any] = {"networkType": str((ctx.obj.get("spec") or {}).get("type") or "")}
        with contextlib.suppress(KeyError, TypeError):  # a Scope without the Azure fields names nothing
            fields["network"] = self._layer("scope").cm_network_reference(ctx.scope)
        return StepBuilder(ctx.obj).ready(**fields)

    def delete_network(self, ctx: NetworkContext) -> Outcome:
        return gone()


GCP = providers.register(GcpProvider())
AZURE = providers.register(AzureProvider())
