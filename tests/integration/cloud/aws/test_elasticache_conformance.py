"""The ElastiCache stand-in (standins/elasticache.py) against the documented API, through boto3 and the
package's moto server: every error answers the code *and* HTTP status of botocore's ElastiCache model
(the API reference's fault shapes); not-found for subnet groups, parameter groups, replication groups,
user groups and cache clusters; already-exists; a subnet group, parameter group or user group in use
refused; a replication group ``available`` at once, ``modifying`` once after a modify then
``available``, ``deleting`` once after a delete then gone; its primary and reader endpoints and member
clusters; engine defaults per family and a parameter group's parameters over them; cluster mode (shards,
the configuration endpoint, online resharding, replica changes) where moto has none.

Its own region keeps it apart from the cloud stack's objects on the shared server."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from tests.integration.cloud.aws.botomodel import faults
from tests.integration.cloud.aws.botomodel import refused as _refused

pytestmark = pytest.mark.integration

REGION = "ap-southeast-2"


MODEL = faults("elasticache")


def refused(shape: str, call: Callable[[], Any]) -> str:
    """Run ``call``; it must fail with the model's code and status of the fault ``shape``."""
    return _refused(MODEL, shape, call)


@pytest.fixture
def aws(moto_endpoint: str) -> dict[str, Any]:
    kw: dict[str, Any] = {"endpoint_url": moto_endpoint, "region_name": REGION, "aws_access_key_id": "testing",
                          "aws_secret_access_key": "testing"}
    # the stand-in does not look subnets up in EC2 (moto's EC2 backend takes seconds to start)
    return {"ec": boto3.client("elasticache", **kw), "subnet": "subnet-0a1b2c3d", "id": uuid.uuid4().hex[:8]}


def test_not_found_and_already_exists(aws: dict[str, Any]) -> None:
    ec, n = aws["ec"], f"missing-{aws['id']}"
    refused("CacheSubnetGroupNotFoundFault", lambda: ec.describe_cache_subnet_groups(CacheSubnetGroupName=n))
    refused("CacheSubnetGroupNotFoundFault", lambda: ec.delete_cache_subnet_group(CacheSubnetGroupName=n))
    refused("CacheParameterGroupNotFoundFault", lambda: ec.describe_cache_parameter_groups(CacheParameterGroupName=n))
    refused("CacheParameterGroupNotFoundFault", lambda: ec.describe_cache_parameters(CacheParameterGroupName=n))
    refused("CacheParameterGroupNotFoundFault", lambda: ec.delete_cache_parameter_group(CacheParameterGroupName=n))
    refused("CacheParameterGroupNotFoundFault", lambda: ec.modify_cache_parameter_group(
        CacheParameterGroupName=n, ParameterNameValues=[{"ParameterName": "timeout", "ParameterValue": "5"}]))
    refused("ReplicationGroupNotFoundFault", lambda: ec.describe_replication_groups(ReplicationGroupId=n))
    refused("ReplicationGroupNotFoundFault", lambda: ec.modify_replication_group(ReplicationGroupId=n,
                                                                                 CacheNodeType="cache.t4g.small"))
    refused("ReplicationGroupNotFoundFault", lambda: ec.delete_replication_group(ReplicationGroupId=n))
    refused("UserGroupNotFoundFault", lambda: ec.describe_user_groups(UserGroupId=n))
    refused("UserGroupNotFoundFault", lambda: ec.delete_user_group(UserGroupId=n))
    refused("CacheClusterNotFoundFault", lambda: ec.describe_cache_clusters(CacheClusterId=n))

    sg, pg, ug = f"sg-{aws['id']}", f"pg-{aws['id']}", f"ug-{aws['id']}"
    ec.create_cache_subnet_group(CacheSubnetGroupName=sg, CacheSubnetGroupDescription="d", SubnetIds=[aws["subnet"]])
    refused("CacheSubnetGroupAlreadyExistsFault", lambda: ec.create_cache_subnet_group(
        CacheSubnetGroupName=sg, CacheSubnetGroupDescription="d", SubnetIds=[aws["subnet"]]))
    ec.create_cache_parameter_group(CacheParameterGroupName=pg, CacheParameterGroupFamily="redis7", Description="d")
    refused("CacheParameterGroupAlreadyExistsFault", lambda: ec.create_cache_parameter_group(
        CacheParameterGroupName=pg, CacheParameterGroupFamily="redis7", Description="d"))
    ec.create_user_group(UserGroupId=ug, Engine="redis", UserIds=["default"])
    refused("UserGroupAlreadyExistsFault", lambda: ec.create_user_group(UserGroupId=ug, Engine="redis",
                                                                        UserIds=["default"]))
    # referenced by a create: the referenced kind's not-found
    refused("CacheSubnetGroupNotFoundFault", lambda: ec.create_replication_group(
        ReplicationGroupId=f"rg-{aws['id']}", ReplicationGroupDescription="d", CacheSubnetGroupName=n))
    refused("CacheParameterGroupNotFoundFault", lambda: ec.create_replication_group(
        ReplicationGroupId=f"rg-{aws['id']}", ReplicationGroupDescription="d", CacheParameterGroupName=n))
    for delete in (lambda: ec.delete_cache_subnet_group(CacheSubnetGroupName=sg),
                   lambda: ec.delete_cache_parameter_group(CacheParameterGroupName=pg),
                   lambda: ec.delete_user_group(UserGroupId=ug)):
        delete()
    assert not [g for g in ec.describe_cache_subnet_groups()["CacheSubnetGroups"] if aws["id"] in
                g["CacheSubnetGroupName"]]


def test_engine_defaults_and_parameters(aws: dict[str, Any]) -> None:
    ec, pg = aws["ec"], f"pg-{aws['id']}"
    for family in ("redis7", "redis6.x"):
        defaults = ec.describe_engine_default_parameters(CacheParameterGroupFamily=family)["EngineDefaults"]
        assert defaults["CacheParameterGroupFamily"] == family
        assert {p["ParameterName"]: p["ParameterValue"] for p in defaults["Parameters"]}["maxmemory-policy"] == \
            "volatile-lru"
    refused("InvalidParameterValueException",
            lambda: ec.describe_engine_default_parameters(CacheParameterGroupFamily="memcached1.6"))
    refused("InvalidParameterValueException", lambda: ec.create_cache_parameter_group(
        CacheParameterGroupName=pg, CacheParameterGroupFamily="nope", Description="d"))
    ec.create_cache_parameter_group(CacheParameterGroupName=pg, CacheParameterGroupFamily="redis6.x", Description="d")
    [view] = ec.describe_cache_parameter_groups(CacheParameterGroupName=pg)["CacheParameterGroups"]
    assert view["CacheParameterGroupFamily"] == "redis6.x" and view["ARN"].endswith(f":parametergroup:{pg}")
    ec.modify_cache_parameter_group(CacheParameterGroupName=pg, ParameterNameValues=[
        {"ParameterName": "maxmemory-policy", "ParameterValue": "allkeys-lru"}])
    params = {p["ParameterName"]: p["ParameterValue"]
              for p in ec.describe_cache_parameters(CacheParameterGroupName=pg)["Parameters"]}
    assert params["maxmemory-policy"] == "allkeys-lru" and params["tcp-keepalive"] == "300"  # a default kept
    refused("InvalidParameterValueException", lambda: ec.modify_cache_parameter_group(
        CacheParameterGroupName=pg, ParameterNameValues=[{"ParameterName": "no-such", "ParameterValue": "1"}]))
    ec.delete_cache_parameter_group(CacheParameterGroupName=pg)


def test_replication_group_states_endpoints_and_in_use(aws: dict[str, Any]) -> None:
    ec, i = aws["ec"], aws["id"]
    sg, pg, ug, rg = f"sg-{i}", f"pg-{i}", f"ug-{i}", f"rg-{i}"
    ec.create_cache_subnet_group(CacheSubnetGroupName=sg, CacheSubnetGroupDescription="d", SubnetIds=[aws["subnet"]])
    ec.create_cache_parameter_group(CacheParameterGroupName=pg, CacheParameterGroupFamily="redis7", Description="d")
    ec.create_user_group(UserGroupId=ug, Engine="redis", UserIds=["default"])
    refused("InvalidParameterCombinationException", lambda: ec.create_replication_group(
        ReplicationGroupId=rg, ReplicationGroupDescription="d", AutomaticFailoverEnabled=True,
        ReplicasPerNodeGroup=0))
    refused("InvalidParameterValueException", lambda: ec.create_replication_group(
        ReplicationGroupId=rg, ReplicationGroupDescription="d", AuthToken="short", TransitEncryptionEnabled=True))
    ec.create_replication_group(ReplicationGroupId=rg, ReplicationGroupDescription="d", Engine="redis",
                                EngineVersion="7.0", CacheNodeType="cache.t4g.small", CacheSubnetGroupName=sg,
                                CacheParameterGroupName=pg, ReplicasPerNodeGroup=1, AutomaticFailoverEnabled=True,
                                TransitEncryptionEnabled=True, AuthToken="a" * 32)
    refused("ReplicationGroupAlreadyExistsFault", lambda: ec.create_replication_group(
        ReplicationGroupId=rg, ReplicationGroupDescription="d"))

    def group() -> dict[str, Any]:
        return ec.describe_replication_groups(ReplicationGroupId=rg)["ReplicationGroups"][0]

    g = group()
    assert g["Status"] == "available" and g["AutomaticFailover"] == "enabled" and g["AuthTokenEnabled"] is True
    assert g["MemberClusters"] == [f"{rg}-001", f"{rg}-002"] and g["CacheNodeType"] == "cache.t4g.small"
    [node_group] = g["NodeGroups"]
    primary, reader = node_group["PrimaryEndpoint"], node_group["ReaderEndpoint"]
    assert primary["Port"] == reader["Port"] == 6379 and primary["Address"] != reader["Address"]
    assert REGION in reader["Address"] and len(node_group["NodeGroupMembers"]) == 2
    [member] = ec.describe_cache_clusters(CacheClusterId=f"{rg}-001")["CacheClusters"]
    assert member["EngineVersion"].startswith("7.0") and member["CacheParameterGroup"]["CacheParameterGroupName"] == pg

    # in use: refused while the group references them
    refused("CacheSubnetGroupInUse", lambda: ec.delete_cache_subnet_group(CacheSubnetGroupName=sg))
    refused("InvalidCacheParameterGroupStateFault", lambda: ec.delete_cache_parameter_group(
        CacheParameterGroupName=pg))

    # auth off through a user group: modifying once, then available, then the user group is in use
    ec.modify_replication_group(ReplicationGroupId=rg, UserGroupIdsToAdd=[ug], AuthTokenUpdateStrategy="DELETE",
                                CacheNodeType="cache.t4g.medium", ApplyImmediately=True)
    refused("InvalidReplicationGroupStateFault", lambda: ec.modify_replication_group(
        ReplicationGroupId=rg, CacheNodeType="cache.t4g.small", ApplyImmediately=True))
    assert group()["Status"] == "modifying"
    g = group()
    assert (g["Status"], g["CacheNodeType"], g["AuthTokenEnabled"], g["UserGroupIds"]) == (
        "available", "cache.t4g.medium", False, [ug])
    refused("InvalidUserGroupStateFault", lambda: ec.delete_user_group(UserGroupId=ug))
    ec.modify_replication_group(ReplicationGroupId=rg, UserGroupIdsToRemove=[ug], ApplyImmediately=True)
    assert [group()["Status"] for _ in range(2)] == ["modifying", "available"]

    # deletion: deleting once, then gone; then nothing holds the subnet and parameter groups
    assert ec.delete_replication_group(ReplicationGroupId=rg)["ReplicationGroup"]["Status"] == "deleting"
    assert group()["Status"] == "deleting"
    refused("ReplicationGroupNotFoundFault", group)
    ec.delete_user_group(UserGroupId=ug)
    ec.delete_cache_subnet_group(CacheSubnetGroupName=sg)
    ec.delete_cache_parameter_group(CacheParameterGroupName=pg)


def test_cluster_mode_resharding_and_replicas(aws: dict[str, Any]) -> None:
    """Cluster mode, where moto has none: shards of replicas, the configuration endpoint, online resharding
    and replica changes (``modifying`` once, then ``available``), each refusal as the model's fault."""
    ec, i = aws["ec"], aws["id"]
    sg, pg, off, rg = f"sg-{i}", f"pg-{i}", f"off-{i}", f"rg-{i}"
    ec.create_cache_subnet_group(CacheSubnetGroupName=sg, CacheSubnetGroupDescription="d", SubnetIds=[aws["subnet"]])
    for name in (pg, off):
        ec.create_cache_parameter_group(CacheParameterGroupName=name, CacheParameterGroupFamily="redis7",
                                        Description="d")
    ec.modify_cache_parameter_group(CacheParameterGroupName=pg, ParameterNameValues=[
        {"ParameterName": "cluster-enabled", "ParameterValue": "yes"}])
    base = {"ReplicationGroupId": rg, "ReplicationGroupDescription": "d", "Engine": "redis", "EngineVersion": "7.1",
            "CacheNodeType": "cache.t4g.small", "CacheSubnetGroupName": sg, "TransitEncryptionEnabled": True}
    refused("InvalidParameterCombinationException", lambda: ec.create_replication_group(
        **base, CacheParameterGroupName=off, NumNodeGroups=2, ClusterMode="enabled", AutomaticFailoverEnabled=True))
    refused("InvalidParameterCombinationException", lambda: ec.create_replication_group(
        **base, CacheParameterGroupName=pg, NumNodeGroups=2, ClusterMode="enabled", AutomaticFailoverEnabled=False))
    refused("InvalidParameterValueException", lambda: ec.create_replication_group(
        **base, CacheParameterGroupName=pg, NumNodeGroups=2, ReplicasPerNodeGroup=6, AutomaticFailoverEnabled=True))
    ec.create_replication_group(**base, CacheParameterGroupName=pg, NumNodeGroups=2, ReplicasPerNodeGroup=1,
                                ClusterMode="enabled", AutomaticFailoverEnabled=True)

    def group() -> dict[str, Any]:
        return ec.describe_replication_groups(ReplicationGroupId=rg)["ReplicationGroups"][0]

    def shape(g: dict[str, Any]) -> list[tuple[str, int]]:
        return [(ng["NodeGroupId"], len(ng["NodeGroupMembers"])) for ng in g["NodeGroups"]]

    g = group()
    assert (g["Status"], g["ClusterEnabled"], g["AutomaticFailover"]) == ("available", True, "enabled")
    assert g["ConfigurationEndpoint"]["Address"].startswith(f"clustercfg.{rg}.") \
        and g["ConfigurationEndpoint"]["Port"] == 6379
    assert shape(g) == [("0001", 2), ("0002", 2)] and len(g["MemberClusters"]) == 4
    assert "PrimaryEndpoint" not in g["NodeGroups"][0] and g["NodeGroups"][1]["Slots"] == "8192-16383"
    [member] = ec.describe_cache_clusters(CacheClusterId=g["MemberClusters"][3])["CacheClusters"]
    assert member["ReplicationGroupId"] == rg and member["CacheParameterGroup"]["CacheParameterGroupName"] == pg
    listed = [c for page in ec.get_paginator("describe_cache_clusters").paginate(
        PaginationConfig={"PageSize": 20}) for c in page["CacheClusters"] if c["ReplicationGroupId"] == rg]
    assert [c["CacheClusterId"] for c in listed] == g["MemberClusters"]
    refused("InvalidParameterValueException", lambda: ec.describe_cache_clusters(MaxRecords=5))

    # resharding: out to 3 (the new shard gets the replicas), refused while modifying, then in to 2
    reshard = ec.modify_replication_group_shard_configuration
    refused("InvalidParameterValueException", lambda: reshard(ReplicationGroupId=rg, NodeGroupCount=3,
                                                              ApplyImmediately=False))
    refused("NodeGroupsPerReplicationGroupQuotaExceededFault", lambda: reshard(
        ReplicationGroupId=rg, NodeGroupCount=501, ApplyImmediately=True))
    assert reshard(ReplicationGroupId=rg, NodeGroupCount=3, ApplyImmediately=True)["ReplicationGroup"][
        "Status"] == "modifying"
    refused("InvalidReplicationGroupStateFault", lambda: reshard(ReplicationGroupId=rg, NodeGroupCount=2,
                                                                 ApplyImmediately=True, NodeGroupsToRemove=["0003"]))
    assert group()["Status"] == "modifying"
    g = group()
    assert g["Status"] == "available" and shape(g) == [("0001", 2), ("0002", 2), ("0003", 2)]
    refused("InvalidParameterCombinationException", lambda: reshard(ReplicationGroupId=rg, NodeGroupCount=2,
                                                                    ApplyImmediately=True))
    refused("InvalidParameterValueException", lambda: reshard(ReplicationGroupId=rg, NodeGroupCount=2,
                                                              ApplyImmediately=True, NodeGroupsToRemove=["0009"]))
    reshard(ReplicationGroupId=rg, NodeGroupCount=2, ApplyImmediately=True, NodeGroupsToRemove=["0002"])
    assert [shape(group()) for _ in range(2)] == [[("0001", 2), ("0003", 2)]] * 2

    # replicas: up to 3 per shard, down to 0 (cluster mode allows none), the same count a no-op fault
    refused("NoOperationFault", lambda: ec.increase_replica_count(ReplicationGroupId=rg, NewReplicaCount=1,
                                                                  ApplyImmediately=True))
    refused("InvalidParameterValueException", lambda: ec.increase_replica_count(
        ReplicationGroupId=rg, NewReplicaCount=6, ApplyImmediately=True))
    ec.increase_replica_count(ReplicationGroupId=rg, NewReplicaCount=3, ApplyImmediately=True)
    refused("InvalidReplicationGroupStateFault", lambda: ec.decrease_replica_count(
        ReplicationGroupId=rg, NewReplicaCount=0, ApplyImmediately=True))
    assert [group()["Status"] for _ in range(2)] == ["modifying", "available"]
    assert shape(group()) == [("0001", 4), ("0003", 4)]
    refused("InvalidParameterValueException", lambda: ec.decrease_replica_count(
        ReplicationGroupId=rg, NewReplicaCount=4, ApplyImmediately=True))
    refused("InvalidParameterValueException", lambda: ec.decrease_replica_count(  # a primary
        ReplicationGroupId=rg, ReplicasToRemove=[f"{rg}-0001-001"], ApplyImmediately=True))
    ec.decrease_replica_count(ReplicationGroupId=rg, ReplicasToRemove=[f"{rg}-0001-004"], ApplyImmediately=True)
    assert [shape(group()) for _ in range(2)] == [[("0001", 3), ("0003", 4)]] * 2
    ec.decrease_replica_count(ReplicationGroupId=rg, NewReplicaCount=0, ApplyImmediately=True)
    group()
    g = group()
    assert shape(g) == [("0001", 1), ("0003", 1)] and g["MemberClusters"] == [f"{rg}-0001-001", f"{rg}-0003-001"]

    # cluster mode disabled cannot be resharded
    single = f"single-{i}"
    ec.create_replication_group(**{**base, "ReplicationGroupId": single}, CacheParameterGroupName=off,
                                ClusterMode="disabled")
    refused("InvalidParameterCombinationException", lambda: reshard(ReplicationGroupId=single, NodeGroupCount=2,
                                                                    ApplyImmediately=True))
    refused("ReplicationGroupNotFoundFault", lambda: ec.increase_replica_count(
        ReplicationGroupId=f"missing-{i}", NewReplicaCount=1, ApplyImmediately=True))
    for ident in (rg, single):
        ec.delete_replication_group(ReplicationGroupId=ident)
        group_of = ec.describe_replication_groups
        group_of(ReplicationGroupId=ident)
        refused("ReplicationGroupNotFoundFault", lambda: group_of(ReplicationGroupId=ident))  # noqa: B023
    for name in (pg, off):
        ec.delete_cache_parameter_group(CacheParameterGroupName=name)
    ec.delete_cache_subnet_group(CacheSubnetGroupName=sg)
