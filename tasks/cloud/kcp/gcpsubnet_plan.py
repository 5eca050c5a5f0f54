"""The KCP GcpSubnet plan, its provider-independent part (``pkg/kcp/provider/gcp/subnet``'s Scope,
network and deletion steps): one turn's decision over what was read (pure).

:func:`plan` takes the GcpSubnet, its Scope, the Scope's ``<scope>--kyma`` Network and, while deleting,
the GcpRedisClusters using it, and answers an :class:`~kube.toolkit.Outcome`, in the original's order:

1. the Scope: missing -> condition Error ``ScopeNoFound`` (sic) ``Scope <name> does not exist``, back
   after 60 s (the original's ``focal``; while deleting nothing can have been made: the finalizer goes);
2. the finalizer;
3. not deleting: the kyma Network missing -> the single condition Error ``Error`` ``Kyma network does not
   exist``, state ``Error``, back after 60 s; in Error -> back after 300 s; not Ready yet -> back after
   1 s; Ready -> the provider's turn (``handoff`` ``reconcile``);
4. deleting: a Ready condition removed first (state ``Deleting``); while a GcpRedisCluster uses it the
   single condition Warning ``DeleteWhileUsed`` ``Can not be deleted while used by GcpRedisCluster:
   [ns/name ...]``, state ``Warning``, back after 10 s; then the provider's delete (``handoff``
   ``delete``).

Deliberate differences: a Network in Error is waited for, not written (the original sets the *Network's*
status to Error from the GcpSubnet's reconcile); a deleting GcpSubnet does not need its Network (the
original stops at ``Kyma network does not exist`` for ever, with the cloud resources left).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.step import StepBuilder, go_list

__all__ = ["NETWORK_MISSING", "Seen", "plan"]

NETWORK_MISSING = "Kyma network does not exist"


@dataclass(frozen=True)
class Seen:
    """What one turn read: the GcpSubnet, its Scope (``None``: missing), the Scope's kyma Network
    (``None``: missing) and, while deleting, ``ns/name`` of the GcpRedisClusters whose ``spec.subnet.name``
    is this GcpSubnet."""

    obj: Mapping[str, Any]
    scope: Mapping[str, Any] | None
    network: Mapping[str, Any] | None = None
    used_by: Sequence[str] = field(default_factory=list)


def plan(seen: Seen, t: Callable[[float], float], now: str | None = None) -> Outcome:
    """One turn up to the provider's (see the module doc)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    if seen.scope is None:
        return run.scope_missing(t, state=None, exclusive=False)
    if run.deleting:
        if not has_finalizer(obj, names.FINALIZER):
            return Outcome()
        if cond.find(run.conditions, names.COND_READY) is not None:
            run.without(names.COND_READY).set(state=names.STATE_DELETING)
            return run.step(requeue_after=t(1))
        if seen.used_by:
            run.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED,
                          f"Can not be deleted while used by GcpRedisCluster: {go_list(seen.used_by)}",
                          names.STATE_WARNING)
            return run.step(requeue_after=t(10))
        return run.step(handoff="delete")
    add = None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER
    network = seen.network
    if network is None:
        return replace(run.fail(names.REASON_ERROR, NETWORK_MISSING, requeue_after=t(60)), add_finalizer=add)
    conditions = (network.get("status") or {}).get("conditions") or []
    if cond.is_true(conditions, names.COND_READY):
        return run.step(add_finalizer=add, handoff="reconcile")
    if cond.is_true(conditions, names.COND_ERROR):
        return run.step(add_finalizer=add, requeue_after=t(300))
    return run.step(add_finalizer=add, requeue_after=t(1))
