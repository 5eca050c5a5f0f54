"""The GCP provider of Cloud Resources (``gcp`` in :data:`tasks.cloud.clouds.PROVIDERS`): the Scope from the
shoot's service account (:mod:`.scope`), the KCP IpRange as a global address reserved for Private Service
Access (:mod:`.iprange`), on the process's Compute client (``RECONCILERY_GCP_ENDPOINT_URL``,
``GCP_SA_JSON_KEY_PATH``: :func:`tasks.cloud.gcp.clients.compute`)."""

from __future__ import annotations

from tasks.cloud.gcp import iprange, scope
from tasks.cloud.gcp.clients import compute
from tasks.cloud.providers import IpRangeContext, LayerProvider
from tasks.cloud.step import Outcome

__all__ = ["GcpProvider"]


class GcpProvider(LayerProvider):
    """The ``gcp`` provider (see :mod:`tasks.cloud.providers` for the contract)."""

    name = "gcp"
    scope_layer = scope
    invalid_reason = "GCPError"

    def iprange_step(self, ctx: IpRangeContext) -> Outcome:
        """The GCP IpRange turn (reconcile and delete alike: the step reads the deletion). Raises
        ``ValueError`` for an unusable object."""
        return iprange.reconcile(ctx.obj, dict(ctx.scope), compute(ctx.settings),
                                 retry_wait=ctx.settings.t(ctx.settings.gcp_retry_wait))
