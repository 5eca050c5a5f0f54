"""Desired VirtualService, AuthorizationPolicies and RequestAuthentications (notes §3)."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.apigateway import paths
from tasks.apigateway.authorizationpolicy import not_paths
from tasks.apigateway.model import APIRule
from tasks.apigateway.plan import plan

from .builders import ISSUER, JWKS, apirule, jwt, namespace, rule, service, state

INGRESS = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
LABELS = {
    "apirule.gateway.kyma-project.io/name": "orders",
    "apirule.gateway.kyma-project.io/namespace": "shop",
    "kyma-project.io/module": "api-gateway",
    "app.kubernetes.io/managed-by": "api-gateway",
    "app.kubernetes.io/component": "api-gateway",
    "app.kubernetes.io/part-of": "api-gateway",
}
#: The response headers every route removes (notes: the gateway's CORS policy alone applies).
REMOVED = ["Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Access-Control-Allow-Headers",
           "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods", "Access-Control-Max-Age"]


def desired(obj: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    result = plan(obj, state(*extra))
    assert result.status is not None and result.status.state == "Ready", result.status
    return list(result.desired)


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def test_virtual_service_full_manifest() -> None:
    vs = desired(apirule(rule("/orders/{*}", ["GET", "POST"])))[0]
    assert vs == {
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "VirtualService",
        "metadata": {"generateName": "orders-", "namespace": "shop", "labels": LABELS},
        "spec": {
            "hosts": ["orders.local.kyma.dev"],
            "gateways": ["kyma-system/kyma-gateway"],
            "http": [
                {
                    "match": [
                        {
                            "uri": {"regex": "^/orders/" + paths.SINGLE_ASTERISK_REGEX + "$"},
                            "method": {"regex": "^(GET|POST)$"},
                        }
                    ],
                    "route": [
                        {
                            "destination": {"host": "orders.shop.svc.cluster.local", "port": {"number": 8080}},
                            "weight": 100,
                        }
                    ],
                    "timeout": "180s",
                    "headers": {
                        "request": {"set": {"x-forwarded-host": "orders.local.kyma.dev"}},
                        "response": {"remove": REMOVED},
                    },
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("spec", "rules", "expected"),
    [
        ({}, [rule("/a")], ["180s"]),
        ({"timeout": 60}, [rule("/a"), rule("/b", timeout=5)], ["60s", "5s"]),
        ({}, [rule("/a", timeout=3900)], ["3900s"]),
    ],
)
def test_route_timeouts(spec: dict[str, Any], rules: list[dict[str, Any]], expected: list[str]) -> None:
    vs = desired(apirule(*rules, **spec))[0]
    assert [r["timeout"] for r in vs["spec"]["http"]] == expected


@pytest.mark.parametrize(
    ("hosts", "vs_hosts", "forwarded"),
    [
        (["orders.local.kyma.dev"], ["orders.local.kyma.dev"], "orders.local.kyma.dev"),
        (["orders"], ["orders.local.kyma.dev"], "orders.local.kyma.dev"),
        (["*.orders.example.com"], ["*.orders.example.com"], "%REQ(:AUTHORITY)%"),
    ],
)
def test_hosts_and_forwarded_host(hosts: list[str], vs_hosts: list[str], forwarded: str) -> None:
    objs = desired(apirule(hosts=hosts))
    assert objs[0]["spec"]["hosts"] == vs_hosts
    assert objs[0]["spec"]["http"][0]["headers"]["request"]["set"]["x-forwarded-host"] == forwarded
    assert objs[1]["spec"]["rules"][0]["to"][0]["operation"]["hosts"] == vs_hosts


def test_request_headers_and_sorted_cookies() -> None:
    vs = desired(apirule(rule("/a", request={"headers": {"X-A": "1"}, "cookies": {"b": "2", "a": "1"}})))[0]
    assert vs["spec"]["http"][0]["headers"]["request"]["set"] == {
        "x-forwarded-host": "orders.local.kyma.dev",
        "X-A": "1",
        "Cookie": "a=1; b=2",
    }


def test_catch_all_is_prefix_and_rule_service_overrides() -> None:
    vs = desired(apirule(rule("/*", service={"name": "httpbin", "port": 8000})))[0]
    route = vs["spec"]["http"][0]
    assert route["match"][0]["uri"] == {"prefix": "/"}
    assert route["route"][0]["destination"] == {"host": "httpbin.shop.svc.cluster.local", "port": {"number": 8000}}


def test_service_namespace_falls_back_to_spec_service_namespace() -> None:
    obj = apirule(rule("/a", service={"name": "x", "port": 1}), service={"name": "y", "namespace": "n2", "port": 2})
    objs = desired(obj, service("x", "n2"), namespace("n2", allow_apirules_from="shop"))
    assert objs[0]["spec"]["http"][0]["route"][0]["destination"]["host"] == "x.n2.svc.cluster.local"
    assert objs[0]["metadata"]["namespace"] == "shop"  # VS stays in the APIRule namespace
    assert objs[1]["metadata"]["namespace"] == "n2"  # policies go to the Service namespace


@pytest.mark.parametrize(
    ("cors", "expected"),
    [
        (None, None),
        ({"allowMethods": ["GET"]}, None),  # no origins → no policy at all
        ({"allowOrigins": [{"exact": "https://a"}]}, {"allowOrigins": [{"exact": "https://a"}]}),
        (
            {
                "allowOrigins": [{"regex": ".*"}, {"prefix": "https://p"}, {"other": "x"}],
                "allowMethods": ["GET", "POST"],
                "allowHeaders": ["Authorization"],
                "exposeHeaders": ["X-Id"],
                "allowCredentials": False,
                "maxAge": 300,
            },
            {
                "allowOrigins": [{"regex": ".*"}, {"prefix": "https://p"}, {"prefix": "x"}],
                "allowMethods": ["GET", "POST"],
                "allowHeaders": ["Authorization"],
                "exposeHeaders": ["X-Id"],
                "allowCredentials": False,
                "maxAge": "300s",
            },
        ),
    ],
)
def test_cors(cors: dict[str, Any] | None, expected: dict[str, Any] | None) -> None:
    spec: dict[str, Any] = {"corsPolicy": cors} if cors is not None else {}
    route = desired(apirule(rule("/a"), **spec))[0]["spec"]["http"][0]
    assert route.get("corsPolicy") == expected
    assert route["headers"]["response"]["remove"] == REMOVED


def test_no_auth_policy() -> None:
    objs = desired(apirule(rule("/a", ["GET", "PUT"])))
    (ap,) = of_kind(objs, "AuthorizationPolicy")
    assert ap["metadata"]["labels"]["gateway.kyma-project.io/index"] == "0"
    assert ap["metadata"]["labels"]["gateway.kyma-project.io/hash"].count(".") == 2
    assert ap["spec"] == {
        "selector": {"matchLabels": {"app": "orders", "tier": "backend"}},
        "rules": [
            {
                "from": [{"source": {"principals": [INGRESS]}}],
                "to": [{"operation": {"hosts": ["orders.local.kyma.dev"], "methods": ["GET", "PUT"], "paths": ["/a"]}}],
            }
        ],
    }
    assert of_kind(objs, "RequestAuthentication") == []


def test_jwt_policy_with_scopes_and_audiences() -> None:
    objs = desired(apirule(rule("/a", jwt=jwt(["read", "write"], ["shop"]))))
    (ap,) = of_kind(objs, "AuthorizationPolicy")
    source = {"requestPrincipals": [f"{ISSUER}/*"], "principals": [INGRESS]}
    assert [r["from"] for r in ap["spec"]["rules"]] == [[{"source": source}]] * 3
    assert [r["when"] for r in ap["spec"]["rules"]] == [
        [
            {"key": f"request.auth.claims[{key}]", "values": ["read"]},
            {"key": f"request.auth.claims[{key}]", "values": ["write"]},
            {"key": "request.auth.claims[aud]", "values": ["shop"]},
        ]
        for key in ("scp", "scope", "scopes")
    ]


def test_jwt_one_policy_per_authorization() -> None:
    config = jwt()
    config["authorizations"] = [{"audiences": ["a"]}, {"requiredScopes": ["s"]}]
    aps = of_kind(desired(apirule(rule("/a", jwt=config))), "AuthorizationPolicy")
    assert [ap["metadata"]["labels"]["gateway.kyma-project.io/index"] for ap in aps] == ["0", "1"]
    assert aps[0]["spec"]["rules"][0]["when"] == [{"key": "request.auth.claims[aud]", "values": ["a"]}]
    assert len(aps[1]["spec"]["rules"]) == 3


def test_jwt_without_authorizations_has_no_when() -> None:
    (ap,) = of_kind(desired(apirule(rule("/a", jwt=jwt()))), "AuthorizationPolicy")
    assert "when" not in ap["spec"]["rules"][0]


def test_ext_auth_custom_then_allow() -> None:
    ext = {"authorizers": ["oauth2-proxy"], "restrictions": jwt(["read"])}
    objs = desired(apirule(rule("/a", extAuth=ext)))
    custom, allow = of_kind(objs, "AuthorizationPolicy")
    assert custom["spec"]["action"] == "CUSTOM"
    assert custom["spec"]["provider"] == {"name": "oauth2-proxy"}
    assert custom["spec"]["rules"] == [{"to": allow["spec"]["rules"][0]["to"]}]
    assert "action" not in allow["spec"]
    assert allow["metadata"]["labels"]["gateway.kyma-project.io/index"] == "1"
    assert allow["spec"]["rules"][0]["from"][0]["source"]["requestPrincipals"] == [f"{ISSUER}/*"]
    assert len(of_kind(objs, "RequestAuthentication")) == 1


def test_ext_auth_without_restrictions_allows_ingress_only() -> None:
    objs = desired(apirule(rule("/a", extAuth={"authorizers": ["oauth2-proxy"]})))
    _, allow = of_kind(objs, "AuthorizationPolicy")
    assert allow["spec"]["rules"][0]["from"] == [{"source": {"principals": [INGRESS]}}]
    assert of_kind(objs, "RequestAuthentication") == []


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([rule("/a"), rule("/b")], [None, ["/a"]]),
        ([rule("/a", ["GET"]), rule("/b", ["POST"])], [None, None]),
        ([rule("/a/{*}"), rule("/a/b/c"), rule("/c")], [None, ["/a/{*}"], ["/a/{*}", "/a/b/c"]]),
        ([rule("/a", ["GET"]), rule("/x", ["GET"]), rule("/a", ["POST"])], [None, ["/a"], None]),
    ],
)
def test_not_paths(rules: list[dict[str, Any]], expected: list[list[str] | None]) -> None:
    aps = of_kind(desired(apirule(*rules)), "AuthorizationPolicy")
    assert [ap["spec"]["rules"][0]["to"][0]["operation"].get("notPaths") for ap in aps] == expected
    assert aps[0]["spec"]["rules"][0]["to"][0]["operation"]["paths"] == [paths.policy_path(rules[0]["path"])]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        # validation rejects these (conflicts), the function still follows the original's walk
        ([("/*", ("GET",)), ("/a", ("GET",))], [["/a"], []]),  # a catch-all excludes later rules too
        ([("/a", ("GET",)), ("/{**}", ("GET",))], [[], ["/a"]]),
        ([("/", ("GET",)), ("/a", ("GET",))], [["/a"], []]),
        ([("/a", ("GET",)), ("/b", ("GET",)), ("/a", ("GET",))], [[], ["/a"], []]),  # stops at equal path
    ],
)
def test_not_paths_walk(rules: list[tuple[str, tuple[str, ...]]], expected: list[list[str]]) -> None:
    parsed = APIRule.parse(apirule(*(rule(p, list(m)) for p, m in rules))).rules
    assert [not_paths(parsed, i) for i in range(len(parsed))] == expected


def test_request_authentication_and_dedup() -> None:
    header: dict[str, Any] = {"fromHeaders": [{"name": "X-T", "prefix": "Token "}]}
    objs = desired(
        apirule(
            rule("/a", jwt=jwt(["r"], **header)),
            rule("/b", ["POST"], jwt=jwt(**header)),
            rule("/c", service={"name": "httpbin", "port": 8000}, jwt=jwt(**header)),
        )
    )
    ras = of_kind(objs, "RequestAuthentication")
    assert len(ras) == 2  # orders rules share one; httpbin has its own
    assert ras[0]["spec"] == {
        "selector": {"matchLabels": {"app": "orders", "tier": "backend"}},
        "jwtRules": [
            {
                "issuer": ISSUER,
                "jwksUri": JWKS,
                "forwardOriginalToken": True,
                "fromHeaders": [{"name": "X-T", "prefix": "Token "}],
            }
        ],
    }
    assert ras[1]["spec"]["selector"] == {"matchLabels": {"app": "httpbin"}}
    assert ras[0]["metadata"] == {"generateName": "orders-", "namespace": "shop", "labels": LABELS}


def test_processor_order() -> None:
    objs = desired(apirule(rule("/a", jwt=jwt()), rule("/b", ["POST"])))
    assert [o["kind"] for o in objs] == [
        "VirtualService",
        "AuthorizationPolicy",
        "AuthorizationPolicy",
        "RequestAuthentication",
    ]


def test_policy_hash_is_order_insensitive_and_distinct() -> None:
    a = of_kind(desired(apirule(rule("/a", ["GET", "POST"]))), "AuthorizationPolicy")[0]
    b = of_kind(desired(apirule(rule("/a", ["POST", "GET"]))), "AuthorizationPolicy")[0]
    c = of_kind(desired(apirule(rule("/b", ["POST", "GET"]))), "AuthorizationPolicy")[0]
    key = "gateway.kyma-project.io/hash"
    assert a["metadata"]["labels"][key] == b["metadata"]["labels"][key] != c["metadata"]["labels"][key]
    assert len(a["metadata"]["labels"][key]) <= 63
