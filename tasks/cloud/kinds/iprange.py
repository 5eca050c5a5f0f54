"""IpRange: the SKR ``IpRange`` (every provider, cluster scoped) mirrored into the KCP ``IpRange``, a CIDR
of the runtime's network provisioned as the provider's subnets (cloud-manager's ``pkg/skr/iprange``,
``pkg/kcp/iprange``, ``pkg/kcp/provider/{aws,gcp,azure}/iprange``). Its consumers (the kinds declared with
``iprange_consumer``) keep it from being deleted while they use it; it lives in its Network (whose
deletion waits for it, whose status changes wake it). A provider's deletion turn is completed by the
common part (:func:`~tasks.cloud.kcp.iprange_plan.finish`: the ``<scope>--cm`` Network goes with it).
"""

from __future__ import annotations

from dataclasses import replace

from tasks.cloud import names, registry
from tasks.cloud.aws import iprange as aws
from tasks.cloud.azure import iprange as azure
from tasks.cloud.gcp import iprange as gcp
from tasks.cloud.iprange_render import render_ipranges, shape_errors
from tasks.cloud.kcp import iprange as kcp
from tasks.cloud.kcp.iprange_plan import finish, network_names
from tasks.cloud.kcp.iprange_plan import plan as kcp_plan
from tasks.cloud.skr import iprange as skr
from tasks.cloud.skr.iprange_plan import KINDS, plan


def _finished(side: registry.ProviderSide) -> registry.ProviderSide:
    """``side`` whose deletion turns end with the common part's :func:`finish`."""
    return replace(side, delete=lambda found, turn: finish(turn.seen, side.delete(found, turn)))


KIND = registry.register(registry.Kind(
    name="iprange",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=10,  # before its consumers
                         quota={names.SKR_IPRANGE.kind: 1}, summary=skr.summary, kept=True),
    kcp=registry.KcpSide(names.KCP_IPRANGE, read=kcp.read, plan=kcp_plan, networks=network_names),
    providers={"aws": _finished(aws.SIDE), "gcp": _finished(gcp.SIDE), "azure": _finished(azure.SIDE)},
    nuke=60,  # after its consumers, before the Network
    render=registry.KindRender(
        "iprange", "IpRanges with a Scope -> CIDR (given or allocated), zone ranges, validation outcome.",
        "SKR or KCP IpRange manifests", (names.SKR_IPRANGE.kind,),
        lambda scope, docs, settings: render_ipranges(scope, docs), problems=shape_errors, cidr=True)))
