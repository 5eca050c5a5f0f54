"""The Azure RedisInstance plan (pure): SKU mapping, the cache body, the private endpoint and DNS zone
group, waits, the capacity change, Ready, the deletion order (notes §7.3, the original's
azure/redisinstance)."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud import names
from tasks.cloud.azure.redisinstance_plan import DNS_ZONE, Read, plan_create, plan_delete, sku, targets
from tests.unit.cloud.outcomes import refuse

SCOPE = {"spec": {"region": "westeurope", "scope": {"azure": {"subscriptionId": "sub1", "vpcNetwork": "vnet1"}}}}
RG = "/subscriptions/sub1/resourceGroups/vnet1--cm/providers"


def t(s: float) -> float:
    return s


def obj(family: str = "P", capacity: int = 1, **azure: Any) -> dict[str, Any]:
    return {"metadata": {"name": "r1", "namespace": "kcp-system"},
            "spec": {"instance": {"azure": {"sku": {"family": family, "capacity": capacity}, **azure}}},
            "status": {}}


def res(state: str = "Succeeded", **props: Any) -> dict[str, Any]:
    return {"id": f"{RG}/Microsoft.Cache/redis/r1", "properties": {"provisioningState": state, **props}}


CACHE = res(sku={"name": "Premium", "family": "P", "capacity": 1}, hostName="r1.redis.cache.windows.net",
            sslPort=6380)


@pytest.mark.parametrize(("family", "expected"), [("P", {"name": "Premium", "family": "P", "capacity": 3}),
                                                  ("S", {"name": "Basic", "family": "C", "capacity": 3})])
def test_sku(family: str, expected: dict[str, Any]) -> None:
    assert sku(family, 3) == expected


def test_targets() -> None:
    n = targets(SCOPE, "r1")
    assert n["group"] == "vnet1--cm" and n["subnet_id"] == f"{RG}/Microsoft.Network/virtualNetworks/vnet1--cm/" \
                                                           "subnets/vnet1--cm"
    assert n["zone_id"] == f"{RG}/Microsoft.Network/privateDnsZones/{DNS_ZONE}" and n["location"] == "westeurope"


def test_create_the_cache() -> None:
    plan = plan_create(obj(redisVersion="6.0", shardCount=2, redisConfiguration={"maxmemory-policy": "allkeys-lru",
                                                                                 "maxclients": ""}), SCOPE, Read(), t)
    [call] = plan.writes
    assert call.method == "create_redis" and call.kwargs["name"] == "r1" and call.kwargs["group"] == "vnet1--cm"
    assert call.kwargs["body"] == {"location": "westeurope", "properties": {
        "sku": {"name": "Premium", "family": "P", "capacity": 1}, "enableNonSslPort": False,
        "redisConfiguration": {"maxmemory-policy": "allkeys-lru"}, "shardCount": 2, "redisVersion": "6.0"}}
    assert plan.requeue_after == 60
    step = refuse(plan, call, "bad sku")
    error = next(c for c in (step.status or {})["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("FailedCreatingFileSystem", "Failed creating AzureRedis: bad sku")
    assert step.requeue_after == 10


def test_wait_then_private_endpoint_then_zone_group() -> None:
    waiting = plan_create(obj(), SCOPE, Read(res("Creating")), t)
    assert waiting.writes == () and waiting.requeue_after == 60
    pe = plan_create(obj(), SCOPE, Read(CACHE), t)
    [call] = pe.writes
    conn = call.kwargs["body"]["properties"]["privateLinkServiceConnections"][0]["properties"]
    assert call.method == "create_private_endpoint" and conn == {"privateLinkServiceId": CACHE["id"],
                                                                  "groupIds": ["redisCache"]}
    assert "Failed creating Azure PrivateEndpoint: x" in str(refuse(pe, call, "x").status)
    failed_pe = plan_create(obj(), SCOPE, Read(CACHE, res("Failed")), t)
    assert [c.method for c in failed_pe.writes] == ["create_private_endpoint"]
    pe_wait = plan_create(obj(), SCOPE, Read(CACHE, res("Updating")), t)
    assert pe_wait.writes == () and pe_wait.requeue_after == 1
    zone = plan_create(obj(), SCOPE, Read(CACHE, res()), t)
    [call] = zone.writes
    assert call.method == "create_dns_zone_group" and call.kwargs["endpoint"] == "r1"
    assert call.kwargs["body"]["properties"]["privateDnsZoneConfigs"][0]["properties"]["privateDnsZoneId"].endswith(
        DNS_ZONE)


def test_capacity_change_then_ready() -> None:
    plan = plan_create(obj(capacity=2), SCOPE, Read(CACHE, res(), res(), "key"), t)
    [call] = plan.writes
    assert call.method == "update_redis" and call.kwargs["body"] == {"properties": {"sku": {
        "name": "Premium", "family": "P", "capacity": 2}}}
    ready = plan_create(obj(), SCOPE, Read(CACHE, res(), res(), "key"), t)
    status = ready.status or {}
    assert (status["primaryEndpoint"], status["authString"], status["state"]) == (
        "r1.redis.cache.windows.net:6380", "key", "Ready")
    assert status["conditions"][0]["message"] == "Redis instance is ready" and status["id"] == CACHE["id"]


def test_delete_order() -> None:
    first = plan_delete(obj(), SCOPE, Read(CACHE, res(), res()), t)
    assert [c.method for c in first.writes] == ["delete_redis"]
    assert plan_delete(obj(), SCOPE, Read(res("Deleting"), res(), res()), t).writes == ()
    second = plan_delete(obj(), SCOPE, Read(None, res(), res()), t)
    assert [c.method for c in second.writes] == ["delete_dns_zone_group"]
    third = plan_delete(obj(), SCOPE, Read(None, res(), None), t)
    assert [c.method for c in third.writes] == ["delete_private_endpoint"]
    assert plan_delete(obj(), SCOPE, Read(), t).remove_finalizer == names.FINALIZER
