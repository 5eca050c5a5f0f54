"""APIRule v1beta1: the ``istio`` and ``ory`` processors' objects per access strategy, Oathkeeper Rules,
the §5.3 validation messages, per-component statuses, the access gate and the spec's sources."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.apigateway.plan import Plan, RulePolicy, plan
from tasks.apigateway.state import ClusterState, reads_for
from tasks.apigateway.v1beta1 import V1beta1APIRule, looks_v1beta1
from tasks.apigateway.v1beta1.plan import default_domain
from tasks.apigateway.v1beta1.status import DEPRECATED, Component, V1beta1Status, validation_description

from .builders import ISSUER, JWKS, cluster, config_map, gateway, service
from .fuzz import attribute, get_at, json_values, paths_of, set_at, wrong_type

ALLOWED = RulePolicy(v1beta1_access=True)
INGRESS = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
MAESTER = "cluster.local/ns/kyma-system/sa/oathkeeper-maester-account"
PROXY = "ory-oathkeeper-proxy.kyma-system.svc.cluster.local"
ISTIO_JWT = {"authentications": [{"issuer": ISSUER, "jwksUri": JWKS}]}
ORY_JWT = {"trusted_issuers": [ISSUER], "jwks_urls": [JWKS], "required_scope": ["read"]}


def strategy(handler: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"handler": handler, **({"config": config} if config is not None else {})}


def v1rule(path: str = "/headers", *strategies: dict[str, Any], methods: list[str] | None = None,
           **fields: Any) -> dict[str, Any]:
    return {"path": path, "methods": methods or ["GET"],
            "accessStrategies": list(strategies) or [strategy("no_auth")], **fields}


def v1beta1(*rules: dict[str, Any], host: str = "legacy", name: str = "legacy", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"host": host, "gateway": "kyma-system/kyma-gateway",
                            "service": {"name": "httpbin", "port": 8000}, "rules": list(rules) or [v1rule()]}
    body.update(spec)
    return {"apiVersion": "gateway.kyma-project.io/v1beta1", "kind": "APIRule",
            "metadata": {"name": name, "namespace": "shop", "generation": 1,
                         "finalizers": ["gateway.kyma-project.io/subresources"]},
            "spec": body}


def handler_state(handler: str, *extra: dict[str, Any]) -> ClusterState:
    manifests = [m for m in cluster(*extra) if m["metadata"]["name"] != "api-gateway-config"]
    manifests.append(config_map("api-gateway-config", "kyma-system", {"api-gateway-config": f"jwtHandler: {handler}"}))
    return ClusterState.from_manifests(manifests)


def run(obj: dict[str, Any], handler: str = "istio", *extra: dict[str, Any]) -> Plan:
    return plan(obj, handler_state(handler, *extra), ALLOWED)


def kinds(result: Plan) -> list[str]:
    return [d["kind"] for d in result.desired]


def vs_route(result: Plan, index: int = 0) -> dict[str, Any]:
    return result.desired[0]["spec"]["http"][index]


# --- the spec's source and the pipeline ----------------------------------------------------------


def test_spec_from_annotation_wins_and_bad_json_is_a_failure() -> None:
    stored = {"apiVersion": "gateway.kyma-project.io/v2alpha1", "kind": "APIRule",
              "metadata": {"name": "x", "namespace": "shop", "annotations": {
                  "gateway.kyma-project.io/original-version": "v1beta1",
                  "gateway.kyma-project.io/v1beta1-spec": json.dumps(v1beta1()["spec"])}},
              "spec": {"hosts": ["legacy"], "gateway": "kyma-system/kyma-gateway"}}
    parsed = V1beta1APIRule.parse(stored)
    assert parsed.from_annotation and parsed.host == "legacy" and parsed.rules[0].path == "/headers"
    broken = copy.deepcopy(stored)
    broken["metadata"]["annotations"]["gateway.kyma-project.io/v1beta1-spec"] = "{not json"
    failures = V1beta1APIRule.parse(broken).type_failures
    assert failures[0].attribute_path == ".metadata.annotations[gateway.kyma-project.io/v1beta1-spec]"
    assert run(broken).status.state == "Error"  # type: ignore[union-attr]


@pytest.mark.parametrize(("obj", "expected"), [
    (v1beta1(), True),
    ({**v1beta1(), "apiVersion": "gateway.kyma-project.io/v2"}, True),  # stored without conversion
    ({"apiVersion": "gateway.kyma-project.io/v2", "spec": {"hosts": ["a"], "rules": []}}, False),
    ({"apiVersion": "gateway.kyma-project.io/v2", "spec": {"rules": [{"accessStrategies": []}]}}, True),
    ({"apiVersion": "gateway.kyma-project.io/v2", "spec": "x"}, False),
])
def test_looks_v1beta1(obj: dict[str, Any], expected: bool) -> None:
    assert looks_v1beta1(obj) is expected


def test_access_gate_and_reads() -> None:
    obj = v1beta1(v1rule(service={"name": "orders", "namespace": "team", "port": 80}))
    denied = plan(obj, handler_state("istio"))
    assert denied.status is not None and denied.status.state == "Error" and denied.actions == ()
    assert denied.v1beta1 is None
    assert ("team", "orders") in reads_for(obj).services and ("shop", "httpbin") in reads_for(obj).services


# --- istio handler: objects per access strategy ---------------------------------------------------


def test_istio_no_auth_routes_to_the_service_with_method_match_and_an_ingress_policy() -> None:
    result = run(v1beta1(v1rule("/headers", strategy("no_auth"), methods=["GET", "POST"])))
    assert result.status is not None and result.status.state == "Ready"
    assert result.status.description == DEPRECATED
    assert kinds(result) == ["VirtualService", "AuthorizationPolicy"]
    vs = result.desired[0]
    assert vs["spec"]["hosts"] == ["legacy.local.kyma.dev"] and vs["spec"]["gateways"] == ["kyma-system/kyma-gateway"]
    route = vs_route(result)
    assert route["match"] == [{"method": {"regex": "^(GET|POST)$"}, "uri": {"regex": "/headers"}}]
    assert route["route"][0]["destination"] == {"host": "httpbin.shop.svc.cluster.local", "port": {"number": 8000}}
    assert route["headers"] == {"request": {"set": {"x-forwarded-host": "legacy.local.kyma.dev"}}}
    assert route["corsPolicy"]["allowOrigins"] == [{"regex": ".*"}]  # the operator's default CORS
    (policy,) = [d for d in result.desired if d["kind"] == "AuthorizationPolicy"]
    assert policy["spec"] == {"selector": {"matchLabels": {"app": "httpbin"}}, "rules": [{
        "from": [{"source": {"principals": [INGRESS]}}],
        "to": [{"operation": {"methods": ["GET", "POST"], "paths": ["/headers"]}}]}]}
    assert result.v1beta1 == V1beta1Status(Component("OK"), Component("OK"), None, Component("OK"), Component("OK"))


def test_istio_allow_only_routes_everything_without_policies() -> None:
    result = run(v1beta1(v1rule("/*", strategy("allow"))))
    assert kinds(result) == ["VirtualService"]
    assert vs_route(result)["match"] == [{"uri": {"prefix": "/"}}]  # no methods for allow, /* as a prefix


def test_istio_jwt_with_mutators_scopes_and_audiences() -> None:
    config = {**ISTIO_JWT,
              "authorizations": [{"requiredScopes": ["read"], "audiences": ["shop"]}, {"audiences": ["x"]}]}
    mutators = [{"handler": "header", "config": {"headers": {"X-From": "apirule"}}},
                {"handler": "cookie", "config": {"cookies": {"b": "2", "a": "1"}}}]
    result = run(v1beta1(v1rule("/.*", strategy("jwt", config), mutators=mutators)))
    assert kinds(result) == ["VirtualService", "RequestAuthentication", "AuthorizationPolicy", "AuthorizationPolicy"]
    route = vs_route(result)
    assert route["route"][0]["destination"]["host"] == "httpbin.shop.svc.cluster.local"  # jwt: no Oathkeeper
    assert route["headers"]["request"]["set"] == {"x-forwarded-host": "legacy.local.kyma.dev", "X-From": "apirule",
                                                  "Cookie": "a=1; b=2"}
    ra = result.desired[1]
    assert ra["spec"]["jwtRules"] == [{"issuer": ISSUER, "jwksUri": JWKS, "forwardOriginalToken": True}]
    first, second = result.desired[2:]
    assert [r["when"] for r in first["spec"]["rules"]] == [
        [{"key": k, "values": ["read"]}, {"key": "request.auth.claims[aud]", "values": ["shop"]}]
        for k in ("request.auth.claims[scp]", "request.auth.claims[scope]", "request.auth.claims[scopes]")]
    assert first["spec"]["rules"][0]["from"] == [{"source": {"requestPrincipals": [f"{ISSUER}/*"]}}]
    assert first["spec"]["rules"][0]["to"] == [{"operation": {"methods": ["GET"], "paths": ["/*"]}}]  # /.* → /*
    assert second["spec"]["rules"] == [{"from": [{"source": {"requestPrincipals": [f"{ISSUER}/*"]}}],
                                        "to": [{"operation": {"methods": ["GET"], "paths": ["/*"]}}],
                                        "when": [{"key": "request.auth.claims[aud]", "values": ["x"]}]}]
    assert [p["metadata"]["labels"]["gateway.kyma-project.io/index"] for p in result.desired[2:]] == ["0", "1"]


@pytest.mark.parametrize("name", ["noop", "oauth2_introspection"])
def test_istio_oathkeeper_strategies_get_an_access_rule_and_the_proxy(name: str) -> None:
    config = {"required_scope": ["read"]} if name == "oauth2_introspection" else None
    result = run(v1beta1(v1rule("/anything", strategy(name, config)), v1rule("/open", strategy("no_auth"))))
    route = vs_route(result)
    assert route["route"][0]["destination"] == {"host": PROXY, "port": {"number": 4455}}
    rule = next(d for d in result.desired if d["kind"] == "Rule")
    assert rule["apiVersion"] == "oathkeeper.ory.sh/v1alpha1" and rule["metadata"]["namespace"] == "shop"
    assert rule["spec"] == {"upstream": {"url": "http://httpbin.shop.svc.cluster.local:8000"},
                            "match": {"url": "<http|https>://legacy.local.kyma.dev</anything>", "methods": ["GET"]},
                            "authenticators": [strategy(name, config)], "authorizer": {"handler": "allow"}}
    policy = next(d for d in result.desired if d["kind"] == "AuthorizationPolicy")
    assert policy["spec"]["rules"][0]["from"] == [{"source": {"principals": [MAESTER]}}]


def test_istio_cookie_session_goes_to_oathkeeper_without_a_rule() -> None:
    result = run(v1beta1(v1rule("/a", strategy("cookie_session"))))
    assert kinds(result) == ["VirtualService"]  # no jwt/no_auth: no policies; not noop/introspection: no Rule
    assert vs_route(result)["route"][0]["destination"]["host"] == PROXY


# --- ory handler ----------------------------------------------------------------------------------


def test_ory_handler_objects() -> None:
    result = run(v1beta1(v1rule("/open", strategy("no_auth")), v1rule("/jwt", strategy("jwt", ORY_JWT)),
                         v1rule("/*", strategy("allow"))), "ory")
    assert kinds(result) == ["VirtualService", "Rule"]
    routes = result.desired[0]["spec"]["http"]
    assert [r["match"] for r in routes] == [[{"method": {"regex": "^(GET)$"}, "uri": {"regex": "/open"}}],
                                            [{"uri": {"regex": "/jwt"}}], [{"uri": {"regex": "/*"}}]]
    assert [r["route"][0]["destination"]["host"] for r in routes] == [
        "httpbin.shop.svc.cluster.local", PROXY, "httpbin.shop.svc.cluster.local"]
    rule = result.desired[1]
    assert rule["spec"]["authenticators"] == [strategy("jwt", ORY_JWT)]
    assert rule["spec"]["match"]["url"] == "<http|https>://legacy.local.kyma.dev</jwt>"
    assert result.v1beta1 == V1beta1Status(Component("OK"), Component("OK"), Component("OK"))


def test_ory_handler_deletes_owned_policies_and_keeps_matching_rules() -> None:
    labels = {"apirule.gateway.kyma-project.io/name": "legacy", "apirule.gateway.kyma-project.io/namespace": "shop"}
    owned_ap = {"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy",
                "metadata": {"name": "legacy-ap", "namespace": "shop", "labels": labels}, "spec": {}}
    obj = v1beta1(v1rule("/jwt", strategy("jwt", ORY_JWT)))
    first = run(obj, "ory")
    existing = copy.deepcopy(first.desired[1])
    existing["metadata"].update(name="legacy-r1", resourceVersion="1")
    stale = copy.deepcopy(existing)
    stale["metadata"]["name"] = "legacy-old"
    stale["spec"]["match"]["url"] = "<http|https>://legacy.local.kyma.dev</gone>"
    second = run(obj, "ory", owned_ap, existing, stale)
    verbs = [(a.verb, a.kind, a.name) for a in second.actions]
    assert ("delete", "AuthorizationPolicy", "legacy-ap") in verbs and ("delete", "Rule", "legacy-old") in verbs
    assert not any(v[1] == "Rule" and v[0] in ("create", "update") for v in verbs)


def test_repeated_paths_give_one_route_and_method_keyed_rules() -> None:
    obj = v1beta1(v1rule("/a", strategy("noop"), methods=["GET"]), v1rule("/a", strategy("noop"), methods=["POST"]))
    result = run(obj, "ory")
    assert len(result.desired[0]["spec"]["http"]) == 1
    assert [r["spec"]["match"]["methods"] for r in result.desired if r["kind"] == "Rule"] == [["GET"], ["POST"]]


# --- validation (§5.3) and statuses -------------------------------------------------------------


CASES: list[tuple[str, str, dict[str, Any], list[tuple[str, str]]]] = [
    ("istio", "host nil", v1beta1(host=None), [(".spec.host", "Host was nil")]),
    ("istio", "no rules", v1beta1(rules=[]), [(".spec.rules", "No rules defined")]),
    ("istio", "duplicate", v1beta1(v1rule("/a"), v1rule("/a")),
     [(".spec.rules", "multiple rules defined for the same path and method")]),
    ("istio", "no service", {**v1beta1(), "spec": {**v1beta1()["spec"], "service": None}},
     [(".spec.rules[0].service", "No service defined with no main service on spec level")]),
    ("istio", "no strategies", v1beta1(v1rule("/a", accessStrategies=[])),
     [(".spec.rules[0].accessStrategies", "No accessStrategies defined")]),
    ("istio", "secure and unsecure", v1beta1(v1rule("/a", strategy("noop"), strategy("oauth2_introspection"))),
     [(".spec.rules[0].accessStrategies[0].handler",
       "noop access strategy is not allowed in combination with other access strategies"),
      (".spec.rules[0].accessStrategies",
       "Secure access strategies cannot be used in combination with unsecure access strategies")]),
    ("istio", "jwt exclusive", v1beta1(v1rule("/a", strategy("oauth2_introspection"), strategy("jwt", ISTIO_JWT))),
     [(".spec.rules[0].accessStrategies[1].handler",
       "jwt access strategy is not allowed in combination with other access strategies")]),
    ("ory", "jwt not exclusive with ory", v1beta1(v1rule("/a", strategy("oauth2_introspection"),
                                                          strategy("jwt", ORY_JWT))), []),
    ("istio", "config on allow", v1beta1(v1rule("/a", strategy("allow", {"x": 1}))),
     [(".spec.rules[0].accessStrategies[0].config", "strategy: allow does not support configuration")]),
    ("istio", "unsupported", v1beta1(v1rule("/a", strategy("magic"))),
     [(".spec.rules[0].accessStrategies[0].handler", "Unsupported accessStrategy: magic")]),
    ("istio", "jwt no config", v1beta1(v1rule("/a", strategy("jwt"))),
     [(".spec.rules[0].accessStrategies[0].config", "supplied config cannot be empty")]),
    ("istio", "jwt ory config", v1beta1(v1rule("/a", strategy("jwt", ORY_JWT))),
     [(".spec.rules[0].accessStrategies[0].config.jwks_urls",
       "Configuration for jwks_urls is not supported with Istio handler"),
      (".spec.rules[0].accessStrategies[0].config.required_scopes",
       "Configuration for required_scopes is not supported with Istio handler"),
      (".spec.rules[0].accessStrategies[0].config.trusted_issuers",
       "Configuration for trusted_issuers is not supported with Istio handler"),
      (".spec.rules[0].accessStrategies[0]", "Authentications are required when using JWT access handler")]),
    ("ory", "ory: istio config", v1beta1(v1rule("/a", strategy("jwt", ISTIO_JWT))),
     [(".spec.rules[0].accessStrategies[0].config.authentications",
       "Configuration for authentications is not supported with Ory handler")]),
    ("ory", "ory: bad issuer", v1beta1(v1rule("/a", strategy("jwt", {"trusted_issuers": ["no-scheme"]}))),
     [(".spec.rules[0].accessStrategies[0].config.trusted_issuers[0]",
       'value is empty or not a valid uri err=parse "no-scheme": invalid URI for request')]),
    ("istio", "jwt bad jwks", v1beta1(v1rule("/a", strategy("jwt", {"authentications": [
        {"issuer": ISSUER, "jwksUri": ""}]}))),
     [(".spec.rules[0].accessStrategies[0].config.authentications[0].jwksUri",
       "value is empty or not a valid uri err=value is empty")]),
    ("istio", "empty authorizations", v1beta1(v1rule("/a", strategy("jwt", {**ISTIO_JWT, "authorizations": []}))),
     [(".spec.rules[0].accessStrategies[0].config.authorizations", "value is empty")]),
    ("istio", "mutators", v1beta1(v1rule("/a", strategy("jwt", ISTIO_JWT), mutators=[
        {"handler": "header", "config": {}}, {"handler": "id_token"}, {"handler": "header", "config": {
            "headers": {"X": "1"}}}])),
     [(".spec.rules[0].mutators[2].handler.header", "mutator for same handler already exists"),
      (".spec.rules[0].mutators[0].handler.config", "headers cannot be empty"),
      (".spec.rules[0].mutators[1].handler", "unsupported mutator: id_token")]),
    ("ory", "ory ignores mutators", v1beta1(v1rule("/a", strategy("jwt", ORY_JWT), mutators=[
        {"handler": "id_token"}])), []),
    ("istio", "jwt issuers differ", v1beta1(
        v1rule("/a", strategy("jwt", ISTIO_JWT)),
        v1rule("/b", strategy("jwt", {"authentications": [{"issuer": ISSUER, "jwksUri": JWKS,
                                                            "fromParams": ["t"]}]}))),
     [(".spec.rules[1].accessStrategies[0].config.authentications[0]",
       "multiple jwt configurations that differ for the same issuer")]),
    ("istio", "sidecar missing", v1beta1(v1rule("/a", strategy("jwt", ISTIO_JWT))),
     [(".spec.rules[0].accessStrategies[0].injection", "Pod shop/httpbin-1 does not have an injected istio sidecar")]),
]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "httpbin-1", "namespace": "shop",
                                                        "labels": {"app": "httpbin"}},
       "spec": {"containers": [{"name": "httpbin"}]}}


@pytest.mark.parametrize(("handler", "case", "obj", "expected"), CASES, ids=[c[1] for c in CASES])
def test_validation_messages(handler: str, case: str, obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    extra = [POD] if case == "sidecar missing" else []
    result = run(obj, handler, *extra)
    assert [(f.attribute_path, f.message) for f in result.failures] == expected
    if expected:
        assert result.status is not None and result.status.state == "Error" and result.actions == ()
        assert result.v1beta1 is not None and result.v1beta1.api_rule.code == "ERROR"
        assert result.v1beta1.virtual_service == Component("SKIPPED")
        assert result.status.description.startswith((DEPRECATED + "\n\nValidation error",
                                                      DEPRECATED + "\n\nMultiple validation errors"))


def test_validation_descriptions() -> None:
    from tasks.apigateway.parsing import ValidationFailure

    one = [ValidationFailure(".spec.host", "Host was nil")]
    assert validation_description(one) == 'Validation error: Attribute ".spec.host": Host was nil'
    five = [ValidationFailure(f".p{i}", "m") for i in range(5)]
    assert validation_description(five) == ('Multiple validation errors: \nAttribute ".p0": m\nAttribute ".p1": m'
                                             '\nAttribute ".p2": m\n2 more error(s)...')


def test_host_without_domain_and_occupied_host() -> None:
    no_domain = ClusterState.from_manifests([m for m in cluster() if m["kind"] != "Gateway"])
    result = plan(v1beta1(), no_domain, ALLOWED)
    assert [f.message for f in result.failures] == [
        "Host does not contain a domain name and no default domain name is configured"]
    other_vs = {"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService",
                "metadata": {"name": "other", "namespace": "x"}, "spec": {"hosts": ["legacy.local.kyma.dev"]}}
    assert [f.message for f in run(v1beta1(), "istio", other_vs).failures] == [
        "This host is occupied by another Virtual Service"]


@pytest.mark.parametrize(("hosts", "expected"), [
    (["*.local.kyma.dev"], ("local.kyma.dev", None)),
    (["a.b"], ("", 'gateway https server host "a.b" does not start with the prefix "*."')),
    (["*.a", "*.b"], ("", "gateway https server must have a single host definition, num=2")),
])
def test_default_domain(hosts: list[str], expected: tuple[str, str | None]) -> None:
    assert default_domain(gateway(hosts=hosts)) == expected


def test_missing_service_is_an_apirule_error_and_missing_crd_a_warning() -> None:
    obj = v1beta1(v1rule("/a", strategy("no_auth"), service={"name": "gone", "port": 80}))
    result = run(obj)
    assert result.v1beta1 is not None and result.v1beta1.api_rule == Component("ERROR", 'services "gone" not found')
    assert result.status is not None and result.status.state == "Error"
    crds = ClusterState.from_manifests([*cluster(), {"kind": "CustomResourceDefinition",
                                                     "metadata": {"name": "virtualservices.networking.istio.io"}}])
    warning = plan(v1beta1(), crds, ALLOWED)
    assert warning.status is not None and warning.status.state == "Warning"
    assert "CRD rules.oathkeeper.ory.sh is not present" in warning.status.description


def test_apply_errors_per_component() -> None:
    result = run(v1beta1())
    failed = result.with_apply_errors({"AuthorizationPolicy": ["create AuthorizationPolicy shop/legacy-: denied"]})
    assert failed.v1beta1 is not None
    assert failed.v1beta1.authorization_policy == Component("ERROR", "create AuthorizationPolicy shop/legacy-: denied")
    assert failed.v1beta1.api_rule == Component("ERROR", "Error has happened on subresource AuthorizationPolicy")
    assert failed.status is not None and failed.status.state == "Error" and failed.failed


def test_unsupported_jwt_handler() -> None:
    result = run(v1beta1(), "magic")
    assert [str(f) for f in result.failures] == ["Attribute '': Unsupported JWT Handler: magic"]


# --- fuzz ----------------------------------------------------------------------------------------


def rich_v1beta1() -> dict[str, Any]:
    return v1beta1(
        v1rule("/headers", strategy("no_auth"), methods=["GET", "HEAD"], timeout=10),
        v1rule("/jwt", strategy("jwt", {**ISTIO_JWT,
                                        "authorizations": [{"requiredScopes": ["r"], "audiences": ["a"]}]}),
               mutators=[{"handler": "header", "config": {"headers": {"X": "1"}}},
                         {"handler": "cookie", "config": {"cookies": {"c": "1"}}}],
               service={"name": "orders", "namespace": "shop", "port": 8080}),
        v1rule("/introspect", strategy("oauth2_introspection", {"required_scope": ["read"]})),
        timeout=60,
        corsPolicy={"allowOrigins": [{"exact": "https://shop.example.com"}], "allowMethods": ["GET"],
                    "allowHeaders": ["Authorization"], "exposeHeaders": ["X-Id"], "allowCredentials": True,
                    "maxAge": "300s"},
    )


FUZZ_STATE = handler_state("istio", service("orders", selector={"app": "orders", "tier": "backend"}))


def test_rich_v1beta1_is_valid() -> None:
    result = plan(rich_v1beta1(), FUZZ_STATE, ALLOWED)
    assert result.status is not None and result.status.state == "Ready", result.status


def inside_free_config(base: dict[str, Any], path: tuple[str | int, ...]) -> bool:
    """Inside the ``config`` of a non-``jwt`` access strategy: any object goes (Oathkeeper reads it)."""
    if "config" not in path:
        return False
    at = path.index("config")
    if at + 1 == len(path) or at < 2 or path[at - 2] != "accessStrategies":
        return False
    return bool(get_at(base, path[:at]).get("handler") != "jwt")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=json_values)
def test_any_json_value_in_any_v1beta1_field(data: st.DataObject, value: Any) -> None:
    base = rich_v1beta1()
    path = data.draw(st.sampled_from(paths_of(base)))
    obj = set_at(base, path, value)
    result = plan(obj, FUZZ_STATE, ALLOWED)
    assert result.status is not None
    old = get_at(base, path)
    if wrong_type(old, value) and not inside_free_config(base, path):
        assert result.status.state == "Error", (path, value, result.status)
        assert f'"{attribute(path)}"' in result.status.description, (path, value, result.status)


@pytest.mark.parametrize("gateway", ["kyma-system/kyma-gateway", "kyma-gateway.kyma-system.svc.cluster.local",
                                     "kyma-gateway.kyma-system"])
def test_gateway_name_formats_are_copied_verbatim(gateway: str) -> None:
    """v1beta1 accepts the legacy ``name.namespace[.svc[.cluster[.local]]]`` gateway names; the processors
    copy ``spec.gateway`` into the VirtualService as written (Istio reads both formats)."""
    result = run(v1beta1(gateway=gateway))
    assert result.status is not None and result.status.state == "Ready"
    assert result.desired[0]["spec"]["gateways"] == [gateway]
