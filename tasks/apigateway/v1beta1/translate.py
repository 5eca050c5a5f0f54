"""Desired objects of a v1beta1 APIRule: the ``istio`` and ``ory`` processors (api-gateway's
``internal/processing/processors/{istio,ory}`` and ``internal/builders``).

Both handlers write one VirtualService (rules with a repeated path give one route, the first); the
route goes to the Service, or through the Oathkeeper proxy for rules Oathkeeper secures.

============================  =========================================  ==========================================
                              ``ory``                                     ``istio``
============================  =========================================  ==========================================
VirtualService destination    Service for ``allow`` / ``no_auth`` rules   Service for ``allow`` / ``no_auth`` / ``jwt``
uri match                     ``regex: <path>`` (raw)                     ``prefix: /`` for ``/*``, else ``regex``
method match                  rules with ``no_auth``                      rules without ``allow``
headers                       ``x-forwarded-host``                        plus ``jwt`` rules' cookie/header mutators
Oathkeeper Rules              every Oathkeeper-secured rule               rules with ``noop`` / ``oauth2_introspection``
AuthorizationPolicies         none                                        one per rule and authorization, when a rule
                                                                          is ``jwt`` or ``no_auth``
RequestAuthentications        none                                        one per ``jwt`` rule
============================  =========================================  ==========================================

CORS: the operator's default policy when the APIRule has none, else the APIRule's (with the upstream
CORS headers removed). Pure: everything comes from the APIRule, the Services' selectors and the domain.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tasks.apigateway import model
from tasks.apigateway.authorizationpolicy import AUDIENCE_CLAIM_KEY, SCOPE_CLAIM_KEYS, policy_hash
from tasks.apigateway.config import JWT_HANDLER_ISTIO
from tasks.apigateway.parsing import CorsPolicy, JwtConfig, as_dict, as_list
from tasks.apigateway.requestauthentication import request_authentication_key
from tasks.apigateway.v1beta1 import model as v1
from tasks.apigateway.v1beta1.model import Handler, V1beta1APIRule, V1beta1Rule
from tasks.apigateway.v1beta1.validate import host_with_domain
from tasks.apigateway.virtualservice import (
    AUTHORITY_SUBSTITUTION,
    FORWARDED_HOST_HEADER,
    REMOVED_RESPONSE_HEADERS,
    cors_policy,
)

OATHKEEPER_PROXY_HOST = "ory-oathkeeper-proxy.kyma-system.svc.cluster.local"
OATHKEEPER_PROXY_PORT = 4455
OATHKEEPER_PRINCIPAL = "cluster.local/ns/kyma-system/sa/oathkeeper-maester-account"
#: The operator's CORS policy for v1beta1 APIRules without ``corsPolicy``.
DEFAULT_CORS: dict[str, Any] = {
    "allowOrigins": [{"regex": ".*"}],
    "allowMethods": ["GET", "POST", "PUT", "DELETE", "PATCH"],
    "allowHeaders": ["Authorization", "Content-Type", "*"],
}


class ProcessorError(ValueError):
    """A processor cannot build its objects (a Service is missing); the message is the status text."""


def _metadata(apirule: V1beta1APIRule, namespace: str) -> dict[str, Any]:
    return {"generateName": f"{apirule.name}-", "namespace": namespace,
            "labels": model.owner_labels(apirule.name, apirule.namespace)}


def _service_host_port(apirule: V1beta1APIRule, rule: V1beta1Rule) -> tuple[str, int | None]:
    service = apirule.rule_service(rule)
    namespace = apirule.service_namespace(rule)
    name = service.name if service is not None else ""
    return f"{name}.{namespace}.svc.cluster.local", service.port if service is not None else None


def _cors(cors: CorsPolicy | None) -> dict[str, Any] | None:
    """v1beta1: no ``corsPolicy`` at all means the default CORS policy."""
    return copy.deepcopy(DEFAULT_CORS) if cors is None else cors_policy(cors)


def unique_path_rules(rules: tuple[V1beta1Rule, ...]) -> list[V1beta1Rule]:
    """The first rule of each path (``FilterDuplicatePaths``)."""
    seen: set[str] = set()
    out = []
    for rule in rules:
        if rule.path not in seen:
            seen.add(rule.path)
            out.append(rule)
    return out


def desired_virtual_service(apirule: V1beta1APIRule, handler: str, domain: str) -> dict[str, Any]:
    """The VirtualService of ``apirule`` for ``handler`` (``istio`` or ``ory``), in its namespace."""
    host = host_with_domain(apirule.host or "", domain)
    istio = handler == JWT_HANDLER_ISTIO
    routes = []
    for rule in unique_path_rules(apirule.rules):
        direct = not rule.secured_by_oathkeeper or (istio and rule.jwt_secured)
        target, port = _service_host_port(apirule, rule) if direct else (OATHKEEPER_PROXY_HOST, OATHKEEPER_PROXY_PORT)
        match: dict[str, Any] = {}
        if (istio and not rule.has(v1.ALLOW)) or (not istio and rule.has(v1.NO_AUTH)):
            match["method"] = {"regex": "^(" + "|".join(rule.methods) + ")$"}
        match["uri"] = {"prefix": "/"} if istio and rule.path == "/*" else {"regex": rule.path}
        request_set = {FORWARDED_HOST_HEADER: AUTHORITY_SUBSTITUTION if host.startswith("*.") else host}
        if istio and rule.jwt_secured:
            cookie, header = rule.mutator(v1.COOKIE_MUTATOR), rule.mutator(v1.HEADER_MUTATOR)
            if cookie is not None and cookie.values:
                request_set["Cookie"] = "; ".join(f"{k}={v}" for k, v in sorted(cookie.values.items()))
            if header is not None and header.values:
                request_set.update(header.values)
        headers: dict[str, Any] = {"request": {"set": request_set}}
        if apirule.cors is not None:
            headers["response"] = {"remove": list(REMOVED_RESPONSE_HEADERS)}
        route: dict[str, Any] = {
            "match": [match],
            "route": [{"destination": {"host": target, "port": {"number": port}}, "weight": 100}],
            "timeout": f"{rule.timeout or apirule.timeout or model.DEFAULT_TIMEOUT_SECONDS}s",
            "headers": headers,
        }
        cors = _cors(apirule.cors)
        if cors is not None:
            route["corsPolicy"] = cors
        routes.append(route)
    return {
        "apiVersion": model.VIRTUAL_SERVICE.api_version,
        "kind": model.VIRTUAL_SERVICE.kind,
        "metadata": _metadata(apirule, apirule.namespace),
        "spec": {"hosts": [host], "gateways": [apirule.gateway or ""], "http": routes},
    }


def _selector(apirule: V1beta1APIRule, rule: V1beta1Rule,
              selectors: Mapping[tuple[str, str], dict[str, str] | None]) -> dict[str, str] | None:
    service = apirule.rule_service(rule)
    namespace = apirule.service_namespace(rule) or "default"
    if service is None or not service.name:
        raise ProcessorError("service name is required but missing")
    key = (namespace, service.name)
    if key not in selectors:
        raise ProcessorError(f'services "{service.name}" not found')
    return selectors[key]


def _jwt(rule: V1beta1Rule) -> JwtConfig | None:
    strategy = rule.jwt_strategy
    return strategy.jwt if strategy is not None else None


def requires_authorization_policies(apirule: V1beta1APIRule) -> bool:
    """Some rule is ``jwt`` or has ``no_auth`` (``RequiresAuthorizationPolicies``)."""
    return any(r.jwt_secured or r.has(v1.NO_AUTH) for r in apirule.rules)


def desired_authorization_policies(apirule: V1beta1APIRule,
                                   selectors: Mapping[tuple[str, str], dict[str, str] | None],
                                   ) -> list[dict[str, Any]]:
    """The Istio handler's AuthorizationPolicies: none unless a rule is ``jwt`` or ``no_auth``; then one
    per rule and authorization of its first strategy's config (one when it has none), in the Service's
    namespace with its selector, ``to`` = methods and path (``/.*`` written ``/*``), ``from`` = request
    principals (``jwt``), the Oathkeeper principal (Oathkeeper-secured) or the ingress gateway.
    Raises :class:`ProcessorError` for a Service that cannot be found."""
    if not requires_authorization_policies(apirule):
        return []
    policies = []
    for rule in apirule.rules:
        namespace = apirule.service_namespace(rule)
        selector = _selector(apirule, rule, selectors)
        first = rule.access_strategies[0] if rule.access_strategies else None
        authorizations = list((first.jwt.authorizations or ()) if first is not None and first.jwt else ())
        to = [{"operation": {"methods": list(rule.methods), "paths": ["/*" if rule.path == "/.*" else rule.path]}}]
        if rule.jwt_secured:
            jwt = _jwt(rule)
            source: dict[str, Any] = {"requestPrincipals": [f"{a.issuer}/*" for a in (jwt.authentications if jwt
                                                                                      else ())]}
        elif rule.secured_by_oathkeeper:
            source = {"principals": [OATHKEEPER_PRINCIPAL]}
        else:
            source = {"principals": [model.INGRESS_GATEWAY_PRINCIPAL]}
        for index, authorization in enumerate(authorizations or [None]):
            audiences = list((authorization.audiences if authorization else None) or [])
            scopes = list((authorization.required_scopes if authorization else None) or [])
            audience_when = [{"key": AUDIENCE_CLAIM_KEY, "values": [a]} for a in audiences]
            rules: list[dict[str, Any]] = []
            for key in SCOPE_CLAIM_KEYS if scopes else (None,):
                when = ([{"key": key, "values": [s]} for s in scopes] if key else []) + audience_when
                rules.append({"from": [{"source": copy.deepcopy(source)}], "to": copy.deepcopy(to),
                              **({"when": when} if when else {})})
            meta = _metadata(apirule, namespace)
            meta["labels"][model.HASH_LABEL] = policy_hash(namespace, selector, to)
            meta["labels"][model.INDEX_LABEL] = str(index)
            spec: dict[str, Any] = {}
            if selector is not None:
                spec["selector"] = {"matchLabels": dict(selector)}
            spec["rules"] = rules
            policies.append({"apiVersion": model.AUTHORIZATION_POLICY.api_version,
                             "kind": model.AUTHORIZATION_POLICY.kind, "metadata": meta, "spec": spec})
    return policies


def desired_request_authentications(apirule: V1beta1APIRule,
                                    selectors: Mapping[tuple[str, str], dict[str, str] | None],
                                    ) -> list[dict[str, Any]]:
    """The Istio handler's RequestAuthentications: one per ``jwt`` rule, deduplicated by selector,
    issuers and namespace, ``jwtRules`` from the authentications with ``forwardOriginalToken: true``.
    Raises :class:`ProcessorError` for a Service that cannot be found."""
    desired: dict[str, dict[str, Any]] = {}
    for rule in apirule.rules:
        if not rule.jwt_secured:
            continue
        selector = _selector(apirule, rule, selectors)
        jwt_rules = []
        for strategy in rule.access_strategies:
            for auth in strategy.jwt.authentications if strategy.jwt else ():
                entry: dict[str, Any] = {"issuer": auth.issuer, "jwksUri": auth.jwks_uri, "forwardOriginalToken": True}
                if auth.from_headers:
                    entry["fromHeaders"] = [{"name": h.name, **({"prefix": h.prefix} if h.prefix is not None else {})}
                                            for h in auth.from_headers]
                if auth.from_params:
                    entry["fromParams"] = list(auth.from_params)
                jwt_rules.append(entry)
        spec: dict[str, Any] = {}
        if selector is not None:
            spec["selector"] = {"matchLabels": dict(selector)}
        spec["jwtRules"] = jwt_rules
        obj = {"apiVersion": model.REQUEST_AUTHENTICATION.api_version, "kind": model.REQUEST_AUTHENTICATION.kind,
               "metadata": _metadata(apirule, apirule.service_namespace(rule)), "spec": spec}
        desired.setdefault(request_authentication_key(obj), obj)
    return list(desired.values())


def _handler_json(handler: Handler) -> dict[str, Any]:
    return {"handler": handler.name, **({"config": copy.deepcopy(handler.config)} if handler.config else {})}


def has_path_duplicates(rules: tuple[V1beta1Rule, ...]) -> bool:
    paths = [r.path for r in rules]
    return len(paths) != len(set(paths))


def access_rule_key(rule: Mapping[str, Any], path_duplicates: bool) -> str:
    """The diff key of an Oathkeeper Rule: its match URL, plus ``:[M1 M2]`` when rules share a path
    (``SetAccessRuleKey``)."""
    match = as_dict(as_dict(rule.get("spec")).get("match"))
    url = str(match.get("url", ""))
    if path_duplicates:
        methods = as_list(match.get("methods"))
        return f"{url}:[{' '.join(str(m) for m in methods)}]"
    return url


def desired_access_rules(apirule: V1beta1APIRule, handler: str, domain: str) -> list[dict[str, Any]]:
    """Oathkeeper Rules (``oathkeeper.ory.sh/v1alpha1``) in the APIRule's namespace: with the Ory
    handler one per Oathkeeper-secured rule with all its strategies as authenticators; with the Istio
    handler only for rules with ``noop`` / ``oauth2_introspection`` (those strategies only). Match URL
    ``<http|https>://<host><<path>>``, authorizer ``allow``, the rule's mutators, upstream the Service."""
    host = host_with_domain(apirule.host or "", domain)
    duplicates = has_path_duplicates(apirule.rules)
    desired: dict[str, dict[str, Any]] = {}
    for rule in apirule.rules:
        strategies = list(rule.access_strategies)
        if handler == JWT_HANDLER_ISTIO:
            strategies = [s for s in strategies if s.name in (v1.NOOP, v1.OAUTH2_INTROSPECTION)]
        if not strategies or not rule.secured_by_oathkeeper:
            continue
        target, port = _service_host_port(apirule, rule)
        spec: dict[str, Any] = {
            "upstream": {"url": f"http://{target}:{port}"},
            "match": {"url": f"<http|https>://{host}<{rule.path}>", "methods": list(rule.methods)},
            "authenticators": [_handler_json(s) for s in strategies],
            "authorizer": {"handler": "allow"},
        }
        if rule.mutators:
            spec["mutators"] = [_handler_json(m) for m in rule.mutators]
        obj = {"apiVersion": model.ORY_RULE.api_version, "kind": model.ORY_RULE.kind,
               "metadata": _metadata(apirule, apirule.namespace), "spec": spec}
        desired[access_rule_key(obj, duplicates)] = obj  # a later rule with the same key wins, as the map
    return list(desired.values())
