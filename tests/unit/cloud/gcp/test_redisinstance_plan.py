"""The GCP RedisInstance plan (pure): the instance to create, waits, Updating, modifications with their
mask, the upgrade, Ready, deletion (notes §7.3, the original's gcp/redisinstance)."""

from __future__ import annotations

from typing import Any

from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.gcp.redisinstance_plan import Read, instance_name, plan_create, plan_delete
from tests.unit.cloud.outcomes import answered, refuse

NOW = "2026-01-01T00:00:00Z"
SCOPE = {"spec": {"region": "europe-west1", "shootName": "Shoot1",
                  "scope": {"gcp": {"project": "p1", "vpcNetwork": "shoot--kyma--c1"}}}}
IPRANGE = {"status": {"id": "cm-abc"}}
NAME = "projects/p1/locations/europe-west1/instances/cm-r1"


def t(s: float) -> float:
    return s


def obj(**gcp: Any) -> dict[str, Any]:
    spec = {"tier": "STANDARD_HA", "memorySizeGb": 5, "replicaCount": 1, "redisVersion": "REDIS_7_0",
            "authEnabled": True, **gcp}
    return {"metadata": {"name": "r1", "namespace": "kcp-system"},
            "spec": {"scope": {"name": "k1"}, "instance": {"gcp": spec}}, "status": {}}


def instance(**kw: Any) -> dict[str, Any]:
    return {"name": NAME, "state": "READY", "tier": "STANDARD_HA", "memorySizeGb": 5, "replicaCount": 1,
            "redisVersion": "REDIS_7_0", "authEnabled": True, "host": "10.0.0.3", "port": 6379,
            "readEndpoint": "10.0.0.4", "readEndpointPort": 6379,
            "serverCaCerts": [{"cert": "-----BEGIN CERTIFICATE-----"}], **kw}


def test_names() -> None:
    assert instance_name(SCOPE, "r1") == ("projects/p1/locations/europe-west1", NAME)


def test_create_the_instance() -> None:
    plan = plan_create(obj(maintenancePolicy={"dayOfWeek": {"day": "MONDAY", "startTime": {"hours": 2}}},
                           redisConfigs={"maxmemory-policy": "allkeys-lru"}), SCOPE, IPRANGE, Read(), t)
    [call] = plan.writes
    assert call.method == "create" and call.kwargs["instance_id"] == "cm-r1"
    wanted = call.kwargs["instance"]
    assert (wanted["connect_mode"], wanted["reserved_ip_range"], wanted["transit_encryption_mode"]) == (
        "PRIVATE_SERVICE_ACCESS", "cm-abc", "SERVER_AUTHENTICATION")
    assert wanted["authorized_network"] == "projects/p1/global/networks/shoot--kyma--c1"
    assert (wanted["tier"], wanted["memory_size_gb"], wanted["replica_count"]) == ("STANDARD_HA", 5, 1)
    assert wanted["read_replicas_mode"] == "READ_REPLICAS_ENABLED" and wanted["auth_enabled"] is True
    assert wanted["maintenance_policy"] == {"weekly_maintenance_window": [
        {"day": "MONDAY", "start_time": {"hours": 2, "minutes": 0}}]}
    assert wanted["labels"]["shoot-name"] == "shoot1"
    assert plan.requeue_after == 60
    step = refuse(plan, call)
    assert "Failed to create RedisInstance" in str(step.status) and step.requeue_after == 60
    assert "read_replicas_mode" not in plan_create(obj(tier="BASIC", replicaCount=0), SCOPE, IPRANGE, Read(),
                                                   t).writes[0].kwargs["instance"]


def test_started_operation_is_recorded() -> None:
    plan = plan_create(obj(), SCOPE, IPRANGE, Read(), t)
    step = answered(plan, "projects/p1/locations/europe-west1/operations/op-1")
    assert (step.status or {})["opIdentifier"].endswith("op-1") and step.requeue_after == 60


def test_waits_and_updating() -> None:
    creating = plan_create(obj(), SCOPE, IPRANGE, Read(instance(state="CREATING")), t)
    assert creating.writes == () and creating.requeue_after == 60 and (creating.status or {})["id"] == NAME
    updating = plan_create(obj(), SCOPE, IPRANGE, Read(instance(state="UPDATING")), t)
    assert [c["type"] for c in (updating.status or {})["conditions"]] == ["Updating"]
    o = obj()
    o["status"] = {"conditions": [condition("Updating", True, "Updating", "x", NOW)], "opIdentifier": "op"}
    ready = plan_create(o, SCOPE, IPRANGE, Read(instance(), "secret"), t)
    status = ready.status or {}
    assert [c["type"] for c in status["conditions"]] == ["Ready"] and status["opIdentifier"] is None


def test_ready_status() -> None:
    plan = plan_create(obj(), SCOPE, IPRANGE, Read(instance(), "secret"), t)
    status = plan.status or {}
    assert (status["primaryEndpoint"], status["readEndpoint"], status["authString"]) == (
        "10.0.0.3:6379", "10.0.0.4:6379", "secret")
    assert status["caCert"].startswith("-----BEGIN") and status["memorySizeGb"] == 5 and status["replicaCount"] == 1
    assert status["state"] == "Ready" and status["conditions"][0]["message"] == "Redis instance is ready"
    basic = plan_create(obj(tier="BASIC", replicaCount=0, authEnabled=False), SCOPE, IPRANGE,
                        Read(instance(tier="BASIC", replicaCount=0, authEnabled=False, readEndpoint="",
                                      serverCaCerts=[])), t)
    assert "readEndpoint" not in (basic.status or {}) and "authString" not in (basic.status or {})


def test_modifications_in_one_update_with_their_mask() -> None:
    plan = plan_create(obj(memorySizeGb=12, authEnabled=False, redisConfigs={"a": "b"}), SCOPE, IPRANGE,
                       Read(instance(), "secret"), t)
    [call] = plan.writes
    assert call.method == "update" and call.kwargs["paths"] == ["auth_enabled", "memory_size_gb", "redis_configs"]
    assert call.kwargs["changes"] == {"memory_size_gb": 12, "auth_enabled": False, "redis_configs": {"a": "b"}}
    assert "Failed to update RedisInstance" in str(refuse(plan, call).status)


def test_maintenance_policy_compared_in_wire_shape() -> None:
    policy = {"dayOfWeek": {"day": "MONDAY", "startTime": {"hours": 2, "minutes": 0}}}
    current = instance(maintenancePolicy={"weeklyMaintenanceWindow": [{"day": "MONDAY",
                                                                       "startTime": {"hours": 2}}]})
    assert plan_create(obj(maintenancePolicy=policy), SCOPE, IPRANGE, Read(current, "s"), t).writes == ()
    removed = plan_create(obj(), SCOPE, IPRANGE, Read(current, "s"), t)
    assert removed.writes[0].kwargs["changes"] == {"maintenance_policy": {}}


def test_upgrade_after_the_updates() -> None:
    plan = plan_create(obj(redisVersion="REDIS_7_2"), SCOPE, IPRANGE, Read(instance(), "s"), t)
    [call] = plan.writes
    assert call.method == "upgrade" and call.kwargs == {"name": NAME, "redis_version": "REDIS_7_2"}
    assert "Failed to upgrade RedisInstance" in str(refuse(plan, call).status)


def test_delete() -> None:
    plan = plan_delete(obj(), SCOPE, Read(instance()), t)
    assert [c.method for c in plan.writes] == ["delete"] and plan.remove_finalizer is None
    assert plan_delete(obj(), SCOPE, Read(instance(state="DELETING")), t).writes == ()
    assert plan_delete(obj(), SCOPE, Read(), t).remove_finalizer == names.FINALIZER
