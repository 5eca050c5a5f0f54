"""The AWS RedisInstance plan (pure): names, families, parameters, the create order, waits, Ready,
modifications, auth, upgrade, deletion; cases from the notes (§7.2) and the original's predicates."""

from __future__ import annotations

from typing import Any

import pytest

from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.aws.redisinstance_plan import (
    Read,
    desired_parameters,
    family,
    mismatched,
    plan_create,
    plan_delete,
    resource_names,
    version_up_to_date,
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

DEFAULTS = {"maxmemory-policy": "volatile-lru", "timeout": "0"}


def obj(**aws: Any) -> dict[str, Any]:
    instance = {"cacheNodeType": "cache.t4g.small", "engineVersion": "7.0", "readReplicas": 0, **aws}
    return aws_obj("r1", instance)


def pg(name: str = "cm-r1", fam: str = "redis7", params: dict[str, str] | None = None) -> dict[str, Any]:
    return parameter_group(name, fam, DEFAULTS if params is None else params, DEFAULTS)


def group(status: str = "available", **kw: Any) -> dict[str, Any]:
    return {"ReplicationGroupId": "cm-r1", "Status": status, "CacheNodeType": "cache.t4g.small",
            "MemberClusters": ["cm-r1-001"], "AuthTokenEnabled": False, "UserGroupIds": [],
            "NodeGroups": [{"PrimaryEndpoint": {"Address": "master.x", "Port": 6379},
                            "ReaderEndpoint": {"Address": "replica.x", "Port": 6379}}], **kw}


def member(version: str = "7.0.7", pgname: str = "cm-r1", **kw: Any) -> dict[str, Any]:
    return aws_member("cm-r1-001", version, pgname, **kw)


def provisioned(**kw: Any) -> Read:
    return aws_provisioned("cm-r1", pg(), group(), member(), kw)


@pytest.mark.parametrize(("version", "expected"), [("7.0", "redis7"), ("7.1", "redis7"), ("6.x", "redis6.x"),
                                                   ("6.2", "redis6.x"), ("5.0.6", "redis5.0"), ("4.0.10", "redis4.0"),
                                                   ("3.2", "redis3.2"), ("2.8", "redis2.8"), ("2.6", "redis2.6"),
                                                   ("8.0", "")])
def test_family(version: str, expected: str) -> None:
    assert family(version) == expected


def test_names_and_parameters() -> None:
    assert resource_names("r1") == {"group": "cm-r1", "subnet_group": "cm-r1", "parameter_group": "cm-r1",
                                    "temp_parameter_group": "cm-r1-temp", "user_group": "cm-r1",
                                    "security_group": "cm-r1", "secret": "cm-r1/authToken"}
    assert desired_parameters(DEFAULTS, {"timeout": "5"}) == {"maxmemory-policy": "volatile-lru", "timeout": "5"}
    assert mismatched(DEFAULTS, {"timeout": "5", "maxmemory-policy": "volatile-lru"}) == {"timeout": "5"}


def test_version_up_to_date() -> None:
    assert version_up_to_date([member("6.2.6")], "6.x")
    assert not version_up_to_date([member("6.2.6")], "7.0")
    assert version_up_to_date([member("7.0.7")], "7.0")
    assert version_up_to_date([{"EngineVersion": "6.2"}], "7.0")  # no parameter group yet
    assert version_up_to_date([], "7.0")


def test_first_turn_creates_the_independent_pieces() -> None:
    plan = plan_create(obj(authEnabled=True), SCOPE, IPRANGE, Read(), "tok", t)
    assert methods(plan) == ["create_subnet_group", "create_parameter_group", "create_auth_token",
                             "create_security_group"]
    subnet = plan.writes[0].kwargs
    assert subnet["subnet_ids"] == ["subnet-a", "subnet-b"] and subnet["name"] == "cm-r1"
    assert subnet["tags"] == {names.TAG_NAME: "kcp-system/r1", names.TAG_REMOTE_NAME: "apps/cache",
                              names.TAG_SCOPE: "k1", names.TAG_SHOOT: "shoot1"}
    assert plan.writes[1].kwargs["family"] == "redis7"
    assert plan.writes[2].kwargs == {"name": "cm-r1/authToken", "token": "tok", "tags": subnet["tags"]}
    assert plan.writes[3].kwargs["vpc_id"] == "vpc-1" and plan.writes[3].kwargs["tags"]["Name"] == "cm-r1"
    assert plan.requeue_after == 1


def test_user_parameters_are_written_over_the_defaults() -> None:
    plan = plan_create(obj(parameters={"maxmemory-policy": "allkeys-lru"}), SCOPE, IPRANGE,
                       provisioned(group=None, members=[]), "tok", t)
    assert methods(plan) == ["modify_parameter_group"]
    assert plan.writes[0].kwargs == {"name": "cm-r1", "parameters": {"maxmemory-policy": "allkeys-lru"}}


def test_ingress_then_replication_group() -> None:
    bare = {"GroupId": "sg-1", "IpPermissions": []}
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=None, members=[], security_group=bare), "tok", t)
    assert methods(plan) == ["authorize_ingress"]
    assert plan.writes[0].kwargs["cidrs"] == ["100.64.0.0/12", "10.180.0.0/16"]
    plan = plan_create(obj(readReplicas=1, authEnabled=True), SCOPE, IPRANGE,
                       provisioned(group=None, members=[], token="tok"), "new", t)
    assert methods(plan) == ["create_replication_group"]
    options = plan.writes[0].kwargs
    assert (options["replicas"], options["failover"], options["auth_token"]) == (1, True, "tok")
    assert options["security_groups"] == ["sg-1"] and options["parameter_group"] == "cm-r1"
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=None, members=[]), "new", t)
    assert plan.writes[0].kwargs["failover"] is False and plan.writes[0].kwargs["auth_token"] is None


def test_refused_create_message() -> None:
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=None, members=[]), "new", t)
    step = refuse(plan, plan.writes[0])
    error = next(c for c in (step.status or {})["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("CloudProviderError", "Failed to create RedisInstance")
    assert step.requeue_after == 60 and (step.status or {})["state"] == "Error"


def test_waits_and_updating_condition() -> None:
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=group("creating")), "t", t)
    assert plan.writes == () and plan.requeue_after == 60
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=group("modifying")), "t", t)
    conditions = (plan.status or {})["conditions"]
    assert [(c["type"], c["message"]) for c in conditions] == [("Updating", "ElastiCache is updating.")]
    failed = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=group("create-failed")), "t", t)
    assert "Failed to provision RedisInstance" in str(failed.status) and failed.requeue_after is None


def test_ready_status() -> None:
    o = obj()
    o["status"]["conditions"] = [condition("Updating", True, "Updating", "x", NOW)]
    plan = plan_create(o, SCOPE, IPRANGE, provisioned(token=None), "t", t)
    status = plan.status or {}
    assert status["primaryEndpoint"] == "master.x:6379" and status["readEndpoint"] == "replica.x:6379"
    assert status["authString"] == "" and status["nodeType"] == "cache.t4g.small" and status["replicaCount"] == 0
    assert status["state"] == "Ready" and status["id"] == "cm-r1"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Ready", "Ready", "Redis instance is ready")]


def test_modifications_in_one_call() -> None:
    plan = plan_create(obj(cacheNodeType="cache.t4g.medium", autoMinorVersionUpgrade=True,
                           preferredMaintenanceWindow="sun:23:00-mon:01:30"), SCOPE, IPRANGE, provisioned(), "t", t)
    assert methods(plan) == ["modify_replication_group"]
    assert plan.writes[0].kwargs == {"name": "cm-r1", "node_type": "cache.t4g.medium", "auto_minor": True,
                                    "maintenance_window": "sun:23:00-mon:01:30"}
    assert refuse(plan, plan.writes[0]).status is not None
    assert "Failed to update RedisInstance" in str(refuse(plan, plan.writes[0]).status)


def test_auth_on() -> None:
    plan = plan_create(obj(authEnabled=True), SCOPE, IPRANGE, provisioned(), "tok", t)
    assert methods(plan) == ["create_auth_token"]
    plan = plan_create(obj(authEnabled=True), SCOPE, IPRANGE, provisioned(token="tok"), "x", t)
    assert methods(plan) == ["modify_replication_group"] and plan.writes[0].kwargs["auth_token"] == "tok"


def test_auth_off_through_the_transient_user_group() -> None:
    on = group(AuthTokenEnabled=True)
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=on, token="tok"), "x", t)
    assert methods(plan) == ["create_user_group"]
    active = {"UserGroupId": "cm-r1", "Status": "active"}
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=on, token="tok", user_group=active), "x", t)
    assert methods(plan) == ["delete_auth_token", "modify_replication_group"]
    assert plan.writes[1].kwargs["user_groups_add"] == ["cm-r1"]
    attached = group(UserGroupIds=["cm-r1"])
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(group=attached, user_group=active), "x", t)
    assert methods(plan) == ["modify_replication_group"] and plan.writes[0].kwargs["user_groups_remove"] == ["cm-r1"]
    plan = plan_create(obj(), SCOPE, IPRANGE, provisioned(user_group=active), "x", t)
    assert methods(plan) == ["delete_user_group"]


def test_upgrade_through_the_temp_group_and_back() -> None:
    old = provisioned(main=pg(fam="redis6.x"), members=[member("6.2.6")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, old, "x", t)
    assert methods(plan) == ["create_parameter_group"] and plan.writes[0].kwargs["name"] == "cm-r1-temp"
    with_temp = provisioned(main=pg(fam="redis6.x"), temp=pg("cm-r1-temp"), members=[member("6.2.6")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, with_temp, "x", t)
    assert methods(plan) == ["modify_replication_group"]
    assert plan.writes[0].kwargs == {"name": "cm-r1", "engine_version": "7.0", "parameter_group": "cm-r1-temp"}
    upgraded = provisioned(main=pg(fam="redis6.x"), temp=pg("cm-r1-temp"),
                           members=[member("7.0.7", "cm-r1-temp")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, upgraded, "x", t)
    assert methods(plan) == ["delete_parameter_group"] and plan.writes[0].kwargs["name"] == "cm-r1"
    recreated = provisioned(main=None, temp=pg("cm-r1-temp"), members=[member("7.0.7", "cm-r1-temp")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, recreated, "x", t)
    assert methods(plan) == ["create_parameter_group"] and plan.writes[0].kwargs == {
        "name": "cm-r1", "family": "redis7", "tags": plan.writes[0].kwargs["tags"]}
    switch = provisioned(temp=pg("cm-r1-temp"), members=[member("7.0.7", "cm-r1-temp")])
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, switch, "x", t)
    assert methods(plan) == ["modify_replication_group"] and plan.writes[0].kwargs == {
        "name": "cm-r1", "parameter_group": "cm-r1"}
    done = provisioned(temp=pg("cm-r1-temp"))
    plan = plan_create(obj(engineVersion="7.0"), SCOPE, IPRANGE, done, "x", t)
    assert methods(plan) == ["delete_parameter_group"] and plan.writes[0].kwargs["name"] == "cm-r1-temp"


def test_delete_order() -> None:
    o = obj()
    o["status"]["conditions"] = [condition("Ready", True, "Ready", "Redis instance is ready", NOW)]
    plan = plan_delete(o, provisioned(token="tok"), t)
    assert methods(plan) == ["delete_replication_group"] and "Ready" not in str(plan.status)
    plan = plan_delete(o, provisioned(group=group("deleting")), t)
    assert plan.writes == () and plan.requeue_after == 60
    rest = provisioned(group=None, members=[], token="tok", temp=pg("cm-r1-temp"),
                       user_group={"UserGroupId": "cm-r1", "Status": "active"})
    plan = plan_delete(o, rest, t)
    assert methods(plan) == ["delete_security_group", "delete_user_group", "delete_auth_token",
                             "delete_parameter_group", "delete_parameter_group", "delete_subnet_group"]
    assert plan.remove_finalizer is None
    assert plan_delete(o, Read(), t).remove_finalizer == names.FINALIZER
