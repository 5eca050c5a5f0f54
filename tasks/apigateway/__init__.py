"""API Gateway domain: APIRule v2 / v2alpha1 → Istio VirtualService, AuthorizationPolicies and
RequestAuthentications. The pure core is :func:`tasks.apigateway.plan.plan`; the worker and ``render``
both run it.

The exports load on first use (PEP 562): finding the installed domains imports this package for its
plug-in registration (:mod:`tasks.apigateway.domain`) and should not pay for the Kubernetes client."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.apigateway.plan import Plan, RulePolicy
    from tasks.apigateway.state import ClusterState

_EXPORTS = {"Plan": "tasks.apigateway.plan", "RulePolicy": "tasks.apigateway.plan",
            "ClusterState": "tasks.apigateway.state"}

__all__ = ["ClusterState", "Plan", "RulePolicy"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
