"""GcpRedisCluster: the SKR ``GcpRedisCluster`` mirrored into the KCP ``GcpRedisCluster``, provisioned as a
Memorystore for Redis Cluster on its GcpSubnet (cloud-manager's ``pkg/skr/gcprediscluster``,
``pkg/kcp/provider/gcp/rediscluster``). The SKR side is here; the KCP side (``tasks.cloud.kcp.gcprediscluster``)
and the GCP provider side come from their own modules (the lead wires ``kcp=`` and ``providers=``). Not an
IpRange consumer: the GcpSubnet refuses to go while a cluster uses it (:mod:`tasks.cloud.skr.gcpsubnet`).
``render rediscluster`` (:mod:`tasks.cloud.kinds.rediscluster`) renders it."""

from __future__ import annotations

from tasks.cloud import registry
from tasks.cloud.gcp import rediscluster as gcp
from tasks.cloud.kcp import gcprediscluster as kcp
from tasks.cloud.kinds.rediscluster import QUOTA
from tasks.cloud.skr import rediscluster as skr
from tasks.cloud.skr.rediscluster_plan import GCP_KINDS, plan

KIND = registry.register(registry.Kind(
    name="gcprediscluster",
    skr=registry.SkrSide(resources=GCP_KINDS, read=skr.read, plan=plan, order=40, summary=skr.gcp_summary,
                         quota={res.kind: QUOTA for res in GCP_KINDS.values()}),
    kcp=kcp.KCP, providers={"gcp": gcp.SIDE},
    nuke=40))
