"""The Azure provider of Cloud Resources (``azure`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from
the shoot's credentials (:mod:`.scope`). The KCP IpRange's provisioning, the Cloud Manager VNet with its
subnet, DNS zone and link, is the IpRange kind's ``azure`` provider (:mod:`.iprange`).

Azure's IpRange provisions the Cloud Manager network itself, so its managed KCP Network (``<kyma>--cm``)
is Ready as soon as it exists; once its VNet is there the IpRange's turn creates the KCP VpcPeering
``<kyma>`` between it and the shoot VNet (:meth:`AzureProvider.iprange_peering`), peered by the
VpcPeering kind's Azure flow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from tasks.cloud.azure import scope
from tasks.cloud.azure.vpcpeering_plan import kyma_peering
from tasks.cloud.providers import LayerProvider, NetworkContext
from tasks.cloud.step import Outcome, StepBuilder, gone

__all__ = ["AzureProvider"]


class AzureProvider(LayerProvider):
    """The ``azure`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "azure"
    scope_layer = scope

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
