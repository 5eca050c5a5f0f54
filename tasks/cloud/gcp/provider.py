"""The GCP provider of Cloud Resources (``gcp`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from the
shoot's service account (:mod:`.scope`). The KCP IpRange's provisioning, a global address reserved for
Private Service Access, is the IpRange kind's ``gcp`` provider (:mod:`.iprange`)."""

from __future__ import annotations

from tasks.cloud.gcp import scope
from tasks.cloud.providers import LayerProvider

__all__ = ["GcpProvider"]


class GcpProvider(LayerProvider):
    """The ``gcp`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "gcp"
    scope_layer = scope
