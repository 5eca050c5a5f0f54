"""The desired VirtualService of an APIRule (exactly one), as api-gateway's v2 VirtualService processor.

One HTTP route per rule, in rule order: method and path regexes, the service destination, timeout,
``x-forwarded-host`` / request headers / cookies, the removal of upstream CORS headers and, when the
APIRule has a CORS policy with origins, the CORS policy.
"""

from __future__ import annotations

from typing import Any

from tasks.apigateway import model, paths
from tasks.apigateway.model import APIRule, Rule
from tasks.apigateway.parsing import CorsPolicy
from tasks.apigateway.validate import gateway_domain, host_with_domain, is_short_host

#: Response headers removed from every route so that only the gateway's CORS policy applies.
REMOVED_RESPONSE_HEADERS = (
    "Access-Control-Allow-Origin",
    "Access-Control-Expose-Headers",
    "Access-Control-Allow-Headers",
    "Access-Control-Allow-Credentials",
    "Access-Control-Allow-Methods",
    "Access-Control-Max-Age",
)
FORWARDED_HOST_HEADER = "x-forwarded-host"
AUTHORITY_SUBSTITUTION = "%REQ(:AUTHORITY)%"


class HostError(ValueError):
    """A short host cannot be completed (no Gateway, or a Gateway without hosts)."""


def resolve_hosts(apirule: APIRule, gateway: dict[str, Any] | None) -> list[str]:
    """``spec.hosts`` with short hosts completed by the Gateway's domain; FQDN and wildcards as they are.

    Raises :class:`HostError` ("getting hosts from api rule: ...") when a short host has no domain.
    """
    resolved = []
    for host in apirule.hosts:
        if is_short_host(host):
            if gateway is None:
                raise HostError("getting hosts from api rule: gateway must be provided when using short host name")
            domain = gateway_domain(gateway)
            if not domain:
                raise HostError(
                    "getting hosts from api rule: gateway with host definition must be provided when using "
                    "short host name"
                )
            resolved.append(host_with_domain(host, domain))
        else:
            resolved.append(host)
    return resolved


def metadata(apirule: APIRule, namespace: str) -> dict[str, Any]:
    """``generateName: <apirule>-`` in ``namespace`` with the owner labels (no name, no ownerReferences)."""
    return {
        "generateName": f"{apirule.name}-",
        "namespace": namespace,
        "labels": model.owner_labels(apirule.name, apirule.namespace),
    }


def cors_policy(cors: CorsPolicy | None) -> dict[str, Any] | None:
    """The VirtualService ``corsPolicy`` of ``cors`` (v2 and v1beta1 alike); ``None`` without
    ``allowOrigins``. ``maxAge`` is a protobuf duration (``60s``; v1beta1's fractional seconds too)."""
    if cors is None or not cors.allow_origins:
        return None
    origins = []
    for origin in cors.allow_origins:
        for key in sorted(origin):  # one-key maps in practice; sorted for determinism
            match_type = key if key in ("exact", "prefix", "regex") else "prefix"
            origins.append({match_type: origin[key]})
    policy: dict[str, Any] = {"allowOrigins": origins}
    if cors.allow_methods:
        policy["allowMethods"] = list(cors.allow_methods)
    if cors.allow_headers:
        policy["allowHeaders"] = list(cors.allow_headers)
    if cors.expose_headers:
        policy["exposeHeaders"] = list(cors.expose_headers)
    if cors.allow_credentials is not None:
        policy["allowCredentials"] = cors.allow_credentials
    if cors.max_age is not None:
        max_age = cors.max_age
        policy["maxAge"] = f"{max_age}s" if isinstance(max_age, int) else format_seconds(max_age)
    return policy


def _route(apirule: APIRule, rule: Rule, hosts: list[str], cors: dict[str, Any] | None) -> dict[str, Any]:
    service = apirule.rule_service(rule)
    name = service.name if service else ""
    port = service.port if service else None
    namespace = apirule.service_namespace(rule)
    timeout = rule.timeout or apirule.timeout or model.DEFAULT_TIMEOUT_SECONDS
    forwarded = hosts[0] if hosts else ""
    request_set = {FORWARDED_HOST_HEADER: AUTHORITY_SUBSTITUTION if forwarded.startswith("*.") else forwarded}
    request_set.update(rule.request_headers)
    if rule.request_cookies:
        request_set["Cookie"] = "; ".join(f"{k}={v}" for k, v in sorted(rule.request_cookies.items()))
    route: dict[str, Any] = {
        "match": [{"uri": paths.uri_match(rule.path), "method": paths.method_match(rule.methods)}],
        "route": [
            {
                "destination": {"host": f"{name}.{namespace}.svc.cluster.local", "port": {"number": port}},
                "weight": 100,
            }
        ],
        "timeout": f"{timeout}s",
        "headers": {
            "request": {"set": request_set},
            "response": {"remove": list(REMOVED_RESPONSE_HEADERS)},
        },
    }
    if cors is not None:
        route["corsPolicy"] = cors
    return route


def desired_virtual_service(apirule: APIRule, hosts: list[str], gateway_ref: str) -> dict[str, Any]:
    """The VirtualService manifest for ``apirule`` in its namespace.

    ``hosts`` are the resolved hosts (:func:`resolve_hosts`), ``gateway_ref`` the discovered Gateway as
    ``namespace/name``.
    """
    cors = cors_policy(apirule.cors)
    return {
        "apiVersion": model.VIRTUAL_SERVICE.api_version,
        "kind": model.VIRTUAL_SERVICE.kind,
        "metadata": metadata(apirule, apirule.namespace),
        "spec": {
            "hosts": list(hosts),
            "gateways": [gateway_ref],
            "http": [_route(apirule, rule, hosts, cors) for rule in apirule.rules],
        },
    }


def format_seconds(seconds: float) -> str:
    """A protobuf JSON duration: ``60s``, ``0.050s`` (as Istio serialises ``maxAge`` and timeouts)."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds:.9f}".rstrip("0") + "s"
