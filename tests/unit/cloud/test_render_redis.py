"""``reconcilery render redisinstance``: the tier mapped, the KCP RedisInstance and the provider's pieces
for each provider's Scope, Errors for an unknown tier or a kind of another provider (pure), and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from reconcilery.cli import app
from tasks.cloud.redisinstance_render import render_redis

ROOT = Path(__file__).resolve().parents[3]
SCOPES = {p: yaml.safe_load((ROOT / "examples" / "render" / f).read_text()) for p, f in (
    ("aws", "cloud-scope.yaml"), ("gcp", "cloud-scope-gcp.yaml"), ("azure", "cloud-scope-azure.yaml"))}


def instance(kind: str, tier: str, **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "c", "namespace": "ns"}, "spec": {"redisTier": tier, **spec}}


def test_each_provider() -> None:
    [aws] = render_redis(SCOPES["aws"], [instance("AwsRedisInstance", "S1", authEnabled=True)])
    assert aws.state == "Ready" and aws.kcp["spec"]["instance"]["aws"]["cacheNodeType"] == "cache.t4g.small"
    assert aws.kcp["metadata"]["name"] == "<id>" and aws.kcp["spec"]["remoteRef"] == {"namespace": "ns", "name": "c"}
    assert any("auth token cm-<id>/authToken" in line for line in aws.plan)
    assert any("0 replica(s), automatic failover off" in line for line in aws.plan)
    [gcp] = render_redis(SCOPES["gcp"], [instance("GcpRedisInstance", "P1")])
    assert gcp.kcp["spec"]["instance"]["gcp"] == {"tier": "STANDARD_HA", "memorySizeGb": 5, "replicaCount": 1,
                                                  "redisVersion": "REDIS_7_0", "authEnabled": False}
    assert gcp.plan[0].endswith("auth off") and "/instances/cm-<id>" in gcp.plan[0]
    [azure] = render_redis(SCOPES["azure"], [instance("AzureRedisInstance", "S2")])
    assert azure.plan[0].endswith("Basic C2, non-SSL port off")
    assert "privatelink.redis.cache.windows.net" in azure.plan[2]
    assert azure.plan[-1].startswith("Secret ns/c once Ready")


def test_errors_and_overrides() -> None:
    [unknown] = render_redis(SCOPES["aws"], [instance("AwsRedisInstance", "S9")])
    assert (unknown.state, unknown.outcome) == ("Error", "Error: failed to map redisTier to cacheNodeType")
    [foreign] = render_redis(SCOPES["gcp"], [instance("AwsRedisInstance", "S1")])
    assert foreign.state == "Error" and "not served in an SKR of provider gcp" in foreign.outcome
    [over] = render_redis(SCOPES["aws"], [instance("AwsRedisInstance", "S9")], {"S9": "cache.r7g.large"})
    assert over.state == "Ready" and "cache.r7g.large" in over.plan[-2]


def test_extra_data_the_plan_refuses_is_the_renders_error_too() -> None:
    long, many = {"a": "{{" * 3000}, {f"k{i}": "x" for i in range(65)}
    rows = render_redis(SCOPES["aws"], [instance("AwsRedisInstance", "S1", authSecret={"extraData": extra})
                                        for extra in (long, many, [1], {"host": "{{.host}}"})])
    assert [(r.state, r.outcome.split(":")[0]) for r in rows[:3]] == [("Error", "InvalidExtraData")] * 3
    assert rows[0].outcome.endswith("authSecret.extraData.a is longer than 4096 characters") and not rows[0].kcp
    assert rows[2].outcome == "InvalidExtraData: authSecret.extraData must be an object"
    assert rows[3].state == "Ready"


def test_cli() -> None:
    result = CliRunner().invoke(app, ["render", "redisinstance", "--scope",
                                      str(ROOT / "examples/render/cloud-scope.yaml"), "-f",
                                      str(ROOT / "examples/render/cloud-redisinstances.yaml"), "-o", "yaml"])
    assert result.exit_code == 1, result.output  # the GCP kind in an AWS SKR
    docs = list(yaml.safe_load_all(result.output))
    assert [d["state"] for d in docs] == ["Ready", "Error"]
    assert docs[0]["kcp"]["spec"]["instance"]["aws"]["readReplicas"] == 1
