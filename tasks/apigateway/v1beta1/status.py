"""The v1beta1 status: one ``{code, desc}`` per component, and what the controller writes from it.

Codes ``OK``, ``ERROR``, ``SKIPPED``, ``WARNING`` (api-gateway's ``internal/processing/status/v1beta1.go``).
The Istio handler reports the APIRule, VirtualService, AuthorizationPolicy and RequestAuthentication;
the Ory handler the APIRule, VirtualService and access Rules.

What is written: the APIRule is stored as v2alpha1, so (as the original's ``convertAndUpdateStatus``)
the APIRule component becomes ``status.state`` (OK → Ready, ERROR → Error, WARNING and SKIPPED →
Warning) and its description ``status.description``, preceded by the deprecation notice. Unlike the
original, success stays ``Ready`` (issue 11: a v1beta1 APIRule that reconciles is Ready); the notice is
its description, so the deprecation is still said. The per-component codes are in the plan, the log
and ``render`` output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tasks.apigateway import status as st
from tasks.apigateway.parsing import ValidationFailure

OK = "OK"
ERROR = "ERROR"
SKIPPED = "SKIPPED"
WARNING = "WARNING"
MAX_VALIDATION_LINES = 3

DEPRECATED = "Version v1beta1 of APIRule is deprecated and will be removed in future releases. Use version v2 instead."
NOT_RECONCILED = ("Version v1beta1 of APIRule is no longer supported and this APIRule is not reconciled. "
                  "Make sure to migrate to version v2.")

#: Action kinds → component (``Rule`` is the Ory access rule, named so in the original's messages).
COMPONENT_OF_KIND = {
    "VirtualService": "virtual_service",
    "Rule": "access_rule",
    "AuthorizationPolicy": "authorization_policy",
    "RequestAuthentication": "request_authentication",
}
#: The status field of each component, as the v1beta1 CRD names it.
FIELDS = {
    "api_rule": "APIRuleStatus",
    "virtual_service": "virtualServiceStatus",
    "access_rule": "accessRuleStatus",
    "authorization_policy": "authorizationPolicyStatus",
    "request_authentication": "requestAuthenticationStatus",
}
_V2_STATE = {OK: st.READY, ERROR: st.ERROR, WARNING: st.WARNING, SKIPPED: st.WARNING}


@dataclass(frozen=True)
class Component:
    code: str
    desc: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "desc": self.desc} if self.desc else {"code": self.code}


@dataclass(frozen=True)
class V1beta1Status:
    """Per-component statuses; ``None`` = the handler does not report that component."""

    api_rule: Component
    virtual_service: Component | None = None
    access_rule: Component | None = None
    authorization_policy: Component | None = None
    request_authentication: Component | None = None

    @classmethod
    def base(cls, handler: str, code: str) -> V1beta1Status:
        """Every component the handler reports, with ``code`` (``GetStatusBase``)."""
        if handler == "istio":
            return cls(Component(code), Component(code), None, Component(code), Component(code))
        return cls(Component(code), Component(code), Component(code))

    @property
    def has_error(self) -> bool:
        components = (self.api_rule, self.virtual_service, self.access_rule, self.authorization_policy,
                      self.request_authentication)
        return any(c is not None and c.code == ERROR for c in components)

    def with_failures(self, failures: Sequence[ValidationFailure]) -> V1beta1Status:
        """APIRule component ``ERROR`` with the validation description (``GenerateStatusFromFailures``)."""
        if not failures:
            return self
        return replace(self, api_rule=Component(ERROR, validation_description(failures)))

    def with_errors(self, errors: Mapping[str, Sequence[str]]) -> V1beta1Status:
        """Apply errors by kind (``ApiRule`` for errors of the APIRule itself): the failing component
        ``ERROR`` with its messages, and the APIRule component ``ERROR`` "Error has happened on subresource
        <Kind>" (``GetStatusForErrorMap``)."""
        status = self
        for kind, messages in errors.items():
            component = Component(ERROR, "\n".join(messages))
            if kind in COMPONENT_OF_KIND:
                status = replace(status, **{COMPONENT_OF_KIND[kind]: component})
                note = f"Error has happened on subresource {kind}"
                if status.api_rule.code == OK:
                    status = replace(status, api_rule=Component(ERROR, note))
                else:
                    status = replace(status, api_rule=Component(ERROR, f"{status.api_rule.desc}\n{note}"))
            else:
                status = replace(status, api_rule=component)
        return status

    def to_dict(self) -> dict[str, Any]:
        """The v1beta1 ``status`` fields (``APIRuleStatus``, ``virtualServiceStatus``, ...)."""
        return {FIELDS[name]: c.to_dict() for name in FIELDS if (c := getattr(self, name)) is not None}

    def written(self) -> st.Status:
        """The v2 ``state`` and ``description`` the controller writes (see the module doc)."""
        state = _V2_STATE.get(self.api_rule.code, st.WARNING)
        if state == st.READY:
            return st.Status(st.READY, DEPRECATED)
        return st.Status(state, f"{DEPRECATED}\n\n{self.api_rule.desc}")


def validation_description(failures: Sequence[ValidationFailure]) -> str:
    """``Validation error: Attribute "p": m`` for one failure; ``Multiple validation errors: `` and one
    ``\\nAttribute "p": m`` line each (three at most, then ``\\nN more error(s)...``) for more."""
    if len(failures) == 1:
        return f'Validation error: Attribute "{failures[0].attribute_path}": {failures[0].message}'
    description = "Multiple validation errors: "
    for failure in failures[:MAX_VALIDATION_LINES]:
        description += f'\nAttribute "{failure.attribute_path}": {failure.message}'
    if len(failures) > MAX_VALIDATION_LINES:
        description += f"\n{len(failures) - MAX_VALIDATION_LINES} more error(s)..."
    return description


def not_reconciled() -> st.Status:
    """``Error``: v1beta1 access is not allowed (``kyma-system/apirule-access``), nothing is reconciled."""
    return st.Status(st.ERROR, NOT_RECONCILED)
