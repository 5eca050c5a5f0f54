"""RedisInstance: ``AwsRedisInstance`` / ``GcpRedisInstance`` / ``AzureRedisInstance`` in the SKR, mirrored
into the KCP ``RedisInstance``, provisioned as ElastiCache, Memorystore or Azure Cache for Redis in the
network of its IpRange (cloud-manager's ``pkg/skr/*redisinstance``, ``pkg/kcp/redisinstance``,
``pkg/kcp/provider/{aws,gcp,azure}/redisinstance``)."""

from __future__ import annotations

from functools import partial

from tasks.cloud import names, registry
from tasks.cloud.aws import redisinstance as aws
from tasks.cloud.azure import redisinstance as azure
from tasks.cloud.gcp import redisinstance as gcp
from tasks.cloud.kcp import consumer, consumer_plan
from tasks.cloud.redisinstance_render import render_redis
from tasks.cloud.skr import redisinstance as skr
from tasks.cloud.skr.redisinstance_plan import KINDS, plan

#: Default quota of each provider's SKR Redis instance kind per SKR (``resourceQuota.skr``; the original
#: has none: a conservative bound, as the original's 5 AwsNfsVolumes; raise it per runtime by override).
QUOTA = 5

KIND = registry.register(registry.Kind(
    name="redisinstance",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=30, summary=skr.summary,
                         quota={res.kind: QUOTA for res in KINDS.values()}),
    kcp=registry.KcpSide(names.REDIS_INSTANCE, read=consumer.read,
                         plan=partial(consumer_plan.plan, wait_ready=10)),  # the provider needs the subnets
    providers={"aws": aws.SIDE, "gcp": gcp.SIDE, "azure": azure.SIDE},
    iprange_consumer=20, nuke=20,
    render=registry.KindRender(
        "redisinstance", "SKR Redis instances with a Scope -> the KCP RedisInstance, the provider's pieces.",
        "SKR AwsRedisInstance / GcpRedisInstance / AzureRedisInstance manifests",
        tuple(res.kind for res in KINDS.values()),
        lambda scope, docs, settings: render_redis(scope, docs, settings.redis_instance_tier_machine_types))))
