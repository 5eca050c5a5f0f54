"""RedisCluster: ``AwsRedisCluster`` / ``AzureRedisCluster`` in the SKR, mirrored into the KCP ``RedisCluster``,
provisioned as an ElastiCache replication group in cluster mode or a clustered Premium Azure Cache for Redis
in the network of its IpRange (cloud-manager's ``pkg/skr/{aws,azure}rediscluster``, ``pkg/kcp/rediscluster``,
``pkg/kcp/provider/{aws,azure}/rediscluster``). The GCP cluster is :mod:`tasks.cloud.kinds.gcprediscluster`
(its own KCP kind on a GcpSubnet); ``render rediscluster`` renders all three SKR kinds."""

from __future__ import annotations

from functools import partial

from tasks.cloud import names, registry
from tasks.cloud.kcp import consumer, consumer_plan
from tasks.cloud.rediscluster_render import render_clusters
from tasks.cloud.skr import rediscluster as skr
from tasks.cloud.skr.rediscluster_plan import GCP_KINDS, KINDS, plan

#: Default quota of each provider's SKR Redis cluster kind per SKR (``resourceQuota.skr``; the original has
#: none: the house's bound, as the Redis instances'; raise it per runtime by override).
QUOTA = 5

#: The SKR AwsRedisCluster (namespaced).
SKR_AWS_REDIS_CLUSTER = KINDS["aws"]

KIND = registry.register(registry.Kind(
    name="rediscluster",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=40, summary=skr.summary,
                         quota={res.kind: QUOTA for res in KINDS.values()}),
    kcp=registry.KcpSide(names.REDIS_CLUSTER, read=consumer.read,
                         plan=partial(consumer_plan.plan, wait_ready=10)),  # the provider needs the subnets
    providers={},  # the lead wires {"aws": aws.SIDE, "azure": azure.SIDE} (tasks/cloud/{aws,azure}/rediscluster)
    iprange_consumer=30,  # third in the DeleteWhileUsed messages
    nuke=30,
    render=registry.KindRender(
        "rediscluster", "SKR Redis clusters with a Scope -> the KCP RedisCluster / GcpRedisCluster, the cluster.",
        "SKR AwsRedisCluster / AzureRedisCluster / GcpRedisCluster manifests",
        tuple(res.kind for res in {**KINDS, **GCP_KINDS}.values()),
        lambda scope, docs, settings: render_clusters(scope, docs, settings.redis_cluster_tier_machine_types))))
