"""APIRule v1beta1 validation, Istio and Ory flavours (api-gateway's ``internal/validation/v1beta1``).

Order and messages are the original's: ``.spec.host`` (missing, no domain, occupied), then the rules
(duplicates, services, access strategies with the handler's exclusive set and secure/unsecure mix,
per-strategy config checks, the JWT handler's config, the sidecar check for ``jwt`` with the Istio
handler), then the Istio handler's mutators and its per-issuer JWT equality. Never raises.

Fixed on purpose: attribute paths that the original doubles or misspells
(``accessStrategies.accessStrategies[k].handler``, ``injection.injection``, ``accessStrategy[j]``) are
written once and spelled as the field (``accessStrategies[k].handler``, ``injection``,
``accessStrategies[j]``).
"""

from __future__ import annotations

from tasks.apigateway import model
from tasks.apigateway.config import JWT_HANDLER_ISTIO
from tasks.apigateway.parsing import JwtAuthentication, JwtAuthorization, ValidationFailure, as_dict, as_list
from tasks.apigateway.state import ClusterState
from tasks.apigateway.v1beta1 import model as v1
from tasks.apigateway.v1beta1.model import Handler, V1beta1APIRule, V1beta1Rule
from tasks.apigateway.validate import authentication_failures, authorization_failures, uri_error

NO_CONFIG_STRATEGIES = (v1.ALLOW, v1.NO_AUTH, v1.NOOP, v1.UNAUTHORIZED, v1.ANONYMOUS, v1.COOKIE_SESSION)
#: Strategies that may not be combined with others, per handler (``as_validator.go``).
EXCLUSIVE = {
    "istio": (v1.ALLOW, v1.NO_AUTH, v1.JWT, v1.NOOP),
    "ory": (v1.ALLOW, v1.NO_AUTH, v1.NOOP),
}


def host_with_domain(host: str, domain: str) -> str:
    """``host`` plus ``.<domain>`` when it has no dot and a domain is known (``GetHostWithDomain``)."""
    return f"{host}.{domain}" if "." not in host and domain else host


def selector_of(apirule: V1beta1APIRule, rule: V1beta1Rule, state: ClusterState) -> tuple[dict[str, str] | None, str]:
    """``(selector, error)`` of a rule's Service (``GetLabelSelectorFromService``): ``selector`` is the
    Service's ``spec.selector`` (``None`` when it has none or cannot be read), ``error`` the lookup error
    (``service name is required but missing``, ``services "x" not found``) or ``""``."""
    service = apirule.rule_service(rule)
    if service is None or not service.name:
        return None, "service name is required but missing"
    namespace = apirule.service_namespace(rule) or "default"
    obj = state.services.get((namespace, service.name))
    if obj is None:
        return None, f'services "{service.name}" not found'
    spec = obj.get("spec")
    selector = spec.get("selector") if isinstance(spec, dict) else None
    if not isinstance(selector, dict) or not selector:
        return None, ""
    return {str(k): str(v) for k, v in selector.items()}, ""


def validate(apirule: V1beta1APIRule, state: ClusterState, handler: str, domain: str) -> list[ValidationFailure]:
    """Every v1beta1 check of ``apirule`` for ``handler`` (``istio`` or ``ory``), in the original's order.

    ``domain`` is the default domain of ``kyma-system/kyma-gateway`` (``""`` when unknown)."""
    return _host(apirule, state, domain) + _rules(apirule, state, handler)


def _host(apirule: V1beta1APIRule, state: ClusterState, domain: str) -> list[ValidationFailure]:
    at = ".spec.host"
    if apirule.host is None:
        return [ValidationFailure(at, "Host was nil")]
    failures = []
    host = apirule.host
    if "." not in host:
        if not domain:
            failures.append(ValidationFailure(
                at, "Host does not contain a domain name and no default domain name is configured"))
        host = f"{host}.{domain}"
    for vs in state.virtual_services:
        spec = vs.get("spec")
        hosts = spec.get("hosts") if isinstance(spec, dict) else None
        if isinstance(hosts, list) and host in hosts and not model.is_owned_by(vs, apirule.name, apirule.namespace):
            failures.append(ValidationFailure(at, "This host is occupied by another Virtual Service"))
    return failures


def _has_path_and_method_duplicates(rules: tuple[V1beta1Rule, ...]) -> bool:
    seen: set[str] = set()
    if len(rules) <= 1:
        return False
    for rule in rules:
        keys = [f"{rule.path}:{m}" for m in rule.methods] if rule.methods else [rule.path]
        for key in keys:
            if key in seen:
                return True
            seen.add(key)
    return False


def _rules(apirule: V1beta1APIRule, state: ClusterState, handler: str) -> list[ValidationFailure]:
    at = ".spec.rules"
    if not apirule.rules:
        return [ValidationFailure(at, "No rules defined")]
    failures = []
    if _has_path_and_method_duplicates(apirule.rules):
        failures.append(ValidationFailure(at, "multiple rules defined for the same path and method"))
    for i, rule in enumerate(apirule.rules):
        prefix = f"{at}[{i}]"
        if apirule.service is None and rule.service is None:
            failures.append(ValidationFailure(prefix + ".service",
                                              "No service defined with no main service on spec level"))
        if rule.service is not None or apirule.service is not None:
            failures += _access_strategies(prefix + ".accessStrategies", apirule, rule, state, handler)
        if handler == JWT_HANDLER_ISTIO:
            failures += _mutators(prefix, rule)
    if handler == JWT_HANDLER_ISTIO:
        failures += _jwt_equality(apirule.rules)
    return failures


def _access_strategies(at: str, apirule: V1beta1APIRule, rule: V1beta1Rule, state: ClusterState,
                       handler: str) -> list[ValidationFailure]:
    strategies = rule.access_strategies
    if not strategies:
        return [ValidationFailure(at, "No accessStrategies defined")]
    failures = []
    if len(strategies) > 1:
        for exclusive in EXCLUSIVE.get(handler, EXCLUSIVE["ory"]):
            index = next((k for k, s in enumerate(strategies) if s.name == exclusive), None)
            if index is not None:
                failures.append(ValidationFailure(f"{at}[{index}].handler",
                                                  f"{exclusive} access strategy is not allowed in combination with "
                                                  "other access strategies"))
    names = {s.name for s in strategies}
    if names & set(v1.SECURE_STRATEGIES) and names & set(v1.UNSECURE_STRATEGIES):
        failures.append(ValidationFailure(at, "Secure access strategies cannot be used in combination with unsecure "
                                              "access strategies"))
    for k, strategy in enumerate(strategies):
        failures += _strategy(f"{at}[{k}]", strategy, apirule, rule, state, handler)
    return failures


def _strategy(at: str, strategy: Handler, apirule: V1beta1APIRule, rule: V1beta1Rule, state: ClusterState,
              handler: str) -> list[ValidationFailure]:
    if strategy.name in NO_CONFIG_STRATEGIES:
        if not strategy.config_empty:
            return [ValidationFailure(at + ".config", f"strategy: {strategy.name} does not support configuration")]
        return []
    if strategy.name in (v1.OAUTH2_CLIENT_CREDENTIALS, v1.OAUTH2_INTROSPECTION):
        return []
    if strategy.name != v1.JWT:
        return [ValidationFailure(at + ".handler", f"Unsupported accessStrategy: {strategy.name}")]
    if handler != JWT_HANDLER_ISTIO:
        return _ory_jwt(at, strategy)
    return _injection(at + ".injection", apirule, rule, state) + _istio_jwt(at, strategy)


def _injection(at: str, apirule: V1beta1APIRule, rule: V1beta1Rule, state: ClusterState) -> list[ValidationFailure]:
    selector, error = selector_of(apirule, rule, state)
    if error:  # reported by the processors ("services "x" not found"); the original checked every Pod
        return []
    if selector is None:
        return [ValidationFailure(at, "Target service label selectors are not defined")]
    failures = []
    for pod in state.pods_selected(apirule.service_namespace(rule) or "default", selector):
        spec = as_dict(pod.get("spec"))
        containers = [*as_list(spec.get("containers")), *as_list(spec.get("initContainers"))]
        if not any(isinstance(c, dict) and c.get("name") == model.ISTIO_PROXY_CONTAINER for c in containers):
            meta = pod.get("metadata") or {}
            failures.append(ValidationFailure(at, f"Pod {meta.get('namespace')}/{meta.get('name')} does not have an "
                                                  "injected istio sidecar"))
    return failures


def _uri_error(value: str) -> str | None:
    """``IsInvalidURI``: empty → ``value is empty``; else Go's ``url.ParseRequestURI`` error."""
    return "value is empty" if value == "" else uri_error(value)


def _istio_jwt(at: str, strategy: Handler) -> list[ValidationFailure]:
    if strategy.config_empty or strategy.jwt is None or strategy.ory_jwt is None:
        return [ValidationFailure(at + ".config", "supplied config cannot be empty")]
    failures = []
    ory = strategy.ory_jwt
    for key, present in (("jwks_urls", ory.jwks_urls), ("required_scopes", ory.required_scope),
                         ("trusted_issuers", ory.trusted_issuers)):
        if present:
            failures.append(ValidationFailure(f"{at}.config.{key}",
                                              f"Configuration for {key} is not supported with Istio handler"))
    failures += _authorizations(at + ".config.authorizations", strategy.jwt.authorizations)
    failures += _authentications(at, strategy.jwt.authentications)
    return failures


def _authorizations(at: str, authorizations: tuple[JwtAuthorization | None, ...] | None) -> list[ValidationFailure]:
    if authorizations is None:
        return []
    if not authorizations:
        return [ValidationFailure(at, "value is empty")]
    return authorization_failures(at, authorizations)


def _authentications(at: str, authentications: tuple[JwtAuthentication, ...]) -> list[ValidationFailure]:
    if not authentications:
        return [ValidationFailure(at, "Authentications are required when using JWT access handler")]
    return authentication_failures(f"{at}.config.authentications", authentications)


def _ory_jwt(at: str, strategy: Handler) -> list[ValidationFailure]:
    if strategy.config_empty or strategy.jwt is None or strategy.ory_jwt is None:
        return [ValidationFailure(at + ".config", "supplied config cannot be empty")]
    failures = []
    if strategy.jwt.authentications:
        failures.append(ValidationFailure(at + ".config.authentications",
                                          "Configuration for authentications is not supported with Ory handler"))
    for key, values in (("trusted_issuers", strategy.ory_jwt.trusted_issuers),
                        ("jwks_urls", strategy.ory_jwt.jwks_urls)):
        for i, value in enumerate(values):
            error = _uri_error(value)
            if error:
                failures.append(ValidationFailure(f"{at}.config.{key}[{i}]",
                                                  f"value is empty or not a valid uri err={error}"))
    return failures


def _mutators(prefix: str, rule: V1beta1Rule) -> list[ValidationFailure]:
    """The Istio handler's mutators (only on ``jwt`` rules; the others go to Oathkeeper)."""
    if not rule.jwt_secured:
        return []
    base = prefix + ".mutators"
    failures = []
    seen: set[str] = set()
    for j, mutator in enumerate(rule.mutators):
        if mutator.name in seen:
            failures.append(ValidationFailure(f"{base}[{j}].handler.{mutator.name}",
                                              "mutator for same handler already exists"))
        seen.add(mutator.name)
    for j, mutator in enumerate(rule.mutators):
        handler_path = f"{base}[{j}].handler"
        if mutator.name == "":
            failures.append(ValidationFailure(handler_path, "mutator handler cannot be empty"))
        elif mutator.name in (v1.HEADER_MUTATOR, v1.COOKIE_MUTATOR):
            kind = "headers" if mutator.name == v1.HEADER_MUTATOR else "cookies"
            config_path = handler_path + ".config"
            if not mutator.values:
                failures.append(ValidationFailure(config_path, f"{kind} cannot be empty"))
            elif "" in mutator.values:
                failures.append(ValidationFailure(f"{config_path}.{kind}.name", "cannot be empty"))
        else:
            failures.append(ValidationFailure(handler_path, f"unsupported mutator: {mutator.name}"))
    return failures


def _jwt_equality(rules: tuple[V1beta1Rule, ...]) -> list[ValidationFailure]:
    seen: dict[str, JwtAuthentication] = {}
    failures = []
    for i, rule in enumerate(rules):
        for j, strategy in enumerate(rule.access_strategies):
            if strategy.jwt is None:
                continue
            for k, auth in enumerate(strategy.jwt.authentications):
                key = auth.issuer + auth.jwks_uri
                if key in seen and seen[key] != auth:
                    failures.append(ValidationFailure(f".spec.rules[{i}].accessStrategies[{j}].config.authentications[{k}]",
                                                      "multiple jwt configurations that differ for the same issuer"))
                else:
                    seen[key] = auth
    return failures


def config_failures(jwt_handler: str) -> list[ValidationFailure]:
    """``ValidateConfig``: the ``jwtHandler`` must be ``ory`` or ``istio``."""
    if jwt_handler in ("ory", "istio"):
        return []
    return [ValidationFailure("", f"Unsupported JWT Handler: {jwt_handler}")]
