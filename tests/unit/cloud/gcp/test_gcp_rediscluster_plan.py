"""The KCP GcpRedisCluster plans (pure): the provider-independent part on the GcpSubnet
(:mod:`tasks.cloud.kcp.gcprediscluster_plan`) and the GCP provider's (:mod:`tasks.cloud.gcp.rediscluster_plan`):
the cluster to create, waits, Updating, one-field updates in the original's order, Ready with the
discovery endpoint and CA, deletion, refusals (the original's ``pkg/kcp/provider/gcp/rediscluster``)."""

from __future__ import annotations

from typing import Any

from kube.refusal import Failure
from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.gcp.rediscluster_plan import (
    READY_MESSAGE,
    Read,
    cluster_name,
    node_type,
    plan_create,
    plan_delete,
    read_failed,
)
from tasks.cloud.kcp import gcprediscluster_plan as kcp
from tests.unit.cloud.outcomes import refuse

NOW = "2026-01-01T00:00:00Z"
SCOPE = {"spec": {"provider": "gcp", "region": "europe-west1", "shootName": "Shoot1",
                  "scope": {"gcp": {"project": "p1", "vpcNetwork": "shoot--kyma--c1"}}}}
NAME = "projects/p1/locations/europe-west1/clusters/cm-c1"
CA = "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"


def t(s: float) -> float:
    return s


def obj(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c1", "namespace": "kcp-system"},
            "spec": {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"},
                     "subnet": {"name": "s1"}, "nodeType": "REDIS_STANDARD_SMALL", "shardCount": 3,
                     "replicasPerShard": 1, "redisConfigs": {"maxmemory-policy": "allkeys-lru"}, **spec},
            "status": {}}


def cluster(**kw: Any) -> dict[str, Any]:
    return {"name": NAME, "state": "ACTIVE", "nodeType": "REDIS_STANDARD_SMALL", "shardCount": 3, "replicaCount": 1,
            "redisConfigs": {"maxmemory-policy": "allkeys-lru"},
            "transitEncryptionMode": "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION",
            "discoveryEndpoints": [{"address": "10.0.1.2", "port": 6379}], **kw}


def ready(o: dict[str, Any]) -> dict[str, Any]:
    o["status"] = {"id": NAME, "state": "Ready", "discoveryEndpoint": "10.0.1.2:6379", "caCert": CA,
                   "nodeType": "REDIS_STANDARD_SMALL", "shardCount": 3, "replicasPerShard": 1,
                   "conditions": [condition(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, NOW)]}
    return o


def test_names_and_tiers() -> None:
    assert cluster_name(SCOPE, "c1") == ("projects/p1/locations/europe-west1", "cm-c1", NAME)
    assert [node_type(x) for x in ("C1", "C3", "C4", "C6", "C2")] == [
        "REDIS_SHARED_CORE_NANO", "REDIS_STANDARD_SMALL", "REDIS_HIGHMEM_MEDIUM", "REDIS_HIGHMEM_XLARGE", None]


def test_create_as_the_original() -> None:
    plan = plan_create(obj(), SCOPE, Read(), t, NOW)
    [call] = plan.writes
    assert call.method == "create" and call.kwargs["parent"] == "projects/p1/locations/europe-west1"
    assert call.kwargs["cluster_id"] == "cm-c1"
    wanted = call.kwargs["cluster"]
    assert wanted["psc_configs"] == [{"network": "projects/p1/global/networks/shoot--kyma--c1"}]
    assert (wanted["node_type"], wanted["shard_count"], wanted["replica_count"]) == ("REDIS_STANDARD_SMALL", 3, 1)
    assert wanted["redis_configs"] == {"maxmemory-policy": "allkeys-lru"}
    assert (wanted["authorization_mode"], wanted["transit_encryption_mode"]) == (
        "AUTH_MODE_DISABLED", "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION")
    assert wanted["persistence_config"] == {"mode": "DISABLED"} and wanted["zone_distribution_config"] == {
        "mode": "MULTI_ZONE"} and wanted["deletion_protection_enabled"] is False
    assert plan.requeue_after == 1
    step = refuse(plan, call, "quota")
    assert step is not None and step.status["state"] == names.STATE_ERROR and step.requeue_after == 60
    assert step.status["conditions"][0]["message"] == "Failed to create GcpRedisCluster"
    plan = plan_create(obj(), SCOPE, Read(), t, NOW)  # a fresh plan: a refusal builds on its builder
    transient = refuse(plan, plan.writes[0], kind="retry", status=503)
    assert transient is not None and transient.requeue_after == 5 and not transient.status


def test_waits_with_updating_condition() -> None:
    o = obj()
    step = plan_create(o, SCOPE, Read(cluster(state="CREATING")), t, NOW)
    assert step.status == {"id": NAME} and step.requeue_after == 60 and not step.writes
    o["status"] = {"id": NAME}
    step = plan_create(o, SCOPE, Read(cluster(state="UPDATING")), t, NOW)
    assert [c["type"] for c in step.status["conditions"]] == ["Updating"]
    assert step.status["conditions"][0]["message"] == "ElastiCache is updating." and step.requeue_after == 60
    o["status"]["conditions"] = step.status["conditions"]
    step = plan_create(o, SCOPE, Read(cluster(), CA), t, NOW)
    assert [c["type"] for c in step.status["conditions"]] == [names.COND_READY]


def test_ready_then_steady() -> None:
    o = obj()
    step = plan_create(o, SCOPE, Read(cluster(), CA), t, NOW)
    assert not step.writes and step.requeue_after is None
    status = step.status
    assert (status["id"], status["discoveryEndpoint"], status["caCert"], status["state"]) == (
        NAME, "10.0.1.2:6379", CA, names.STATE_READY)
    assert (status["nodeType"], status["shardCount"], status["replicasPerShard"]) == ("REDIS_STANDARD_SMALL", 3, 1)
    assert status["conditions"][0]["message"] == READY_MESSAGE
    steady = plan_create(ready(obj()), SCOPE, Read(cluster(), CA), t, NOW)
    assert not steady.status and not steady.writes and steady.requeue_after is None


def test_one_field_per_update_in_the_originals_order() -> None:
    o = ready(obj(nodeType="REDIS_HIGHMEM_MEDIUM", shardCount=5, replicasPerShard=2, redisConfigs={}))
    seen = cluster()
    expected = [("node_type", "REDIS_HIGHMEM_MEDIUM", "nodeType"), ("shard_count", 5, "shardCount"),
                ("replica_count", 2, "replicaCount"), ("redis_configs", {}, "redisConfigs")]
    for path, value, field in expected:
        step = plan_create(o, SCOPE, Read(seen, CA), t, NOW)
        [call] = step.writes
        assert call.method == "update" and call.kwargs == {"name": NAME, "changes": {path: value}, "paths": [path]}
        assert step.requeue_after == 30 and not step.status.get("conditions")  # Ready removed
        failed = refuse(step, call, "bad")
        assert failed is not None and failed.status["conditions"][-1]["message"] == "Failed to update GcpRedisCluster"
        seen = {**seen, field: value}
    assert not plan_create(o, SCOPE, Read(seen, CA), t, NOW).writes
    # a field the cluster does not report is taken as wanted (ptr.Deref)
    assert not plan_create(ready(obj()), SCOPE, Read({k: v for k, v in cluster().items() if k != "replicaCount"}, CA),
                           t, NOW).writes


def test_delete() -> None:
    o = ready(obj())
    o["metadata"]["deletionTimestamp"] = NOW
    o["metadata"]["finalizers"] = [names.FINALIZER]
    step = plan_delete(o, SCOPE, Read(cluster()), t, NOW)
    assert step.status["state"] == names.STATE_DELETING and not step.status["conditions"] and not step.writes
    o["status"].update(state=names.STATE_DELETING, conditions=[])
    step = plan_delete(o, SCOPE, Read(cluster()), t, NOW)
    [call] = step.writes
    assert (call.method, call.kwargs, step.requeue_after) == ("delete", {"name": NAME}, 10)
    failed = refuse(step, call, "nope")
    assert failed is not None and failed.status["conditions"][-1]["message"] == "Failed to delete GcpRedisCluster"
    assert plan_delete(o, SCOPE, Read(cluster(state="DELETING")), t, NOW).requeue_after == 60
    gone = plan_delete(o, SCOPE, Read(), t, NOW)
    assert gone.remove_finalizer == names.FINALIZER and not gone.writes


def test_read_failed() -> None:
    refused = read_failed(obj(), Failure("refused", 403, "", "denied", "denied", None), t, now=NOW)
    assert refused.status["conditions"][0]["message"] == "Failed to load GcpRedisCluster"
    assert refused.requeue_after == 60
    transient = read_failed(obj(), Failure("retry", 503, "", "busy", "busy", None), t, now=NOW)
    assert not transient.status and transient.requeue_after == 5


# ---- the KCP part ----------------------------------------------------------------------------------

def subnet(ready: bool = True, scope: str = "k1") -> dict[str, Any]:
    return {"metadata": {"name": "s1"}, "spec": {"scope": {"name": scope}},
            "status": {"conditions": [condition(names.COND_READY, True, names.REASON_READY, "ok", NOW)] if ready
                       else []}}


def test_kcp_plan() -> None:
    o = obj()
    missing = kcp.plan(kcp.Seen(o, None), t, now=NOW)
    assert missing.status["state"] == names.STATE_ERROR and missing.requeue_after == 60
    no_subnet = kcp.plan(kcp.Seen(o, SCOPE, True, None), t, now=NOW)
    assert no_subnet.status["conditions"][0]["reason"] == names.REASON_NOT_FOUND
    assert no_subnet.status["conditions"][0]["message"] == "Referred GcpSubnet kcp-system/s1 does not exist"
    assert no_subnet.requeue_after == 60 and no_subnet.handoff is None
    waiting = kcp.plan(kcp.Seen(o, SCOPE, True, subnet(ready=False)), t, wait_ready=5, now=NOW)
    assert waiting.requeue_after == 5 and waiting.handoff is None and not waiting.status
    go = kcp.plan(kcp.Seen(o, SCOPE, True, subnet()), t, now=NOW)
    assert go.handoff == "reconcile" and go.add_finalizer == names.FINALIZER
    unknown = kcp.plan(kcp.Seen(o, SCOPE, False, subnet()), t, now=NOW)
    assert unknown.status["conditions"][0]["reason"] == names.REASON_UNKNOWN
    o["metadata"].update(deletionTimestamp=NOW, finalizers=[names.FINALIZER])
    assert kcp.plan(kcp.Seen(o, SCOPE, True, None), t, now=NOW).handoff == "delete"
    assert kcp.plan(kcp.Seen(o, SCOPE, False, None), t, now=NOW).remove_finalizer == names.FINALIZER


def test_kcp_subnet_of_another_scope_is_none() -> None:
    assert kcp.in_scope(obj(), subnet(scope="other")) is None
    assert kcp.in_scope(obj(), subnet()) is not None
    assert kcp.subnet_name(obj()) == "s1"


def test_a_deleted_cluster_wakes_its_subnet() -> None:
    from tasks.cloud import registry
    from tasks.cloud.kcp.gcprediscluster import KCP

    assert KCP.wakes is not None
    assert list(KCP.wakes("DELETED", obj())) == [(registry.get("gcpsubnet").controller, "s1")]
    assert list(KCP.wakes("MODIFIED", obj())) == []
