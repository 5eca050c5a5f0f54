"""Network: the KCP ``Network`` of a runtime (``<kyma>--kyma``, ``<kyma>--cm``) or a peering's remote one
(cloud-manager's ``pkg/kcp/network``), reconciled by the ``cloud-network`` controller
(:mod:`tasks.cloud.kcp.network`); declared here is its place in Nuke's order (after what lives in it)."""

from __future__ import annotations

from tasks.cloud import names, registry

KIND = registry.register(registry.Kind(name="network", kcp=registry.KcpSide(names.NETWORK, controller=""), nuke=80))
