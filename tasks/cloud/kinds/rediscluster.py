"""RedisCluster: the SKR ``AwsRedisCluster`` and the KCP ``RedisCluster`` (cloud-manager's
``pkg/skr/awsrediscluster``, ``pkg/kcp/rediscluster``), known before their reconcilers come: their
objects keep the IpRange they name from being deleted, and Nuke deletes the KCP ones."""

from __future__ import annotations

from kube.resources import Resource
from tasks.cloud import names, registry

#: The SKR AwsRedisCluster (namespaced).
SKR_AWS_REDIS_CLUSTER = Resource(names.SKR_GROUP, names.VERSION, "awsredisclusters", "AwsRedisCluster", True)

KIND = registry.register(registry.Kind(
    name="rediscluster",
    skr=registry.SkrSide(resources={"aws": SKR_AWS_REDIS_CLUSTER}),
    kcp=registry.KcpSide(names.REDIS_CLUSTER),
    iprange_consumer=30,  # third in the DeleteWhileUsed messages
    nuke=30))
