"""An AwsRedisInstance end to end on the package's cloud stack (beat, SKR connects, the KCP loop, moto with
the ElastiCache stand-in): Ready with the connection Secret (extraData rendered), the KCP mirror, the CRD's
CEL rules (family and downgrade refused, a capacity change allowed and carried to the cloud), deletion
leaving nothing in the SKR, the KCP, ElastiCache, Secrets Manager or EC2 (auth on, so the token too)."""

from __future__ import annotations

import base64
from typing import Any

import boto3
import pytest

from kube import ApiError, resources
from tasks.cloud import names
from tests.integration.cloud.conftest import REGION, CloudEnv
from tests.integration.cloud.test_skr import active_skr, skr_range, skr_state

pytestmark = pytest.mark.integration

REDIS = names.SKR_AWS_REDIS_INSTANCE


def test_aws_redis_instance_end_to_end(cloud: CloudEnv) -> None:
    _, skr = active_skr(cloud, zones=1)
    ipr = skr_range(skr, "10.251.0.0/24")
    skr_state(cloud, skr, ipr, "Ready")
    cloud.wait(lambda: skr.served(REDIS), timeout=60, message="AwsRedisInstance CRD installed")
    skr.create(REDIS, {"metadata": {"name": "cache", "namespace": "default"}, "spec": {
        "redisTier": "S1", "authEnabled": True, "ipRange": {"name": ipr},
        "authSecret": {"name": "conn", "labels": {"app": "shop"},
                       "extraData": {"url": "redis://{{.host}}:{{.port}}"}}}})
    obj: dict[str, Any] = cloud.wait(lambda: (o := skr.get(REDIS, "cache", "default")) is not None
                                     and (o.get("status") or {}).get("state") == "Ready" and o,
                                     timeout=120, message="AwsRedisInstance Ready")
    ident = obj["status"]["id"]
    kcp_obj = cloud.kcp_get(names.REDIS_INSTANCE, ident) or {}
    assert kcp_obj["spec"]["instance"]["aws"]["cacheNodeType"] == "cache.t4g.small"
    assert kcp_obj["spec"]["remoteRef"] == {"namespace": "default", "name": "cache"}
    secret = cloud.wait(lambda: skr.get(resources.SECRET, "conn", "default"), timeout=60, message="auth Secret")
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["primaryEndpoint"] == kcp_obj["status"]["primaryEndpoint"] and data["authString"]
    assert data["url"] == f"redis://{data['host']}:{data['port']}" and secret["metadata"]["labels"]["app"] == "shop"

    for spec, message in (({"redisTier": "P1"}, "Service tier cannot be changed"),
                          ({"engineVersion": "6.x"}, "engineVersion cannot be downgraded")):
        with pytest.raises(ApiError) as refused:
            skr.patch(REDIS, "cache", {"spec": spec}, "default")
        assert refused.value.status == 422 and message in refused.value.message
    skr.patch(REDIS, "cache", {"spec": {"redisTier": "S2"}}, "default")
    ec = boto3.client("elasticache", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    cloud.wait(lambda: ec.describe_replication_groups(ReplicationGroupId=f"cm-{ident}")["ReplicationGroups"][0][
        "CacheNodeType"] == "cache.t4g.medium", timeout=120, message="node type changed in ElastiCache")

    sm = boto3.client("secretsmanager", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    ec2 = boto3.client("ec2", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")

    def leftovers() -> dict[str, list[str]]:
        """Every AWS piece of this instance still there (auth is on: the token is in Secrets Manager)."""
        return {
            "secrets": [x["Name"] for x in sm.list_secrets()["SecretList"] if ident in x["Name"]],
            "subnet groups": [g["CacheSubnetGroupName"] for g in ec.describe_cache_subnet_groups()[
                "CacheSubnetGroups"] if ident in g["CacheSubnetGroupName"]],
            "security groups": [g["GroupName"] for g in ec2.describe_security_groups()["SecurityGroups"]
                                if ident in g["GroupName"]],
            "user groups": [g["UserGroupId"] for g in ec.describe_user_groups()["UserGroups"]
                            if ident in g["UserGroupId"]],
            "replication groups": [g["ReplicationGroupId"] for g in ec.describe_replication_groups()[
                "ReplicationGroups"] if ident in g["ReplicationGroupId"]],
            "parameter groups": [g["CacheParameterGroupName"] for g in ec.describe_cache_parameter_groups()[
                "CacheParameterGroups"] if ident in g["CacheParameterGroupName"]]}

    before = leftovers()
    assert before["secrets"] == [f"cm-{ident}/authToken"] and before["subnet groups"] == [f"cm-{ident}"]
    assert before["security groups"] == [f"cm-{ident}"] and before["replication groups"] == [f"cm-{ident}"]

    skr.delete(REDIS, "cache", "default")
    cloud.wait(lambda: skr.get(REDIS, "cache", "default") is None, timeout=120, message="instance gone")
    assert skr.get(resources.SECRET, "conn", "default") is None
    assert cloud.kcp_get(names.REDIS_INSTANCE, ident) is None
    assert leftovers() == {k: [] for k in before}


def test_a_consumer_on_an_iprange_carrying_another_skrs_id_ends_in_error_and_blocks_nothing(cloud: CloudEnv) -> None:
    """Issue 27's attack: tenant A's IpRange carries tenant B's IpRange id in ``status.id`` — ``stolen``
    forged Ready (the ignore label keeps A's IpRange reconciler off it), ``copied`` as it is (its own turn
    refuses it: never Ready). A's AwsRedisInstance and AwsNfsVolume on either end ``Error`` ``NotOwned`` in
    words naming no other tenant, nothing is created in the KCP for them, and B's IpRange still deletes (no
    "used by")."""
    from tasks.cloud import registry
    from tasks.cloud.skr import installer, kind
    from tests.integration.cloud.test_skr import _inactive_skr

    _, victim = active_skr(cloud, zones=1)
    victim_range = skr_range(victim, "10.251.0.0/24")
    victim_id = skr_state(cloud, victim, victim_range, "Ready")["status"]["id"]
    attacker, skr, ctx = _inactive_skr(cloud)
    installer.install_crds(skr, "aws", ctx.settings)
    ready = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    for name, labels, status in (("stolen", {names.LABEL_IGNORE: "true"}, {"state": "Ready", "conditions": ready}),
                                 ("copied", {}, {})):
        skr.create(names.SKR_IPRANGE, {"metadata": {"name": name, "labels": labels}, "spec": {}})
        skr.patch_status(names.SKR_IPRANGE, name, {"id": victim_id, **status})
    consumers = ((REDIS, "redisinstance", {"redisTier": "S1"}),
                 (names.AWS_NFS_VOLUME, "nfsinstance", {"capacity": "1Gi"}))
    for res, of, spec in consumers:
        for ipr in ("stolen", "copied"):
            skr.create(res, {"metadata": {"name": ipr, "namespace": "default"},
                             "spec": {**spec, "ipRange": {"name": ipr}}})
            ctx.forget(names.SKR_IPRANGE)
            ctx.forget(res)  # each turn reads the SKR afresh (as a new connect would)
            kind.reconcile(ctx, "default", ipr, kind=registry.get(of), res=res)
            obj = skr.get(res, ipr, "default") or {}
            assert obj["status"]["state"] == "Error", (res.kind, ipr, obj.get("status"))
            assert [(c["type"], c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
                ("Error", "NotOwned", f"IpRange {ipr} id names no KCP IpRange of this IpRange")], (res.kind, ipr)
    for res in (names.REDIS_INSTANCE, names.NFS_INSTANCE):
        assert cloud.kcp.list(res, names.KCP_NAMESPACE, label_selector=f"{names.LABEL_KYMA_NAME}={attacker.kyma}") \
            == [], res.kind
    victim.delete(names.SKR_IPRANGE, victim_range)
    cloud.wait(lambda: victim.get(names.SKR_IPRANGE, victim_range) is None
               and cloud.kcp_get(names.KCP_IPRANGE, victim_id) is None, timeout=90,
               message="the victim's IpRange deleted")
