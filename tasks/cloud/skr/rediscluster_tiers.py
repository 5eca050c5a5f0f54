"""Redis cluster tiers of the SKR kinds mapped to each provider's KCP fields (pure, data).

As cloud-manager's ``pkg/skr/{aws,gcp,azure}rediscluster/util.go`` and their ``createKcp*`` /
``modifyKcp*`` actions: the SKR user picks a ``redisTier`` (``C<n>``) and the shard layout; the KCP
``RedisCluster`` (AWS, Azure: ``spec.instance.<provider>``) or ``GcpRedisCluster`` (GCP: its ``spec``)
gets the provider's shape. Each mapper answers ``None`` for a tier it does not know (the plan turns that
into the Error of :data:`UNKNOWN_TIER_MESSAGES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.skr.redis_common_tiers import aws_fields

__all__ = ["AWS_CACHE_NODE_TYPES", "AZURE_CAPACITIES", "GCP_NODE_TYPES", "UNKNOWN_TIER_MESSAGES", "aws_instance",
           "azure_instance", "desired_for", "gcp_spec"]

#: ``AwsRedisClusterTierToCacheNodeTypeMap``.
AWS_CACHE_NODE_TYPES: Mapping[str, str] = {
    "C1": "cache.t4g.small", "C2": "cache.t4g.medium", "C3": "cache.m7g.large", "C4": "cache.m7g.xlarge",
    "C5": "cache.m7g.2xlarge", "C6": "cache.m7g.4xlarge", "C7": "cache.m7g.8xlarge", "C8": "cache.m7g.16xlarge",
}

#: ``gcpRedisTierToGcpRedisTierValueMap``: tier -> Memorystore for Redis Cluster node type.
GCP_NODE_TYPES: Mapping[str, str] = {
    "C1": "REDIS_SHARED_CORE_NANO", "C3": "REDIS_STANDARD_SMALL", "C4": "REDIS_HIGHMEM_MEDIUM",
    "C6": "REDIS_HIGHMEM_XLARGE",
}

#: ``azureRedisTierToAzureRedisSKUCapacityValueMap``: tier -> Premium SKU capacity.
AZURE_CAPACITIES: Mapping[str, int] = {"C3": 1, "C4": 2, "C5": 3, "C6": 4, "C7": 5}

#: The SKR Error message of an unknown tier, per provider (the original's words).
UNKNOWN_TIER_MESSAGES: Mapping[str, str] = {
    "aws": "failed to map redisTier to cacheNodeType",
    "gcp": "failed to map redisTier to nodeType",
    "azure": "Failed to map redisTier to SKU Capacity",
}


def _int(value: Any, default: int = 0) -> int:
    """An integer spec field (``default`` when unset or not a number: the CRD types it)."""
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _strings(values: Any) -> dict[str, str]:
    """A spec's map with string keys and values (``{}`` when not a map)."""
    return {str(k): str(v) for k, v in dict(values).items()} if isinstance(values, Mapping) else {}


def aws_instance(spec: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """``spec.instance.aws`` of the KCP RedisCluster for an AwsRedisCluster ``spec``; ``None`` for an unknown
    tier. ``overrides`` (setting ``redisClusterTierMachineTypes``) win over the table per tier."""
    return aws_fields(spec, AWS_CACHE_NODE_TYPES, overrides, lambda tier: {
        "shardCount": _int(spec.get("shardCount"), 1), "replicasPerShard": _int(spec.get("replicasPerShard"), 1),
        **({"parameters": _strings(spec["parameters"])} if spec.get("parameters") else {})})


def azure_instance(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``spec.instance.azure`` of the KCP RedisCluster for an AzureRedisCluster ``spec``; ``None`` for an
    unknown tier. ``redisConfiguration`` without its empty values (the original's struct omits them)."""
    capacity = AZURE_CAPACITIES.get(str(spec.get("redisTier") or ""))
    if capacity is None:
        return None
    out: dict[str, Any] = {"sku": {"capacity": capacity}, "shardCount": _int(spec.get("shardCount")),
                           "replicasPerPrimary": _int(spec.get("replicasPerPrimary"))}
    if spec.get("redisVersion"):
        out["redisVersion"] = str(spec["redisVersion"])
    config = {k: v for k, v in _strings(spec.get("redisConfiguration")).items() if v}
    if config:
        out["redisConfiguration"] = config
    return out


def gcp_spec(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tier-derived fields of the KCP GcpRedisCluster's ``spec`` for a GcpRedisCluster ``spec``
    (``nodeType``, ``shardCount``, ``replicasPerShard``, ``redisConfigs``); ``None`` for an unknown tier."""
    node_type = GCP_NODE_TYPES.get(str(spec.get("redisTier") or ""))
    if node_type is None:
        return None
    return {"nodeType": node_type, "shardCount": _int(spec.get("shardCount"), 1),
            "replicasPerShard": _int(spec.get("replicasPerShard"), 1),
            "redisConfigs": _strings(spec.get("redisConfigs"))}


def desired_for(provider: str, spec: Mapping[str, Any],
                overrides: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The provider fields an SKR Redis cluster ``spec`` asks for: ``{"aws"|"azure": {...}}`` (the KCP
    RedisCluster's ``spec.instance``) or, for ``gcp``, the KCP GcpRedisCluster's tier fields; ``None`` for
    an unknown tier or provider."""
    if provider == "aws":
        found = aws_instance(spec, overrides)
    elif provider == "azure":
        found = azure_instance(spec)
    elif provider == "gcp":
        return gcp_spec(spec)
    else:
        return None
    return None if found is None else {provider: found}
