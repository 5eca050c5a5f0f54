"""VpcPeering: ``AwsVpcPeering`` / ``GcpVpcPeering`` / ``AzureVpcPeering`` in the SKR, mirrored into the KCP
as a remote ``Network`` and a ``VpcPeering`` between it and the runtime's network, peered as an EC2 peering
connection with routes on both sides, two VPC network peerings or two virtual network peerings
(cloud-manager's ``pkg/skr/*vpcpeering``, ``pkg/kcp/vpcpeering``, ``pkg/kcp/provider/{aws,gcp,azure}/vpcpeering``).

A KCP VpcPeering names its two Networks (``spec.details``): neither is deleted while it does, and their
status changes wake it. The Azure IpRange creates one of its own (the kyma ↔ Cloud Manager VNet peering),
peered by the same flow.
"""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.aws import vpcpeering as aws
from tasks.cloud.azure import vpcpeering as azure
from tasks.cloud.gcp import vpcpeering as gcp
from tasks.cloud.kcp import vpcpeering as kcp
from tasks.cloud.kcp.vpcpeering_plan import network_names
from tasks.cloud.kcp.vpcpeering_plan import plan as kcp_plan
from tasks.cloud.skr import vpcpeering as skr
from tasks.cloud.skr.vpcpeering_plan import KINDS, plan
from tasks.cloud.vpcpeering_render import render_peerings

#: Default quota of each provider's SKR VPC peering kind per SKR (``resourceQuota.skr``; the original has
#: none: a conservative bound, as the original's 5 AwsNfsVolumes; raise it per runtime by override).
QUOTA = 5

KIND = registry.register(registry.Kind(
    name="vpcpeering",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=35, summary=skr.summary,  # Redis 30, NFS 40
                         quota={res.kind: QUOTA for res in KINDS.values()}),
    kcp=registry.KcpSide(names.VPC_PEERING, read=kcp.read, plan=kcp_plan, networks=network_names),
    providers={"aws": aws.SIDE, "gcp": gcp.SIDE, "azure": azure.SIDE},
    nuke=10,  # first: the original's Nuke deletes the peerings before everything else
    render=registry.KindRender(
        "vpcpeering", "SKR VPC peerings with a Scope -> the KCP Network and VpcPeering, the provider's steps.",
        "SKR AwsVpcPeering / GcpVpcPeering / AzureVpcPeering manifests",
        tuple(res.kind for res in KINDS.values()),
        lambda scope, docs, settings: render_peerings(scope, docs))))
