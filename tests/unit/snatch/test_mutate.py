"""Mutation tables: seed (kim-snatch docs) and notes (spec/snatch.md §3), with the issue's rules."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tasks.snatch.mutate import (
    MANAGED_BY_LABEL,
    POOL_LABEL,
    AdmissionRequest,
    ClusterContext,
    MalformedReview,
    Reason,
    admission_review,
    affinity_term,
    apply_patch,
    decide,
    parse_review,
    review_response,
)

POOL = "cpu-worker-0"
MANAGED = {MANAGED_BY_LABEL: "kyma"}
TERM = affinity_term(POOL)
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
ZONE_TERM = {"weight": 50, "preference": {"matchExpressions": [
    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}]}}
REQUIRED = {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}


def pod(spec_extra: dict[str, Any] | None = None, namespace: str = "kyma-system", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    spec.update(spec_extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace, **meta},
            "spec": spec}


def request_for(obj: Any, operation: str = "CREATE") -> AdmissionRequest:
    review = admission_review(obj if isinstance(obj, dict) else {"metadata": {"namespace": "kyma-system"}},
                              operation=operation)
    review["request"]["object"] = obj
    return parse_review(json.dumps(review).encode())


def ctx(present: bool = True, labels: dict[str, str] | None = MANAGED) -> ClusterContext:
    return ClusterContext(POOL, present, labels)


# (original pod spec additions, expected patch) — the notes' §3.3 shapes
PATCH_SHAPES = [
    ("no affinity", {}, [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {PREF: [TERM]}}}]),
    ("affinity null", {"affinity": None},
     [{"op": "replace", "path": "/spec/affinity", "value": {"nodeAffinity": {PREF: [TERM]}}}]),
    ("empty affinity", {"affinity": {}},
     [{"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {PREF: [TERM]}}]),
    ("only pod anti-affinity", {"affinity": {"podAntiAffinity": {"x": 1}}},
     [{"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {PREF: [TERM]}}]),
    ("nodeAffinity null", {"affinity": {"nodeAffinity": None}},
     [{"op": "replace", "path": "/spec/affinity/nodeAffinity", "value": {PREF: [TERM]}}]),
    ("only required", {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": REQUIRED}}},
     [{"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREF}", "value": [TERM]}]),
    ("preferred null", {"affinity": {"nodeAffinity": {PREF: None}}},
     [{"op": "replace", "path": f"/spec/affinity/nodeAffinity/{PREF}", "value": [TERM]}]),
    ("preferred empty", {"affinity": {"nodeAffinity": {PREF: []}}},
     [{"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREF}/0", "value": TERM}]),
    ("one existing preferred", {"affinity": {"nodeAffinity": {PREF: [ZONE_TERM]}}},
     [{"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREF}/1", "value": TERM}]),
    ("other pool preferred", {"affinity": {"nodeAffinity": {PREF: [ZONE_TERM, affinity_term("customer-gpu")]}}},
     [{"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREF}/2", "value": TERM}]),
    ("nodeSelector for another pool is left alone", {"nodeSelector": {POOL_LABEL: "customer-gpu"}},
     [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {PREF: [TERM]}}}]),
]


@pytest.mark.parametrize(("name", "extra", "expected"), PATCH_SHAPES, ids=[c[0] for c in PATCH_SHAPES])
def test_patch_shapes(name: str, extra: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    original = pod(extra)
    decision = decide(request_for(original), ctx())
    assert decision.reason is Reason.MUTATED
    assert decision.patch == expected
    patched = apply_patch(original, decision.patch)
    terms = patched["spec"]["affinity"]["nodeAffinity"][PREF]
    assert terms[-1] == TERM and terms.count(TERM) == 1
    # every existing affinity rule is kept, in place
    for key, value in (original["spec"].get("affinity") or {}).items():
        if key != "nodeAffinity":
            assert patched["spec"]["affinity"][key] == value
    old_node = (original["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    for key, value in old_node.items():
        if key == PREF:
            assert terms[: len(value or [])] == (value or [])
        else:
            assert patched["spec"]["affinity"]["nodeAffinity"][key] == value
    assert patched["spec"].get("nodeSelector") == original["spec"].get("nodeSelector")


def test_seed_example_term() -> None:
    """The seed's example: weight 10, worker.gardener.cloud/pool In [cpu-worker-0]."""
    assert TERM == {"weight": 10, "preference": {"matchExpressions": [
        {"key": "worker.gardener.cloud/pool", "operator": "In", "values": ["cpu-worker-0"]}]}}


# (case, pod, operation, context, expected reason) — everything that admits unchanged
UNCHANGED = [
    ("term already present", pod({"affinity": {"nodeAffinity": {PREF: [TERM]}}}), "CREATE", ctx(),
     Reason.TERM_PRESENT),
    ("same preference other weight", pod({"affinity": {"nodeAffinity": {PREF: [{**TERM, "weight": 80}]}}}),
     "CREATE", ctx(), Reason.TERM_PRESENT),
    ("already scheduled", pod({"nodeName": "customer-node-0"}), "CREATE", ctx(), Reason.ALREADY_SCHEDULED),
    ("kube-system even if labelled", pod(namespace="kube-system"), "CREATE", ctx(), Reason.FORBIDDEN_NAMESPACE),
    ("namespace not labelled", pod(namespace="customer-apps"), "CREATE", ctx(labels={}),
     Reason.NAMESPACE_NOT_MANAGED),
    ("namespace labelled for someone else", pod(namespace="x"), "CREATE",
     ctx(labels={MANAGED_BY_LABEL: "customer"}), Reason.NAMESPACE_NOT_MANAGED),
    ("namespace unknown", pod(namespace="new"), "CREATE", ctx(labels=None), Reason.NAMESPACE_UNKNOWN),
    ("no kyma pool node", pod(), "CREATE", ctx(present=False), Reason.NO_POOL_NODE),
    ("update", pod(), "UPDATE", ctx(), Reason.OPERATION_IGNORED),
    ("delete", pod(), "DELETE", ctx(), Reason.OPERATION_IGNORED),
    ("object is a list", ["not", "a", "pod"], "CREATE", ctx(), Reason.MALFORMED_POD),
    ("object missing", None, "CREATE", ctx(), Reason.MALFORMED_POD),
    ("spec missing", {"kind": "Pod", "metadata": {"namespace": "kyma-system"}}, "CREATE", ctx(),
     Reason.MALFORMED_POD),
    ("affinity is a string", pod({"affinity": "x"}), "CREATE", ctx(), Reason.MALFORMED_POD),
    ("nodeAffinity is a list", pod({"affinity": {"nodeAffinity": []}}), "CREATE", ctx(), Reason.MALFORMED_POD),
    ("preferred is an object", pod({"affinity": {"nodeAffinity": {PREF: {}}}}), "CREATE", ctx(),
     Reason.MALFORMED_POD),
    ("object of another kind", {**pod(), "kind": "Deployment"}, "CREATE", ctx(), Reason.NOT_A_POD),
]


@pytest.mark.parametrize(("name", "obj", "operation", "context", "reason"), UNCHANGED,
                         ids=[c[0] for c in UNCHANGED])
def test_admits_unchanged(name: str, obj: Any, operation: str, context: ClusterContext, reason: Reason) -> None:
    request = request_for(obj, operation)
    decision = decide(request, context)
    assert decision.reason is reason
    assert decision.patch == []
    response = review_response(request, decision)["response"]
    assert response["allowed"] is True
    assert "patch" not in response and "patchType" not in response
    assert response["status"]["message"].startswith(reason.value)


def test_request_kind_not_pod() -> None:
    review = admission_review(pod())
    review["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert decide(parse_review(json.dumps(review)), ctx()).reason is Reason.NOT_A_POD


def test_namespace_falls_back_to_request_namespace() -> None:
    """The API server fills metadata.namespace, but a Pod without it takes request.namespace."""
    original = pod()
    del original["metadata"]["namespace"]
    review = admission_review(original)
    review["request"]["namespace"] = "kube-system"
    assert parse_review(json.dumps(review)).namespace == "kube-system"
    assert decide(parse_review(json.dumps(review)), ctx()).reason is Reason.FORBIDDEN_NAMESPACE


def test_response_envelope() -> None:
    review = admission_review(pod(), uid="abc-123")
    request = parse_review(json.dumps(review).encode(), "application/json; charset=utf-8")
    out = review_response(request, decide(request, ctx()))
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    resp = out["response"]
    assert resp["uid"] == "abc-123" and resp["allowed"] is True and resp["patchType"] == "JSONPatch"
    assert resp["status"]["code"] == 200
    ops = json.loads(base64.b64decode(resp["patch"]))
    assert ops == [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {PREF: [TERM]}}}]


def test_generate_name_used_for_logs() -> None:
    original = pod()
    del original["metadata"]["name"]
    original["metadata"]["generateName"] = "web-abc12-"
    assert parse_review(json.dumps(admission_review(original))).name == "web-abc12-"


MALFORMED = [
    ("empty body", b"", "application/json", 400, "empty"),
    ("whitespace body", b"  \n", "application/json", 400, "empty"),
    ("not json", b"{nope", "application/json", 400, "not JSON"),
    ("wrong content type", json.dumps(admission_review(pod())).encode(), "text/plain", 400, "contentType"),
    ("json array", b"[]", "application/json", 400, "JSON object"),
    ("v1beta1", json.dumps({**admission_review(pod()), "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
     "application/json", 400, "apiVersion"),
    ("wrong kind", json.dumps({**admission_review(pod()), "kind": "Pod"}).encode(), "application/json", 400,
     "kind"),
    ("no request", json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
     "application/json", 400, "no request"),
    ("no uid", json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": {"operation": "CREATE"}}).encode(), "application/json", 400, "uid"),
    ("too large", b" " * (7 * 1024 * 1024 + 1), "application/json", 413, "exceeds"),
]


@pytest.mark.parametrize(("name", "body", "content_type", "status", "fragment"), MALFORMED,
                         ids=[c[0] for c in MALFORMED])
def test_malformed_review(name: str, body: bytes, content_type: str, status: int, fragment: str) -> None:
    with pytest.raises(MalformedReview) as info:
        parse_review(body, content_type)
    assert info.value.status == status
    assert fragment in info.value.message
