"""The desired AuthorizationPolicies of an APIRule, as api-gateway's v2 AuthorizationPolicy processor.

Per rule, in the Service's namespace with the Service's selector:
- ``noAuth``: one ALLOW policy for the ingress gateway principal;
- ``jwt``: one ALLOW policy per authorization (one when there are none), with request principals of
  every issuer, and ``when`` conditions for scopes (one policy rule per scope claim key) and audiences;
- ``extAuth``: one CUSTOM policy per authorizer, then the ALLOW policies of its restrictions.
Each policy carries the hash and index labels its diff is keyed on. ALLOW is Istio's default action
and is left out, as the original's serialisation does.

With ``ory_passthrough`` (the first two steps of the v1beta1 → v2 migration, api-gateway's
``NewMigrationProcessor``) the ALLOW policies also admit traffic that still comes through Ory Oathkeeper:
their rules have no ``hosts`` (Oathkeeper forwards to the Service's cluster-local name), ``noAuth`` adds a
source for Oathkeeper's principal, and ``jwt`` / ``extAuth`` restrictions require only the request
principals (Oathkeeper forwards the token), not the ingress gateway. CUSTOM policies keep their hosts.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tasks.apigateway import model, paths
from tasks.apigateway.model import APIRule, Rule
from tasks.apigateway.parsing import JwtConfig
from tasks.apigateway.virtualservice import metadata

SCOPE_CLAIM_KEYS = ("request.auth.claims[scp]", "request.auth.claims[scope]", "request.auth.claims[scopes]")
AUDIENCE_CLAIM_KEY = "request.auth.claims[aud]"
CATCH_ALL_PATHS = ("/*", "/{**}", "/")


def not_paths(rules: tuple[Rule, ...], index: int) -> list[str]:
    """Paths of earlier rules sharing a method with rule ``index``, excluded from its policy.

    As the original: catch-all paths (``/*``, ``/{**}``, ``/``) are never excluded, and the walk stops at
    the first rule with the same path string, so a catch-all rule excludes every other overlapping rule.
    """
    current = rules[index]
    excluded = []
    for other in rules:
        if other.path in CATCH_ALL_PATHS:
            continue
        if other.path == current.path:
            break
        if set(other.methods) & set(current.methods):
            excluded.append(other.path)
    return excluded


def _canonical(value: Any) -> Any:
    """JSON value with keys sorted and lists ordered by content (hash treats slices as sets)."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _digest(value: Any) -> str:
    raw = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":")).encode()
    return base64.b32encode(hashlib.sha256(raw).digest()).decode().lower().rstrip("=")[:12]


def policy_hash(namespace: str, selector: dict[str, str] | None, to: Any) -> str:
    """The ``gateway.kyma-project.io/hash`` label: ``<ns>.<selector>.<to>`` digests, order-insensitive."""
    return f"{_digest(namespace)}.{_digest(selector or {})}.{_digest(to)}"


def _policy(
    apirule: APIRule,
    namespace: str,
    selector: dict[str, str] | None,
    rules: list[dict[str, Any]],
    index: int,
    action: str | None = None,
    provider: str | None = None,
) -> dict[str, Any]:
    meta = metadata(apirule, namespace)
    meta["labels"][model.HASH_LABEL] = policy_hash(namespace, selector, rules[0].get("to"))
    meta["labels"][model.INDEX_LABEL] = str(index)
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["selector"] = {"matchLabels": dict(selector)}
    if action is not None:
        spec["action"] = action
    if provider is not None:
        spec["provider"] = {"name": provider}
    spec["rules"] = rules
    return {
        "apiVersion": model.AUTHORIZATION_POLICY.api_version,
        "kind": model.AUTHORIZATION_POLICY.kind,
        "metadata": meta,
        "spec": spec,
    }


def _sources(config: JwtConfig | None, ory_passthrough: bool) -> list[dict[str, Any]]:
    """The ``from`` of an ALLOW policy rule: request principals of ``config``'s issuers and the ingress
    gateway; during a migration (``ory_passthrough``) the request principals alone, or without a
    ``config`` (extAuth without restrictions) Oathkeeper's principal besides the ingress gateway."""
    ingress = {"source": {"principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}
    if config is None:
        return [{"source": {"principals": [model.OATHKEEPER_PRINCIPAL]}}, ingress] if ory_passthrough else [ingress]
    principals = [f"{a.issuer}/*" for a in config.authentications]
    if ory_passthrough:
        # the original adds a second, narrower source for extAuth restrictions here; sources are ORed,
        # so this one alone admits the same requests
        return [{"source": {"requestPrincipals": principals}}]
    return [{"source": {"requestPrincipals": principals, "principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}]


def _jwt_policies(
    apirule: APIRule,
    namespace: str,
    selector: dict[str, str] | None,
    to: list[dict[str, Any]],
    config: JwtConfig | None,
    first_index: int,
    ory_passthrough: bool = False,
) -> list[dict[str, Any]]:
    from_ = _sources(config, ory_passthrough)
    authorizations = list(config.authorizations or []) if config is not None else []
    if not authorizations:
        return [_policy(apirule, namespace, selector, [{"from": from_, "to": to}], first_index)]
    policies = []
    for position, authorization in enumerate(authorizations):
        audiences = list((authorization.audiences if authorization else None) or [])
        scopes = list((authorization.required_scopes if authorization else None) or [])
        audience_when = [{"key": AUDIENCE_CLAIM_KEY, "values": [a]} for a in audiences]
        policy_rules: list[dict[str, Any]] = []
        if scopes:
            for key in SCOPE_CLAIM_KEYS:
                when = [{"key": key, "values": [s]} for s in scopes] + audience_when
                policy_rules.append({"from": from_, "to": to, "when": when})
        else:
            policy_rule: dict[str, Any] = {"from": from_, "to": to}
            if audience_when:
                policy_rule["when"] = audience_when
            policy_rules.append(policy_rule)
        policies.append(_policy(apirule, namespace, selector, policy_rules, first_index + position))
    return policies


def desired_authorization_policies(
    apirule: APIRule,
    hosts: list[str],
    selectors: list[dict[str, str] | None],
    ory_passthrough: bool = False,
) -> list[dict[str, Any]]:
    """Every AuthorizationPolicy manifest for ``apirule``, rule by rule.

    ``hosts`` are the resolved hosts; ``selectors[i]`` is rule i's workload selector (its Service's
    ``spec.selector``); ``ory_passthrough`` see the module doc (migration steps 1 and 2).
    """
    policies: list[dict[str, Any]] = []
    for i, rule in enumerate(apirule.rules):
        namespace = apirule.service_namespace(rule)
        selector = selectors[i]
        operation: dict[str, Any] = {
            "hosts": list(hosts),
            "methods": list(rule.methods),
            "paths": [paths.policy_path(rule.path)],
        }
        excluded = not_paths(apirule.rules, i)
        if excluded:
            operation["notPaths"] = excluded
        to = [{"operation": operation}]
        allow_to = to
        if ory_passthrough:
            allow_to = [{"operation": {k: v for k, v in operation.items() if k != "hosts"}}]
        if rule.jwt is not None:
            policies += _jwt_policies(apirule, namespace, selector, allow_to, rule.jwt, 0, ory_passthrough)
        elif rule.ext_auth is not None:
            for k, authorizer in enumerate(rule.ext_auth.authorizers):
                policies.append(_policy(apirule, namespace, selector, [{"to": to}], k, "CUSTOM", authorizer))
            policies += _jwt_policies(apirule, namespace, selector, allow_to, rule.ext_auth.restrictions,
                                      len(rule.ext_auth.authorizers), ory_passthrough)
        else:
            from_ = [{"source": {"principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}]
            if ory_passthrough:
                from_ = [{"source": {"principals": [model.OATHKEEPER_PRINCIPAL]}}, *from_]
            policies.append(_policy(apirule, namespace, selector, [{"from": from_, "to": allow_to}], 0))
    return policies
