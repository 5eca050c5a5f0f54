"""The Azure RedisInstance flow through azure-mgmt-redis and azure-mgmt-network against the ARM stand-in:
create -> Ready (cache, private endpoint, DNS zone group read back), capacity change, a refused create
(the original's words), 429 -> requeue without a status change, deletion in the notes' order; and the
stand-in's conformance for caches and private endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.redis import RedisManagementClient

from kube.toolkit.outcome import Outcome
from standins.azure import AzureStandIn
from tasks.cloud import names, settings
from tasks.cloud.azure.client import AzureClient, _bearer_over_http
from tasks.cloud.azure.redisinstance_client import AzureRedisClient
from tasks.cloud.azure.redisinstance_plan import DNS_ZONE
from tasks.cloud.kcp.consumer_plan import Seen
from tests.integration.cloud.azure.conftest import REGION, SUBSCRIPTION
from tests.integration.cloud.azure.redis_common import deleted, drive
from tests.integration.cloud.steps import provider_step

VPC = "shoot--kyma--c-8e3f1b7"
CM = f"{VPC}--cm"
SCOPE = {"spec": {"provider": "azure", "region": REGION,
                  "scope": {"azure": {"subscriptionId": SUBSCRIPTION, "vpcNetwork": VPC}}}}


def t(s: float) -> float:
    return s / 1000


def obj(family: str = "P", capacity: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "r1", "namespace": "kcp-system"},
            "spec": {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"},
                     "instance": {"azure": {"sku": {"family": family, "capacity": capacity}, "redisVersion": "6.0",
                                            "redisConfiguration": {"maxmemory-policy": "allkeys-lru"}}}}, "status": {}}


def seeded(standin: AzureStandIn) -> AzureClient:
    client = AzureClient(SUBSCRIPTION, base_url=standin.url, retry_total=0)
    client._resources.resource_groups.create_or_update(CM, {"location": REGION})
    client._network.virtual_networks.begin_create_or_update(
        CM, CM, {"location": REGION, "properties": {"addressSpace": {"addressPrefixes": ["10.252.0.0/22"]}}}).result()
    client._network.subnets.begin_create_or_update(CM, CM, CM, {"properties": {"addressPrefix": "10.252.0.0/22"}}
                                                   ).result()
    client._dns.private_zones.begin_create_or_update(CM, DNS_ZONE, {"location": "global"}).result()
    return client


#: Timings scaled as ``t`` (1/1000).
SETTINGS = settings.load({"RECONCILERY_CLOUD_TIME_SCALE": "1000"})


def turn(o: dict[str, Any], client: AzureRedisClient, deleting: bool = False) -> Outcome:
    return provider_step("redisinstance", o, SCOPE, SETTINGS, Seen(o, SCOPE, True, None), client, deleting)


def until(o: dict[str, Any], client: AzureRedisClient, deleting: bool = False) -> Outcome:
    return drive(lambda: turn(o, client, deleting), o, deleting, 60)


def test_create_scale_delete(azure_http: AzureStandIn) -> None:
    network = seeded(azure_http)
    client = AzureRedisClient(network, base_url=azure_http.url, retry_total=0)
    o = obj()
    until(o, client)
    rg = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{CM}/providers"
    cache = azure_http.state.resource(f"{rg}/Microsoft.Cache/redis/r1") or {}
    assert cache["location"] == REGION and cache["properties"]["enableNonSslPort"] is False
    assert cache["properties"]["sku"] == {"name": "Premium", "family": "P", "capacity": 1}
    assert cache["properties"]["redisConfiguration"]["maxmemory-policy"] == "allkeys-lru"
    endpoint = azure_http.state.resource(f"{rg}/Microsoft.Network/privateEndpoints/r1") or {}
    assert endpoint["properties"]["subnet"]["id"].endswith(f"/virtualNetworks/{CM}/subnets/{CM}")
    assert endpoint["properties"]["privateLinkServiceConnections"][0]["properties"]["groupIds"] == ["redisCache"]
    group = azure_http.state.resource(f"{rg}/Microsoft.Network/privateEndpoints/r1/privateDnsZoneGroups/r1") or {}
    assert group["properties"]["privateDnsZoneConfigs"][0]["properties"]["privateDnsZoneId"].endswith(DNS_ZONE)
    status = o["status"]
    assert status["primaryEndpoint"] == "r1.redis.cache.windows.net:6380" and len(status["authString"]) == 32
    assert [(c["type"], c["message"]) for c in status["conditions"]] == [("Ready", "Redis instance is ready")]

    o["spec"]["instance"]["azure"]["sku"]["capacity"] = 2
    until(o, client)
    assert (azure_http.state.resource(f"{rg}/Microsoft.Cache/redis/r1") or {})["properties"]["sku"]["capacity"] == 2

    azure_http.state.history.clear()
    assert until(o, client, deleting=True).remove_finalizer == names.FINALIZER
    assert deleted(azure_http) == ["Microsoft.Cache/redis/r1",
                                   "Microsoft.Network/privateEndpoints/r1/privateDnsZoneGroups/r1",
                                   "Microsoft.Network/privateEndpoints/r1"]


def test_refused_create_and_429(azure_http: AzureStandIn) -> None:
    network = seeded(azure_http)
    client = AzureRedisClient(network, base_url=azure_http.url, retry_total=0)
    o = obj(family="S", capacity=7)  # no such Basic size: ARM refuses
    step = turn(o, client)
    error = next(c for c in o["status"]["conditions"] if c["type"] == "Error")
    assert error["reason"] == "FailedCreatingFileSystem" and error["message"].startswith("Failed creating AzureRedis: ")
    assert step.requeue_after == t(10)
    azure_http.state.inject("GET", "/redis/r1$", 429)
    o = obj()
    step = turn(o, client)
    assert step.status is None and step.requeue_after == t(60)


def test_standin_conformance(azure_http: AzureStandIn) -> None:
    network = seeded(azure_http)
    redis = RedisManagementClient(network.credential, SUBSCRIPTION, base_url=azure_http.url, retry_total=0,
                                  polling_interval=0, authentication_policy=_bearer_over_http(network.credential))
    poller = redis.redis.begin_create(CM, "c1", {"location": REGION, "properties": {
        "sku": {"name": "Basic", "family": "C", "capacity": 1}}})
    assert poller.result().provisioning_state == "Succeeded"
    assert redis.redis.list_keys(CM, "c1").primary_key
    with pytest.raises(HttpResponseError) as refused:  # a family change
        redis.redis.begin_update(CM, "c1", {"properties": {"sku": {"name": "Premium", "family": "P",
                                                                   "capacity": 1}}}).result()
    assert refused.value.status_code == 400
    with pytest.raises(HttpResponseError) as missing:  # a private endpoint into a subnet that does not exist
        network._network.private_endpoints.begin_create_or_update(CM, "pe", {"location": REGION, "properties": {
            "subnet": {"id": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{CM}/providers/Microsoft.Network/"
                             f"virtualNetworks/{CM}/subnets/none"}}}).result()
    assert missing.value.error is not None and missing.value.error.code == "InvalidResourceReference"
    redis.redis.begin_delete(CM, "c1").result()
    assert list(redis.redis.list_by_resource_group(CM)) == []
