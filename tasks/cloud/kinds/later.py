"""Kinds of the original whose reconcilers come later (Redis clusters on three providers): declared now
because they matter to what exists: an IpRange is not deleted while a RedisCluster or an SKR
AwsRedisCluster uses it, and Nuke deletes them in the original's order (cloud-manager's ``pkg/kcp/nuke``;
tests/unit/cloud/test_registry.py pins the whole order)."""

from __future__ import annotations

from kube import Resource
from tasks.cloud import names, registry

#: The SKR ``AwsRedisCluster`` (``api/cloud-resources/v1beta1``), an IpRange consumer.
SKR_AWS_REDIS_CLUSTER = Resource(names.SKR_GROUP, names.VERSION, "awsredisclusters", "AwsRedisCluster", True)

REDIS_CLUSTER = registry.register(registry.Kind(
    name="rediscluster", skr=registry.SkrSide(resources={"aws": SKR_AWS_REDIS_CLUSTER}),
    kcp=registry.KcpSide(names.REDIS_CLUSTER, controller=""), iprange_consumer=30, nuke=30))
GCP_REDIS_CLUSTER = registry.register(registry.Kind(
    name="gcprediscluster", kcp=registry.KcpSide(names.GCP_REDIS_CLUSTER, controller=""), nuke=40))
AZURE_MANAGED_REDIS = registry.register(registry.Kind(
    name="azuremanagedredis", kcp=registry.KcpSide(names.AZURE_MANAGED_REDIS, controller=""), nuke=90))
