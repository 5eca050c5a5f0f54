"""APIRule conversion v1beta1 <-> v2alpha1 (hub) <-> v2 (notes §1.5-§1.6) and the /convert review handling."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.apigateway.conversion import (
    ConversionError,
    convert,
    format_go_duration,
    parse_go_duration,
    translate_gateway,
    v1beta1_spec_annotation,
)
from tasks.apigateway.webhook import review_response

Obj = dict[str, Any]
G = "gateway.kyma-project.io"
ORIGINAL = f"{G}/original-version"
V1SPEC = f"{G}/v1beta1-spec"

JWT_ISTIO = {"authentications": [{"issuer": "https://issuer", "jwksUri": "https://issuer/jwks"}],
             "authorizations": [{"requiredScopes": ["read"]}]}
V1_SPEC: Obj = {
    "host": "shop",
    "service": {"name": "shop", "port": 8080},
    "gateway": "kyma-gateway.kyma-system.svc.cluster.local",
    "corsPolicy": {"allowOrigins": [{"exact": "https://a"}], "maxAge": "90.5s"},
    "timeout": 60,
    "rules": [
        {"path": "/health", "methods": ["GET"], "accessStrategies": [{"handler": "no_auth"}]},
        {"path": "/orders/{**}", "methods": ["GET", "POST"],
         "accessStrategies": [{"handler": "jwt", "config": JWT_ISTIO}],
         "mutators": [{"handler": "header", "config": {"headers": {"X-A": "1"}}},
                      {"handler": "cookie", "config": {"cookies": {"c": "v"}}}]},
        {"path": "/ory", "methods": ["GET"],
         "accessStrategies": [{"handler": "jwt", "config": {"trusted_issuers": ["https://i"], "jwks_urls": ["https://j"],
                                                            "required_scope": ["s"], "target_audience": ["a"]}}]},
    ],
}


def v1beta1(spec: Obj, annotations: Obj | None = None, status: Obj | None = None) -> Obj:
    meta: Obj = {"name": "shop", "namespace": "prod", "uid": "u-1", "resourceVersion": "7"}
    if annotations is not None:
        meta["annotations"] = annotations
    obj: Obj = {"apiVersion": f"{G}/v1beta1", "kind": "APIRule", "metadata": meta, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def test_v1beta1_to_hub_converts_every_convertible_field() -> None:
    hub = convert(v1beta1(copy.deepcopy(V1_SPEC), status={"APIRuleStatus": {"code": "SKIPPED", "desc": "d"},
                                                           "lastProcessedTime": "2026-01-01T00:00:00Z"}),
                  f"{G}/v2alpha1")
    assert hub["apiVersion"] == f"{G}/v2alpha1"
    assert hub["metadata"]["annotations"][ORIGINAL] == "v1beta1"
    annotated = json.loads(hub["metadata"]["annotations"][V1SPEC])
    assert annotated["rules"][0]["accessStrategies"] == [{"handler": "no_auth"}]
    assert hub["status"] == {"state": "Warning", "description": "d", "lastProcessedTime": "2026-01-01T00:00:00Z"}
    assert hub["spec"] == {
        "gateway": "kyma-system/kyma-gateway",
        "service": {"name": "shop", "port": 8080},
        "timeout": 60,
        "corsPolicy": {"allowOrigins": [{"exact": "https://a"}], "maxAge": 90},
        "hosts": ["shop"],
        "rules": [
            {"path": "/health", "methods": ["GET"], "noAuth": True},
            {"path": "/orders/{**}", "methods": ["GET", "POST"], "jwt": JWT_ISTIO,
             "request": {"headers": {"X-A": "1"}, "cookies": {"c": "v"}}},
            {"path": "/ory", "methods": ["GET"],
             "jwt": {"authentications": [{"issuer": "https://i", "jwksUri": "https://j"}],
                     "authorizations": [{"requiredScopes": ["s"], "audiences": ["a"]}]}},
        ],
    }


def test_the_v1beta1_spec_annotation_is_gos_json() -> None:
    spec = {"rules": [{"methods": ["GET"], "path": "/a&b", "accessStrategies": [{"config": {}, "handler": "allow"}]}],
            "host": "h", "corsPolicy": {"maxAge": "1m"}}
    assert v1beta1_spec_annotation(spec) == (
        '{"host":"h","gateway":null,"corsPolicy":{"maxAge":"1m0s"},"rules":[{"path":"/a\\u0026b",'
        '"methods":["GET"],"accessStrategies":[{"handler":"allow","config":{}}]}]}')


@pytest.mark.parametrize(("strategies", "path"), [
    ([{"handler": "oauth2_introspection", "config": {}}], "/a"),
    ([{"handler": "allow"}], "/a"),
    ([{"handler": "jwt", "config": {"trusted_issuers": ["a", "b"], "jwks_urls": ["c"]}}], "/a"),
    ([{"handler": "jwt", "config": ["not", "an", "object"]}], "/a"),
    ([{"handler": "no_auth"}], "/.*"),
])
def test_unconvertible_rules_leave_rules_empty(strategies: list[Obj], path: str) -> None:
    spec = {"host": "a.b", "gateway": "kyma-system/kyma-gateway", "service": {"name": "s", "port": 80},
            "rules": [{"path": "/ok", "methods": ["GET"], "accessStrategies": [{"handler": "no_auth"}]},
                      {"path": path, "methods": ["GET"], "accessStrategies": strategies}]}
    hub = convert(v1beta1(spec), f"{G}/v2alpha1")
    assert hub["spec"] == {"gateway": "kyma-system/kyma-gateway", "service": {"name": "s", "port": 80},
                           "hosts": ["a.b"]}
    back = convert(hub, f"{G}/v1beta1")
    assert back["spec"] == spec  # nothing lost: the annotation carries the v1beta1 spec


def test_v2_rules_from_the_annotation_for_objects_of_v2_origin() -> None:
    rules = [{"path": "/x", "methods": ["GET"], "extAuth": {"authorizers": ["oauth2"]}}]
    obj = v1beta1({"host": "a.b", "rules": [{"path": "/x", "methods": ["GET"],
                                            "accessStrategies": [{"handler": "no_auth"}]}]},
                  {ORIGINAL: "v2", f"{G}/v2alpha1-rules": json.dumps(rules)})
    hub = convert(obj, f"{G}/v2alpha1")
    assert hub["spec"]["rules"] == rules
    assert V1SPEC not in hub["metadata"]["annotations"]


@pytest.mark.parametrize(("annotations", "rules", "expected"), [
    (None, [{"path": "/a"}], "v2"),
    ({ORIGINAL: "v1beta1"}, [{"path": "/a"}], "v2"),
    ({ORIGINAL: "v1beta1"}, [], "v1beta1"),
    ({ORIGINAL: "v2alpha1"}, [{"path": "/a"}], "v2alpha1"),
])
def test_v2_to_hub_original_version(annotations: Obj | None, rules: list[Obj], expected: str) -> None:
    obj = {"apiVersion": f"{G}/v2", "kind": "APIRule", "metadata": {"name": "x", "namespace": "n"},
           "spec": {"hosts": ["a"], "rules": rules}, "status": {"state": "Ready", "observedGeneration": 3}}
    if annotations is not None:
        obj["metadata"]["annotations"] = annotations
    hub = convert(obj, f"{G}/v2alpha1")
    assert hub["metadata"]["annotations"][ORIGINAL] == expected
    assert hub["spec"] == obj["spec"] and hub["status"] == obj["status"]
    assert convert(hub, f"{G}/v2")["spec"] == obj["spec"]


def test_hub_to_v2_restores_v1beta1_fields_without_gateway() -> None:
    v1 = {"host": "shop", "gateway": "kyma-gateway.kyma-system.svc.cluster.local", "timeout": 30,
          "service": {"name": "s", "port": 1}, "corsPolicy": {"maxAge": "2m"}, "rules": []}
    hub = {"apiVersion": f"{G}/v2alpha1", "kind": "APIRule",
           "metadata": {"name": "x", "namespace": "n", "annotations": {ORIGINAL: "v1beta1",
                                                                       V1SPEC: v1beta1_spec_annotation(v1)}},
           "spec": {"hosts": ["other"], "corsPolicy": {"maxAge": 5}, "service": {"name": "t", "port": 2}}}
    v2 = convert(hub, f"{G}/v2")
    assert v2["spec"] == {"hosts": ["shop"], "corsPolicy": {"maxAge": 120}, "service": {"name": "s", "port": 1},
                          "gateway": "kyma-system/kyma-gateway", "timeout": 30}
    # a one-part legacy name is resolved against an empty namespace there (the original's quirk): dropped
    v1["gateway"] = "kyma-gateway"
    hub["metadata"]["annotations"][V1SPEC] = v1beta1_spec_annotation(v1)
    assert "gateway" not in convert(hub, f"{G}/v2")["spec"]
    # ... while v1beta1 -> v2alpha1 uses the APIRule's namespace
    assert convert(v1beta1(v1), f"{G}/v2alpha1")["spec"]["gateway"] == "prod/kyma-gateway"


@pytest.mark.parametrize(("state", "code"), [("Ready", "OK"), ("Error", "ERROR"), ("Warning", "WARNING"),
                                              ("Deleting", "OK")])
def test_hub_to_v1beta1_status_and_empty_spec_for_v2_origin(state: str, code: str) -> None:
    hub = {"apiVersion": f"{G}/v2alpha1", "kind": "APIRule",
           "metadata": {"name": "x", "namespace": "n", "annotations": {ORIGINAL: "v2"}},
           "spec": {"hosts": ["a"], "rules": [{"path": "/a", "methods": ["GET"], "noAuth": True}]},
           "status": {"state": state, "description": "why", "lastProcessedTime": "t", "observedGeneration": 2}}
    v1 = convert(hub, f"{G}/v1beta1")
    assert v1["spec"] == {}
    assert v1["status"] == {"APIRuleStatus": {"code": code, "desc": "why"}, "lastProcessedTime": "t",
                            "observedGeneration": 2}


@pytest.mark.parametrize(("name", "namespace", "expected"), [
    ("gw.ns.svc.cluster.local", "x", "ns/gw"),
    ("gw.ns.svc.cluster", "x", "ns/gw"),
    ("gw.ns.svc", "x", "ns/gw"),
    ("gw.ns", "x", "ns/gw"),
    ("gw", "x", "x/gw"),
])
def test_gateway_translation(name: str, namespace: str, expected: str) -> None:
    assert translate_gateway(name, namespace) == expected


def test_gateway_translation_rejects_other_formats() -> None:
    with pytest.raises(ValueError, match=r"gateway name \(a.b.c.d.e.f\) is not in old gateway format"):
        translate_gateway("a.b.c.d.e.f", "x")


@pytest.mark.parametrize(("text", "seconds", "canonical"), [
    ("90s", 90, "1m30s"), ("1h", 3600, "1h0m0s"), ("1.5s", 1.5, "1.5s"), ("500ms", 0.5, "500ms"),
    ("0", 0, "0s"), ("2h45m", 9900, "2h45m0s"),
])
def test_go_durations(text: str, seconds: float, canonical: str) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)
    assert format_go_duration(parse_go_duration(text)) == canonical


def test_errors() -> None:
    with pytest.raises(ConversionError):
        convert({"apiVersion": "v1", "kind": "ConfigMap"}, f"{G}/v2")
    with pytest.raises(ConversionError, match="unsupported apiVersion"):
        convert({"apiVersion": f"{G}/v3", "kind": "APIRule"}, f"{G}/v2")
    # an unreadable annotation never fails a read (the original fails the whole review)
    broken = {"apiVersion": f"{G}/v2alpha1", "kind": "APIRule",
              "metadata": {"name": "x", "annotations": {ORIGINAL: "v1beta1", V1SPEC: "{not json"}},
              "spec": {"hosts": ["a"]}}
    assert convert(broken, f"{G}/v1beta1")["spec"] == {}
    assert convert(broken, f"{G}/v2")["spec"] == {"hosts": ["a"]}


# ---- round trip: v1beta1 -> v2alpha1 -> v1beta1 keeps the spec ----------------------------------------

_names = st.text(alphabet="abcdefghij-", min_size=1, max_size=8).filter(lambda s: s[0] != "-" and s[-1] != "-")
_paths = st.sampled_from(["/", "/a", "/a/{*}", "/a/{**}", "/*", "/.*", "/api/v1/[a-z]+", "/x&y"])
_strategy = st.one_of(
    st.just({"handler": "no_auth"}), st.just({"handler": "allow"}), st.just({"handler": "noop"}),
    st.builds(lambda i: {"handler": "jwt", "config": {"trusted_issuers": [i], "jwks_urls": [i + "/jwks"]}},
              st.sampled_from(["https://a", "https://b"])),
    st.just({"handler": "jwt", "config": JWT_ISTIO}),
    st.just({"handler": "oauth2_introspection", "config": {"required_scope": ["x"]}}),
)
_rule = st.fixed_dictionaries(
    {"path": _paths, "methods": st.lists(st.sampled_from(["GET", "POST", "PUT"]), min_size=1, max_size=3, unique=True),
     "accessStrategies": st.lists(_strategy, min_size=1, max_size=2)},
    optional={"service": st.fixed_dictionaries({"name": _names, "port": st.integers(1, 65535)}),
              "timeout": st.integers(1, 3900),
              "mutators": st.lists(st.sampled_from([{"handler": "header", "config": {"headers": {"A": "b"}}},
                                                    {"handler": "cookie", "config": {"cookies": {"c": "d"}}}]),
                                   min_size=1, max_size=2)})  # Go's omitempty drops an empty list
_spec = st.fixed_dictionaries(
    {"rules": st.lists(_rule, min_size=1, max_size=4)},
    optional={"host": _names, "gateway": st.sampled_from(["kyma-system/kyma-gateway", "kyma-gateway",
                                                          "gw.ns.svc.cluster.local", "Bad_Gateway"]),
              "service": st.fixed_dictionaries({"name": _names, "port": st.integers(1, 65535)}),
              "timeout": st.integers(1, 3900),
              "corsPolicy": st.fixed_dictionaries({}, optional={
                  "allowHeaders": st.lists(_names, min_size=1, max_size=2),
                  "maxAge": st.sampled_from(["1s", "1m0s", "1h0m0s", "1m30s"])})})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_spec, st.sampled_from([None, {}, {ORIGINAL: "v1beta1"}]),
       st.sampled_from([None, {"APIRuleStatus": {"code": "OK", "desc": "fine"}}]))
def test_round_trip_keeps_the_v1beta1_spec(spec: Obj, annotations: Obj | None, status: Obj | None) -> None:
    original = v1beta1(spec, annotations, status)
    hub = convert(copy.deepcopy(original), f"{G}/v2alpha1")
    back = convert(hub, f"{G}/v1beta1")
    assert back["spec"] == spec
    assert back["metadata"]["name"] == "shop" and back["metadata"]["uid"] == "u-1"
    if status is not None:
        assert back["status"] == status
    # the stored (hub) object read as v2 has the v1beta1 host (writing that v2 object back marks it v2: the
    # original's rule, so a v2 edit of a rule with convertible rules makes it a v2 rule)
    v2 = convert(hub, f"{G}/v2")
    assert v2["spec"].get("hosts") == ([spec["host"]] if "host" in spec else None)
    assert convert(v2, f"{G}/v2alpha1")["metadata"]["annotations"][ORIGINAL] == (
        "v2" if hub["spec"].get("rules") else "v1beta1")


# ---- the ConversionReview ---------------------------------------------------------------------------------


def review(objects: Any, desired: str = f"{G}/v2", api_version: str = "apiextensions.k8s.io/v1") -> bytes:
    return json.dumps({"apiVersion": api_version, "kind": "ConversionReview",
                       "request": {"uid": "r-1", "desiredAPIVersion": desired, "objects": objects}}).encode()


def test_review_success_and_failure() -> None:
    body = review([v1beta1(copy.deepcopy(V1_SPEC))], api_version="apiextensions.k8s.io/v1beta1")
    status, answer = review_response(body)
    assert status == 200 and answer["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    assert answer["response"]["uid"] == "r-1" and answer["response"]["result"]["status"] == "Success"
    assert answer["response"]["convertedObjects"][0]["apiVersion"] == f"{G}/v2"
    status, answer = review_response(review([{"apiVersion": "v1", "kind": "ConfigMap"}]))
    assert status == 200 and answer["response"]["result"]["status"] == "Failure"
    assert "object has no apiVersion of group gateway.kyma-project.io: 'v1'" in answer["response"]["result"]["message"]


@pytest.mark.parametrize("body", [b"", b"not json", b"[]", b'{"kind": "ConversionReview"}',
                                  b'{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}',
                                  review("not a list"), review([], desired="")])
def test_malformed_reviews_are_400(body: bytes) -> None:
    status, answer = review_response(body)
    # a ConversionReview with a failed result (issue 17: malformed bodies are answered as reviews, was a Status)
    assert status == 400 and answer["kind"] == "ConversionReview" and answer["response"]["result"]["code"] == 400
    assert answer["response"]["result"]["status"] == "Failure" and answer["response"]["result"]["message"]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=4),
                     max_leaves=15)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=64), _json.map(lambda v: json.dumps(v).encode()),
                 st.lists(_json, max_size=3).map(review),
                 _json.map(lambda spec: review([v1beta1(spec)])),
                 _json.map(lambda spec: review([{**v1beta1(spec), "apiVersion": f"{G}/v2"}], f"{G}/v1beta1")),
                 _json.map(lambda ann: review([{**v1beta1({}), "apiVersion": f"{G}/v2alpha1",
                                                "metadata": {"name": "x", "annotations": {ORIGINAL: "v1beta1",
                                                                                          V1SPEC: json.dumps(ann)}}}],
                                              f"{G}/v2"))))
def test_any_input_is_answered_200_or_400(body: bytes) -> None:
    status, answer = review_response(body)
    assert status in (200, 400)
    json.dumps(answer)
