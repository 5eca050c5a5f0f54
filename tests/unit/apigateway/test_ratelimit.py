"""RateLimit: validation (fill intervals, Pods, conflicts, sidecars, the APIGateway gate) and the
EnvoyFilter's content, as the notes §8 describe them; arbitrary JSON in any field never raises."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube.refusal import Failure
from kube.toolkit.outcome import Event
from tasks.apigateway.parsing import parse_duration_ns
from tasks.apigateway.ratelimit.model import RateLimit
from tasks.apigateway.ratelimit.plan import RateLimitState, collect_garbage, config_patches, go_map, plan

from .fuzz import attribute, get_at, json_values, paths_of, set_at, wrong_type

READY_GATEWAY = {"apiVersion": "operator.kyma-project.io/v1alpha1", "kind": "APIGateway",
                 "metadata": {"name": "default", "creationTimestamp": "2024-01-01T00:00:00Z"},
                 "status": {"state": "Ready"}}


def ratelimit(name: str = "httpbin", selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selectorLabels": selector or {"app": "httpbin"},
        "local": {"defaultBucket": {"maxTokens": 10, "tokensPerFill": 5, "fillInterval": "50ms"}},
    }
    body.update(spec)
    return {"apiVersion": "gateway.kyma-project.io/v1alpha1", "kind": "RateLimit",
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "generation": 1}, "spec": body}


def pod(name: str, labels: dict[str, str] | None = None, injected: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "labels": labels or {"app": "httpbin"}}
    if injected:
        meta["annotations"] = {"sidecar.istio.io/status": "{}"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def state(*pods: dict[str, Any], ratelimits: tuple[dict[str, Any], ...] = (), gateways: tuple[dict[str, Any], ...] = (
        READY_GATEWAY,), envoy_filter: dict[str, Any] | None = None) -> RateLimitState:
    return RateLimitState(crds=frozenset({"envoyfilters.networking.istio.io"}), apigateways=gateways,
                          pods=pods or (pod("httpbin-1"),), ratelimits=ratelimits, envoy_filter=envoy_filter)


def buckets(*items: tuple[str | None, dict[str, str] | None, str]) -> dict[str, Any]:
    return {"defaultBucket": {"maxTokens": 10, "tokensPerFill": 5, "fillInterval": "50ms"},
            "buckets": [{**({"path": p} if p else {}), **({"headers": h} if h else {}),
                         "bucket": {"maxTokens": 2, "tokensPerFill": 2, "fillInterval": f}} for p, h, f in items]}


@pytest.mark.parametrize(("obj", "st_", "description"), [
    (ratelimit(local={"defaultBucket": {"maxTokens": 1, "tokensPerFill": 1, "fillInterval": "49ms"}}), state(),
     "failed to validate RateLimit: defaultBucket: fillInterval must be greater or equal 50ms"),
    (ratelimit(local=buckets(("/a", None, "40ms"))), state(),
     "failed to validate RateLimit: bucket '[0]': fillInterval must be greater or equal 50ms"),
    (ratelimit(local=buckets(("/a", None, "100ms"), (None, {"x": "1"}, "120ms"))), state(),
     "failed to validate RateLimit: bucket '[1]': fillInterval must be a multiple of defaultBucket fillInterval"),
    (ratelimit(selector={"app": "httpbin", "tier": "a"}), state(pod("other", {"app": "x"})),
     "failed to validate RateLimit: no pods found with the given selectors: map[app:httpbin tier:a] in namespace shop"),
    (ratelimit(), state(pod("p1"), ratelimits=(ratelimit("b"), ratelimit("a", {"app": "other"}), ratelimit("c"))),
     "failed to validate RateLimit: conflicting with the following RateLimit CRs: b, c"),
    (ratelimit(), state(pod("p1"), pod("p2", injected=False), pod("p3", injected=False)),
     "failed to validate RateLimit: sidecar injection is not enabled for the following pods: shop/p2, shop/p3"),
    (ratelimit(), state(gateways=()),
     "failed to reconcile RateLimit CR because of missing APIGateway CR in the cluster"),
    (ratelimit(), state(gateways=({**READY_GATEWAY, "status": {"state": "Error"}},)),
     "failed to create RateLimit CR because APIGateway CR is in Error state"),
    (ratelimit(local={"buckets": []}), state(),
     "failed to validate RateLimit: Attribute '.spec.local.defaultBucket': is required"),
    (ratelimit(local=buckets((None, None, "50ms"))), state(),
     "failed to validate RateLimit: Attribute '.spec.local.buckets[0]': At least one of 'path' or 'headers' must "
     "be set"),
])
def test_validation(obj: dict[str, Any], st_: RateLimitState, description: str) -> None:
    result = plan(obj, st_)
    assert result.status is not None and result.status["description"] == description
    assert result.status["state"] in ("Error", "Warning") and result.error == description and not result.writes
    assert result.event == Event("Warning", result.status["state"], description)


def test_ingress_gateway_pods_need_no_sidecar_and_use_the_gateway_context() -> None:
    labels = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
    result = plan(ratelimit(selector={"app": "istio-ingressgateway"}), state(pod("gw", labels, injected=False)))
    assert result.status == {"state": "Ready", "description": "Finished reconciliation"} and result.writes
    assert {p["match"]["context"] for p in result.writes[0].object["spec"]["configPatches"]} == {"GATEWAY"}


def test_missing_envoy_filter_crd() -> None:
    result = plan(ratelimit(), RateLimitState(crds=frozenset(), apigateways=(READY_GATEWAY,)))
    assert result.status is not None
    assert result.status["description"].startswith("dependency missing 'envoyfilters.networking.istio.io': ")


def test_envoy_filter_content() -> None:
    obj = ratelimit(local=buckets(("/ip", None, "1h"), ("/headers", {"x-api-version": "v1", "a": "b"}, "30s")),
                    enableResponseHeaders=True, enforce=False)
    result = plan(obj, state())
    assert result.status == {"state": "Ready", "description": "Finished reconciliation"}
    assert result.event == Event("Normal", "Reconciled", "Finished reconciliation") and result.requeue_after == 1800
    assert [w.verb for w in result.writes] == ["create"]
    ef = result.writes[0].object
    assert ef["metadata"] == {"name": "httpbin", "namespace": "shop", "ownerReferences": [{
        "apiVersion": "gateway.kyma-project.io/v1alpha1", "kind": "RateLimit", "name": "httpbin", "uid": "uid-httpbin",
        "controller": True, "blockOwnerDeletion": True}]}
    assert ef["spec"]["workloadSelector"] == {"labels": {"app": "httpbin"}}
    http_filter, route = ef["spec"]["configPatches"]
    assert http_filter == {
        "applyTo": "HTTP_FILTER",
        "match": {"context": "SIDECAR_INBOUND",
                  "listener": {"filterChain": {"filter": {"name": "envoy.filters.network.http_connection_manager"}}}},
        "patch": {"operation": "INSERT_BEFORE", "value": {
            "name": "envoy.filters.http.local_ratelimit", "typed_config": {
                "@type": "type.googleapis.com/udpa.type.v1.TypedStruct",
                "type_url": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
                "value": {"stat_prefix": "http_local_rate_limiter"}}}}}
    assert route["applyTo"] == "HTTP_ROUTE" and route["match"] == {"context": "SIDECAR_INBOUND"}
    value = route["patch"]["value"]
    assert route["patch"]["operation"] == "MERGE"
    assert value["route"] == {"rate_limits": [{"actions": [
        {"request_headers": {"header_name": ":path", "descriptor_key": "path"}},
        {"request_headers": {"header_name": "a", "descriptor_key": "a"}},
        {"request_headers": {"header_name": "x-api-version", "descriptor_key": "x-api-version"}}]}]}
    config = value["typed_per_filter_config"]["envoy.filters.http.local_ratelimit"]["value"]
    assert config["enable_x_ratelimit_headers"] == "DRAFT_VERSION_03"
    assert config["filter_enforced"]["default_value"] == {"numerator": 0, "denominator": "HUNDRED"}
    assert config["filter_enabled"] == {"runtime_key": "local_rate_limit_enabled",
                                        "default_value": {"numerator": 100, "denominator": "HUNDRED"}}
    assert config["always_consume_default_token_bucket"] is False
    assert config["token_bucket"] == {"max_tokens": 10, "tokens_per_fill": 5, "fill_interval": "0.050000s"}
    assert config["descriptors"] == [
        {"entries": [{"key": "path", "value": "/ip"}],
         "token_bucket": {"max_tokens": 2, "tokens_per_fill": 2, "fill_interval": "3600.000000s"}},
        {"entries": [{"key": "path", "value": "/headers"}, {"key": "a", "value": "b"},
                     {"key": "x-api-version", "value": "v1"}],
         "token_bucket": {"max_tokens": 2, "tokens_per_fill": 2, "fill_interval": "30.000000s"}}]


def test_default_bucket_only_has_no_actions_and_enforce_defaults_to_true() -> None:
    patches = config_patches(RateLimit.parse(ratelimit()))
    value = patches[1]["patch"]["value"]
    assert value["route"] == {"rate_limits": []}  # not [{actions: []}] (api-gateway#2380)
    config = value["typed_per_filter_config"]["envoy.filters.http.local_ratelimit"]["value"]
    assert config["filter_enforced"]["default_value"]["numerator"] == 100
    assert config["enable_x_ratelimit_headers"] == "OFF" and config["descriptors"] == []


def test_second_round_changes_nothing_and_edits_are_reverted() -> None:
    first = plan(ratelimit(), state())
    created = first.writes[0].object
    existing = {**copy.deepcopy(created), "metadata": {**created["metadata"], "resourceVersion": "7"}}
    assert plan(ratelimit(), state(envoy_filter=existing)).writes == ()
    edited = copy.deepcopy(existing)
    edited["spec"]["workloadSelector"] = {"labels": {"app": "other"}}
    again = plan(ratelimit(), state(envoy_filter=edited))
    assert [w.verb for w in again.writes] == ["update"]
    assert again.writes[0].object["metadata"]["resourceVersion"] == "7"
    assert again.writes[0].object["spec"]["workloadSelector"] == {"labels": {"app": "httpbin"}}


def test_an_unchanged_status_is_not_written_and_a_refused_write_is_the_error_status() -> None:
    done = {**ratelimit(), "status": {"state": "Ready", "description": "Finished reconciliation"}}
    quiet = plan(done, state())
    assert quiet.status is None and quiet.event is None and quiet.requeue_after == 1800
    assert quiet.refused is not None
    refused = quiet.refused(quiet.writes[0], Failure.of_http(422, "bad spec"), ())
    assert refused.status == {"state": "Error", "description": "failed to create EnvoyFilter: bad spec"}
    assert refused.event == Event("Warning", "Error", "failed to create EnvoyFilter: bad spec")
    assert refused.error == "failed to create EnvoyFilter: bad spec"
    assert quiet.refused(quiet.writes[0], Failure.of_http(409, "exists", code="AlreadyExists"), ()).status is None


def test_a_gone_ratelimit_deletes_only_its_own_envoy_filter() -> None:
    own = {"metadata": {"name": "httpbin", "namespace": "shop",
                        "ownerReferences": [{"kind": "RateLimit", "name": "httpbin"}]}}
    assert [w.describe() for w in collect_garbage("httpbin", own).writes] == ["delete EnvoyFilter shop/httpbin"]
    assert collect_garbage("other", own).writes == () and collect_garbage("httpbin", None).writes == ()


def test_go_map_and_durations() -> None:
    assert go_map({"tier": "a", "app": "x"}) == "map[app:x tier:a]"
    assert parse_duration_ns("1m30s") == 90_000_000_000 and parse_duration_ns("150ms") % parse_duration_ns("50ms") == 0


def rich() -> dict[str, Any]:
    return ratelimit(local=buckets(("/ip", None, "1h"), ("/h", {"x-api-version": "v1"}, "30s")),
                     enableResponseHeaders=True, enforce=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=json_values)
def test_any_json_value_in_any_field(data: st.DataObject, value: Any) -> None:
    base = rich()
    assert (plan(base, state()).status or {}).get("state") == "Ready"
    path = data.draw(st.sampled_from(paths_of(base)))
    result = plan(set_at(base, path, value), state())  # never raises
    if wrong_type(get_at(base, path), value):
        status = result.status or {}
        assert status.get("state") == "Error" and f"'{attribute(path)}'" in status["description"], (path, value)
