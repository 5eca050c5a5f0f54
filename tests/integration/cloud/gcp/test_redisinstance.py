"""The GCP RedisInstance flow through google-cloud-redis (REST) against the Memorystore stand-in:
create -> Ready with the instance read back, memory change, auth on then off, version upgrade,
a refused create, a 429, deletion leaving nothing; and the stand-in's conformance to the v1 API
(enum encodings, masks, refusals)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import redis_v1
from google.protobuf import field_mask_pb2

from kube.toolkit.outcome import Outcome
from standins.gcp import GcpStandIn
from tasks.cloud import names, settings
from tasks.cloud.gcp.redisinstance_client import MemorystoreClient
from tasks.cloud.kcp.consumer_plan import Seen
from tests.integration.cloud.gcp.conftest import PROJECT, VPC
from tests.integration.cloud.steps import provider_step

REGION = "europe-west1"
SCOPE = {"spec": {"provider": "gcp", "region": REGION, "shootName": "shoot1",
                  "scope": {"gcp": {"project": PROJECT, "vpcNetwork": VPC}}}}
IPRANGE = {"status": {"id": "cm-4b0c1a2e", "cidr": "10.250.4.0/22"}}
NAME = f"projects/{PROJECT}/locations/{REGION}/instances/cm-r1"


def t(s: float) -> float:
    return s / 1000


def obj(**gcp: Any) -> dict[str, Any]:
    instance = {"tier": "STANDARD_HA", "memorySizeGb": 5, "replicaCount": 1, "redisVersion": "REDIS_7_0",
                "authEnabled": True, **gcp}
    return {"metadata": {"name": "r1", "namespace": "kcp-system"},
            "spec": {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"},
                     "instance": {"gcp": instance}}, "status": {}}


#: Timings scaled as ``t`` (1/1000), the GCP retry wait 1 ms.
SETTINGS = settings.load({"RECONCILERY_CLOUD_TIME_SCALE": "1000", "GCP_RETRY_WAIT_DURATION": "1s"})


def turn(o: dict[str, Any], client: MemorystoreClient, deleting: bool = False) -> Outcome:
    return provider_step("redisinstance", o, SCOPE, SETTINGS, Seen(o, SCOPE, True, IPRANGE), client, deleting)


def until_ready(o: dict[str, Any], client: MemorystoreClient, errors: bool = False) -> None:
    for _ in range(40):
        step = turn(o, client)
        if o["status"].get("state") == "Ready" and step.requeue_after is None:
            return
        assert errors or o["status"].get("state") != "Error", o["status"]
        time.sleep(0.02)
    raise AssertionError(o["status"])


@pytest.fixture
def redis(gcp: GcpStandIn) -> redis_v1.CloudRedisClient:
    return redis_v1.CloudRedisClient(credentials=AnonymousCredentials(), transport="rest",
                                     client_options=ClientOptions(api_endpoint=gcp.url))


def test_create_modify_auth_upgrade_delete(gcp: GcpStandIn, redis: redis_v1.CloudRedisClient) -> None:
    client = MemorystoreClient(endpoint=gcp.url)
    o = obj(maintenancePolicy={"dayOfWeek": {"day": "MONDAY", "startTime": {"hours": 1, "minutes": 30}}},
            redisConfigs={"maxmemory-policy": "allkeys-lru"})
    until_ready(o, client)
    got = redis.get_instance(name=NAME)
    assert (got.connect_mode.name, got.reserved_ip_range, got.authorized_network) == (
        "PRIVATE_SERVICE_ACCESS", "cm-4b0c1a2e", f"projects/{PROJECT}/global/networks/{VPC}")
    assert got.transit_encryption_mode.name == "SERVER_AUTHENTICATION" and got.tier.name == "STANDARD_HA"
    assert got.maintenance_policy.weekly_maintenance_window[0].day == 1  # google.type.DayOfWeek.MONDAY
    status = o["status"]
    assert status["primaryEndpoint"] == f"{got.host}:6379" and status["readEndpoint"] == f"{got.read_endpoint}:6379"
    assert status["authString"] == redis.get_instance_auth_string(name=NAME).auth_string != ""
    assert status["caCert"].startswith("-----BEGIN CERTIFICATE-----") and status["id"] == NAME
    assert [(c["type"], c["message"]) for c in status["conditions"]] == [("Ready", "Redis instance is ready")]

    o["spec"]["instance"]["gcp"]["memorySizeGb"] = 12
    until_ready(o, client)
    assert redis.get_instance(name=NAME).memory_size_gb == 12 and o["status"]["memorySizeGb"] == 12

    o["spec"]["instance"]["gcp"]["authEnabled"] = False
    until_ready(o, client)
    assert not redis.get_instance(name=NAME).auth_enabled and "authString" not in o["status"]
    o["spec"]["instance"]["gcp"]["authEnabled"] = True
    until_ready(o, client)
    assert o["status"]["authString"]

    o["spec"]["instance"]["gcp"]["redisVersion"] = "REDIS_7_2"
    until_ready(o, client)
    assert redis.get_instance(name=NAME).redis_version == "REDIS_7_2"

    for _ in range(40):
        step = turn(o, client, deleting=True)
        if step.remove_finalizer:
            break
        time.sleep(0.02)
    assert step.remove_finalizer == names.FINALIZER
    assert list(redis.list_instances(parent=f"projects/{PROJECT}/locations/{REGION}")) == []


def test_refused_create_and_throttling(gcp: GcpStandIn) -> None:
    client = MemorystoreClient(endpoint=gcp.url)
    o = obj(tier="BASIC", replicaCount=1)  # BASIC takes no replicas: refused
    step = turn(o, client)
    error = next(c for c in o["status"]["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("CloudProviderError", "Failed to create RedisInstance")
    assert step.event is not None
    gcp.state.inject("GET", "/instances/cm-r1$", 429, "Quota exceeded", times=5)
    o = obj()
    step = turn(o, client)
    assert step.status is None and step.requeue_after == 0.001


def test_standin_conformance(gcp: GcpStandIn, redis: redis_v1.CloudRedisClient) -> None:
    parent = f"projects/{PROJECT}/locations/{REGION}"
    with pytest.raises(gexc.NotFound):
        redis.get_instance(name=f"{parent}/instances/none")
    with pytest.raises(gexc.BadRequest):  # no network
        redis.create_instance(parent=parent, instance_id="x",
                              instance=redis_v1.Instance(tier="BASIC", memory_size_gb=1))
    op = redis.create_instance(parent=parent, instance_id="x", instance=redis_v1.Instance(
        tier="BASIC", memory_size_gb=1, authorized_network=f"projects/{PROJECT}/global/networks/{VPC}"))
    assert redis.get_instance(name=f"{parent}/instances/x").state.name == "CREATING"
    with pytest.raises(gexc.Conflict):
        redis.create_instance(parent=parent, instance_id="x", instance=redis_v1.Instance(
            tier="BASIC", memory_size_gb=1, authorized_network=f"projects/{PROJECT}/global/networks/{VPC}"))
    time.sleep(0.1)
    assert redis.get_operation(request={"name": op.operation.name}).done
    got = redis.get_instance(name=f"{parent}/instances/x")
    assert got.state.name == "READY" and got.connect_mode.name == "DIRECT_PEERING" and not got.read_endpoint
    with pytest.raises(gexc.BadRequest):  # not an updatable field
        redis.update_instance(update_mask=field_mask_pb2.FieldMask(paths=["tier"]), instance=got)
    redis.update_instance(update_mask=field_mask_pb2.FieldMask(paths=["memory_size_gb"]),
                          instance=redis_v1.Instance(name=got.name, memory_size_gb=2))
    with pytest.raises(gexc.BadRequest):  # an operation runs
        redis.upgrade_instance(name=got.name, redis_version="REDIS_7_2")
    time.sleep(0.1)
    with pytest.raises(gexc.BadRequest):  # no downgrade
        redis.upgrade_instance(name=got.name, redis_version="REDIS_6_X")
    assert redis.get_instance_auth_string(name=got.name).auth_string == ""
