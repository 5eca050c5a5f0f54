"""The ``cloud-kyma`` controller's decision (pure; ``pkg/kcp/kyma``): is the SKR active?

An SKR is active while its Kyma CR lists module ``cloud-manager`` in ``status.modules`` (in any state)
and its Scope exists; otherwise it is deactivated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks.cloud import names

__all__ = ["NOT_PRESENT", "Activation", "module_state", "plan"]

#: :func:`module_state` of a Kyma CR without the module.
NOT_PRESENT = "NotPresent"


def module_state(kyma: Mapping[str, Any] | None) -> str:
    """The ``cloud-manager`` module's state in ``status.modules`` (``NotPresent`` when absent,
    ``Unknown`` when listed without a state)."""
    for module in ((kyma or {}).get("status") or {}).get("modules") or []:
        if isinstance(module, dict) and module.get("name") == names.MODULE_NAME:
            return str(module.get("state") or "Unknown")
    return NOT_PRESENT


@dataclass(frozen=True)
class Activation:
    """Whether the SKR is ``active``, and the module's state (for the log)."""

    active: bool
    module_state: str


def plan(kyma: Mapping[str, Any] | None, scope: Mapping[str, Any] | None) -> Activation:
    """Active when the Kyma CR exists, lists the module and the Scope exists (``None``: not found)."""
    state = module_state(kyma)
    return Activation(kyma is not None and scope is not None and state != NOT_PRESENT, state)
