"""The Azure RedisCluster provider side through azure-mgmt-redis and azure-mgmt-network against the ARM
stand-in: a clustered Premium cache -> Ready (cache, private endpoint, DNS zone group; discovery endpoint,
key, shards, replicas), a shard count change (``Scaling`` -> ``Succeeded``), deletion in the original's
order; and the stand-in's conformance for clustering through the SDK's ``RedisManagementClient``."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.redis import RedisManagementClient
from azure.mgmt.redis.models import RedisCreateParameters, RedisUpdateParameters, Sku

from kube.toolkit import Outcome, execute
from standins.azure import AzureStandIn
from tasks.cloud import names, registry
from tasks.cloud.azure import rediscluster
from tasks.cloud.azure.client import _bearer_over_http
from tasks.cloud.azure.redisinstance_client import AzureRedisClient
from tasks.cloud.kcp.kind import provider_turn
from tests.integration.cloud.azure.conftest import REGION, SUBSCRIPTION
from tests.integration.cloud.azure.redis_common import deleted, drive
from tests.integration.cloud.azure.test_redisinstance import CM, SCOPE, SETTINGS, seeded
from tests.integration.cloud.steps import apply_step

pytestmark = pytest.mark.integration

#: The KCP RedisCluster with only its azure provider (the kind's wiring is the lead's).
KIND = registry.Kind(name="rediscluster-azure-test", kcp=registry.KcpSide(names.REDIS_CLUSTER),
                     providers={"azure": rediscluster.SIDE})


def obj(capacity: int = 1, shards: int = 2) -> dict[str, Any]:
    return {"metadata": {"name": "rc1", "namespace": "kcp-system"},
            "spec": {"remoteRef": {"namespace": "apps", "name": "cluster"}, "scope": {"name": "k1"},
                     "ipRange": {"name": "ipr"},
                     "instance": {"azure": {"sku": {"capacity": capacity}, "shardCount": shards,
                                            "replicasPerPrimary": 2,
                                            "redisConfiguration": {"maxmemory-policy": "allkeys-lru"}}}},
            "status": {}}


def turn(o: dict[str, Any], client: AzureRedisClient, deleting: bool = False) -> Outcome:
    at = registry.Turn(kube=None, obj=o, scope=SCOPE, settings=SETTINGS)  # type: ignore[arg-type]
    outcome, used = provider_turn(KIND, at, deleting, {"": client})
    step = execute(outcome, clients=used, scale=at.t).outcome
    apply_step(o, step)
    return step


def until(o: dict[str, Any], client: AzureRedisClient, deleting: bool = False) -> Outcome:
    return drive(lambda: turn(o, client, deleting), o, deleting, 80, no_error=True)


def test_create_reshard_delete(azure_http: AzureStandIn) -> None:
    client = AzureRedisClient(seeded(azure_http), base_url=azure_http.url, retry_total=0)
    o = obj()
    until(o, client)
    rg = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{CM}/providers"
    cache = (azure_http.state.resource(f"{rg}/Microsoft.Cache/redis/rc1") or {})["properties"]
    assert cache["sku"] == {"name": "Premium", "family": "P", "capacity": 1} and cache["enableNonSslPort"] is False
    assert (cache["shardCount"], cache["replicasPerPrimary"]) == (2, 2)
    assert cache["redisConfiguration"]["maxmemory-policy"] == "allkeys-lru"
    assert azure_http.state.resource(f"{rg}/Microsoft.Network/privateEndpoints/rc1/privateDnsZoneGroups/rc1")
    status = o["status"]
    assert status["discoveryEndpoint"] == "rc1.redis.cache.windows.net:6380" and len(status["authString"]) == 32
    assert (status["id"], status["nodeType"], status["shardCount"], status["replicasPerShard"]) == ("rc1", "1", 2, 2)
    assert [(c["type"], c["message"]) for c in status["conditions"]] == [("Ready", "Redis Cluster is ready")]

    o["spec"]["instance"]["azure"]["shardCount"] = 4
    azure_http.state.history.clear()
    until(o, client)
    assert o["status"]["shardCount"] == 4 and azure_http.state.history == [("put", f"{rg}/Microsoft.Cache/redis/rc1")]

    azure_http.state.history.clear()
    assert until(o, client, deleting=True).remove_finalizer == names.FINALIZER
    assert deleted(azure_http) == ["Microsoft.Cache/redis/rc1",
                                   "Microsoft.Network/privateEndpoints/rc1/privateDnsZoneGroups/rc1",
                                   "Microsoft.Network/privateEndpoints/rc1"]


def test_standin_clustering_conformance(azure_http: AzureStandIn) -> None:
    network = seeded(azure_http)
    redis = RedisManagementClient(network.credential, SUBSCRIPTION, base_url=azure_http.url, retry_total=0,
                                  polling_interval=0, authentication_policy=_bearer_over_http(network.credential))
    premium = Sku(name="Premium", family="P", capacity=1)
    created = redis.redis.begin_create(CM, "c1", RedisCreateParameters(
        location=REGION, sku=premium, shard_count=3, replicas_per_primary=2, redis_version="6")).result()
    assert (created.provisioning_state, created.shard_count, created.replicas_per_primary,
            created.replicas_per_master) == ("Succeeded", 3, 2, 2)
    poller = redis.redis.begin_update(CM, "c1", RedisUpdateParameters(shard_count=5))
    assert redis.redis.get(CM, "c1").provisioning_state == "Scaling"
    assert poller.result().shard_count == 5 and redis.redis.get(CM, "c1").provisioning_state == "Succeeded"
    for refused in (RedisUpdateParameters(shard_count=11), RedisUpdateParameters(shard_count=0),
                    RedisUpdateParameters(replicas_per_primary=3), RedisUpdateParameters(redis_version="4")):
        with pytest.raises(HttpResponseError) as err:
            redis.redis.begin_update(CM, "c1", refused).result()
        assert err.value.status_code == 400 and err.value.error is not None and err.value.error.code == "BadRequest"
    for bad in (RedisCreateParameters(location=REGION, sku=Sku(name="Standard", family="C", capacity=1),
                                      shard_count=2),
                RedisCreateParameters(location=REGION, sku=premium, replicas_per_primary=4)):
        with pytest.raises(HttpResponseError) as err:
            redis.redis.begin_create(CM, "c2", bad)
        assert err.value.status_code == 400
    plain = redis.redis.begin_create(CM, "c3", RedisCreateParameters(location=REGION, sku=premium)).result()
    assert plain.shard_count is None and plain.replicas_per_primary == 1  # Premium, not clustered
    assert redis.redis.begin_update(CM, "c3", RedisUpdateParameters(shard_count=1)).result().shard_count == 1


def test_the_kcp_redisclusters_status_fits_its_crd(cloud: Any) -> None:
    """The provider's turns carried out on a KCP RedisCluster of the dev API server (labelled ignored: no
    worker takes it; the kind's wiring is the lead's): every Ready field survives the CRD's schema."""
    from kube.toolkit import execute as carry_out

    kcp = cloud.kcp
    client = AzureRedisClient(seeded(cloud.azure), base_url=cloud.azure.url, retry_total=0)
    name = f"rc-{uuid.uuid4().hex[:8]}"
    body = obj(capacity=2, shards=1)
    kcp.create(names.REDIS_CLUSTER, {"apiVersion": names.REDIS_CLUSTER.api_version, "kind": "RedisCluster",
                                     "metadata": {"name": name, "namespace": names.KCP_NAMESPACE,
                                                  "labels": {names.LABEL_IGNORE: "true"}},
                                     "spec": body["spec"]})
    for _ in range(80):
        current = kcp.get(names.REDIS_CLUSTER, name, names.KCP_NAMESPACE)
        at = registry.Turn(kube=kcp, obj=current, scope=SCOPE, settings=SETTINGS)
        outcome, used = provider_turn(KIND, at, False, {"": client})
        carry_out(outcome, kcp, names.REDIS_CLUSTER, current, clients=used, scale=at.t)
        if outcome.requeue_after is None:
            break
        time.sleep(0.02)
    status = (kcp.get(names.REDIS_CLUSTER, name, names.KCP_NAMESPACE) or {})["status"]
    assert status["state"] == "Ready" and status["id"] == name
    assert status["discoveryEndpoint"] == f"{name}.redis.cache.windows.net:6380" and status["authString"]
    assert (status["nodeType"], status["shardCount"], status["replicasPerShard"]) == ("2", 1, 2)
    for _ in range(80):  # the cloud's pieces go again (the object has no finalizer: the consumer adds it)
        current = kcp.get(names.REDIS_CLUSTER, name, names.KCP_NAMESPACE)
        outcome, used = provider_turn(KIND, registry.Turn(kube=kcp, obj=current, scope=SCOPE, settings=SETTINGS),
                                      True, {"": client})
        if outcome.remove_finalizer:
            break
        carry_out(outcome, kcp, names.REDIS_CLUSTER, current, clients=used, scale=SETTINGS.t)
        time.sleep(0.02)
    kcp.delete(names.REDIS_CLUSTER, name, names.KCP_NAMESPACE)
    assert client.get_redis(CM, name) is None and client.get_private_endpoint(CM, name) is None
