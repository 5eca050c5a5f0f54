"""The SKR Redis clusters against the dev API server (no provider side yet on this branch): the three SKR
CRDs' rules as the API server applies them (shard and replica limits, immutable Azure fields), and an
AwsRedisCluster's turns (driven in-process on a runtime no worker connects to) creating the KCP RedisCluster
its CRD accepts, then deleting it with the finalizer last."""

from __future__ import annotations

import uuid

import pytest

from kube import ApiError
from tasks.cloud import names, registry
from tasks.cloud.ownership import owner_labels
from tasks.cloud.skr import installer, kind
from tasks.cloud.skr.rediscluster_plan import KINDS, SKR_GCP_REDIS_CLUSTER
from tests.integration.cloud.conftest import CloudEnv

pytestmark = pytest.mark.integration

AWS, AZURE = KINDS["aws"], KINDS["azure"]


def _refused(call: object, *args: object) -> str:
    with pytest.raises(ApiError) as refused:
        call(*args)  # type: ignore[operator]
    assert refused.value.status == 422
    return refused.value.message


def test_the_crds_rules_and_an_aws_cluster_mirrored_then_deleted(cloud: CloudEnv) -> None:
    from tests.integration.cloud.test_skr import _inactive_skr

    rt, skr, ctx = _inactive_skr(cloud)
    for provider in ("aws", "azure", "gcp"):
        installer.install_crds(skr, provider, ctx.settings)
    cloud.wait(lambda: skr.served(AWS) and skr.served(AZURE) and skr.served(SKR_GCP_REDIS_CLUSTER), timeout=60,
               message="Redis cluster CRDs served")

    def obj(name: str, spec: dict[str, object]) -> dict[str, object]:
        return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}

    assert "shardCount" in _refused(skr.create, AWS, obj("big", {"redisTier": "C1", "shardCount": 501,
                                                                 "replicasPerShard": 1}))
    assert "125 or less" in _refused(skr.create, SKR_GCP_REDIS_CLUSTER,
                                     obj("g", {"redisTier": "C1", "shardCount": 126, "replicasPerShard": 1}))
    skr.create(AZURE, obj("az", {"redisTier": "C3", "shardCount": 2, "replicasPerPrimary": 1,
                                 "redisConfiguration": {"maxclients": "10"}}))
    assert "ReplicasPerPrimary is immutable" in _refused(skr.patch, AZURE, "az", {"spec": {"replicasPerPrimary": 2}},
                                                         "default")
    assert "RedisConfiguration is immutable" in _refused(
        skr.patch, AZURE, "az", {"spec": {"redisConfiguration": {"maxclients": "20"}}}, "default")

    # an IpRange of this SKR, Ready, whose id names its own KCP IpRange (made here: no KCP loop for it)
    ipr_id = str(uuid.uuid4())
    skr.create(names.SKR_IPRANGE, {"metadata": {"name": "own", "labels": {names.LABEL_IGNORE: "true"}}, "spec": {}})
    skr.patch_status(names.SKR_IPRANGE, "own", {"id": ipr_id, "state": "Ready", "conditions": [
        {"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    cloud.kcp.create(names.KCP_IPRANGE, {
        "apiVersion": names.KCP_IPRANGE.api_version, "kind": "IpRange",
        "metadata": {"name": ipr_id, "namespace": names.KCP_NAMESPACE,
                     "labels": {**owner_labels(rt.kyma, "own"), names.LABEL_IGNORE: "true"}},
        "spec": {"remoteRef": {"namespace": "", "name": "own"}, "scope": {"name": rt.kyma}, "cidr": "10.251.0.0/22"}})

    skr.create(AWS, obj("c1", {"redisTier": "C2", "shardCount": 2, "replicasPerShard": 1, "ipRange": {"name": "own"}}))
    rediscluster = registry.get("rediscluster")
    kind.reconcile(ctx, "default", "c1", kind=rediscluster, res=AWS)
    ident = (skr.get(AWS, "c1", "default") or {})["status"]["id"]
    mirror = cloud.kcp_get(names.REDIS_CLUSTER, ident) or {}
    assert mirror["spec"]["ipRange"] == {"name": ipr_id}
    assert mirror["spec"]["instance"]["aws"]["cacheNodeType"] == "cache.t4g.medium"
    assert mirror["spec"]["instance"]["aws"]["shardCount"] == 2

    skr.delete(AWS, "c1", "default")

    def gone() -> bool:
        ctx.forget(AWS)
        kind.reconcile(ctx, "default", "c1", kind=rediscluster, res=AWS)
        return skr.get(AWS, "c1", "default") is None

    cloud.wait(gone, timeout=60, message="AwsRedisCluster deleted")
    assert cloud.kcp_get(names.REDIS_CLUSTER, ident) is None
