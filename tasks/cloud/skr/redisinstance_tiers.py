"""Redis tiers of the SKR kinds mapped to each provider's machine shape (pure, data).

As cloud-manager's ``pkg/skr/{aws,gcp,azure}redisinstance/util.go`` (spec §7.1): the SKR user picks a
``redisTier`` (``S<n>`` standard, ``P<n>`` premium); the KCP ``RedisInstance`` gets the provider's
shape. Each mapper answers ``None`` for a tier it does not know (the SKR reconciler turns that into the
Error of :data:`UNKNOWN_TIER_MESSAGES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.skr.redis_common_tiers import aws_fields

__all__ = ["AWS_CACHE_NODE_TYPES", "AZURE_SKUS", "GCP_TIERS", "UNKNOWN_TIER_MESSAGES", "aws_instance",
           "azure_instance", "gcp_instance", "instance_for"]

#: ``awsRedisTierToCacheNodeTypeMap``.
AWS_CACHE_NODE_TYPES: Mapping[str, str] = {
    "S1": "cache.t4g.small", "S2": "cache.t4g.medium", "S3": "cache.m7g.large", "S4": "cache.m7g.xlarge",
    "S5": "cache.m7g.2xlarge", "S6": "cache.m7g.4xlarge", "S7": "cache.m7g.8xlarge", "S8": "cache.m7g.16xlarge",
    "P1": "cache.m7g.large", "P2": "cache.m7g.xlarge", "P3": "cache.m7g.2xlarge", "P4": "cache.m7g.4xlarge",
    "P5": "cache.m7g.8xlarge", "P6": "cache.m7g.16xlarge",
}

#: ``gcpRedisTierToGcpRedisTierValueMap``: tier -> (Memorystore tier, memory in GB).
GCP_TIERS: Mapping[str, tuple[str, int]] = {
    "S1": ("BASIC", 1), "S2": ("BASIC", 3), "S3": ("BASIC", 6), "S4": ("BASIC", 12), "S5": ("BASIC", 24),
    "S6": ("BASIC", 48), "S7": ("BASIC", 101), "S8": ("BASIC", 200),
    "P1": ("STANDARD_HA", 5), "P2": ("STANDARD_HA", 12), "P3": ("STANDARD_HA", 24), "P4": ("STANDARD_HA", 48),
    "P5": ("STANDARD_HA", 101), "P6": ("STANDARD_HA", 200),
}

#: ``azureRedisTierToAzureRedisSKUCapacityValueMap``: tier -> (SKU family, capacity).
AZURE_SKUS: Mapping[str, tuple[str, int]] = {
    **{f"P{n}": ("P", n) for n in range(1, 6)},
    **{f"S{n}": ("S", n) for n in range(1, 6)},
}

#: The SKR Error message of an unknown tier, per provider (the original's words differ per provider).
UNKNOWN_TIER_MESSAGES: Mapping[str, str] = {
    "aws": "failed to map redisTier to cacheNodeType",
    "gcp": "failed to map redisTier to tier and memorySizeGb",
    "azure": "Failed to map redisTier to SKU Capacity",
}


def _replicas(tier: str) -> int:
    """``redisTierToReadReplicas`` / ``redisTierToReplicaCount``: 1 for the P family, else 0."""
    return 1 if tier.startswith("P") else 0


def _strings(values: Mapping[str, Any], drop_empty: bool = False) -> dict[str, str]:
    """A spec's map with string keys and values (empty values left out when ``drop_empty``)."""
    return {str(k): str(v) for k, v in dict(values).items() if v or not drop_empty}


def _maps(spec: Mapping[str, Any], key: str, drop_empty: bool = False) -> dict[str, dict[str, str]]:
    """``{key: <the spec's map as strings>}`` when the spec sets that map, else ``{}``."""
    return {key: _strings(spec[key], drop_empty)} if spec.get(key) else {}


def aws_instance(spec: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """``spec.instance.aws`` of the KCP RedisInstance for an AwsRedisInstance ``spec``; ``None`` for an
    unknown tier. ``overrides`` (setting ``redisInstanceTierMachineTypes``) win over the table per tier."""
    return aws_fields(spec, AWS_CACHE_NODE_TYPES, overrides,
                      lambda tier: {"readReplicas": _replicas(tier), **_maps(spec, "parameters")})


def gcp_instance(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``spec.instance.gcp`` for a GcpRedisInstance ``spec``; ``None`` for an unknown tier."""
    found = GCP_TIERS.get(str(spec.get("redisTier") or ""))
    if found is None:
        return None
    out: dict[str, Any] = {
        "tier": found[0], "memorySizeGb": found[1], "replicaCount": _replicas(str(spec["redisTier"])),
        "redisVersion": str(spec.get("redisVersion") or "REDIS_7_0"), "authEnabled": bool(spec.get("authEnabled")),
        **_maps(spec, "redisConfigs"),
    }
    policy = spec.get("maintenancePolicy")
    if policy and (policy.get("dayOfWeek") or {}).get("day"):
        out["maintenancePolicy"] = {"dayOfWeek": dict(policy["dayOfWeek"])}
    return out


def azure_instance(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``spec.instance.azure`` for an AzureRedisInstance ``spec``; ``None`` for an unknown tier."""
    found = AZURE_SKUS.get(str(spec.get("redisTier") or ""))
    if found is None:
        return None
    return {"sku": {"family": found[0], "capacity": found[1]}, "redisVersion": str(spec.get("redisVersion") or "6.0"),
            **_maps(spec, "redisConfiguration", drop_empty=True)}


def instance_for(provider: str, spec: Mapping[str, Any],
                 overrides: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """``spec.instance`` (``{<provider>: {...}}``) for an SKR Redis ``spec`` of ``provider``; ``None``
    for an unknown tier or provider."""
    if provider == "aws":
        found = aws_instance(spec, overrides)
    elif provider == "gcp":
        found = gcp_instance(spec)
    elif provider == "azure":
        found = azure_instance(spec)
    else:
        return None
    return None if found is None else {provider: found}
