"""What the AWS RedisInstance and RedisCluster integration tests share: moto with the ElastiCache stand-in
(in process) and a VPC of two subnets (:func:`moto_vpc`), and the provider turn of a KCP object (:func:`kcp_turn`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from standins import elasticache as standin
from tasks.cloud.kcp.consumer_plan import Seen
from tasks.cloud.registry import Turn
from tasks.cloud.settings import CloudSettings

REGION = "eu-west-1"


def moto_vpc(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The test modules' fixture ``aws`` (``aws = pytest.fixture(name="aws")(moto_vpc)``): moto with the
    ElastiCache stand-in, a VPC ``10.180.0.0/16`` with two subnets, and the boto3 clients (``ec2``, ``ec``:
    ElastiCache, ``sm``: Secrets Manager)."""
    from moto import mock_aws

    standin.install()
    standin.reset()
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.180.0.0/16")["Vpc"]["VpcId"]
        subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.180.{i}.0/24", AvailabilityZone=f"{REGION}{z}")[
            "Subnet"]["SubnetId"] for i, z in enumerate("ab")]
        yield {"vpc": vpc, "subnets": subnets, "ec2": ec2, "ec": boto3.client("elasticache", region_name=REGION),
               "sm": boto3.client("secretsmanager", region_name=REGION)}
    standin.reset()


def kcp_turn(aws: dict[str, Any], name: str, instance: dict[str, Any], ip_range: bool = False) -> Turn:
    """The provider turn of the KCP object ``kcp-system/<name>`` with ``spec.instance.aws`` = ``instance``
    (``ip_range``: with ``spec.ipRange``), its Scope and its IpRange on :func:`moto_vpc`'s VPC."""
    scope = {"spec": {"provider": "aws", "region": REGION, "shootName": "shoot1",
                      "scope": {"aws": {"accountId": "123456789012",
                                        "network": {"pods": "100.64.0.0/12", "vpc": {"cidr": "10.180.0.0/16"}}}}}}
    iprange = {"status": {"vpcId": aws["vpc"], "subnets": [{"id": s} for s in aws["subnets"]]}}
    spec: dict[str, Any] = {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"}}
    if ip_range:
        spec["ipRange"] = {"name": "r"}
    obj = {"metadata": {"name": name, "namespace": "kcp-system"}, "spec": {**spec, "instance": {"aws": instance}},
           "status": {}}
    return Turn(kube=None, obj=obj, scope=scope, settings=CloudSettings(time_scale=1000),  # type: ignore[arg-type]
                seen=Seen(obj, scope, True, iprange))
