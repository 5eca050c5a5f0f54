"""GcpRedisCluster: the KCP ``GcpRedisCluster`` (cloud-manager's ``pkg/kcp/provider/gcp/rediscluster``),
known before its reconciler comes: Nuke deletes it."""

from __future__ import annotations

from tasks.cloud import names, registry

KIND = registry.register(registry.Kind(name="gcprediscluster", kcp=registry.KcpSide(names.GCP_REDIS_CLUSTER),
                                       nuke=40))
