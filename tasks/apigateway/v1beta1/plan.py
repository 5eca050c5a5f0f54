"""One reconcile of a v1beta1 APIRule as a pure function (api-gateway's v1beta1 branch of the APIRule
controller, ``processing.Reconcile`` with the ``istio`` or ``ory`` reconciliation).

Steps: the v1beta1 access gate (not allowed → ``Error``, nothing touched); the finalizer; the CRDs the
processors need (missing → ``Warning``); the ``jwtHandler`` config; the parse (wrong types) and the
validation (→ the APIRule component ``ERROR``, the others ``SKIPPED``); then the processors in the
original's order, VirtualService → RequestAuthentication → AuthorizationPolicy → access Rule, each one
desired state diffed against the owned objects. The default domain (for hosts without a dot) comes
from the HTTPS server of ``kyma-system/kyma-gateway``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks.apigateway import model
from tasks.apigateway import status as st
from tasks.apigateway.config import parse_config
from tasks.apigateway.diff import (
    Action,
    diff_access_rules,
    diff_authorization_policies,
    diff_request_authentications,
    diff_virtual_service,
)
from tasks.apigateway.parsing import ValidationFailure
from tasks.apigateway.state import ClusterState
from tasks.apigateway.v1beta1 import translate
from tasks.apigateway.v1beta1.model import V1beta1APIRule
from tasks.apigateway.v1beta1.status import OK, SKIPPED, Component, V1beta1Status, not_reconciled
from tasks.apigateway.v1beta1.validate import config_failures, selector_of, validate

#: CRDs the v1beta1 processors need (``dependencies.APIRuleV1beta1``).
REQUIRED_CRDS = (
    "virtualservices.networking.istio.io",
    "rules.oathkeeper.ory.sh",
    "authorizationpolicies.security.istio.io",
    "requestauthentications.security.istio.io",
)


@dataclass(frozen=True)
class V1beta1Result:
    """What the v1beta1 branch decided; :func:`tasks.apigateway.plan.plan` wraps it in a Plan.

    ``status`` is what gets written (v2 ``state``/``description``); ``components`` the v1beta1 status
    (``None`` when the gate stopped the reconcile: nothing is touched, not even the finalizer).
    """

    status: st.Status
    components: V1beta1Status | None
    desired: tuple[dict[str, Any], ...] = ()
    actions: tuple[Action, ...] = ()
    failures: tuple[ValidationFailure, ...] = ()


def default_domain(gateway: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """``(domain, error)`` of ``kyma-system/kyma-gateway`` (``GetDomainFromKymaGateway``): its single
    HTTPS server's single host ``*.<domain>``. ``("", None)`` when the Gateway does not exist."""
    if gateway is None:
        return "", None
    spec = gateway.get("spec")
    servers: list[Any] = (spec.get("servers") if isinstance(spec, dict) else None) or []
    if not isinstance(servers, list):
        servers = []
    https = [s for s in servers if isinstance(s, dict) and isinstance(s.get("port"), dict)
             and str(s["port"].get("protocol", "")).upper() == "HTTPS"]
    if len(https) != 1:
        return "", f"gateway must have a single https server definition, num={len(https)}"
    hosts: list[Any] = https[0].get("hosts") or []
    if not isinstance(hosts, list):
        hosts = []
    if len(hosts) != 1:
        return "", f"gateway https server must have a single host definition, num={len(hosts)}"
    host = str(hosts[0])
    if not host.startswith("*."):
        return "", f'gateway https server host "{host}" does not start with the prefix "*."'
    if host == "*.":
        return "", f'gateway https server host "{host}" does not define domain after the prefix "*."'
    return host[2:], None


def _owned(apirule: V1beta1APIRule, objects: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return model.owned_objects(objects, apirule.name, apirule.namespace)


def plan_v1beta1(obj: Mapping[str, Any] | V1beta1APIRule, state: ClusterState, access_allowed: bool
                 ) -> V1beta1Result:
    """The reconcile of a v1beta1 APIRule ``obj`` (a manifest, or parsed; not being deleted) against
    ``state``. Never raises."""
    if not access_allowed:
        return V1beta1Result(not_reconciled(), None)
    apirule = obj if isinstance(obj, V1beta1APIRule) else V1beta1APIRule.parse(obj)
    handler = parse_config(state.config_maps.get(model.CONFIG_MAP)).jwt_handler

    def done(components: V1beta1Status, **kwargs: Any) -> V1beta1Result:
        return V1beta1Result(components.written(), components, **kwargs)

    base_handler = handler if handler in ("istio", "ory") else "ory"
    if state.crds is not None:
        for crd in REQUIRED_CRDS:
            if crd not in state.crds:
                return done(V1beta1Status(Component("WARNING", st.missing_dependency(crd).description)))
    skipped = V1beta1Status.base(base_handler, SKIPPED)
    failures = config_failures(handler) or list(apirule.type_failures)
    if failures:
        return done(skipped.with_failures(failures), failures=tuple(failures))
    gateway = state.gateways.get(model.DEFAULT_GATEWAY)
    domain, _domain_error = default_domain(gateway)  # an unusable Gateway reads as "no default domain"
    failures = validate(apirule, state, handler, domain)
    if failures:
        return done(skipped.with_failures(failures), failures=tuple(failures))

    selectors: dict[tuple[str, str], dict[str, str] | None] = {}
    for rule in apirule.rules:
        service = apirule.rule_service(rule)
        selector, error = selector_of(apirule, rule, state)
        if service is not None and service.name and not error:
            selectors[(apirule.service_namespace(rule) or "default", service.name)] = selector
    try:
        virtual_service = translate.desired_virtual_service(apirule, handler, domain)
        if handler == "istio":
            authentications = translate.desired_request_authentications(apirule, selectors)
            policies = translate.desired_authorization_policies(apirule, selectors)
        else:
            authentications, policies = [], []
        rules = translate.desired_access_rules(apirule, handler, domain)
    except translate.ProcessorError as exc:
        return done(skipped.with_errors({"ApiRule": [str(exc)]}))
    duplicates = translate.has_path_duplicates(apirule.rules)
    actions = (
        diff_virtual_service(virtual_service, _owned(apirule, state.virtual_services))
        + diff_request_authentications(authentications, _owned(apirule, state.request_authentications))
        + diff_authorization_policies(policies, _owned(apirule, state.authorization_policies))
        + diff_access_rules(rules, _owned(apirule, state.ory_rules), lambda r: translate.access_rule_key(r, duplicates))
    )
    return done(V1beta1Status.base(handler, OK), desired=(virtual_service, *authentications, *policies, *rules),
                actions=tuple(actions))
