"""The SKR Redis instance plan (pure): id, IpRange, mirror, projection, modifications, auth Secret,
deletion, ownership; cases from the notes (§2.5, §3.5, §3.6, §5.1, §7.1) and the original's steps."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.toolkit.conditions import condition
from tasks.cloud import names
from tasks.cloud.skr import redisinstance_plan
from tasks.cloud.skr.defaultiprange_plan import decide
from tasks.cloud.skr.redisinstance_plan import Seen, auth_secret, auth_secret_data, render_extra_data
from tests.unit.cloud.redis_common import SecretWrites, mirror_meta, network_object

ID = "0b0c5bd2-54a4-4a4e-9d4e-3c1f4b2f6a10"
NEW = "7f1de3b0-1c1e-4b5e-9d3a-5b8c9d0e1f2a"
IPR_ID = "a3c1b2d4-0000-4000-8000-000000000001"
NOW = "2026-01-01T00:00:00Z"


def t(s: float) -> float:
    return s


def skr(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, finalizer: bool = True,
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cache", "namespace": "apps", "labels": {}}
    if finalizer:
        meta["finalizers"] = [names.FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": spec if spec is not None else {"redisTier": "S1"}, "status": status or {}}


def iprange(ready: bool = True) -> dict[str, Any]:
    return network_object(IPR_ID, ready=ready)


def kcp(conds: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None,
        instance: dict[str, Any] | None = None, kyma: str = "k1", deleting: bool = False) -> dict[str, Any]:
    return {"metadata": mirror_meta(ID, kyma, deleting),
            "spec": {"instance": instance or {"aws": {"cacheNodeType": "cache.t4g.small", "engineVersion": "7.0",
                                                      "authEnabled": False, "autoMinorVersionUpgrade": False,
                                                      "readReplicas": 0}}},
            "status": {**(status or {}), "conditions": conds or []}}


class Planned(SecretWrites):
    """The plan's writes as the tests name them (the auth Secret's ``secret_*``)."""

    def __init__(self, outcome: Any) -> None:
        super().__init__(outcome, names.REDIS_INSTANCE)


def plan(*args: Any) -> Planned:
    return Planned(redisinstance_plan.plan(*args))


def seen(obj: dict[str, Any], provider: str = "aws", **kw: Any) -> Seen:
    """``iprange``: the SKR IpRange as read (``None``: missing), decided on as the reader does."""
    kw["iprange"] = decide(obj, kw.get("iprange", iprange()))
    return Seen(obj=obj, provider=provider, kyma="k1", kcp_namespace="kcp-system", **kw)


READY_KCP = [condition("Ready", True, "Ready", "Redis instance is ready", NOW)]
READY_SKR = {"id": ID, "state": "Ready", "conditions": READY_KCP}
ENDPOINTS = {"primaryEndpoint": "10.0.0.5:6379", "readEndpoint": "10.0.0.6:6379", "authString": "s3cret"}


def test_new_object_gets_id_finalizer_and_mirror_in_one_turn() -> None:
    out = plan(seen(skr(finalizer=False)), NEW, t, NOW)
    assert out.label_id == NEW
    assert out.step.add_finalizer == names.FINALIZER
    assert out.step.status == {"id": NEW, "state": "Creating"}
    body = out.create
    assert body is not None
    assert body["metadata"]["name"] == NEW and body["metadata"]["namespace"] == "kcp-system"
    assert body["metadata"]["labels"][names.LABEL_KYMA_NAME] == "k1"
    assert body["metadata"]["annotations"][names.LABEL_REMOTE_NAMESPACE] == "apps"
    assert body["spec"]["remoteRef"] == {"namespace": "apps", "name": "cache"}
    assert body["spec"]["scope"] == {"name": "k1"} and body["spec"]["ipRange"] == {"name": IPR_ID}
    assert body["spec"]["instance"]["aws"]["cacheNodeType"] == "cache.t4g.small"


def test_unknown_tier_is_an_error_and_no_mirror() -> None:
    out = plan(seen(skr({"redisTier": "S9"})), NEW, t, NOW)
    assert out.create is None
    status = out.step.status or {}
    assert status["state"] == "Error"
    error = next(c for c in status["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("Error", "failed to map redisTier to cacheNodeType")
    assert out.step.requeue_after is None
    gcp = plan(seen(skr({"redisTier": "S9"}), provider="gcp"), NEW, t, NOW)
    assert "failed to map redisTier to tier and memorySizeGb" in str(gcp.step.status)


def test_override_is_used_in_the_mirror() -> None:
    out = plan(seen(skr({"redisTier": "S1"}), overrides={"S1": "cache.t3.micro"}), NEW, t, NOW)
    assert out.create is not None and out.create["spec"]["instance"]["aws"]["cacheNodeType"] == "cache.t3.micro"


def test_explicit_iprange_missing() -> None:
    out = plan(seen(skr({"redisTier": "S1", "ipRange": {"name": "mine"}}), iprange=None), NEW, t, NOW)
    error = next(c for c in (out.step.status or {})["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("IpRangeNotFound", "Specified IpRange mine does not exist")
    assert out.create is None


def test_default_iprange_created_when_missing_then_waited_for() -> None:
    created = seen(skr(), iprange=None).iprange.create
    assert created is not None and created["metadata"]["name"] == "default"
    assert created["metadata"]["labels"]["app.kubernetes.io/name"] == "default-iprange"
    assert "cidr" not in created["spec"]
    out = plan(seen(skr(), iprange=None), NEW, t, NOW)
    assert out.create is None and out.label_id is None and out.step.requeue_after
    waiting = plan(seen(skr(), iprange=iprange(ready=False)), NEW, t, NOW)
    assert waiting.create is None and waiting.step.requeue_after


@pytest.mark.parametrize("bad", ["..", "x", ID.upper()])
def test_invalid_id_is_refused_without_kcp(bad: str) -> None:
    out = plan(seen(skr(status={"id": bad})), NEW, t, NOW)
    assert "InvalidId" in str(out.step.status) and out.create is None and out.delete is None


def test_foreign_mirror_is_not_owned() -> None:
    out = plan(seen(skr(status={"id": ID}), kcp=kcp(kyma="other")), NEW, t, NOW)
    assert "NotOwned" in str(out.step.status)
    assert out.patch is None and out.secret_create is None
    gone = plan(seen(skr(status={"id": ID}, deleting=True), kcp=kcp(kyma="other")), NEW, t, NOW)
    assert gone.delete is None and gone.step.remove_finalizer is None


def test_waits_for_kcp_conditions() -> None:
    out = plan(seen(skr(status={"id": ID, "state": "Creating"}), kcp=kcp()), NEW, t, NOW)
    assert out.step.status is None and out.step.requeue_after == 20


def test_kcp_ready_projects_ready_and_creates_the_secret() -> None:
    out = plan(seen(skr(status={"id": ID, "state": "Creating"}), kcp=kcp(READY_KCP, ENDPOINTS)), NEW, t, NOW)
    status = out.step.status or {}
    assert status["state"] == "Ready"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Ready", "Ready", "Redis instance is ready")]
    secret = out.secret_create
    assert secret is not None and secret["metadata"]["name"] == "cache" and secret["metadata"]["namespace"] == "apps"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {"primaryEndpoint": "10.0.0.5:6379", "host": "10.0.0.5", "port": "6379",
                    "readEndpoint": "10.0.0.6:6379", "readHost": "10.0.0.6", "readPort": "6379",
                    "authString": "s3cret"}
    assert secret["metadata"]["finalizers"] == [names.FINALIZER]
    assert secret["metadata"]["labels"]["cloud-resources.kyma-project.io/redisInstanceStatusId"] == ID


def test_kcp_error_projects_error_with_its_message() -> None:
    conds = [condition("Error", True, "CloudProviderError", "Failed to create RedisInstance", NOW)]
    out = plan(seen(skr(status={"id": ID, "state": "Creating"}), kcp=kcp(conds)), NEW, t, NOW)
    status = out.step.status or {}
    assert status["state"] == "Error"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Error", "Error", "Failed to create RedisInstance")]
    assert out.step.requeue_after is None and out.secret_create is None


def test_kcp_updating_projects_updating() -> None:
    conds = [*READY_KCP, condition("Updating", True, "Updating", "Updating auth", NOW)]
    out = plan(seen(skr(status=READY_SKR), kcp=kcp(conds)), NEW, t, NOW)
    status = out.step.status or {}
    assert status["state"] == "Updating"
    assert [c["type"] for c in status["conditions"]] == ["Updating"]


def test_tier_change_within_family_patches_the_mirror() -> None:
    obj = skr({"redisTier": "S2", "authEnabled": True, "parameters": {"a": "1"}}, status=READY_SKR)
    current = kcp(READY_KCP, ENDPOINTS, instance={"aws": {"cacheNodeType": "cache.t4g.small", "engineVersion": "7.0",
                                                          "authEnabled": False, "readReplicas": 0,
                                                          "parameters": {"a": "0", "b": "2"}}})
    out = plan(seen(obj, kcp=current), NEW, t, NOW)
    assert out.patch == {"spec": {"instance": {"aws": {"cacheNodeType": "cache.t4g.medium", "authEnabled": True,
                                                       "parameters": {"a": "1", "b": None}}}}}


def test_modifications_wait_for_ready() -> None:
    obj = skr({"redisTier": "S2"}, status={"id": ID, "state": "Creating"})
    out = plan(seen(obj, kcp=kcp([condition("Updating", True, "Updating", "x", NOW)])), NEW, t, NOW)
    assert out.patch is None and out.secret_create is None


def test_azure_capacity_change_sets_updating() -> None:
    obj = skr({"redisTier": "P2"}, status=READY_SKR)
    current = kcp(READY_KCP, ENDPOINTS, instance={"azure": {"sku": {"family": "P", "capacity": 1},
                                                            "redisVersion": "6.0"}})
    out = plan(seen(obj, provider="azure", kcp=current), NEW, t, NOW)
    assert out.patch == {"spec": {"instance": {"azure": {"sku": {"capacity": 2, "family": "P"}}}}}
    assert (out.step.status or {})["state"] == "Updating"


def test_secret_updated_when_endpoint_or_auth_changes_only() -> None:
    obj = skr(status=READY_SKR)
    current_secret = auth_secret(obj, ID, ENDPOINTS)
    same = plan(seen(obj, kcp=kcp(READY_KCP, ENDPOINTS), secret=current_secret), NEW, t, NOW)
    assert same.secret_update is None and same.secret_create is None and same.step.status is None
    no_auth = {k: v for k, v in ENDPOINTS.items() if k != "authString"}
    changed = plan(seen(obj, kcp=kcp(READY_KCP, no_auth), secret=current_secret), NEW, t, NOW)
    assert changed.secret_update is not None and "authString" not in changed.secret_update["data"]


def test_secret_of_someone_else_is_never_touched() -> None:
    theirs = {"metadata": {"name": "cache", "namespace": "apps", "labels": {}}, "data": {"x": "eQ=="}}
    out = plan(seen(skr(status=READY_SKR), kcp=kcp(READY_KCP, ENDPOINTS), secret=theirs), NEW, t, NOW)
    assert out.secret_update is None and "not the auth Secret" in str(out.step.status)
    gone = plan(seen(skr(status=READY_SKR, deleting=True), kcp=kcp(READY_KCP), secret=theirs), NEW, t, NOW)
    assert gone.secret_delete is None and gone.delete == ID


def test_auth_secret_name_labels_annotations_and_extra_data() -> None:
    obj = skr({"redisTier": "S1", "authSecret": {"name": "conn", "labels": {"team": "a"},
                                                 "annotations": {"note": "x"},
                                                 "extraData": {"url": "redis://{{.host}}:{{ .port }}",
                                                               "host": "{{.host}}-override",
                                                               "odd": "{{ if .host }}y{{ end }}",
                                                               "missing": "{{.nope}}"}}})
    secret = auth_secret(obj, ID, ENDPOINTS)
    assert secret["metadata"]["name"] == "conn" and secret["metadata"]["labels"]["team"] == "a"
    assert secret["metadata"]["annotations"] == {"note": "x"}
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["url"] == "redis://10.0.0.5:6379"
    assert data["host"] == "10.0.0.5"  # base keys win
    assert data["odd"] == "{{ if .host }}y{{ end }}" and data["missing"] == "<no value>"


def test_render_and_data_edges() -> None:
    assert render_extra_data({"a": "plain"}, {}) == {"a": "plain"}
    assert auth_secret_data({"primaryEndpoint": "host-only"}, None) == {"primaryEndpoint": "host-only"}
    assert auth_secret_data({}, None) == {}


def test_deletion_order_secret_then_mirror_then_finalizer() -> None:
    obj = skr(status=READY_SKR, deleting=True)
    secret = auth_secret(obj, ID, ENDPOINTS)
    first = plan(seen(obj, kcp=kcp(READY_KCP), secret=secret), NEW, t, NOW)
    assert first.secret_release == "cache" and first.secret_delete == "cache" and first.delete is None
    assert "DeletingAuthSecret" in str(first.step.status)
    second = plan(seen(obj, kcp=kcp(READY_KCP), secret=None), NEW, t, NOW)
    assert second.delete == ID and (second.step.status or {})["state"] == "Deleting"
    assert "Deleting RedisInstance cache" in str(second.step.status)
    third = plan(seen(obj, kcp=kcp(READY_KCP, deleting=True)), NEW, t, NOW)
    assert third.delete is None and third.step.remove_finalizer is None and third.step.requeue_after
    last = plan(seen(obj, kcp=None), NEW, t, NOW)
    assert last.step.remove_finalizer == names.FINALIZER


def test_deleting_without_id_or_finalizer() -> None:
    assert plan(seen(skr(deleting=True)), NEW, t, NOW).step.remove_finalizer == names.FINALIZER
    assert plan(seen(skr(deleting=True, finalizer=False)), NEW, t, NOW).step.remove_finalizer is None


KEYS = st.sampled_from(["host", "port", "authString", "readHost", "nope", "x y", ""])


@given(st.dictionaries(st.text(max_size=8), st.one_of(st.text(max_size=40), st.builds(
    lambda k, pre, post: f"{pre}{{{{ .{k} }}}}{post}", KEYS, st.text(max_size=5), st.text(max_size=5)))),
       st.dictionaries(st.sampled_from(["host", "port", "authString", "readHost"]), st.text(max_size=10)))
def test_extra_data_never_fails_and_renders_known_fields(templates: dict[str, str], data: dict[str, str]) -> None:
    out = render_extra_data(templates, data)
    assert set(out) == set(templates)
    for key, template in templates.items():
        if "{{" not in template and "}}" not in template:
            assert out[key] == template  # plain text passes through unchanged
    secret = auth_secret({"metadata": {"name": "n", "namespace": "ns"}, "spec": {"authSecret": {
        "extraData": templates}}}, ID, {"primaryEndpoint": "h:1", "authString": "a"})
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded["host"] == "h" and decoded["port"] == "1" and decoded["authString"] == "a"  # base keys win


FLOOD = "{{" * 40_000  # issue 27: 80 KB of "{{" took 33 s per value with re.findall(r"\{\{.*?\}\}")


@pytest.mark.parametrize(("template", "rendered"), [
    (FLOOD, FLOOD),  # never closed: text (bench/extradata.py times it: one scan, linear)
    (FLOOD + "}}", FLOOD + "}}"),  # one action that is no field: verbatim
    ("{{" * 5 + ".host}}", "{{" * 5 + ".host}}"),
    ("{{.host}}" * 3 + "{{", "HHH{{"),
    ("a}}b{{ .host }}c{{- .port -}}", "a}}bHc<no value>"),
    ("{{\n.host\n}}", "H"),
    ("{{.host}}{{ if .host }}{{ end }}", "{{.host}}{{ if .host }}{{ end }}"),
])
@pytest.mark.timeout(10)  # the quadratic regex took 33 s on FLOOD: a regression fails, not just slows
def test_templates_render_in_one_scan_as_the_regex_did(template: str, rendered: str) -> None:
    assert render_extra_data({"k": template}, {"host": "H"}) == {"k": rendered}


@pytest.mark.timeout(10)  # ~264 s with the regex: a regression fails here
def test_eight_flooded_values_render_as_text() -> None:
    """The issue's attack: ``{{`` x 40,000 in eight values comes back unchanged (linear: the whole suite
    would stall for minutes otherwise; bench/extradata.py prints the time)."""
    templates = {f"v{i}": FLOOD for i in range(8)}
    assert render_extra_data(templates, {"host": "h"}) == templates


@pytest.mark.parametrize(("extra", "message"), [
    ({f"v{i}": FLOOD for i in range(8)}, "authSecret.extraData.v0 is longer than 4096 characters"),
    ({f"k{i}": "x" for i in range(65)}, "authSecret.extraData has 65 keys, at most 64 are allowed"),
])
def test_extra_data_beyond_its_bounds_is_an_error_before_anything_is_made(extra: dict[str, str], message: str) -> None:
    obj = skr({"redisTier": "S1", "authSecret": {"extraData": extra}})
    out = plan(seen(obj), NEW, t, NOW)
    assert out.create is None and out.step.writes == () and out.step.add_finalizer is None
    status = out.step.status or {}
    assert status["state"] == "Error"
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Error", "InvalidExtraData", message)]
    assert redisinstance_plan.extra_data_invalid({f"k{i}": "x" * 4096 for i in range(64)}) is None  # the bounds pass


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
def test_the_crds_refuse_extra_data_beyond_the_plans_bounds(provider: str) -> None:
    """The same bounds in the CRDs' schemas (the API server refuses them at once: issue 27)."""
    from kubedev.schema import Schema
    from tasks.cloud import install

    crd = next(c for c in install.load_crds("skr", provider=provider)
               if c["spec"]["names"]["kind"] == redisinstance_plan.KINDS[provider].kind)
    schema = Schema.compile(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    spec = {"aws": {"redisTier": "S1"}, "gcp": {"redisTier": "S1"}, "azure": {"redisTier": "P1"}}[provider]

    def reasons(extra: dict[str, str]) -> list[tuple[str, str]]:
        errors = schema.validate({"spec": {**spec, "authSecret": {"extraData": extra}}})
        return [(e.reason, e.field) for e in errors if "extraData" in e.field]

    assert reasons({f"k{i}": "x" * 4096 for i in range(64)}) == []
    assert reasons({"v0": FLOOD}) == [("FieldValueTooLong", "spec.authSecret.extraData[v0]")]
    assert reasons({f"k{i}": "x" for i in range(65)}) == [("FieldValueTooMany", "spec.authSecret.extraData")]


def test_the_kcp_patch_names_the_validated_id_not_the_status_as_read() -> None:
    """Issue 27 (low): the mirror's patch is addressed by the id the plan checked (ownership before action),
    not re-read from the SKR object: with ``status.id`` emptied by the tenant (the id label still names the
    mirror, which is this object's own) the patch went to the name ``""``, the collection's path."""
    obj = skr({"redisTier": "S2"}, status={"state": "Ready", "conditions": READY_KCP})
    obj["metadata"]["labels"] = {names.LABEL_SKR_ID: ID}
    out = redisinstance_plan.plan(seen(obj, kcp=kcp(READY_KCP, ENDPOINTS)), NEW, t, NOW)
    patches = [w for w in out.writes if getattr(w, "cluster", "") == "kcp" and w.verb == "patch"]
    assert [(w.kind, w.name, w.namespace) for w in patches] == [("RedisInstance", ID, "kcp-system")]
    assert (out.status or {}).get("id") == ID


def test_an_auth_secret_too_large_once_rendered_is_an_error_not_a_refused_write() -> None:
    """Field actions grow a template (``{{.primaryEndpoint}}``: 20 characters, the endpoint 70): within the
    CRD's bounds the rendered data can pass the API server's 1 MiB; the plan says so instead of a failing
    write."""
    grow = "{{.primaryEndpoint}}" * 200  # 4000 characters
    obj = skr({"redisTier": "S1", "authSecret": {"extraData": {f"k{i}": grow for i in range(64)}}}, status=READY_SKR)
    endpoint = {**ENDPOINTS, "primaryEndpoint": "master.cm-" + "x" * 60 + ":6379"}
    out = plan(seen(obj, kcp=kcp(READY_KCP, endpoint)), NEW, t, NOW)
    assert out.secret_create is None and out.secret_update is None
    status = out.step.status or {}
    assert status["state"] == "Error" and status["conditions"][0]["reason"] == "InvalidExtraData"
    assert "at most 786432 are allowed" in status["conditions"][0]["message"]
