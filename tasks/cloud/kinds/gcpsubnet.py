"""GcpSubnet: the SKR ``GcpSubnet`` (GCP SKRs, cluster scoped) mirrored into the KCP ``GcpSubnet``,
provisioned as a subnetwork of the shoot's VPC listed in the service connection policy Memorystore for
Redis Cluster needs (cloud-manager's ``pkg/skr/gcpsubnet``, ``pkg/kcp/provider/gcp/subnet``)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.gcp import gcpsubnet as gcp
from tasks.cloud.gcpsubnet_render import render_gcpsubnets
from tasks.cloud.kcp import gcpsubnet as kcp
from tasks.cloud.kcp import gcpsubnet_plan as kcp_plan
from tasks.cloud.skr import gcpsubnet as skr
from tasks.cloud.skr import gcpsubnet_plan as skr_plan

KIND = registry.register(registry.Kind(
    name="gcpsubnet",
    skr=registry.SkrSide(resources=skr_plan.KINDS, read=skr.read, plan=skr_plan.plan, order=20,
                          summary=skr.summary, kept=True),
    kcp=registry.KcpSide(names.GCP_SUBNET, read=kcp.read, plan=kcp_plan.plan),
    providers={"gcp": gcp.SIDE},
    nuke=70,  # after the KCP IpRange (60), before the Network (80)
    render=registry.KindRender(
        "gcpsubnet", "SKR GcpSubnets with a Scope -> the KCP GcpSubnet, the subnetwork and its connection policy.",
        "SKR GcpSubnet manifests", (skr_plan.SKR_GCP_SUBNET.kind,),
        lambda scope, docs, settings: render_gcpsubnets(scope, docs), cidr=True)))
