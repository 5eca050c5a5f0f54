"""The Azure RedisCluster plan (pure): the Premium cache body (capacity, shards, replicas, version,
configuration), status id, the waits, the private endpoint and DNS zone group, the changes once Ready
(capacity, shard count, version), Ready's fields, the deletion order, refusals in the original's words
(pkg/kcp/provider/azure/rediscluster)."""

from __future__ import annotations

from typing import Any

import pytest

from kube.refusal import Failure
from tasks.cloud import names
from tasks.cloud.azure.rediscluster_plan import (
    Read,
    invalid,
    plan_create,
    plan_delete,
    read_failed,
    sku,
    version_matches,
)
from tests.unit.cloud.outcomes import refuse

SCOPE = {"spec": {"region": "westeurope", "scope": {"azure": {"subscriptionId": "sub1", "vpcNetwork": "vnet1"}}}}
RG = "/subscriptions/sub1/resourceGroups/vnet1--cm/providers"
READY = {"type": "Ready", "status": "True", "reason": "Ready", "message": "Redis Cluster is ready",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}


def t(s: float) -> float:
    return s


def obj(capacity: Any = 2, ready: bool = False, **azure: Any) -> dict[str, Any]:
    return {"metadata": {"name": "rc1", "namespace": "kcp-system"},
            "spec": {"instance": {"azure": {"sku": {"capacity": capacity}, **azure}}},
            "status": {"conditions": [READY], "state": "Ready", "id": "rc1"} if ready else {}}


def res(state: str = "Succeeded", **props: Any) -> dict[str, Any]:
    return {"id": f"{RG}/Microsoft.Cache/redis/rc1", "name": "rc1", "properties": {"provisioningState": state,
                                                                                   **props}}


def cache(**props: Any) -> dict[str, Any]:
    return res(**{"sku": sku(2), "hostName": "rc1.redis.cache.windows.net", "sslPort": 6380, "shardCount": 3,
                  "replicasPerPrimary": 2, "redisVersion": "6.0.20", **props})


def test_create_the_premium_cache() -> None:
    plan = plan_create(obj(shardCount=3, replicasPerPrimary=2, redisVersion="6.0",
                           redisConfiguration={"maxmemory-policy": "allkeys-lru", "maxclients": "",
                                               "evil": "x"}), SCOPE, Read(), t)
    [call] = plan.writes
    assert call.method == "create_redis" and call.kwargs["name"] == "rc1" and call.kwargs["group"] == "vnet1--cm"
    assert call.kwargs["body"] == {"location": "westeurope", "properties": {
        "sku": {"name": "Premium", "family": "P", "capacity": 2}, "enableNonSslPort": False,
        "redisConfiguration": {"maxmemory-policy": "allkeys-lru"}, "shardCount": 3, "replicasPerPrimary": 2,
        "redisVersion": "6.0"}}
    assert plan.requeue_after == 60
    step = refuse(plan, call, "quota")
    assert step is not None
    error = next(c for c in (step.status or {})["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("FailedCreatingFileSystem", "Failed creating AzureRedis: quota")
    assert step.requeue_after == 10
    bare = plan_create(obj(), SCOPE, Read(), t).writes[0]
    assert bare.kwargs["body"]["properties"].keys() == {"sku", "enableNonSslPort", "redisConfiguration"}


@pytest.mark.parametrize(("azure", "why"), [
    ({"sku": {"capacity": 6}}, "sku.capacity"), ({"sku": {"capacity": "2"}}, "sku.capacity"), ({}, "sku.capacity"),
    ({"sku": {"capacity": 1}, "shardCount": 11}, "shardCount"),
    ({"sku": {"capacity": 1}, "replicasPerPrimary": 4}, "replicasPerPrimary"),
    ({"sku": {"capacity": 1}, "redisVersion": "x" * 40}, "redisVersion")])
def test_out_of_range_specs_fail_without_a_call(azure: dict[str, Any], why: str) -> None:
    assert why in invalid(azure)
    o = {"metadata": {"name": "rc1"}, "spec": {"instance": {"azure": azure}}, "status": {}}
    step = plan_create(o, SCOPE, Read(), t)
    assert step.writes == () and step.status is not None and step.status["state"] == "Error"
    assert step.status["conditions"][0]["reason"] == "ValidationFailed"


def test_status_id_then_waits_then_private_endpoint_then_zone_group() -> None:
    creating = plan_create(obj(), SCOPE, Read(res("Creating")), t)
    assert creating.writes == () and creating.requeue_after == 60 and (creating.status or {})["id"] == "rc1"
    pe = plan_create(obj(), SCOPE, Read(cache()), t)
    [call] = pe.writes
    assert call.method == "create_private_endpoint" and pe.requeue_after == 60
    props = call.kwargs["body"]["properties"]
    assert props["subnet"]["id"] == f"{RG}/Microsoft.Network/virtualNetworks/vnet1--cm/subnets/vnet1--cm"
    assert props["privateLinkServiceConnections"][0]["properties"] == {
        "privateLinkServiceId": f"{RG}/Microsoft.Cache/redis/rc1", "groupIds": ["redisCache"]}
    refused = refuse(pe, call, "x")
    assert refused is not None and "Failed creating Azure PrivateEndpoint: x" in str(refused.status)
    assert [c.method for c in plan_create(obj(), SCOPE, Read(cache(), res("Failed")), t).writes] == [
        "create_private_endpoint"]
    pe_wait = plan_create(obj(), SCOPE, Read(cache(), res("Updating")), t)
    assert pe_wait.writes == () and pe_wait.requeue_after == 60
    zone = plan_create(obj(), SCOPE, Read(cache(), res()), t)
    [call] = zone.writes
    assert call.method == "create_dns_zone_group" and call.kwargs["endpoint"] == "rc1"
    assert call.kwargs["body"]["properties"]["privateDnsZoneConfigs"][0]["properties"]["privateDnsZoneId"] == \
        f"{RG}/Microsoft.Network/privateDnsZones/privatelink.redis.cache.windows.net"
    refused = refuse(zone, call, "y")
    assert refused is not None and "Failed creating Azure PrivateDnsZone: y" in str(refused.status)


def test_ready_with_the_cluster_fields() -> None:
    step = plan_create(obj(shardCount=3, replicasPerPrimary=2), SCOPE, Read(cache(), res(), {"id": "z"}, "k" * 32), t)
    assert step.writes == () and step.requeue_after is None
    status = step.status or {}
    assert status["state"] == "Ready" and status["discoveryEndpoint"] == "rc1.redis.cache.windows.net:6380"
    assert (status["authString"], status["nodeType"], status["shardCount"], status["replicasPerShard"]) == (
        "k" * 32, "2", 3, 2)
    assert [(c["type"], c["message"]) for c in status["conditions"]] == [("Ready", "Redis Cluster is ready")]
    older = cache(replicasPerPrimary=None, replicasPerMaster=1)
    assert (plan_create(obj(shardCount=3), SCOPE, Read(older, res(), {}, "k"), t).status or {})[
        "replicasPerShard"] == 1


def test_changes_wait_for_ready_and_come_one_at_a_time() -> None:
    found = Read(cache(), res(), {"id": "z"}, "k")
    # not Ready yet: Ready first, even though the capacity differs
    assert plan_create(obj(capacity=3, shardCount=3), SCOPE, found, t).writes == ()
    capacity = plan_create(obj(capacity=3, ready=True, shardCount=5), SCOPE, found, t)
    [call] = capacity.writes
    assert call.method == "update_redis" and call.kwargs["body"] == {"properties": {"sku": sku(3)}}
    assert capacity.requeue_after == 1
    refused = refuse(capacity, call, "busy")
    assert refused is not None and refused.requeue_after == 10
    assert "Failed to modify AzureRedis: busy" in str(refused.status)
    shards = plan_create(obj(ready=True, shardCount=5), SCOPE, found, t)
    assert [c.kwargs["body"] for c in shards.writes] == [{"properties": {"shardCount": 5}}]
    version = plan_create(obj(ready=True, shardCount=3, redisVersion="7.2"), SCOPE, found, t)
    assert [c.kwargs["body"] for c in version.writes] == [{"properties": {"redisVersion": "7.2"}}]
    same = plan_create(obj(ready=True, shardCount=3, redisVersion="6"), SCOPE, found, t)
    assert same.writes == () and same.requeue_after is None
    scaling = plan_create(obj(ready=True, shardCount=5), SCOPE, Read(cache(provisioningState="Scaling"), res(),
                                                                     {}, ""), t)
    assert scaling.writes == () and scaling.requeue_after == 60


def test_version_matches() -> None:
    assert version_matches("", "6.0.20") and version_matches("6", "6.0.20") and version_matches("6.0", "6.0.20")
    assert not version_matches("7.2", "6.0.20") and not version_matches("6.1", "6.0.20")


def test_delete_in_the_original_order() -> None:
    zone, pe = {"properties": {"provisioningState": "Succeeded"}}, res()
    first = plan_delete(obj(), SCOPE, Read(cache(), pe, zone), t)
    assert [c.method for c in first.writes] == ["delete_redis"] and first.requeue_after == 10
    refused = refuse(first, first.writes[0], "locked")
    assert refused is not None and refused.requeue_after == 60
    assert "Failed deleting AzureRedis: locked" in str(refused.status)
    waiting = plan_delete(obj(), SCOPE, Read(cache(provisioningState="Deleting"), pe, zone), t)
    assert waiting.writes == () and waiting.requeue_after == 60
    second = plan_delete(obj(), SCOPE, Read(None, pe, zone), t)
    assert [(c.method, c.kwargs) for c in second.writes] == [
        ("delete_dns_zone_group", {"group": "vnet1--cm", "endpoint": "rc1", "name": "rc1"})]
    third = plan_delete(obj(), SCOPE, Read(None, pe, None), t)
    assert [c.method for c in third.writes] == ["delete_private_endpoint"]
    assert plan_delete(obj(), SCOPE, Read(None, res("Deleting"), None), t).writes == ()
    assert plan_delete(obj(), SCOPE, Read(), t).remove_finalizer == names.FINALIZER


def test_read_failed() -> None:
    transient = read_failed(obj(), Failure("throttled", 429, "TooManyRequests", "slow", "slow", 60), t)
    assert transient.status is None and transient.requeue_after == 60
    hard = read_failed(obj(), Failure("refused", 403, "AuthorizationFailed", "no", "no", None), t)
    assert hard.requeue_after == 60 and "Failed loading AzureRedis: no" in str(hard.status)
