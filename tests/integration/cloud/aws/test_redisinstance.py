"""The AWS RedisInstance flow through boto3 against moto with the ElastiCache stand-in (in process):
create -> Ready with the cloud state read back, node type change, auth on then off, engine upgrade
through the temp parameter group, a refused create (the notes' words), deletion leaving nothing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kube.toolkit.outcome import Outcome
from standins import elasticache as standin
from tasks.cloud import names
from tasks.cloud.registry import Turn
from tests.integration.cloud.aws.redis_common import kcp_turn, moto_vpc
from tests.integration.cloud.steps import provider_outcome

aws = pytest.fixture(name="aws")(moto_vpc)


def ctx_for(aws: dict[str, Any], instance: dict[str, Any]) -> Turn:
    return kcp_turn(aws, "r1", instance)


def merge(status: dict[str, Any], patch: dict[str, Any] | None) -> None:
    for key, value in (patch or {}).items():
        if value is None:
            status.pop(key, None)
        else:
            status[key] = copy.deepcopy(value)


def turn(ctx: Turn, deleting: bool = False) -> Outcome:
    step = provider_outcome("redisinstance", ctx, deleting)
    merge(ctx.obj["status"], step.status)
    return step


def until_ready(ctx: Turn, turns: int = 20, errors: bool = False) -> None:
    for _ in range(turns):
        step = turn(ctx)
        if ctx.obj["status"].get("state") == "Ready" and step.requeue_after is None:
            return
        assert errors or ctx.obj["status"].get("state") != "Error", ctx.obj["status"]
    raise AssertionError(f"not Ready: {ctx.obj['status']}")


def test_create_modify_auth_upgrade_delete(aws: dict[str, Any]) -> None:
    ctx = ctx_for(aws, {"cacheNodeType": "cache.t4g.small", "engineVersion": "6.x", "readReplicas": 1,
                        "authEnabled": True, "parameters": {"maxmemory-policy": "allkeys-lru"}})
    until_ready(ctx)
    status = ctx.obj["status"]
    group = aws["ec"].describe_replication_groups(ReplicationGroupId="cm-r1")["ReplicationGroups"][0]
    assert status["primaryEndpoint"] == f"{group['NodeGroups'][0]['PrimaryEndpoint']['Address']}:6379"
    assert status["readEndpoint"].startswith("replica.") and status["replicaCount"] == 1
    token = aws["sm"].get_secret_value(SecretId="cm-r1/authToken")["SecretString"]
    assert status["authString"] == token and group["AuthTokenEnabled"]
    assert group["AutomaticFailover"] == "enabled"
    assert [(c["type"], c["message"]) for c in status["conditions"]] == [("Ready", "Redis instance is ready")]
    params = {p["ParameterName"]: p["ParameterValue"]
              for p in aws["ec"].describe_cache_parameters(CacheParameterGroupName="cm-r1")["Parameters"]}
    assert params["maxmemory-policy"] == "allkeys-lru"
    sg = aws["ec2"].describe_security_groups(Filters=[{"Name": "tag:Name", "Values": ["cm-r1"]}])["SecurityGroups"][0]
    assert {r["CidrIp"] for p in sg["IpPermissions"] for r in p["IpRanges"]} == {"100.64.0.0/12", "10.180.0.0/16"}

    ctx.obj["spec"]["instance"]["aws"]["cacheNodeType"] = "cache.t4g.medium"
    until_ready(ctx)
    assert ctx.obj["status"]["nodeType"] == "cache.t4g.medium"

    ctx.obj["spec"]["instance"]["aws"]["authEnabled"] = False
    until_ready(ctx)
    group = aws["ec"].describe_replication_groups(ReplicationGroupId="cm-r1")["ReplicationGroups"][0]
    assert not group["AuthTokenEnabled"] and group["UserGroupIds"] == []
    assert ctx.obj["status"]["authString"] == ""
    assert aws["ec"].describe_user_groups()["UserGroups"] == []
    assert aws["sm"].list_secrets()["SecretList"] == []

    ctx.obj["spec"]["instance"]["aws"]["engineVersion"] = "7.0"
    until_ready(ctx, turns=30)
    member = aws["ec"].describe_cache_clusters(CacheClusterId="cm-r1-001")["CacheClusters"][0]
    assert member["EngineVersion"].startswith("7.0")
    groups = aws["ec"].describe_cache_parameter_groups()["CacheParameterGroups"]
    assert [(g["CacheParameterGroupName"], g["CacheParameterGroupFamily"]) for g in groups] == [("cm-r1", "redis7")]
    assert member["CacheParameterGroup"]["CacheParameterGroupName"] == "cm-r1"

    for _ in range(10):
        step = turn(ctx, deleting=True)
        if step.remove_finalizer:
            break
    assert step.remove_finalizer == names.FINALIZER
    assert aws["ec"].describe_replication_groups()["ReplicationGroups"] == []
    assert aws["ec"].describe_cache_parameter_groups()["CacheParameterGroups"] == []
    assert aws["ec"].describe_cache_subnet_groups()["CacheSubnetGroups"] == []
    assert aws["ec2"].describe_security_groups(Filters=[{"Name": "tag:Name", "Values": ["cm-r1"]}])[
        "SecurityGroups"] == []


def test_refused_create_is_the_notes_error_and_throttling_leaves_the_status(aws: dict[str, Any]) -> None:
    ctx = ctx_for(aws, {"cacheNodeType": "cache.t4g.small", "engineVersion": "7.0", "readReplicas": 0})
    standin.inject("CreateCacheSubnetGroup", "Throttling", "slow down", status=400, times=3)  # every attempt
    step = turn(ctx)
    assert step.status is None and step.requeue_after == ctx.settings.t(10)
    assert aws["ec"].describe_cache_subnet_groups()["CacheSubnetGroups"] == []
    standin.inject("CreateReplicationGroup", "InsufficientCacheClusterCapacity", "no capacity")
    for _ in range(5):
        step = turn(ctx)
        if ctx.obj["status"].get("state") == "Error":
            break
    error = next(c for c in ctx.obj["status"]["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("CloudProviderError", "Failed to create RedisInstance")
    assert step.requeue_after == pytest.approx(0.06) and step.event is not None
    until_ready(ctx, errors=True)  # the next try creates it; Ready replaces the Error
    assert [c["type"] for c in ctx.obj["status"]["conditions"]] == ["Ready"]
