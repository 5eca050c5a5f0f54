"""The Azure provider of Cloud Resources (``azure`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from
the shoot's credentials (:mod:`.scope`). The KCP IpRange's provisioning, the Cloud Manager VNet with its
subnet, DNS zone and link, is the IpRange kind's ``azure`` provider (:mod:`.iprange`).

Azure's IpRange provisions the Cloud Manager network itself, so its managed KCP Network (``<kyma>--cm``)
is Ready as soon as it exists; once its VNet is there the IpRange's turn creates the KCP VpcPeering
``<kyma>`` between it and the shoot VNet (:meth:`AzureProvider.iprange_peering`), peered by the
VpcPeering kind's Azure flow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.azure import scope
from tasks.cloud.azure.vpcpeering_plan import kyma_peering
from tasks.cloud.providers import LayerProvider

__all__ = ["AzureProvider"]


class AzureProvider(LayerProvider):
    """The ``azure`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "azure"
    scope_layer = scope

    def iprange_peering(self, scope: Mapping[str, Any]) -> dict[str, Any] | None:
        # The kyma <-> Cloud Manager VNet peering of an Azure IpRange (the original's kymaPeeringCreate).
        return dict(kyma_peering(scope))
