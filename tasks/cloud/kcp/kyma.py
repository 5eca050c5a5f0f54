"""The ``cloud-kyma`` controller: activation of SKRs from the Kyma CR (``pkg/kcp/kyma``).

Reads the Kyma CR and its Scope, asks :func:`~tasks.cloud.kcp.kyma_plan.plan` (pure: active while the
CR lists module ``cloud-manager`` in ``status.modules``, in any state, and the Scope exists) and
activates or deactivates the SKR in the rotation. Activation is idempotent (a member keeps its place
in the rotation). Runs on every Kyma change (Kyma's lifecycle manager updates it often, which acts as
a resync) and on Scope changes.
"""

from __future__ import annotations

import structlog

from kube import client_for
from tasks.cloud import names, settings, sweep
from tasks.cloud.kcp.common import ignored
from tasks.cloud.kcp.kyma_plan import module_state, plan
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.kyma")

__all__ = ["module_state", "reconcile"]


def reconcile(key: Key) -> Result:
    """Activate or deactivate the SKR of Kyma ``key``."""
    kcp = client_for(key.cluster)
    kyma = kcp.get(names.KYMA, key.name, key.namespace)
    if kyma is not None and ignored(kyma):
        return Result.done()
    scope = kcp.get(names.SCOPE, key.name, key.namespace) if kyma is not None else None
    activation = plan(kyma, scope)
    rotation = sweep.rotation(settings.current())
    if not activation.active:
        if rotation.deactivate(key.name):
            log.info("skr deactivated", kyma=key.name, kyma_exists=kyma is not None, scope_exists=scope is not None,
                     module_state=activation.module_state)
    elif rotation.activate(key.name):
        log.info("skr activated", kyma=key.name, module_state=activation.module_state)
    return Result.done()
