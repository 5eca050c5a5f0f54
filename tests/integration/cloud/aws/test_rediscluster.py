"""The AWS RedisCluster provider side (tasks/cloud/aws/rediscluster.py) through boto3 against moto with the
ElastiCache stand-in's cluster mode (in process): create in cluster mode -> Ready with the configuration
endpoint, the token and the provisioned shape; resharding out then the replicas, one change at a time,
each waited for; scaling in; deletion leaving nothing. The KCP kind's wiring is the lead's: the side
runs here as its controller would (:func:`tasks.cloud.kcp.kind.provider_turn` and the executor)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kube.toolkit import execute
from kube.toolkit.outcome import Outcome
from tasks.cloud import names, registry
from tasks.cloud.aws.rediscluster import SIDE
from tasks.cloud.kcp.kind import provider_turn
from tasks.cloud.registry import Turn
from tests.integration.cloud.aws.redis_common import kcp_turn, moto_vpc

KIND = registry.Kind(name="rediscluster", providers={"aws": SIDE})  # not registered: the side alone

aws = pytest.fixture(name="aws")(moto_vpc)


def ctx_for(aws: dict[str, Any], cluster: dict[str, Any]) -> Turn:
    return kcp_turn(aws, "c1", cluster, ip_range=True)


def turn(ctx: Turn, deleting: bool = False) -> tuple[Outcome, list[str]]:
    """One provider turn, its status written into ``ctx.obj``: the Outcome and the calls it made."""
    outcome, used = provider_turn(KIND, ctx, deleting)
    step = execute(outcome, clients=used, scale=ctx.t).outcome
    for key, value in (step.status or {}).items():
        if value is None:
            ctx.obj["status"].pop(key, None)
        else:
            ctx.obj["status"][key] = copy.deepcopy(value)
    return step, [str(getattr(c, "method", "")) for c in outcome.writes]


def until_ready(ctx: Turn, turns: int = 20) -> list[str]:
    """Turns until Ready and nothing left to do; the provider calls made on the way."""
    seen: list[str] = []
    for _ in range(turns):
        step, calls = turn(ctx)
        seen += calls
        if ctx.obj["status"].get("state") == "Ready" and step.requeue_after is None:
            return seen
        assert ctx.obj["status"].get("state") != "Error", ctx.obj["status"]
    raise AssertionError(f"not Ready: {ctx.obj['status']}")


def shape(aws: dict[str, Any]) -> list[int]:
    group = aws["ec"].describe_replication_groups(ReplicationGroupId="cm-c1")["ReplicationGroups"][0]
    return [len(ng["NodeGroupMembers"]) - 1 for ng in group["NodeGroups"]]


def test_cluster_create_reshard_scale_delete(aws: dict[str, Any]) -> None:
    spec = {"cacheNodeType": "cache.t4g.small", "engineVersion": "7.0", "shardCount": 2, "replicasPerShard": 1,
            "authEnabled": True, "parameters": {"maxmemory-policy": "allkeys-lru"}}
    ctx = ctx_for(aws, spec)
    until_ready(ctx)
    status = ctx.obj["status"]
    group = aws["ec"].describe_replication_groups(ReplicationGroupId="cm-c1")["ReplicationGroups"][0]
    assert group["ClusterEnabled"] and group["AutomaticFailover"] == "enabled" and group["AuthTokenEnabled"]
    assert status["discoveryEndpoint"] == f"{group['ConfigurationEndpoint']['Address']}:6379"
    assert status["authString"] == aws["sm"].get_secret_value(SecretId="cm-c1/authToken")["SecretString"]
    assert (status["shardCount"], status["replicasPerShard"], status["nodeType"], status["id"]) == (
        2, 1, "cache.t4g.small", "cm-c1")
    assert [(c["type"], c["message"]) for c in status["conditions"]] == [("Ready", "Redis instance is ready")]
    params = {p["ParameterName"]: p["ParameterValue"]
              for p in aws["ec"].describe_cache_parameters(CacheParameterGroupName="cm-c1")["Parameters"]}
    assert (params["cluster-enabled"], params["maxmemory-policy"]) == ("yes", "allkeys-lru")

    # out: the shards first, then (once available again) the replicas
    spec.update(shardCount=3, replicasPerShard=2)
    calls = until_ready(ctx)
    assert calls == ["modify_shard_configuration", "increase_replica_count"]
    assert shape(aws) == [2, 2, 2] and (ctx.obj["status"]["shardCount"], ctx.obj["status"]["replicasPerShard"]) == (
        3, 2)
    # in
    spec.update(shardCount=1, replicasPerShard=0)
    assert until_ready(ctx) == ["modify_shard_configuration", "decrease_replica_count"]
    assert shape(aws) == [0]

    for _ in range(10):
        step, _ = turn(ctx, deleting=True)
        if step.remove_finalizer:
            break
    assert step.remove_finalizer == names.FINALIZER
    assert aws["ec"].describe_replication_groups()["ReplicationGroups"] == []
    assert aws["ec"].describe_cache_parameter_groups()["CacheParameterGroups"] == []
    assert aws["ec"].describe_cache_subnet_groups()["CacheSubnetGroups"] == []
    assert aws["sm"].list_secrets()["SecretList"] == []
