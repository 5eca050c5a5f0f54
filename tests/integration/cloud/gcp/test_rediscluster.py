"""The GCP GcpRedisCluster flow (:data:`tasks.cloud.gcp.rediscluster.SIDE`) through google-cloud-redis-cluster
(REST) against the Memorystore for Redis Cluster stand-in: create -> Ready with the discovery endpoint and
the CA, a shard change, a refused create, deletion leaving nothing; the provider requests per create and
per steady turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kube.toolkit import execute
from kube.toolkit.outcome import Outcome
from standins.gcp import GcpStandIn
from standins.memorystore_cluster import CA_CERT
from tasks.cloud import names, registry, settings
from tasks.cloud.gcp.rediscluster import SIDE
from tasks.cloud.gcp.rediscluster_client import RedisClusterClient
from tasks.cloud.kcp.gcprediscluster import KCP
from tasks.cloud.kcp.gcprediscluster_plan import Seen
from tasks.cloud.kcp.kind import provider_turn
from tests.fixtures.processes import served
from tests.integration.cloud.gcp.conftest import PROJECT, VPC
from tests.integration.cloud.gcp.test_memorystore_cluster_conformance import psc_policy
from tests.integration.cloud.steps import apply_step

REGION = "europe-west1"
SCOPE = {"spec": {"provider": "gcp", "region": REGION, "shootName": "shoot1",
                  "scope": {"gcp": {"project": PROJECT, "vpcNetwork": VPC}}}}
NAME = f"projects/{PROJECT}/locations/{REGION}/clusters/cm-c1"
#: Timings scaled 1/1000, the GCP retry wait 1 ms.
SETTINGS = settings.load({"RECONCILERY_CLOUD_TIME_SCALE": "1000", "GCP_RETRY_WAIT_DURATION": "1s"})
KIND = registry.Kind(name="gcprediscluster", kcp=KCP, providers={"gcp": SIDE})  # not registered: the SKR's own


@pytest.fixture(scope="module")
def standin() -> Iterator[GcpStandIn]:
    standin = GcpStandIn(op_delay=0.0, projects=(PROJECT,))
    psc_policy(standin, PROJECT, REGION, VPC, "10.252.0.0/24")  # the GcpSubnet's policy lets the cluster in
    yield from served(standin.start())


@pytest.fixture(scope="module")
def client(standin: GcpStandIn) -> RedisClusterClient:
    return RedisClusterClient(endpoint=standin.url)


def obj(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c1", "namespace": "kcp-system", "finalizers": [names.FINALIZER]},
            "spec": {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"},
                     "subnet": {"name": "s1"}, "nodeType": "REDIS_STANDARD_SMALL", "shardCount": 3,
                     "replicasPerShard": 1, "redisConfigs": {"maxmemory-policy": "allkeys-lru"}, **spec},
            "status": {}}


def turn(o: dict[str, Any], client: RedisClusterClient, deleting: bool = False) -> Outcome:
    at = registry.Turn(kube=None, obj=o, scope=SCOPE, settings=SETTINGS, seen=Seen(o, SCOPE))  # type: ignore[arg-type]
    outcome, used = provider_turn(KIND, at, deleting, {"": client})
    step = execute(outcome, clients=used, scale=at.t).outcome
    apply_step(o, step)
    return step


def requests(standin: GcpStandIn) -> int:
    return sum(1 for _, path in standin.state.request_log if "/clusters" in path)


def test_create_ready_update_delete(standin: GcpStandIn, client: RedisClusterClient) -> None:
    o = obj()
    before = requests(standin)
    first = turn(o, client)
    assert first.requeue_after is not None and requests(standin) - before == 2  # get, create
    for _ in range(20):
        step = turn(o, client)
        if o["status"].get("state") == names.STATE_READY and step.requeue_after is None:
            break
        time.sleep(0.01)
    status = o["status"]
    assert status["state"] == names.STATE_READY and status["id"] == NAME, status
    assert status["discoveryEndpoint"].endswith(":6379") and status["caCert"] == CA_CERT
    assert (status["nodeType"], status["shardCount"], status["replicasPerShard"]) == ("REDIS_STANDARD_SMALL", 3, 1)
    before = requests(standin)
    steady = turn(o, client)
    assert not steady.status and not steady.writes and requests(standin) - before == 2  # get, CA

    o["spec"]["shardCount"] = 4
    for _ in range(20):
        step = turn(o, client)
        if o["status"].get("state") == names.STATE_READY and step.requeue_after is None:
            break
        time.sleep(0.01)
    assert o["status"]["shardCount"] == 4 and client.get(NAME)["shardCount"] == 4  # type: ignore[index]

    o["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    for _ in range(20):
        step = turn(o, client, deleting=True)
        if step.remove_finalizer:
            break
        time.sleep(0.01)
    assert step.remove_finalizer == names.FINALIZER and client.get(NAME) is None


def test_refused_create(client: RedisClusterClient) -> None:
    o = obj(shardCount=0)  # Google refuses it (the CRD would too)
    o["metadata"]["name"] = "c2"
    turn(o, client)
    assert o["status"]["state"] == names.STATE_ERROR
    assert o["status"]["conditions"][-1]["message"] == "Failed to create GcpRedisCluster"
