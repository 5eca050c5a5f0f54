"""Every v2 validation with its attribute path and message (notes §5.2), as a table."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.apigateway.model import APIRule
from tasks.apigateway.state import ClusterState
from tasks.apigateway.validate import ValidationFailure, uri_error, validate

from .builders import ISSUER, JWKS, apirule, cluster, config_map, gateway, jwt, rule, service

VS_OTHER = {
    "apiVersion": "networking.istio.io/v1beta1",
    "kind": "VirtualService",
    "metadata": {"name": "foreign", "namespace": "other"},
    "spec": {"hosts": ["orders.local.kyma.dev", "httpbin.local.kyma.dev"]},
}


def vs_labelled(labels: dict[str, str]) -> dict[str, Any]:
    return {**VS_OTHER, "metadata": {"name": "vs", "namespace": "shop", "labels": labels}}


def pod(name: str, labels: dict[str, str], sidecar: bool, init: bool = False) -> dict[str, Any]:
    containers = [{"name": "app"}]
    spec: dict[str, Any] = {"containers": containers}
    if sidecar:
        (spec.setdefault("initContainers", []) if init else containers).append({"name": "istio-proxy"})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": labels},
        "spec": spec,
    }


NEW_OWNER = {"apirule.gateway.kyma-project.io/name": "orders", "apirule.gateway.kyma-project.io/namespace": "shop"}

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[tuple[str, str]]]] = [
    ("valid noAuth", apirule(), [], []),
    (
        "empty spec",
        {**apirule(), "spec": {}},
        [],
        [
            (
                ".spec",
                "APIRule in version v2alpha1 contains an empty spec. To troubleshoot, see "
                "https://kyma-project.io/#/api-gateway/user/troubleshooting-guides/03-70-empty-apirule-spec.",
            )
        ],
    ),
    ("no rules", apirule(rules=[]), [], [(".spec.rules", "No rules defined")]),
    (
        "no service anywhere",
        apirule(rule("/a"), service={}),
        [],
        [
            (".spec.rules[0].service", "The rule must define a service, because no service is defined on spec level"),
            (
                ".spec.rules[0]",
                "Failed to execute sidecar injection validation, err: service name is required but missing",
            ),
        ],
    ),
    (
        "service not found",
        apirule(rule("/a", service={"name": "nope", "port": 80})),
        [],
        [(".spec.rules[0]", 'Failed to execute sidecar injection validation, err: services "nope" not found')],
    ),
    (
        "service in another namespace found",
        apirule(rule("/a", service={"name": "x", "namespace": "n2", "port": 1})),
        [service("x", "n2")],
        [],
    ),
    (
        "service without selector",
        apirule(rule("/a", service={"name": "bare", "port": 80})),
        [service("bare", selector={})],
        [(".spec.rules[0].injection", "Target service label selectors are not defined")],
    ),
    (
        "pod without sidecar",
        apirule(),
        [
            pod("orders-1", {"app": "orders", "tier": "backend"}, sidecar=False),
            pod("orders-2", {"app": "orders", "tier": "backend"}, sidecar=True),
            pod("orders-3", {"app": "orders", "tier": "backend"}, sidecar=True, init=True),
            pod("other", {"app": "orders"}, sidecar=False),
        ],
        [(".spec.rules[0]", "Pod shop/orders-1 does not have an injected istio sidecar")],
    ),
    (
        "two {**}",
        apirule(rule("/a/{**}/{**}")),
        [],
        [(".spec.rules[0].path", "Only one {**} operator is allowed in the path.")],
    ),
    (
        "{**} not last",
        apirule(rule("/{**}/a/{*}")),
        [],
        [(".spec.rules[0].path", "The {**} operator must be the last operator in the path.")],
    ),
    (
        "path conflict",
        apirule(rule("/a/{*}", ["GET", "POST"]), rule("/a/b", ["PUT", "POST"])),
        [],
        [(".spec.rules", "Path /a/b with method POST conflicts with at least one of the previous rule paths")],
    ),
    ("disjoint methods", apirule(rule("/a", ["GET"]), rule("/a", ["POST"])), [], []),
    ("jwt valid", apirule(rule("/a", jwt=jwt(["read"], ["aud"]))), [], []),
    (
        "jwt authorizations empty",
        apirule(rule("/a", jwt={**jwt(), "authorizations": []})),
        [],
        [(".spec.rules[0].jwt.authorizations", "authorizations defined, but no configuration exists")],
    ),
    (
        "jwt null authorization",
        apirule(rule("/a", jwt={**jwt(), "authorizations": [None]})),
        [],
        [(".spec.rules[0].jwt.authorizations[0]", "authorization is empty")],
    ),
    (
        "jwt empty scopes and audiences",
        apirule(rule("/a", jwt=jwt([], []))),
        [],
        [
            (".spec.rules[0].jwt.authorizations[0].requiredScopes", "value is empty"),
            (".spec.rules[0].jwt.authorizations[0].audiences", "value is empty"),
        ],
    ),
    (
        "jwt blank scope and audience",
        apirule(rule("/a", jwt=jwt(["a", ""], [""]))),
        [],
        [
            (".spec.rules[0].jwt.authorizations[0].requiredScopes", "scope value is empty"),
            (".spec.rules[0].jwt.authorizations[0].audiences", "audience value is empty"),
        ],
    ),
    (
        "jwt no authentications",
        apirule(rule("/a", jwt={"authentications": []})),
        [],
        [(".spec.rules[0].jwt.authentications", "A JWT config must have at least one authentication")],
    ),
    (
        "jwt bad issuer and jwks",
        apirule(rule("/a", jwt=jwt(issuer=":bad", jwksUri="jwks.json"))),
        [],
        [
            (
                ".spec.rules[0].jwt.authentications[0].issuer",
                'value is empty or not a valid uri err=parse ":bad": missing protocol scheme',
            ),
            (
                ".spec.rules[0].jwt.authentications[0].jwksUri",
                'value is empty or not a valid uri err=parse "jwks.json": invalid URI for request',
            ),
        ],
    ),
    (
        "jwt empty issuer and jwks",
        apirule(rule("/a", jwt=jwt(issuer="", jwksUri=""))),
        [],
        [
            (".spec.rules[0].jwt.authentications[0].issuer", "value is empty or not a valid uri err=value is empty"),
            (".spec.rules[0].jwt.authentications[0].jwksUri", "value is empty or not a valid uri err=value is empty"),
        ],
    ),
    ("issuer without colon is fine", apirule(rule("/a", jwt=jwt(issuer="testing@secure.istio.io"))), [], []),
    (
        "jwt two fromHeaders",
        apirule(rule("/a", jwt=jwt(fromHeaders=[{"name": "a"}, {"name": "b"}]))),
        [],
        [(".spec.rules[0].jwt.authentications[0].fromHeaders", "multiple fromHeaders are not supported")],
    ),
    (
        "jwt two fromParams",
        apirule(rule("/a", jwt=jwt(fromParams=["a", "b"]))),
        [],
        [(".spec.rules[0].jwt.authentications[0].fromParams", "multiple fromParams are not supported")],
    ),
    (
        "jwt headers then params",
        apirule(
            rule(
                "/a",
                jwt={
                    "authentications": [
                        {"issuer": ISSUER, "jwksUri": JWKS, "fromHeaders": [{"name": "x"}]},
                        {"issuer": "https://b", "jwksUri": JWKS, "fromParams": ["t"]},
                    ]
                },
            )
        ),
        [],
        [
            (
                ".spec.rules[0].jwt.authentications[1].fromParams",
                "mixture of multiple fromHeaders and fromParams is not supported",
            )
        ],
    ),
    (
        "jwt differing config for one issuer",
        apirule(rule("/a", jwt=jwt()), rule("/b", jwt=jwt(fromHeaders=[{"name": "x"}]))),
        [],
        [(".spec.rules[1].jwt.authentications[0]", "multiple jwt configurations that differ for the same issuer")],
    ),
    (
        "extAuth restrictions checked under .extAuth",
        apirule(rule("/a", extAuth={"authorizers": ["oauth2-proxy"], "restrictions": {"authentications": []}})),
        [],
        [(".spec.rules[0].extAuth.authentications", "A JWT config must have at least one authentication")],
    ),
    (
        "extAuth unknown and non-http authorizers",
        apirule(rule("/a", extAuth={"authorizers": ["nope", "grpc-only"]})),
        [],
        [
            (".spec.rules[0].extAuth.externalAuthorizers.nope", "Authorizer not found in Istio ConfigMap mesh data"),
            (
                ".spec.rules[0].extAuth.externalAuthorizers.grpc-only",
                "EnvoyExtAuthzHttp not found in Istio ConfigMap mesh data for authorizer",
            ),
        ],
    ),
    (
        "extAuth mesh without key",
        apirule(rule("/a", extAuth={"authorizers": ["oauth2-proxy"]})),
        [config_map("istio", "istio-system", {"other": ""})],
        [(".spec.rules[0].extAuth.externalAuthorizers", "Istio ConfigMap does not contain mesh key")],
    ),
    (
        "extAuth mesh unparsable",
        apirule(rule("/a", extAuth={"authorizers": ["oauth2-proxy"]})),
        [config_map("istio", "istio-system", {"mesh": "extensionProviders: 7"})],
        [(".spec.rules[0].extAuth.externalAuthorizers", "Failed to unmarshal mesh data")],
    ),
    ("no hosts", apirule(hosts=[]), [], []),  # builder default; replaced below
    ("short host ok", apirule(hosts=["orders"]), [], []),
    (
        "short host, gateway with two hosts",
        apirule(hosts=["orders"]),
        [gateway(hosts=["*.a.dev", "*.b.dev"])],
        [
            (
                ".spec.hosts[0]",
                "Lowercase RFC 1123 label (short host) is only supported as the APIRule host when "
                "selected Gateway has a single host definition matching *.<fqdn> format",
            )
        ],
    ),
    (
        "short host, gateway without wildcard",
        apirule(hosts=["orders"]),
        [gateway(hosts=["a.dev"])],
        [
            (
                ".spec.hosts[0]",
                "Lowercase RFC 1123 label (short host) is only supported as the APIRule host when "
                "selected Gateway has a single host definition matching *.<fqdn> format",
            )
        ],
    ),
    (
        "invalid host",
        apirule(hosts=["Orders.Example.COM"]),
        [],
        [(".spec.hosts[0]", "Host must be a valid FQDN or short host name")],
    ),
    ("wildcard host ok", apirule(hosts=["*.orders.local.kyma.dev"]), [], []),
    ("occupied host", apirule(), [VS_OTHER], [(".spec.hosts[0]", "Host is occupied by another Virtual Service")]),
    (
        "occupied via short host",
        apirule(hosts=["httpbin"]),
        [VS_OTHER],
        [(".spec.hosts[0]", "Host is occupied by another Virtual Service")],
    ),
    ("own VS does not occupy", apirule(), [vs_labelled(NEW_OWNER)], []),
    (
        "own legacy VS does not occupy",
        apirule(),
        [vs_labelled({"apirule.gateway.kyma-project.io/v1beta1": "orders.shop"})],
        [],
    ),
    (
        "legacy label of another rule decides",
        apirule(),
        [vs_labelled({**NEW_OWNER, "apirule.gateway.kyma-project.io/v1beta1": "other.shop"})],
        [(".spec.hosts[0]", "Host is occupied by another Virtual Service")],
    ),
    ("gateway not found", apirule(gateway="kyma-system/nope"), [], [(".spec.gateway", "Gateway not found")]),
    ("no gateway", apirule(gateway=None), [], [(".spec", "Either gateway or externalGateway must be specified")]),
    (
        "both gateways",
        apirule(externalGateway="shop/ext"),
        [],
        [(".spec", "Only one of gateway or externalGateway can be specified")],
    ),
]
# "no hosts": the builder fills hosts, so set them empty explicitly.
CASES[[c[0] for c in CASES].index("no hosts")] = (
    "no hosts",
    {**apirule(), "spec": {**apirule()["spec"], "hosts": []}},
    [],
    [(".spec.hosts", "No hosts defined")],
)


@pytest.mark.parametrize(("apirule_obj", "extra", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation(apirule_obj: dict[str, Any], extra: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    # later manifests of the same kind/name win, so ``extra`` can replace the base Gateway or mesh config
    state = ClusterState.from_manifests(cluster(*extra))
    failures = validate(APIRule.parse(apirule_obj), state)
    assert [(f.attribute_path, f.message) for f in failures] == expected


def test_failure_renders_as_attribute_line() -> None:
    assert str(ValidationFailure(".spec.rules", "No rules defined")) == "Attribute '.spec.rules': No rules defined"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("", "value is empty"),
        ("https://a.b/c", None),
        ("file://x", None),
        ("/relative", None),
        ("urn:a:b", None),
        (":x", 'parse ":x": missing protocol scheme'),
        ("a.b/c", 'parse "a.b/c": invalid URI for request'),
        ("1http://x", 'parse "1http://x": invalid URI for request'),
    ],
)
def test_uri_error_mimics_go(value: str, error: str | None) -> None:
    assert uri_error(value) == error
