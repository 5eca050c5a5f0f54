"""IpRange: the SKR ``IpRange`` (every provider, cluster scoped) mirrored into the KCP ``IpRange``, a CIDR
of the runtime's network provisioned as the provider's subnets (cloud-manager's ``pkg/skr/iprange``,
``pkg/kcp/iprange``, ``pkg/kcp/provider/{aws,gcp,azure}/iprange``). Its consumers (the kinds declared with
``iprange_consumer``) keep it from being deleted while they use it.

The KCP side is the ``cloud-iprange`` controller of :mod:`tasks.cloud.controller` (not yet the generic
one of :mod:`tasks.cloud.kcp.kind`)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.skr import iprange as skr
from tasks.cloud.skr.iprange_plan import KINDS, plan

KIND = registry.register(registry.Kind(
    name="iprange",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=10,  # before its consumers
                         quota={names.SKR_IPRANGE.kind: 1}),
    kcp=registry.KcpSide(names.KCP_IPRANGE),
    nuke=60))  # after its consumers, before the Network
