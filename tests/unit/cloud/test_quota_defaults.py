"""The SKR quotas' declared defaults (issue 27: Redis instances, GCP NFS volumes and VPC peerings had none;
the original declares only IpRange 1 and AwsNfsVolume 5): for every kind, the default this runtime gets
(:meth:`SkrContext.quota` with no setting) admits N objects of one SKR, the oldest, and the N+1-th is
refused with ``QuotaExceeded`` before anything is made for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kube import Resource
from kube.toolkit import Outcome
from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.settings import CloudSettings
from tasks.cloud.skr import nfsvolume_plan, redisinstance_plan, vpcpeering_plan
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.defaultiprange_plan import decide

NOW = "2026-01-01T00:00:00Z"
NEW = "6f1c1f0e-8c1d-4c52-a0f7-3b1fcb8f7a11"
IPRANGE = {"metadata": {"name": "default"}, "status": {
    "id": "3f0c1c1e-0000-4000-8000-000000000001", "conditions": [condition("Ready", True, "Ready", "Ready", NOW)]}}
GCP_SCOPE = {"spec": {"region": "us-east4", "scope": {"gcp": {"workers": [{"zones": ["us-east4-a"]}]}}}}


def default_quota(res: Resource) -> int | None:
    ctx = SkrContext(kyma="k", skr=None, kcp=None, scope={}, settings=CloudSettings(), deadline=0)  # type: ignore[arg-type]
    return ctx.quota(res)


def objects(res: Resource, spec: dict[str, Any], n: int) -> list[dict[str, Any]]:
    namespace = {"namespace": "apps"} if res.namespaced else {}
    return [{"metadata": {"name": f"o{i}", **namespace, "creationTimestamp": f"2026-01-01T00:00:{i:02d}Z",
                          "finalizers": [names.FINALIZER]}, "spec": dict(spec), "status": {}} for i in range(n)]


def redis(provider: str) -> Callable[[dict[str, Any], list[dict[str, Any]], int | None], Outcome]:
    def turn(obj: dict[str, Any], everyone: list[dict[str, Any]], quota: int | None) -> Outcome:
        seen = redisinstance_plan.Seen(obj=obj, provider=provider, kyma="k", kcp_namespace="kcp-system",
                                       iprange=decide(obj, IPRANGE), everyone=everyone, quota=quota)
        return redisinstance_plan.plan(seen, NEW, lambda s: s, NOW)
    return turn


def gcp_volume(obj: dict[str, Any], everyone: list[dict[str, Any]], quota: int | None) -> Outcome:
    seen = nfsvolume_plan.Seen(kind=nfsvolume_plan.GCP, obj=obj, kcp=None, iprange=decide(obj, IPRANGE), kyma="k",
                               kcp_namespace="kcp-system", everyone=everyone, quota=quota, scope=GCP_SCOPE)
    return nfsvolume_plan.plan(seen, NEW, lambda s: s, NOW)


def peering(provider: str) -> Callable[[dict[str, Any], list[dict[str, Any]], int | None], Outcome]:
    def turn(obj: dict[str, Any], everyone: list[dict[str, Any]], quota: int | None) -> Outcome:
        seen = vpcpeering_plan.Seen(provider=provider, obj=obj, kyma="k", kcp_namespace="kcp-system", peering=None,
                                    network=None, everyone=everyone, quota=quota)
        return vpcpeering_plan.plan(seen, NEW, lambda s: s, NOW)
    return turn


VNET = "/subscriptions/sub-1/resourceGroups/rg-1/providers/Microsoft.Network/virtualNetworks/vnet-1"
CASES = [
    (names.SKR_AWS_REDIS_INSTANCE, {"redisTier": "S1"}, redis("aws"), names.REDIS_INSTANCE),
    (names.SKR_GCP_REDIS_INSTANCE, {"redisTier": "S1"}, redis("gcp"), names.REDIS_INSTANCE),
    (names.SKR_AZURE_REDIS_INSTANCE, {"redisTier": "P1"}, redis("azure"), names.REDIS_INSTANCE),
    (names.GCP_NFS_VOLUME, {"capacityGb": 1024}, gcp_volume, names.NFS_INSTANCE),
    (names.SKR_AWS_VPC_PEERING, {"remoteAccountId": "444455556666", "remoteRegion": "eu-west-1",
                                 "remoteVpcId": "vpc-1"}, peering("aws"), names.VPC_PEERING),
    (names.SKR_GCP_VPC_PEERING, {"remotePeeringName": "peer-1", "remoteProject": "project-1", "remoteVpc": "vpc-1"},
     peering("gcp"), names.VPC_PEERING),
    (names.SKR_AZURE_VPC_PEERING, {"remotePeeringName": "peer-1", "remoteVnet": VNET}, peering("azure"),
     names.VPC_PEERING),
]


def kcp_kinds(outcome: Outcome) -> list[str]:
    return [w.resource.kind for w in outcome.writes if getattr(w, "cluster", "") == "kcp" and w.resource is not None]


@pytest.mark.parametrize(("res", "spec", "turn", "mirror"), CASES, ids=[c[0].kind for c in CASES])
def test_the_default_quota_admits_the_oldest_n_and_refuses_the_next(
        res: Resource, spec: dict[str, Any], turn: Callable[..., Outcome], mirror: Resource) -> None:
    quota = default_quota(res)
    assert quota == 5, res.kind
    everyone = objects(res, spec, quota + 1)
    made = turn(everyone[quota - 1], everyone, quota)
    assert mirror.kind in kcp_kinds(made), (res.kind, made)
    refused = turn(everyone[quota], everyone, quota)
    assert kcp_kinds(refused) == [], res.kind
    status = refused.status or {}
    assert status["state"] == "Error"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("QuotaExceeded", "QuotaExceeded", "Maximum number of 5 resources exceeded")]


def test_a_configured_quota_still_wins_over_the_declared_default() -> None:
    key = names.quota_key(names.SKR_AWS_REDIS_INSTANCE)
    settings = CloudSettings(quota_defaults={key: 2}, quota_overrides={"k": {key: 0}})  # type: ignore[call-arg]
    assert settings.quota("other", key, 5) == 2 and settings.quota("k", key, 5) == 0
