"""What the kind registry drives besides the controllers: Nuke's order, the IpRange's consumers and the
SKR quota defaults, each as the original has them (cloud-manager's ``pkg/kcp/nuke``,
``pkg/kcp/iprange``, ``resourceQuota.skr.defaults``)."""

from __future__ import annotations

import json
from typing import Any

from tasks.cloud import names, ownership, registry, settings
from tasks.cloud.skr import kind as skr_kind


def test_nuke_deletes_in_the_originals_order() -> None:
    assert [res.kind for res in registry.nuked()] == [
        "VpcPeering", "RedisInstance", "RedisCluster", "GcpRedisCluster", "NfsInstance", "IpRange", "GcpSubnet",
        "Network", "AzureManagedRedis"]


def test_the_iprange_consumers_in_the_order_the_messages_name_them() -> None:
    assert [res.kind for res in registry.iprange_consumers(skr=False)] == [
        "NfsInstance", "RedisInstance", "RedisCluster"]
    assert {res.kind for res in registry.iprange_consumers(skr=True)} == {
        "AwsNfsVolume", "GcpNfsVolume", "AwsRedisInstance", "GcpRedisInstance", "AzureRedisInstance",
        "AwsRedisCluster", "AzureRedisCluster"}


def test_quota_defaults_are_declared_and_configuration_wins() -> None:
    key = names.quota_key
    assert registry.quota_default(key(names.SKR_IPRANGE)) == 1
    assert registry.quota_default(key(names.AWS_NFS_VOLUME)) == 5
    assert registry.quota_default(key(names.GCP_NFS_VOLUME)) == 5  # issue 27: as AwsNfsVolume
    assert registry.quota_default(key(names.SKR_AWS_REDIS_INSTANCE)) == 5
    assert registry.quota_default(key(names.SKR_GCP_VPC_PEERING)) == 5
    configured = settings.load({
        "RECONCILERY_CLOUD_QUOTA_DEFAULTS": json.dumps({key(names.AWS_NFS_VOLUME): 3}),
        "RECONCILERY_CLOUD_QUOTA_OVERRIDES": json.dumps({"k1": {key(names.SKR_IPRANGE): 2}})})
    assert configured.quota("k0", key(names.AWS_NFS_VOLUME), 5) == 3  # configured default
    assert configured.quota("k0", key(names.SKR_IPRANGE), 1) == 1  # not configured: the declared one
    assert configured.quota("k1", key(names.SKR_IPRANGE), 1) == 2  # the runtime's override


def test_kinds_without_an_skr_plan_are_not_reconciled_by_the_connect() -> None:
    reconciled = {k.name for k, _ in registry.skr_kinds("aws")}
    assert {"iprange", "redisinstance", "vpcpeering", "nfsinstance", "rediscluster"} <= reconciled
    assert "network" not in reconciled
    assert next(k.name for k, _ in registry.skr_kinds("aws")) == "iprange"  # before its consumers
    assert registry.get("gcprediscluster").controller == "cloud-gcprediscluster"  # wired from its own modules
    # the generic KCP controller, as every kind's
    controllers = (registry.get("iprange").controller, registry.get("network").controller)
    assert controllers == ("cloud-iprange", "cloud-network")


class _Kcp:
    """A KCP holding one object per name; counts the reads."""

    def __init__(self, objs: dict[str, dict[str, Any]]) -> None:
        self.objs, self.reads = objs, 0

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        self.reads += 1
        return self.objs.get(name)


def test_a_summary_shows_only_the_objects_own_mirror() -> None:
    """``up``'s summary reads a KCP mirror by an SKR object's id: never one of another tenant, and never
    by an id that is no UUID (ownership before action, also for presentation)."""
    ident = "0b9e4c1e-8a53-4c0e-9f3a-2d5c8c2f6f11"
    own = {"metadata": {"name": ident, "labels": ownership.owner_labels("k1", "r1", "ns")}}
    other = {"metadata": {"name": ident, "labels": ownership.owner_labels("k2", "r1", "ns")}}
    obj = {"metadata": {"name": "r1", "namespace": "ns"}, "status": {"id": ident}}
    assert skr_kind.mirror(_Kcp({ident: own}), names.REDIS_INSTANCE, obj, "k1") == own  # type: ignore[arg-type]
    assert skr_kind.mirror(_Kcp({ident: other}), names.REDIS_INSTANCE, obj, "k1") is None  # type: ignore[arg-type]
    dots = _Kcp({"..": own})
    assert skr_kind.mirror(dots, names.REDIS_INSTANCE, {**obj, "status": {"id": ".."}}, "k1") is None  # type: ignore[arg-type]
    assert dots.reads == 0
    # the SKR IpRange's row too (cluster scoped): its own mirror's CIDR, nothing of another tenant's
    side = registry.get("iprange").skr
    assert side is not None and side.summary is not None
    iprange = {"metadata": {"name": "r1"}, "status": {"id": ident}}
    mine = {"metadata": {"name": ident, "labels": ownership.owner_labels("k1", "r1", "")},
            "status": {"cidr": "10.250.4.0/22", "id": "cm-x"}}
    theirs = {**mine, "metadata": {"name": ident, "labels": ownership.owner_labels("k2", "r1", "")}}
    assert side.summary(None, _Kcp({ident: mine}), "k1", iprange).detail == "cidr 10.250.4.0/22; cm-x"  # type: ignore[arg-type]
    assert side.summary(None, _Kcp({ident: theirs}), "k1", iprange).detail == ""  # type: ignore[arg-type]
