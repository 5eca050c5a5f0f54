"""The SKR Redis cluster plan (pure): tiers, id, network (IpRange / GcpSubnet), mirror, projection,
modifications, the auth Secret's keys per provider, deletion, ownership; and the CRDs' rules (the
original's ``pkg/skr/{aws,azure,gcp}rediscluster`` and ``api/cloud-resources/v1beta1/*rediscluster_types.go``)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.rediscluster_render import render_clusters
from tasks.cloud.skr import rediscluster_plan
from tasks.cloud.skr.defaultiprange_plan import decide
from tasks.cloud.skr.rediscluster_plan import Seen, auth_secret_data, subnet_use
from tasks.cloud.skr.rediscluster_tiers import desired_for
from tests.unit.cloud.redis_common import SecretWrites, mirror_meta, network_object

ID = "0b0c5bd2-54a4-4a4e-9d4e-3c1f4b2f6a10"
NEW = "7f1de3b0-1c1e-4b5e-9d3a-5b8c9d0e1f2a"
NET_ID = "a3c1b2d4-0000-4000-8000-000000000001"
OTHER = "a3c1b2d4-0000-4000-8000-000000000002"
NOW = "2026-01-01T00:00:00Z"
SPECS = {"aws": {"redisTier": "C1", "shardCount": 3, "replicasPerShard": 1},
         "azure": {"redisTier": "C3", "shardCount": 2, "replicasPerPrimary": 1},
         "gcp": {"redisTier": "C1", "shardCount": 3, "replicasPerShard": 1}}


def t(s: float) -> float:
    return s


def skr(provider: str = "aws", spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
        finalizer: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cache", "namespace": "apps", "labels": {}}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": spec if spec is not None else dict(SPECS[provider]), "status": status or {}}


def network(ready: bool = True, name: str = "default", ident: str = NET_ID) -> dict[str, Any]:
    return network_object(ident, name, ready)


def kcp_subnet(kyma: str = "k1", name: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": NET_ID, "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: name}}}


def kcp(provider: str = "aws", conds: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None,
        spec: dict[str, Any] | None = None, kyma: str = "k1", deleting: bool = False) -> dict[str, Any]:
    meta = mirror_meta(ID, kyma, deleting)
    desired = desired_for(provider, SPECS[provider])
    assert desired is not None
    body_spec = spec if spec is not None else (desired if provider == "gcp" else {"instance": desired})
    return {"metadata": meta, "spec": body_spec, "status": {**(status or {}), "conditions": conds or []}}


class Planned(SecretWrites):
    def __init__(self, outcome: Any, provider: str) -> None:
        super().__init__(outcome, rediscluster_plan.KCP_KINDS[provider])


def seen(obj: dict[str, Any], provider: str = "aws", net: dict[str, Any] | None = None, **kw: Any) -> Seen:
    found = net if net is not None else network()
    use = subnet_use(obj, found, kcp_subnet(), "k1") if provider == "gcp" else decide(obj, found)
    return Seen(obj=obj, provider=provider, kyma="k1", kcp_namespace="kcp-system", network=use, **kw)


def plan(s: Seen) -> Planned:
    return Planned(rediscluster_plan.plan(s, NEW, t, NOW), s.provider)


def st(out: Planned) -> dict[str, Any]:
    """The status the turn writes (a turn that writes none fails the test)."""
    assert out.step.status is not None
    return dict(out.step.status)


READY = [condition("Ready", True, "Ready", "Redis cluster is ready", NOW)]
READY_SKR = {"id": ID, "state": "Ready", "conditions": READY}


def test_tiers_are_the_originals() -> None:
    aws = desired_for("aws", {"redisTier": "C8", "shardCount": 500, "replicasPerShard": 5})
    assert aws == {"aws": {"cacheNodeType": "cache.m7g.16xlarge", "engineVersion": "7.0",
                           "autoMinorVersionUpgrade": False, "authEnabled": False, "shardCount": 500,
                           "replicasPerShard": 5}}
    assert desired_for("aws", {"redisTier": "C1"}, {"C1": "cache.t3.micro"})["aws"]["cacheNodeType"] == "cache.t3.micro"  # type: ignore[index]
    assert desired_for("gcp", {"redisTier": "C6", "shardCount": 2, "replicasPerShard": 0}) == {
        "nodeType": "REDIS_HIGHMEM_XLARGE", "shardCount": 2, "replicasPerShard": 0, "redisConfigs": {}}
    assert desired_for("azure", {"redisTier": "C7", "shardCount": 4, "redisConfiguration": {"maxclients": "9",
                                                                                           "maxmemory-delta": ""}}) == {
        "azure": {"sku": {"capacity": 5}, "shardCount": 4, "replicasPerPrimary": 0,
                  "redisConfiguration": {"maxclients": "9"}}}
    for provider, tier in (("aws", "C9"), ("gcp", "C2"), ("azure", "C1")):
        assert desired_for(provider, {"redisTier": tier}) is None


@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_new_object_gets_id_finalizer_and_mirror_in_one_turn(provider: str) -> None:
    out = plan(seen(skr(provider, finalizer=False), provider))
    assert out.label_id == NEW and out.step.add_finalizer == names.FINALIZER
    assert out.step.status == {"id": NEW, "state": "Creating"}
    body = out.create
    assert body is not None and body["kind"] == rediscluster_plan.KCP_KINDS[provider].kind
    assert body["metadata"]["name"] == NEW and body["metadata"]["labels"][names.LABEL_REMOTE_NAMESPACE] == "apps"
    assert body["spec"]["remoteRef"] == {"namespace": "apps", "name": "cache"}
    assert body["spec"]["scope"] == {"name": "k1"}
    if provider == "gcp":
        assert body["spec"]["subnet"] == {"name": NET_ID}
        assert body["spec"]["nodeType"] == "REDIS_SHARED_CORE_NANO" and body["spec"]["shardCount"] == 3
    else:
        assert body["spec"]["ipRange"] == {"name": NET_ID}
        assert body["spec"]["instance"][provider]["shardCount"] in (3, 2)


@pytest.mark.parametrize(("provider", "message"), [("aws", "failed to map redisTier to cacheNodeType"),
                                                   ("gcp", "failed to map redisTier to nodeType"),
                                                   ("azure", "Failed to map redisTier to SKU Capacity")])
def test_unknown_tier_is_an_error_and_no_mirror(provider: str, message: str) -> None:
    out = plan(seen(skr(provider, spec={"redisTier": "X1"}), provider))
    assert out.create is None and st(out)["state"] == "Error"
    assert [c["message"] for c in st(out)["conditions"] if c["type"] == "Error"] == [message]


def test_gcp_subnet_missing_default_created_not_ready_and_not_owned() -> None:
    obj = skr("gcp")
    created = subnet_use(obj, None, None, "k1")
    assert created.create is not None and created.create["spec"] == {"cidr": "10.251.0.0/22"} and created.wait
    named = skr("gcp", spec={**SPECS["gcp"], "subnet": {"name": "mine"}})
    missing = plan(Seen(obj=named, provider="gcp", kyma="k1", kcp_namespace="kcp-system",
                        network=subnet_use(named, None, None, "k1")))
    assert [(c["reason"], c["message"]) for c in st(missing)["conditions"]] == [
        ("SubnetNotFound", "Specified GcpSubnet mine does not exist")]
    waiting = plan(Seen(obj=obj, provider="gcp", kyma="k1", kcp_namespace="kcp-system",
                        network=subnet_use(obj, network(ready=False), None, "k1")))
    assert waiting.create is None and waiting.step.requeue_after == 10
    foreign = subnet_use(obj, network(), kcp_subnet(kyma="other"), "k1")
    out = plan(Seen(obj=obj, provider="gcp", kyma="k1", kcp_namespace="kcp-system", network=foreign))
    assert out.create is None and [c["reason"] for c in st(out)["conditions"]] == ["NotOwned"]


def test_iprange_missing_and_foreign_mirror() -> None:
    named = skr(spec={**SPECS["aws"], "ipRange": {"name": "gone"}})
    out = plan(Seen(obj=named, provider="aws", kyma="k1", kcp_namespace="kcp-system", network=decide(named, None)))
    assert [c["reason"] for c in st(out)["conditions"]] == ["IpRangeNotFound"]
    out = plan(seen(skr(status={"id": ID}), kcp=kcp(kyma="other")))
    assert out.create is None and out.patch is None and st(out)["state"] == "Error"


def test_quota_of_new_clusters() -> None:
    others = [skr() for _ in range(5)]
    for i, o in enumerate(others):
        o["metadata"] = {**o["metadata"], "name": f"c{i}", "creationTimestamp": "2025-01-01T00:00:00Z"}
    obj = skr()
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    out = plan(seen(obj, everyone=[*others, obj], quota=5))
    assert out.create is None and [c["type"] for c in st(out)["conditions"]] == ["QuotaExceeded"]


@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_ready_projects_and_creates_the_secret_with_the_original_keys(provider: str) -> None:
    status = {"discoveryEndpoint": "10.0.0.5:6379", "authString": "s3cret", "caCert": "PEM"}
    out = plan(seen(skr(provider, status={"id": ID}), provider, kcp=kcp(provider, READY, status)))
    assert st(out)["state"] == "Ready"
    secret = out.secret_create
    assert secret is not None and out.patch is None
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    keys = {"aws": {"discoveryEndpoint", "host", "port", "authString"},
            "gcp": {"discoveryEndpoint", "host", "port", "authString", "CaCert.pem"},
            "azure": {"primaryEndpoint", "host", "port", "readEndpoint", "readHost", "readPort", "authString"}}
    assert set(data) == keys[provider] and data["host"] == "10.0.0.5" and data["port"] == "6379"
    assert secret["metadata"]["labels"][rediscluster_plan.LABEL_STATUS_ID] == ID


def test_extra_data_rendered_and_bounded() -> None:
    assert auth_secret_data("aws", {"discoveryEndpoint": "h:1"}, {"url": "redis://{{.host}}:{{.port}}"}) == {
        "url": "redis://h:1", "discoveryEndpoint": "h:1", "host": "h", "port": "1"}
    obj = skr(spec={**SPECS["aws"], "authSecret": {"extraData": {f"k{i}": "x" for i in range(65)}}})
    out = plan(seen(obj))
    assert out.create is None and [c["reason"] for c in st(out)["conditions"]] == ["InvalidExtraData"]


@pytest.mark.parametrize(("provider", "spec", "patch"), [
    ("aws", {"redisTier": "C2", "shardCount": 4, "replicasPerShard": 1},
     {"spec": {"instance": {"aws": {"cacheNodeType": "cache.t4g.medium", "shardCount": 4}}}}),
    ("gcp", {"redisTier": "C1", "shardCount": 3, "replicasPerShard": 2},
     {"spec": {"replicasPerShard": 2}}),
    ("azure", {"redisTier": "C4", "shardCount": 2, "replicasPerPrimary": 1},
     {"spec": {"instance": {"azure": {"sku": {"capacity": 2}}}}}),
])
def test_changes_reach_the_mirror_only_when_ready(provider: str, spec: dict[str, Any], patch: dict[str, Any]) -> None:
    status = {"discoveryEndpoint": "10.0.0.5:6379"}
    out = plan(seen(skr(provider, spec=spec, status=READY_SKR), provider, kcp=kcp(provider, READY, status)))
    assert out.patch == patch and out.step.requeue_after == 5
    assert (out.step.status or {}).get("state", "Ready") == ("Updating" if provider == "azure" else "Ready")
    if provider == "azure":  # the Ready condition goes, so the KCP's next Ready ends the update
        assert [c["type"] for c in st(out)["conditions"]] == []
        back = plan(seen(skr(provider, spec=spec, status={**READY_SKR, "state": "Updating", "conditions": []}),
                         provider, kcp=kcp(provider, READY, status, spec={"instance": desired_for(provider, spec)})))
        assert st(back)["state"] == "Ready" and back.patch is None
    waiting = plan(seen(skr(provider, spec=spec, status={"id": ID, "state": "Updating"}), provider,
                        kcp=kcp(provider, [condition("Updating", True, "Updating", "", NOW)])))
    assert waiting.patch is None


def test_steady_state_writes_nothing() -> None:
    status = {"discoveryEndpoint": "10.0.0.5:6379"}
    first = plan(seen(skr(status=READY_SKR), kcp=kcp(conds=READY, status=status)))
    secret = first.secret_create
    assert secret is not None
    again = plan(seen(skr(status=READY_SKR), kcp=kcp(conds=READY, status=status), secret=secret))
    assert again.step.writes == () and again.patch is None


def test_secret_of_someone_else_is_never_touched() -> None:
    theirs = {"metadata": {"name": "cache", "namespace": "apps", "labels": {}}}
    out = plan(seen(skr(status=READY_SKR), kcp=kcp(conds=READY), secret=theirs))
    assert out.secret_update is None and st(out)["state"] == "Error"
    going = plan(seen(skr(status=READY_SKR, deleting=True), kcp=kcp(conds=READY), secret=theirs))
    assert going.secret_delete is None and going.delete == ID


@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_deletion_order_secret_then_mirror_then_finalizer(provider: str) -> None:
    ours = {"metadata": {"name": "cache", "namespace": "apps", "finalizers": [names.FINALIZER],
                         "labels": {rediscluster_plan.LABEL_STATUS_ID: ID}}}
    obj = skr(provider, status=READY_SKR, deleting=True)
    first = plan(seen(obj, provider, kcp=kcp(provider, READY), secret=ours))
    assert first.secret_release == "cache" and first.secret_delete == "cache" and first.delete is None
    second = plan(seen(obj, provider, kcp=kcp(provider, READY)))
    assert second.delete == ID and st(second)["state"] == "Deleting"
    third = plan(seen(obj, provider, kcp=kcp(provider, READY, deleting=True)))
    assert third.delete is None and third.step.remove_finalizer is None
    last = plan(seen(obj, provider))
    assert last.step.remove_finalizer == names.FINALIZER


def test_render_rediscluster() -> None:
    scope = {"metadata": {"name": "k1", "namespace": "kcp-system"}, "spec": {"provider": "gcp", "kymaName": "k1"}}
    rows = render_clusters(scope, [{"kind": "GcpRedisCluster", "metadata": {"name": "c"}, "spec": SPECS["gcp"]},
                                   {"kind": "AwsRedisCluster", "metadata": {"name": "a"}, "spec": SPECS["aws"]},
                                   {"kind": "GcpRedisCluster", "metadata": {"name": "x"}, "spec": {"redisTier": "C2"}}])
    assert [r.state for r in rows] == ["Ready", "Error", "Error"]
    assert rows[0].kcp["kind"] == "GcpRedisCluster" and "CaCert.pem" in rows[0].plan[-1]


def _schema(provider: str) -> Any:
    from kubedev.schema import Schema
    from tasks.cloud import install

    kind = rediscluster_plan.skr_kind(provider).kind
    crd = next(c for c in install.load_crds("skr", provider=provider) if c["spec"]["names"]["kind"] == kind)
    return Schema.compile(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def _reasons(provider: str, spec: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    schema = _schema(provider)
    errors = schema.validate({"spec": spec}, {"spec": old} if old is not None else None)
    return [f"{e.reason}:{e.field}" for e in errors]


def test_the_crds_rules() -> None:
    assert _reasons("aws", {"redisTier": "C8", "shardCount": 500, "replicasPerShard": 5}) == []
    assert _reasons("aws", {"redisTier": "C9", "shardCount": 501, "replicasPerShard": 6})
    assert _reasons("aws", {"redisTier": "C1", "shardCount": 1, "replicasPerShard": 0, "engineVersion": "7.0"},
                    {"redisTier": "C1", "shardCount": 1, "replicasPerShard": 0, "engineVersion": "7.1"})
    assert _reasons("gcp", {"redisTier": "C1", "shardCount": 250, "replicasPerShard": 0}) == []
    assert _reasons("gcp", {"redisTier": "C1", "shardCount": 126, "replicasPerShard": 1})
    assert _reasons("gcp", {"redisTier": "C1", "shardCount": 84, "replicasPerShard": 2})
    assert _reasons("gcp", {"redisTier": "C2", "shardCount": 1, "replicasPerShard": 3})
    assert _reasons("azure", {"redisTier": "C7", "shardCount": 10}) == []
    assert _reasons("azure", {"redisTier": "C1", "shardCount": 11})
    assert _reasons("azure", {"redisTier": "C3", "replicasPerPrimary": 2}, {"redisTier": "C3", "replicasPerPrimary": 1})
    assert _reasons("azure", {"redisTier": "C3", "redisConfiguration": {"maxclients": "1"}},
                    {"redisTier": "C3", "redisConfiguration": {"maxclients": "2"}})
    for provider in ("aws", "azure", "gcp"):
        spec = {**SPECS[provider], "authSecret": {"extraData": {f"k{i}": "x" for i in range(65)}}}
        assert _reasons(provider, spec) == ["FieldValueTooMany:spec.authSecret.extraData"]


def test_render_command(tmp_path: Any) -> None:
    import yaml
    from typer.testing import CliRunner

    from reconcilery.cli import app

    scope = {"apiVersion": "cloud-control.kyma-project.io/v1beta1", "kind": "Scope",
             "metadata": {"name": "k1", "namespace": "kcp-system"}, "spec": {"kymaName": "k1", "provider": "aws"}}
    (tmp_path / "scope.yaml").write_text(yaml.safe_dump(scope))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"apiVersion": "cloud-resources.kyma-project.io/v1beta1",
                                                     "kind": "AwsRedisCluster", "metadata": {"name": "c"},
                                                     "spec": SPECS["aws"]}))
    result = CliRunner().invoke(app, ["render", "rediscluster", "-f", str(tmp_path / "c.yaml"),
                                      "--scope", str(tmp_path / "scope.yaml")])
    assert result.exit_code == 0, result.output
    assert "RedisCluster" in result.output and "Ready" in result.output


class _Ctx:
    """What :func:`tasks.cloud.skr.rediscluster.subnet` uses of an SkrContext: the SKR GcpSubnets by name,
    the KCP GcpSubnets by id, creates."""

    kyma = "k1"

    def __init__(self, subnets: dict[str, dict[str, Any]], kcp_subnets: dict[str, dict[str, Any]]) -> None:
        self.subnets, self.kcp_subnets = subnets, kcp_subnets
        self.created: list[dict[str, Any]] = []
        self.skr = self

    def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.subnets.get(name)

    def mirror(self, res: Any, ident: str) -> dict[str, Any] | None:
        return self.kcp_subnets.get(ident)

    def create(self, res: Any, body: dict[str, Any]) -> None:
        self.created.append(body)

    def forget(self, res: Any) -> None:
        pass


def test_the_subnet_read_creates_the_default_and_gives_it_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.cloud.skr import kind, rediscluster

    ctx = _Ctx({}, {})
    turns: list[str] = []

    def turn(c: Any, namespace: str, name: str, **_: Any) -> None:
        turns.append(name)
        c.subnets[name] = network()  # its turn made it Ready with its mirror
        c.kcp_subnets[NET_ID] = kcp_subnet()

    monkeypatch.setattr(kind, "reconcile", turn)
    use = rediscluster.subnet(ctx, skr("gcp"))  # type: ignore[arg-type]
    assert [b["metadata"]["name"] for b in ctx.created] == ["default"] and turns == ["default"]
    assert use.ready and use.kcp_name == NET_ID
    theirs = _Ctx({"mine": network(name="mine")}, {NET_ID: kcp_subnet(kyma="other", name="mine")})
    use = rediscluster.subnet(theirs, skr("gcp", spec={**SPECS["gcp"], "subnet": {"name": "mine"}}))  # type: ignore[arg-type]
    assert use.not_owned and theirs.created == []


@pytest.mark.parametrize(("scope", "ready"), [("cloud-scope.yaml", "AwsRedisCluster"),
                                               ("cloud-scope-gcp.yaml", "GcpRedisCluster"),
                                               ("cloud-scope-azure.yaml", "AzureRedisCluster")])
def test_the_render_example_renders_one_cluster_per_provider_and_passes_its_crd(scope: str, ready: str) -> None:
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[3] / "examples" / "render"
    docs = list(yaml.safe_load_all((root / "cloud-redisclusters.yaml").read_text()))
    rows = render_clusters(yaml.safe_load((root / scope).read_text()), docs)
    assert [r.kind for r in rows if r.state == "Ready"] == [ready]
    provider = rows[[r.kind for r in rows].index(ready)].provider
    doc = next(d for d in docs if d["kind"] == ready)
    assert _schema(provider).validate({"spec": doc["spec"]}) == []
