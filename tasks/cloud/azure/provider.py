"""The Azure provider of Cloud Resources (``azure`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from
the shoot's credentials (:mod:`.scope`), the KCP IpRange as the Cloud Manager VNet with its subnet, DNS zone
and link (:mod:`.iprange`), on the Scope subscription's ARM client (:func:`tasks.cloud.azure.clients.network`).

Azure's IpRange step provisions the Cloud Manager network itself, so its managed KCP Network
(``<kyma>--cm``) is Ready as soon as it exists; once its VNet is there the step asks for the KCP
VpcPeering ``<kyma>`` between it and the shoot VNet (:meth:`AzureProvider.iprange_peering`, created and
deleted by the KCP IpRange controller, peered by this provider's VpcPeering flow).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from tasks.cloud.azure import iprange, scope
from tasks.cloud.azure.clients import network
from tasks.cloud.azure.vpcpeering_plan import kyma_peering
from tasks.cloud.providers import IpRangeContext, LayerProvider, NetworkContext
from tasks.cloud.step import Outcome, StepBuilder, gone

__all__ = ["AzureProvider"]


class AzureProvider(LayerProvider):
    """The ``azure`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "azure"
    scope_layer = scope

    def iprange_step(self, ctx: IpRangeContext) -> Outcome:
        """The Azure IpRange turn (reconcile and delete alike). Raises ``ValueError`` for an unusable
        object."""
        network_type = str(((ctx.network or {}).get("spec") or {}).get("type") or "") or None
        return iprange.reconcile(ctx.obj, dict(ctx.scope), network(ctx.settings, ctx.scope),
                                 timing=iprange.Timing().scaled(1 / ctx.settings.time_scale),
                                 network_type=network_type, kyma_peering=ctx.peering)

    def iprange_peering(self, scope: Mapping[str, Any]) -> dict[str, Any] | None:
        # The kyma <-> Cloud Manager VNet peering of an Azure IpRange (the original's kymaPeeringCreate).
        return dict(kyma_peering(scope))

    def reconcile_network(self, ctx: NetworkContext) -> Outcome:
        # The IpRange step creates and deletes the Cloud Manager VNet itself; status.network names it, as
        # the original's Network reconciler does, so a VpcPeering can peer with it.
        fields: dict[str, Any] = {"networkType": str((ctx.obj.get("spec") or {}).get("type") or "")}
        with contextlib.suppress(KeyError, TypeError):  # a Scope without the Azure fields names nothing
            fields["network"] = scope.cm_network_reference(ctx.scope)
        return StepBuilder(ctx.obj).ready(**fields)

    def delete_network(self, ctx: NetworkContext) -> Outcome:
        return gone()
