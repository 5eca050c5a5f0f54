"""The Redis tier tables as data: every row of the notes' §7.1 (pure)."""

from __future__ import annotations

import pytest

from tasks.cloud.skr.redisinstance_tiers import (
    AWS_CACHE_NODE_TYPES,
    AZURE_SKUS,
    GCP_TIERS,
    aws_instance,
    azure_instance,
    gcp_instance,
    instance_for,
)

AWS_ROWS = [("S1", "cache.t4g.small"), ("S2", "cache.t4g.medium"), ("S3", "cache.m7g.large"),
            ("S4", "cache.m7g.xlarge"), ("S5", "cache.m7g.2xlarge"), ("S6", "cache.m7g.4xlarge"),
            ("S7", "cache.m7g.8xlarge"), ("S8", "cache.m7g.16xlarge"), ("P1", "cache.m7g.large"),
            ("P2", "cache.m7g.xlarge"), ("P3", "cache.m7g.2xlarge"), ("P4", "cache.m7g.4xlarge"),
            ("P5", "cache.m7g.8xlarge"), ("P6", "cache.m7g.16xlarge")]
GCP_ROWS = [("S1", "BASIC", 1), ("S2", "BASIC", 3), ("S3", "BASIC", 6), ("S4", "BASIC", 12), ("S5", "BASIC", 24),
            ("S6", "BASIC", 48), ("S7", "BASIC", 101), ("S8", "BASIC", 200), ("P1", "STANDARD_HA", 5),
            ("P2", "STANDARD_HA", 12), ("P3", "STANDARD_HA", 24), ("P4", "STANDARD_HA", 48),
            ("P5", "STANDARD_HA", 101), ("P6", "STANDARD_HA", 200)]
AZURE_ROWS = [(f"P{n}", "P", n) for n in range(1, 6)] + [(f"S{n}", "S", n) for n in range(1, 6)]


@pytest.mark.parametrize(("tier", "node_type"), AWS_ROWS)
def test_aws_row(tier: str, node_type: str) -> None:
    found = aws_instance({"redisTier": tier})
    assert found is not None
    assert found["cacheNodeType"] == node_type
    assert found["readReplicas"] == (1 if tier.startswith("P") else 0)


def test_aws_table_has_exactly_the_rows() -> None:
    assert dict(AWS_CACHE_NODE_TYPES) == dict(AWS_ROWS)


@pytest.mark.parametrize(("tier", "kind", "memory"), GCP_ROWS)
def test_gcp_row(tier: str, kind: str, memory: int) -> None:
    found = gcp_instance({"redisTier": tier})
    assert found is not None
    assert (found["tier"], found["memorySizeGb"], found["replicaCount"]) == (kind, memory, 1 if tier[0] == "P" else 0)
    assert dict(GCP_TIERS)[tier] == (kind, memory)
    assert len(GCP_TIERS) == len(GCP_ROWS)


@pytest.mark.parametrize(("tier", "family", "capacity"), AZURE_ROWS)
def test_azure_row(tier: str, family: str, capacity: int) -> None:
    found = azure_instance({"redisTier": tier})
    assert found is not None
    assert found["sku"] == {"family": family, "capacity": capacity}
    assert len(AZURE_SKUS) == 10


def test_override_wins_per_tier_only() -> None:
    overrides = {"S1": "cache.t3.micro"}
    assert (aws_instance({"redisTier": "S1"}, overrides) or {})["cacheNodeType"] == "cache.t3.micro"
    assert (aws_instance({"redisTier": "S2"}, overrides) or {})["cacheNodeType"] == "cache.t4g.medium"
    # an override may name a tier the table lacks
    assert (aws_instance({"redisTier": "X9"}, {"X9": "cache.r7g.large"}) or {})["cacheNodeType"] == "cache.r7g.large"


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
@pytest.mark.parametrize("tier", ["", "S9", "P7", "s1", "C1"])
def test_unknown_tier_maps_to_none(provider: str, tier: str) -> None:
    assert instance_for(provider, {"redisTier": tier}) is None


def test_defaults_and_user_fields() -> None:
    aws = aws_instance({"redisTier": "P1", "authEnabled": True, "parameters": {"maxmemory-policy": "allkeys-lru"},
                        "preferredMaintenanceWindow": "sun:23:00-mon:01:30"})
    assert aws == {"cacheNodeType": "cache.m7g.large", "engineVersion": "7.0", "autoMinorVersionUpgrade": False,
                   "authEnabled": True, "readReplicas": 1, "parameters": {"maxmemory-policy": "allkeys-lru"},
                   "preferredMaintenanceWindow": "sun:23:00-mon:01:30"}
    gcp = gcp_instance({"redisTier": "S1", "redisConfigs": {"maxmemory-policy": "noeviction"},
                        "maintenancePolicy": {"dayOfWeek": {"day": "MONDAY", "startTime": {"hours": 1, "minutes": 0}}}})
    assert gcp is not None and gcp["redisVersion"] == "REDIS_7_0" and gcp["redisConfigs"] == {
        "maxmemory-policy": "noeviction"} and gcp["maintenancePolicy"]["dayOfWeek"]["day"] == "MONDAY"
    azure = azure_instance({"redisTier": "S2", "redisConfiguration": {"maxclients": "5", "maxmemory-policy": ""}})
    assert azure == {"sku": {"family": "S", "capacity": 2}, "redisVersion": "6.0",
                     "redisConfiguration": {"maxclients": "5"}}
    assert instance_for("openstack", {"redisTier": "S1"}) is None
