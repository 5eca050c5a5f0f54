"""The AWS RedisCluster plan (pure): cluster-mode parameters, the create order and the cluster-mode
create, waits, Ready with the configuration endpoint and the provisioned shape, modifications and the
upgrade, shard then replica changes one at a time while available, deletion; cases from the original's
``pkg/kcp/provider/aws/rediscluster`` (``state.go``, ``scaleElastiCacheCluster*.go``, ``updateStatus.go``)."""

from __future__ import annotations

from typing import Any

from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.aws.rediscluster_plan import (
    Read,
    desired_parameters,
    downgrade,
    plan_create,
    plan_delete,
    replicas_to_change,
    shards_to_remove,
    surplus_replicas,
)
from tests.unit.cloud.outcomes import refuse
from tests.unit.cloud.redis_common import (
    IPRANGE,
    NOW,
    SCOPE,
    aws_member,
    aws_obj,
    aws_provisioned,
    methods,
    parameter_group,
    t,
)

DEFAULTS = {"maxmemory-policy": "volatile-lru", "timeout": "0", "cluster-enabled": "no"}
CLUSTER_PARAMS = {**DEFAULTS, "cluster-enabled": "yes"}


def obj(**aws: Any) -> dict[str, Any]:
    instance = {"cacheNodeType": "cache.t4g.small", "engineVersion": "7.0", "shardCount": 2, "replicasPerShard": 1,
                **aws}
    return aws_obj("c1", instance, ip_range=True)


def pg(name: str = "cm-c1", fam: str = "redis7", params: dict[str, str] | None = None) -> dict[str, Any]:
    return parameter_group(name, fam, CLUSTER_PARAMS if params is None else params, DEFAULTS)


def node_group(ident: str, members: int) -> dict[str, Any]:
    return {"NodeGroupId": ident, "NodeGroupMembers": [{"CacheClusterId": f"cm-c1-{ident}-{i:03d}"}
                                                       for i in range(1, members + 1)]}


def group(status: str = "available", shape: tuple[int, ...] = (2, 2), **kw: Any) -> dict[str, Any]:
    groups = [node_group(f"{i + 1:04d}", m) for i, m in enumerate(shape)]
    return {"ReplicationGroupId": "cm-c1", "Status": status, "CacheNodeType": "cache.t4g.small",
            "MemberClusters": [m["CacheClusterId"] for ng in groups for m in ng["NodeGroupMembers"]],
            "AuthTokenEnabled": False, "UserGroupIds": [], "ClusterEnabled": True, "NodeGroups": groups,
            "ConfigurationEndpoint": {"Address": "clustercfg.cm-c1.x", "Port": 6379}, **kw}


def member(version: str = "7.0.7", pgname: str = "cm-c1", **kw: Any) -> dict[str, Any]:
    return aws_member("cm-c1-0001-001", version, pgname, **kw)


def provisioned(**kw: Any) -> Read:
    return aws_provisioned("cm-c1", pg(), group(), member(), kw)


def error(step: Any) -> tuple[str, str]:
    found = next(c for c in (step.status or {})["conditions"] if c["type"] == "Error")
    return found["reason"], found["message"]


def test_cluster_parameters_and_shape_helpers() -> None:
    assert desired_parameters(DEFAULTS, {"timeout": "5", "cluster-enabled": "no"}) == {
        "maxmemory-policy": "volatile-lru", "timeout": "5", "cluster-enabled": "yes"}
    groups = [node_group("0001", 2), node_group("0002", 2), node_group("0003", 2)]
    assert shards_to_remove(groups, 1) == ["0002", "0003"]
    assert shards_to_remove(groups, 3) == shards_to_remove(groups, 5) == []
    assert replicas_to_change(groups, 1) is None
    assert replicas_to_change(groups, 0) == "decrease" and replicas_to_change(groups, 3) == "increase"
    assert replicas_to_change([node_group("0001", 3), node_group("0002", 1)], 1) == "decrease"
    assert replicas_to_change([], 0) == "increase"  # no node groups: not up to date, as the original


def test_first_turns_create_the_pieces_then_cluster_enabled() -> None:
    plan = plan_create(obj(authEnabled=True), SCOPE, IPRANGE, Read(), "tok", t)
    assert methods(plan) == ["create_subnet_group", "create_parameter_group", "modify_parameter_group",
                             "create_auth_token", "create_security_group"]
    assert plan.writes[0].kwargs["subnet_ids"] == ["subnet-a", "subnet-b"]
    assert plan.writes[2].kwargs == {"name": "cm-c1", "parameters": {"cluster-enabled": "yes"}}
    assert plan.writes[0].kwargs["tags"] == {names.TAG_NAME: "kcp-system/c1", names.TAG_REMOTE_NAME: "apps/cache",
                                             names.TAG_SCOPE: "k1", names.TAG_SHOOT: "shoot1"}
    fresh = provisioned(main=pg(params=DEFAULTS), group=None, members=[])  # a new group: cluster-enabled no
    plan = plan_create(obj(parameters={"timeout": "30"}), SCOPE, IPRANGE, fresh, "tok", t)
    assert methods(plan) == ["modify_parameter_group"]
    assert plan.writes[0].kwargs == {"name": "cm-c1", "parameters": {"timeout": "30", "cluster-enabled": "yes"}}
    assert error(refuse(plan, plan.writes[0])) == ("CloudProviderError", "Failed to modify cache parameters")


def test_cluster_mode_create() -> None:
    plan = plan_create(obj(shardCount=3, replicasPerShard=2, authEnabled=True,
                           preferredMaintenanceWindow="sun:23:00-mon:01:30"), SCOPE, IPRANGE,
                       provisioned(group=None, members=[], token="tok"), "new", t)
    assert methods(plan) == ["create_cluster_group"]
    options = plan.writes[0].kwargs
    assert (options["shards"], options["replicas"], options["auth_token"]) == (3, 2, "tok")
    assert (options["parameter_group"], options["subnet_group"], options["security_groups"]) == (
        "cm-c1", "cm-c1", ["sg-1"])
    assert options["maintenance_window"] == "sun:23:00-mon:01:30" and options["engine_version"] == "7.0"
    step = refuse(plan, plan.writes[0])
    assert error(step) == ("CloudProviderError", "Failed to create RedisCluster") and step.requeue_after == 60
    # auth wanted but the token not stored yet: wait for it
    plan = plan_create(obj(authEnabled=True), SCOPE, IPRANGE, provisioned(group=None, members=[]), "tok", t)
    assert methods(plan) == ["create_auth_token"]


def test_waits_updating_and_terminal_failure() -> None:
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=group("creating")), "t", t)
    assert plan.writes == () and plan.requeue_after == 60 and (plan.status or {})["id"] == "cm-c1"
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(members=[]), "t", t)  # available, no members yet
    assert plan.writes == () and plan.requeue_after == 60
    plan = plan_create(obj(shardCount=3), SCOPE, IPRANGE, provisioned(group=group("modifying")), "t", t)
    assert plan.writes == () and [(c["type"], c["message"]) for c in (plan.status or {})["conditions"]] == [
        ("Updating", "ElastiCache is updating.")]
    failed = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=group("create-failed")), "t", t)
    assert error(failed) == ("CloudProviderError", "Failed to provision RedisCluster")
    assert failed.requeue_after is None and (failed.status or {})["state"] == "Error"


def test_ready_status() -> None:
    o = obj(authEnabled=True)
    o["status"]["conditions"] = [condition("Updating", True, "Updating", "x", NOW)]
    plan = plan_create(o, SCOPE, IPRANGE, provisioned(token="tok", group=group(AuthTokenEnabled=True)), "t", t)
    status = plan.status or {}
    assert plan.writes == () and plan.requeue_after is None
    assert (status["discoveryEndpoint"], status["authString"], status["nodeType"]) == (
        "clustercfg.cm-c1.x:6379", "tok", "cache.t4g.small")
    assert (status["shardCount"], status["replicasPerShard"], status["state"], status["id"]) == (2, 1, "Ready", "cm-c1")
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Ready", "Ready", "Redis instance is ready")]


def test_shards_then_replicas_one_at_a_time() -> None:
    # out: 2 -> 4 shards (the replicas wait for a later turn)
    plan = plan_create(obj(shardCount=4, replicasPerShard=3), SCOPE, IPRANGE, provisioned(), "t", t)
    assert methods(plan) == ["modify_shard_configuration"] and plan.requeue_after == 60
    assert plan.writes[0].kwargs == {"name": "cm-c1", "shards": 4, "remove": []}
    step = refuse(plan, plan.writes[0])
    assert error(step) == ("CloudProviderError", "Failed to scale RedisCluster shards") and step.requeue_after == 300
    # in: 3 -> 1 shard removes the last node groups
    three = provisioned(group=group(shape=(2, 2, 2)))
    plan = plan_create(obj(shardCount=1), SCOPE, IPRANGE, three, "t", t)
    assert plan.writes[0].kwargs == {"name": "cm-c1", "shards": 1, "remove": ["0002", "0003"]}
    # shards right: the replicas
    plan = plan_create(obj(replicasPerShard=3), SCOPE, IPRANGE, provisioned(), "t", t)
    assert methods(plan) == ["increase_replica_count"] and plan.writes[0].kwargs == {"name": "cm-c1", "replicas": 3}
    plan = plan_create(obj(replicasPerShard=0), SCOPE, IPRANGE, provisioned(), "t", t)
    assert methods(plan) == ["decrease_replica_count"] and plan.writes[0].kwargs == {"name": "cm-c1", "replicas": 0}
    assert error(refuse(plan, plan.writes[0])) == ("CloudProviderError", "Failed to scale RedisCluster replicas")
    # never while the group is not available
    plan = plan_create(obj(shardCount=4), SCOPE, IPRANGE, provisioned(group=group("modifying")), "t", t)
    assert plan.writes == ()


def test_modifications_come_before_scaling() -> None:
    plan = plan_create(obj(cacheNodeType="cache.t4g.medium", autoMinorVersionUpgrade=True, shardCount=3,
                           preferredMaintenanceWindow="sun:23:00-mon:01:30"), SCOPE, IPRANGE, provisioned(), "t", t)
    assert methods(plan) == ["modify_replication_group"]
    assert plan.writes[0].kwargs == {"name": "cm-c1", "node_type": "cache.t4g.medium", "auto_minor": True,
                                    "maintenance_window": "sun:23:00-mon:01:30"}
    assert error(refuse(plan, plan.writes[0])) == ("CloudProviderError", "Failed to update RedisCluster")


def test_auth_on_and_off() -> None:
    plan = plan_create(obj(authEnabled=True), SCOPE, IPRANGE, provisioned(token="tok"), "x", t)
    assert methods(plan) == ["modify_replication_group"] and plan.writes[0].kwargs["auth_token"] == "tok"
    on = group(AuthTokenEnabled=True)
    assert methods(plan_create(obj(), SCOPE, IPRANGE, provisioned(group=on, token="tok"), "x", t)) == [
        "create_user_group"]
    active = {"UserGroupId": "cm-c1", "Status": "active"}
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=on, token="tok", user_group=active), "x", t)
    assert methods(plan) == ["delete_auth_token", "modify_replication_group"]
    assert plan.writes[1].kwargs["user_groups_add"] == ["cm-c1"]
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(user_group=active), "x", t)
    assert methods(plan) == ["delete_user_group"]


def test_upgrade_only_up_through_the_temp_group() -> None:
    old = provisioned(main=pg(fam="redis6.x"), members=[member("6.2.6")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, old, "x", t)
    assert methods(plan) == ["create_parameter_group"] and plan.writes[0].kwargs["name"] == "cm-c1-temp"
    fresh_temp = provisioned(main=pg(fam="redis6.x"), temp=pg("cm-c1-temp", params=DEFAULTS), members=[member("6.2.6")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, fresh_temp, "x", t)
    assert methods(plan) == ["modify_parameter_group"] and plan.writes[0].kwargs == {
        "name": "cm-c1-temp", "parameters": {"cluster-enabled": "yes"}}
    with_temp = provisioned(main=pg(fam="redis6.x"), temp=pg("cm-c1-temp"), members=[member("6.2.6")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, with_temp, "x", t)
    assert methods(plan) == ["modify_replication_group"]
    assert plan.writes[0].kwargs == {"name": "cm-c1", "engine_version": "7.0", "parameter_group": "cm-c1-temp"}
    switch = provisioned(temp=pg("cm-c1-temp"), members=[member("7.0.7", "cm-c1-temp")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, switch, "x", t)
    assert plan.writes[0].kwargs == {"name": "cm-c1", "parameter_group": "cm-c1"}
    plan = plan_create(obj(engineVersion="7.1"), SCOPE, IPRANGE, provisioned(), "x", t)  # same family: in place
    assert plan.writes[0].kwargs == {"name": "cm-c1", "engine_version": "7.1", "parameter_group": "cm-c1"}


def test_delete_in_the_original_order() -> None:
    o = obj()
    o["status"]["conditions"] = [condition("Ready", True, "Ready", "Redis instance is ready", NOW)]
    plan = plan_delete(o, provisioned(token="tok"), t)
    assert methods(plan) == ["delete_replication_group"] and "Ready" not in str(plan.status)
    assert error(refuse(plan, plan.writes[0])) == ("CloudProviderError", "Failed to delete RedisCluster")
    plan = plan_delete(o, provisioned(group=group("deleting")), t)
    assert plan.writes == () and plan.requeue_after == 60
    rest = provisioned(group=None, members=[], token="tok", temp=pg("cm-c1-temp"),
                       user_group={"UserGroupId": "cm-c1", "Status": "active"})
    plan = plan_delete(o, rest, t)
    assert methods(plan) == ["delete_security_group", "delete_user_group", "delete_auth_token",
                             "delete_parameter_group", "delete_parameter_group", "delete_subnet_group"]
    assert plan.remove_finalizer is None
    assert plan_delete(o, Read(), t).remove_finalizer == names.FINALIZER


def test_a_downgrade_is_an_error_without_calls() -> None:
    assert downgrade([member("7.1.0")], "7.0") and downgrade([member("7.0.7")], "6.x")
    assert not downgrade([member("6.2.6")], "6.x") and not downgrade([member("7.0.7")], "7.1")
    assert not downgrade([member("7.0.7")], "7.0") and not downgrade([{"CacheClusterId": "x"}], "6.x")
    plan = plan_create(obj(engineVersion="6.x"), SCOPE, IPRANGE, provisioned(), "x", t)
    assert plan.writes == () and plan.requeue_after is None
    assert error(plan) == ("Error", "engineVersion cannot be downgraded to 6.x.")
    assert (plan.status or {})["state"] == "Error"


def test_shards_on_both_sides_of_the_replica_count() -> None:
    mixed = group(shape=(3, 1))  # 2 replicas and none; 1 wanted
    assert surplus_replicas(mixed["NodeGroups"], 1) == ["cm-c1-0001-003"]
    plan = plan_create(obj(replicasPerShard=1), SCOPE, IPRANGE, provisioned(group=mixed), "x", t)
    assert methods(plan) == ["decrease_replica_count"]
    assert plan.writes[0].kwargs == {"name": "cm-c1", "remove": ["cm-c1-0001-003"]}
    plan = plan_create(obj(replicasPerShard=1), SCOPE, IPRANGE, provisioned(group=group(shape=(2, 1))), "x", t)
    assert methods(plan) == ["increase_replica_count"] and plan.writes[0].kwargs == {"name": "cm-c1", "replicas": 1}
