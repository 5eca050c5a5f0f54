"""The desired RequestAuthentications of an APIRule, as api-gateway's v2 RequestAuthentication processor.

One per rule with ``jwt`` (or ``extAuth`` with restrictions), in the Service's namespace with its
selector, one ``jwtRules`` entry per authentication; rules with the same selector, issuers and
namespace collapse into one (the dedup key is also the diff key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.apigateway import model
from tasks.apigateway.model import APIRule
from tasks.apigateway.parsing import JwtAuthentication
from tasks.apigateway.virtualservice import metadata


def _jwt_rule(auth: JwtAuthentication) -> dict[str, Any]:
    rule: dict[str, Any] = {"issuer": auth.issuer, "jwksUri": auth.jwks_uri, "forwardOriginalToken": True}
    if auth.from_headers:
        rule["fromHeaders"] = [
            {"name": h.name, **({"prefix": h.prefix} if h.prefix is not None else {})} for h in auth.from_headers
        ]
    if auth.from_params:
        rule["fromParams"] = list(auth.from_params)
    return rule


def request_authentication_key(obj: Mapping[str, Any]) -> str:
    """``"k=v,k=v:<issuer>:<jwksUri>...:<namespace>"`` (selector pairs sorted; namespace ``default`` when
    empty): the dedup and diff key of a RequestAuthentication manifest."""
    spec = obj.get("spec") or {}
    labels = ((spec.get("selector") or {}).get("matchLabels")) or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    issuers = "".join(f"{r.get('issuer', '')}:{r.get('jwksUri', '')}" for r in spec.get("jwtRules") or [])
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    return f"{selector}:{issuers}:{namespace}"


def desired_request_authentications(apirule: APIRule, selectors: list[dict[str, str] | None]) -> list[dict[str, Any]]:
    """RequestAuthentication manifests for ``apirule`` in rule order, deduplicated by key (first wins).

    ``selectors[i]`` is rule i's workload selector.
    """
    desired: dict[str, dict[str, Any]] = {}
    for i, rule in enumerate(apirule.rules):
        if rule.jwt is not None:
            config = rule.jwt
        elif rule.ext_auth is not None and rule.ext_auth.restrictions is not None:
            config = rule.ext_auth.restrictions
        else:
            continue
        spec: dict[str, Any] = {}
        if selectors[i] is not None:
            spec["selector"] = {"matchLabels": dict(selectors[i] or {})}
        spec["jwtRules"] = [_jwt_rule(a) for a in config.authentications]
        obj = {
            "apiVersion": model.REQUEST_AUTHENTICATION.api_version,
            "kind": model.REQUEST_AUTHENTICATION.kind,
            "metadata": metadata(apirule, apirule.service_namespace(rule)),
            "spec": spec,
        }
        desired.setdefault(request_authentication_key(obj), obj)
    return list(desired.values())
