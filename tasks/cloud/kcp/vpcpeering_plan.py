"""The KCP VpcPeering plan, its provider-independent part (``pkg/kcp/vpcpeering``): one turn's decision
over what was read (pure).

:func:`plan` takes the VpcPeering, its Scope and the two Networks ``spec.details`` names and answers an
:class:`~kube.toolkit.Outcome`, in the original's order:

1. the Scope: missing -> Error ``ScopeNoFound`` (sic) ``Scope <name> does not exist``, requeue 60 s
   (while deleting: nothing can be reached, the finalizer goes); an unknown provider -> Error
   ``Unknown``;
2. ``spec.details`` required (the legacy ``spec.vpcPeering`` form is not reconciled: Error
   ``InvalidSpec``);
3. the local network (``details.localNetwork``): missing -> Error ``MissingDependency`` ``Local network not
   found`` (state Error, requeue 10 s); in Error -> ``WaitingDependency`` ``Local network not ready``
   (requeue 60 s); not Ready yet -> requeue 1 s; 4. the remote network (``details.remoteNetwork``, its
   namespace defaulting to the peering's) the same with ``Remote network ...``;
5. the provider's turn (the outcome's ``handoff``: ``reconcile``, or ``delete`` while deleting, with
   whatever networks are left: deletion never waits for a network).

The finalizer is added before the provider's first turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.step import StepBuilder, gone

__all__ = ["Seen", "network_names", "network_refs", "plan"]


@dataclass(frozen=True)
class Seen:
    """What one turn read: the VpcPeering, its Scope, whether the Scope's provider is known, the local
    and remote KCP Networks (``None`` when missing)."""

    obj: Mapping[str, Any]
    scope: Mapping[str, Any] | None
    provider_known: bool = True
    local: Mapping[str, Any] | None = None
    remote: Mapping[str, Any] | None = None


def network_refs(obj: Mapping[str, Any]) -> tuple[tuple[str, str], tuple[str, str]]:
    """``((namespace, name) of the local network, (namespace, name) of the remote one)``; an empty
    namespace is the peering's."""
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    found = ((obj.get("spec") or {}).get("details") or {})
    local = found.get("localNetwork") or {}
    remote = found.get("remoteNetwork") or {}
    return ((namespace, str(local.get("name") or "")),
            (str(remote.get("namespace") or namespace), str(remote.get("name") or "")))


def network_names(obj: Mapping[str, Any]) -> list[str]:
    """The names of the local and remote KCP Networks ``spec.details`` names (those given)."""
    return [name for _, name in network_refs(obj) if name]


def _dependency(run: StepBuilder, side: str, network: Mapping[str, Any] | None,
                t: Callable[[float], float]) -> Outcome | None:
    if network is None:
        return run.without(names.COND_READY).fail(names.REASON_MISSING_DEPENDENCY, f"{side} network not found",
                                                   requeue_after=t(10), exclusive=False)
    conditions = (network.get("status") or {}).get("conditions") or []
    if cond.is_true(conditions, names.COND_READY):
        return None
    if cond.is_true(conditions, names.COND_ERROR):
        return run.without(names.COND_READY).fail(names.REASON_WAITING_DEPENDENCY, f"{side} network not ready",
                                                   requeue_after=t(60), exclusive=False)
    return run.step(requeue_after=t(1))


def plan(seen: Seen, t: Callable[[float], float], now: str | None = None) -> Outcome:
    """One turn's provider-independent part (see the module doc)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    if seen.scope is None:
        return run.scope_missing(t)
    if not seen.provider_known:
        if run.deleting:
            return gone()
        provider = (seen.scope.get("spec") or {}).get("provider")
        return run.fail(names.REASON_UNKNOWN, f"Unknown provider {provider}")
    if run.deleting:
        return Outcome(handoff="delete")
    if not run.spec.get("details"):
        return run.fail("InvalidSpec", "VpcPeering spec.details is required")
    for side, network in (("Local", seen.local), ("Remote", seen.remote)):
        stop = _dependency(run, side, network, t)
        if stop is not None:
            return stop
    return Outcome(add_finalizer=None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER,
                   handoff="reconcile")
