"""IpRange: the SKR ``IpRange`` mirrored into the KCP ``IpRange``, provisioned per provider (cloud-manager's
``pkg/skr/iprange``, ``pkg/kcp/iprange``). Its SKR and KCP reconcilers are the connect's and the
``cloud-iprange`` controller's own (:mod:`tasks.cloud.skr.iprange`, :mod:`tasks.cloud.kcp.iprange`); declared
here are its quota (one per SKR) and its place in Nuke's order."""

from __future__ import annotations

from tasks.cloud import names, registry

KIND = registry.register(registry.Kind(
    name="iprange",
    skr=registry.SkrSide(resources={registry.ANY_PROVIDER: names.SKR_IPRANGE}, quota={names.SKR_IPRANGE.kind: 1}),
    kcp=registry.KcpSide(names.KCP_IPRANGE, controller=""),
    nuke=60))  # after the kinds that use it (NfsInstance 50), before GcpSubnet (70) and the Network (80)
