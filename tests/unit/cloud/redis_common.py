"""What the Redis instance and cluster unit tests share: the AWS plans' KCP object, parameter group, member
cluster and provisioned read; the SKR plans' network object, KCP mirror metadata and writes."""

from __future__ import annotations

from typing import Any

from kube.resources import Resource
from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.aws.redis_common_plan import Read
from tests.unit.cloud.outcomes import SkrWrites

NOW = "2026-01-01T00:00:00Z"
#: The AWS Scope (pods and VPC CIDRs), the IpRange and the security group allowing both on 6379.
SCOPE = {"spec": {"shootName": "shoot1", "scope": {"aws": {"network": {"pods": "100.64.0.0/12",
                                                                       "vpc": {"cidr": "10.180.0.0/16"}}}}}}
IPRANGE = {"status": {"vpcId": "vpc-1", "subnets": [{"id": "subnet-a"}, {"id": "subnet-b"}]}}
SG = {"GroupId": "sg-1", "IpPermissions": [{"IpProtocol": "tcp", "ToPort": 6379, "IpRanges": [
    {"CidrIp": "100.64.0.0/12"}, {"CidrIp": "10.180.0.0/16"}]}]}


def t(s: float) -> float:
    return s


def aws_obj(name: str, instance: dict[str, Any], ip_range: bool = False) -> dict[str, Any]:
    """The KCP object ``kcp-system/<name>`` with ``spec.instance.aws`` = ``instance`` (``ip_range``: with
    ``spec.ipRange``)."""
    spec: dict[str, Any] = {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"}}
    if ip_range:
        spec["ipRange"] = {"name": "r"}
    return {"metadata": {"name": name, "namespace": "kcp-system"}, "spec": {**spec, "instance": {"aws": instance}},
            "status": {}}


def parameter_group(name: str, fam: str, params: dict[str, str], defaults: dict[str, str]) -> dict[str, Any]:
    """A parameter group as the AWS read gives it."""
    return {"name": name, "family": fam, "params": dict(params), "defaults": dict(defaults)}


def aws_member(ident: str, version: str, pgname: str, **kw: Any) -> dict[str, Any]:
    """A member cache cluster on ``cache.t4g.small`` with the parameter group ``pgname``."""
    return {"CacheClusterId": ident, "EngineVersion": version, "CacheNodeType": "cache.t4g.small",
            "CacheParameterGroup": {"CacheParameterGroupName": pgname}, "AutoMinorVersionUpgrade": False, **kw}


def aws_provisioned(name: str, main: dict[str, Any], group: dict[str, Any], member: dict[str, Any],
                    overrides: dict[str, Any]) -> Read:
    """Every piece there (subnet group ``name``, ``main``, :data:`SG`, ``group`` with ``member``), the
    ``overrides`` over them."""
    base: dict[str, Any] = {"subnet_group": {"CacheSubnetGroupName": name}, "main": main, "security_group": SG,
                            "group": group, "members": [member]}
    return Read(**{**base, **overrides})


def methods(plan: Any) -> list[str]:
    """The provider calls' methods of an Outcome, in order."""
    return [c.method for c in plan.writes]


def network_object(ident: str, name: str = "default", ready: bool = True) -> dict[str, Any]:
    """An SKR IpRange / GcpSubnet ``name`` with ``status.id`` ``ident``, Ready or not."""
    conds = [condition("Ready", True, "Ready", "Ready", NOW)] if ready else []
    return {"metadata": {"name": name}, "status": {"id": ident, "conditions": conds}}


def mirror_meta(ident: str, kyma: str, deleting: bool) -> dict[str, Any]:
    """The KCP mirror's metadata: name ``ident`` in ``kcp-system``, owned by ``kyma`` and ``apps/cache``."""
    meta: dict[str, Any] = {"name": ident, "namespace": "kcp-system",
                            "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: "cache",
                                       names.LABEL_REMOTE_NAMESPACE: "apps"}}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return meta


class SecretWrites(SkrWrites):
    """The SKR plan's writes as the tests name them, with the auth Secret's ``secret_*``."""

    def __init__(self, outcome: Any, kcp: Resource) -> None:
        super().__init__(outcome, kcp)
        self.secret_create = self.one(self.created, "Secret")
        self.secret_update = self.one(self.updated, "Secret")
        self.secret_release = self.one(self.released, "Secret")
        self.secret_delete = self.one(self.deleted, "Secret")
