"""The ``cloud-kyma`` controller: activation of SKRs from the Kyma CR (``pkg/kcp/kyma``).

An SKR is active while its Kyma CR lists module ``cloud-manager`` in ``status.modules`` (any state) and
its Scope exists; otherwise it is deactivated. Activation is idempotent (a member keeps its place in
the rotation). Runs on every Kyma change (Kyma's lifecycle manager updates it often, which acts as a
resync) and on Scope changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kube import client_for
from tasks.cloud import names, settings, sweep
from tasks.cloud.kcp.common import ignored
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.kyma")

__all__ = ["module_state", "reconcile"]


def module_state(kyma: Mapping[str, Any] | None) -> str:
    """The ``cloud-manager`` module's state in ``status.modules`` (``NotPresent`` when absent)."""
    for module in ((kyma or {}).get("status") or {}).get("modules") or []:
        if isinstance(module, dict) and module.get("name") == names.MODULE_NAME:
            return str(module.get("state") or "Unknown")
    return "NotPresent"


def reconcile(key: Key) -> Result:
    """Activate or deactivate the SKR of Kyma ``key``."""
    kcp = client_for(key.cluster)
    kyma = kcp.get(names.KYMA, key.name, key.namespace)
    if kyma is not None and ignored(kyma):
        return Result.done()
    rotation = sweep.rotation(settings.current())
    state = module_state(kyma)
    scope = kcp.get(names.SCOPE, key.name, key.namespace) if kyma is not None else None
    if kyma is None or scope is None or state == "NotPresent":
        if rotation.deactivate(key.name):
            log.info("skr deactivated", kyma=key.name, kyma_exists=kyma is not None, scope_exists=scope is not None,
                     module_state=state)
        return Result.done()
    if rotation.activate(key.name):
        log.info("skr activated", kyma=key.name, module_state=state)
    return Result.done()
