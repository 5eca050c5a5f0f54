"""What the kind registry drives besides the controllers: Nuke's order, the IpRange's consumers and the
SKR quota defaults, each as the original has them (cloud-manager's ``pkg/kcp/nuke``,
``pkg/kcp/iprange``, ``resourceQuota.skr.defaults``)."""

from __future__ import annotations

import json

from tasks.cloud import names, registry, settings


def test_nuke_deletes_in_the_originals_order() -> None:
    assert [res.kind for res in registry.nuked()] == [
        "VpcPeering", "RedisInstance", "RedisCluster", "GcpRedisCluster", "NfsInstance", "IpRange", "GcpSubnet",
        "Network", "AzureManagedRedis"]


def test_the_iprange_consumers_in_the_order_the_messages_name_them() -> None:
    assert [res.kind for res in registry.iprange_consumers(skr=False)] == [
        "NfsInstance", "RedisInstance", "RedisCluster"]
    assert {res.kind for res in registry.iprange_consumers(skr=True)} == {
        "AwsNfsVolume", "GcpNfsVolume", "AwsRedisInstance", "GcpRedisInstance", "AzureRedisInstance",
        "AwsRedisCluster"}


def test_quota_defaults_are_declared_and_configuration_wins() -> None:
    key = names.quota_key
    assert registry.quota_default(key(names.SKR_IPRANGE)) == 1
    assert registry.quota_default(key(names.AWS_NFS_VOLUME)) == 5
    assert registry.quota_default(key(names.GCP_NFS_VOLUME)) is None
    configured = settings.load({
        "RECONCILERY_CLOUD_QUOTA_DEFAULTS": json.dumps({key(names.AWS_NFS_VOLUME): 3}),
        "RECONCILERY_CLOUD_QUOTA_OVERRIDES": json.dumps({"k1": {key(names.SKR_IPRANGE): 2}})})
    assert configured.quota("k0", key(names.AWS_NFS_VOLUME), 5) == 3  # configured default
    assert configured.quota("k0", key(names.SKR_IPRANGE), 1) == 1  # not configured: the declared one
    assert configured.quota("k1", key(names.SKR_IPRANGE), 1) == 2  # the runtime's override


def test_kinds_without_an_skr_plan_are_not_reconciled_by_the_connect() -> None:
    reconciled = {k.name for k, _ in registry.skr_kinds("aws")}
    assert {"iprange", "redisinstance", "vpcpeering", "nfsinstance"} <= reconciled
    assert not reconciled & {"rediscluster", "network"}
    assert next(k.name for k, _ in registry.skr_kinds("aws")) == "iprange"  # before its consumers
    assert not {k.controller for k in registry.kinds() if k.name in ("iprange", "network", "rediscluster")} - {""}
