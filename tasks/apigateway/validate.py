"""APIRule v2 validation: failures with attribute paths and the original's messages; never raises.

Order and messages are api-gateway's ``internal/validation/v2alpha1`` (``Validate`` → rules → hosts →
gateway). Everything the checks look up comes from a :class:`~tasks.apigateway.state.ClusterState`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tasks.apigateway import model, paths
from tasks.apigateway.config import MeshConfig, parse_mesh
from tasks.apigateway.model import APIRule, Rule
from tasks.apigateway.parsing import JwtAuthentication, JwtAuthorization, JwtConfig, ValidationFailure
from tasks.apigateway.state import ClusterState

EMPTY_SPEC_MESSAGE = (
    "APIRule in version v2alpha1 contains an empty spec. To troubleshoot, see "
    "https://kyma-project.io/#/api-gateway/user/troubleshooting-guides/03-70-empty-apirule-spec."
)
SHORT_HOST_GATEWAY_MESSAGE = (
    "Lowercase RFC 1123 label (short host) is only supported as the APIRule host when selected Gateway "
    "has a single host definition matching *.<fqdn> format"
)

_SHORT_HOST = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_FQDN_HOST = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]{2,63}$")
_SCHEME_CHAR = re.compile(r"[A-Za-z0-9+.\-]")


def is_short_host(host: str) -> bool:
    """A single lowercase RFC 1123 label (``httpbin``), completed with the Gateway's domain."""
    return len(host) <= 63 and _SHORT_HOST.fullmatch(host) is not None


def is_fqdn_host(host: str) -> bool:
    """A fully qualified (or ``*.`` wildcard) domain name of at most 255 characters."""
    return len(host) <= 255 and _FQDN_HOST.fullmatch(host) is not None


def gateway_domain(gateway: Mapping[str, Any] | None) -> str:
    """The first host of the first server that has hosts, without a leading ``*.`` (``""`` if none)."""
    if not gateway:
        return ""
    for server in (gateway.get("spec") or {}).get("servers") or []:
        hosts = server.get("hosts") if isinstance(server, dict) else None
        if hosts:
            return str(hosts[0]).removeprefix("*.")
    return ""


def host_with_domain(host: str, domain: str) -> str:
    """``host`` completed with ``domain`` when it is a short host and a domain is known."""
    return f"{host}.{domain}" if domain and "." not in host else host


def uri_error(value: str) -> str | None:
    """Why ``value`` is not a request URI, worded as Go's ``url.ParseRequestURI``; ``None`` if valid."""
    if value == "":
        return "value is empty"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return f'parse "{value}": net/url: invalid control character in URL'
    scheme = ""
    for i, c in enumerate(value):
        if c == ":":
            if i == 0:
                return f'parse "{value}": missing protocol scheme'
            scheme = value[:i]
            break
        if not (c.isascii() and c.isalpha()) and (i == 0 or not _SCHEME_CHAR.fullmatch(c)):
            break
    if not scheme and not value.startswith("/"):
        return f'parse "{value}": invalid URI for request'
    return None


def validate(
    apirule: APIRule,
    state: ClusterState,
    gateway_ref: str | None = None,
) -> list[ValidationFailure]:
    """Every v2 validation of ``apirule`` against ``state``, in the original's order.

    ``gateway_ref`` is ``namespace/name`` of the discovered Istio Gateway (``spec.gateway``, or the one
    generated for ``spec.externalGateway``); short hosts take their domain from it.
    """
    if apirule.spec_empty:
        return [ValidationFailure(".spec", EMPTY_SPEC_MESSAGE)]
    failures = _rules(apirule, state)
    failures += _hosts(apirule, state, gateway_ref if gateway_ref is not None else apirule.gateway)
    failures += _gateway(apirule, state)
    return failures


# --- rules -------------------------------------------------------------------------------------


def _rules(apirule: APIRule, state: ClusterState) -> list[ValidationFailure]:
    if not apirule.rules:
        return [ValidationFailure(".spec.rules", "No rules defined")]
    failures: list[ValidationFailure] = []
    mesh: MeshConfig | None = None
    for i, rule in enumerate(apirule.rules):
        prefix = f".spec.rules[{i}]"
        if apirule.service is None and rule.service is None:
            failures.append(
                ValidationFailure(
                    prefix + ".service", "The rule must define a service, because no service is defined on spec level"
                )
            )
        failures += _jwt(prefix, rule)
        failures += _sidecar(prefix, apirule, rule, state)
        if rule.ext_auth is not None:
            if mesh is None:
                mesh = parse_mesh(state.config_maps.get(model.ISTIO_CONFIG_MAP))
            failures += _ext_auth(prefix, rule, mesh)
        message = paths.operator_failure(rule.path)
        if message:
            failures.append(ValidationFailure(prefix + ".path", message))
    conflict = paths.first_conflict([(r.path, r.methods) for r in apirule.rules])
    if conflict is not None:
        path, method = conflict
        failures.append(
            ValidationFailure(
                ".spec.rules",
                f"Path {path} with method {method} conflicts with at least one of the previous rule paths",
            )
        )
    failures += _jwt_equality(apirule.rules)
    return failures


def _jwt(prefix: str, rule: Rule) -> list[ValidationFailure]:
    config: JwtConfig | None
    if rule.jwt is not None:
        prefix, config = prefix + ".jwt", rule.jwt
    elif rule.ext_auth is not None and rule.ext_auth.restrictions is not None:
        prefix, config = prefix + ".extAuth", rule.ext_auth.restrictions
    else:
        return []
    return _authorizations(prefix, config.authorizations) + _authentications(prefix, config.authentications)


def _authorizations(prefix: str, authorizations: tuple[JwtAuthorization | None, ...] | None) -> list[ValidationFailure]:
    path = prefix + ".authorizations"
    if authorizations is None:
        return []
    if not authorizations:
        return [ValidationFailure(path, "authorizations defined, but no configuration exists")]
    return authorization_failures(path, authorizations)


def authorization_failures(path: str, authorizations: tuple[JwtAuthorization | None, ...]) -> list[ValidationFailure]:
    """The failures of each JWT authorization ``path[i]`` (empty, or empty scopes / audiences): the
    same rules in the v2 and v1beta1 pipelines."""
    failures = []
    for j, authorization in enumerate(authorizations):
        if authorization is None:
            failures.append(ValidationFailure(f"{path}[{j}]", "authorization is empty"))
            continue
        for field, values, empty_item in (("requiredScopes", authorization.required_scopes, "scope value is empty"),
                                          ("audiences", authorization.audiences, "audience value is empty")):
            if values is not None and not values:
                failures.append(ValidationFailure(f"{path}[{j}].{field}", "value is empty"))
            elif values is not None and "" in values:
                failures.append(ValidationFailure(f"{path}[{j}].{field}", empty_item))
    return failures


def _authentications(prefix: str, authentications: tuple[JwtAuthentication, ...]) -> list[ValidationFailure]:
    path = prefix + ".authentications"
    if not authentications:
        return [ValidationFailure(path, "A JWT config must have at least one authentication")]
    return authentication_failures(path, authentications)


def authentication_failures(path: str, authentications: tuple[JwtAuthentication, ...]) -> list[ValidationFailure]:
    """The failures of each JWT authentication ``path[i]`` (issuer and jwksUri URIs, one token
    location of one kind): the same rules in the v2 and v1beta1 pipelines."""
    failures = []
    has_headers = has_params = False
    for j, auth in enumerate(authentications):
        at = f"{path}[{j}]"
        issuer_error = (
            "value is empty" if auth.issuer == "" else (uri_error(auth.issuer) if ":" in auth.issuer else None)
        )
        if issuer_error:
            failures.append(ValidationFailure(at + ".issuer", f"value is empty or not a valid uri err={issuer_error}"))
        jwks_error = uri_error(auth.jwks_uri)
        if jwks_error:
            failures.append(ValidationFailure(at + ".jwksUri", f"value is empty or not a valid uri err={jwks_error}"))
        mixture = "mixture of multiple fromHeaders and fromParams is not supported"
        if auth.from_headers:
            if has_params:
                failures.append(ValidationFailure(at + ".fromHeaders", mixture))
            has_headers = True
        if auth.from_params:
            if has_headers:
                failures.append(ValidationFailure(at + ".fromParams", mixture))
            has_params = True
        if len(auth.from_headers) > 1:
            failures.append(ValidationFailure(at + ".fromHeaders", "multiple fromHeaders are not supported"))
        if len(auth.from_params) > 1:
            failures.append(ValidationFailure(at + ".fromParams", "multiple fromParams are not supported"))
    return failures


def _jwt_equality(rules: tuple[Rule, ...]) -> list[ValidationFailure]:
    seen: dict[str, JwtAuthentication] = {}
    failures = []
    for i, rule in enumerate(rules):
        if rule.jwt is None:
            continue
        for j, auth in enumerate(rule.jwt.authentications):
            key = auth.issuer + auth.jwks_uri
            if key in seen and seen[key] != auth:
                failures.append(
                    ValidationFailure(
                        f".spec.rules[{i}].jwt.authentications[{j}]",
                        "multiple jwt configurations that differ for the same issuer",
                    )
                )
            else:
                seen[key] = auth
    return failures


def workload_lookup(apirule: APIRule, rule: Rule, state: ClusterState) -> tuple[str, dict[str, str] | None, str | None]:
    """``(namespace, selector, error)`` of a rule's Service, as api-gateway's ``GetSelectorFromService``.

    ``selector`` is the Service's ``spec.selector`` (``None`` when it has none); ``error`` is the lookup
    error text (``service name is required but missing``, ``services "x" not found``) or ``None``.
    """
    service = apirule.rule_service(rule)
    namespace = apirule.service_namespace(rule)
    if service is None or not service.name:
        return namespace, None, "service name is required but missing"
    obj = state.services.get((namespace, service.name))
    if obj is None:
        return namespace, None, f'services "{service.name}" not found'
    selector = (obj.get("spec") or {}).get("selector") or {}
    if not isinstance(selector, dict) or not selector:
        return namespace, None, None
    return namespace, {str(k): str(v) for k, v in selector.items()}, None


def _sidecar(prefix: str, apirule: APIRule, rule: Rule, state: ClusterState) -> list[ValidationFailure]:
    namespace, selector, error = workload_lookup(apirule, rule, state)
    if error is not None:
        return [ValidationFailure(prefix, f"Failed to execute sidecar injection validation, err: {error}")]
    if selector is None:
        return [ValidationFailure(prefix + ".injection", "Target service label selectors are not defined")]
    failures = []
    for pod in state.pods_selected(namespace, selector):
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
        if not any(isinstance(c, dict) and c.get("name") == model.ISTIO_PROXY_CONTAINER for c in containers):
            meta = pod.get("metadata") or {}
            failures.append(
                ValidationFailure(
                    prefix, f"Pod {meta.get('namespace')}/{meta.get('name')} does not have an injected istio sidecar"
                )
            )
    return failures


def _ext_auth(prefix: str, rule: Rule, mesh: MeshConfig) -> list[ValidationFailure]:
    assert rule.ext_auth is not None
    if mesh.error is not None:
        return [ValidationFailure(prefix + mesh.error_attribute, mesh.error)]
    failures = []
    for name in rule.ext_auth.authorizers:
        at = f"{prefix}.extAuth.externalAuthorizers.{name}"
        if name not in mesh.providers:
            failures.append(ValidationFailure(at, "Authorizer not found in Istio ConfigMap mesh data"))
        elif not mesh.providers[name]:
            failures.append(ValidationFailure(
                at, "EnvoyExtAuthzHttp not found in Istio ConfigMap mesh data for authorizer"))
    return failures


# --- hosts and gateway -------------------------------------------------------------------------


def _single_wildcard_host(gateway: Mapping[str, Any]) -> bool:
    host = ""
    for server in (gateway.get("spec") or {}).get("servers") or []:
        hosts = (server.get("hosts") if isinstance(server, dict) else None) or []
        # A server without hosts would crash the original; here it disqualifies the Gateway.
        if len(hosts) != 1 or not str(hosts[0]).startswith("*."):
            return False
        if host and host != hosts[0]:
            return False
        host = str(hosts[0])
    return True


def _hosts(apirule: APIRule, state: ClusterState, gateway_ref: str | None) -> list[ValidationFailure]:
    if not apirule.hosts:
        return [ValidationFailure(".spec.hosts", "No hosts defined")]
    failures = []
    gateway = _gateway_object(state, gateway_ref)
    for k, host in enumerate(apirule.hosts):
        at = f".spec.hosts[{k}]"
        domain = ""
        if is_short_host(host):
            if gateway is None:
                failures.append(ValidationFailure(at, f'Unable to find Gateway "{gateway_ref or ""}"'))
            elif not _single_wildcard_host(gateway):
                failures.append(ValidationFailure(at, SHORT_HOST_GATEWAY_MESSAGE))
            domain = gateway_domain(gateway)
        elif not is_fqdn_host(host):
            failures.append(ValidationFailure(at, "Host must be a valid FQDN or short host name"))
        full = host_with_domain(host, domain)
        for vs in state.virtual_services:
            vs_hosts = (vs.get("spec") or {}).get("hosts") or []
            if full in vs_hosts and not model.is_owned_by(vs, apirule.name, apirule.namespace):
                failures.append(ValidationFailure(at, "Host is occupied by another Virtual Service"))
    return failures


def _gateway_object(state: ClusterState, ref: str | None) -> dict[str, Any] | None:
    if not ref or "/" not in ref:
        return None
    namespace, _, name = ref.partition("/")
    return state.gateways.get((namespace, name))


def _gateway(apirule: APIRule, state: ClusterState) -> list[ValidationFailure]:
    if not apirule.gateway and not apirule.external_gateway:
        return [ValidationFailure(".spec", "Either gateway or externalGateway must be specified")]
    if apirule.gateway and apirule.external_gateway:
        return [ValidationFailure(".spec", "Only one of gateway or externalGateway can be specified")]
    if apirule.gateway:
        if _gateway_object(state, apirule.gateway) is None:
            return [ValidationFailure(".spec.gateway", "Gateway not found")]
        return []
    namespace, _, name = (apirule.external_gateway or "").partition("/")
    if (namespace, name) not in state.external_gateways:
        return [ValidationFailure(".spec.externalGateway", "ExternalGateway not found")]
    return []
