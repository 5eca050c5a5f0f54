"""The KCP GcpRedisCluster plan, its provider-independent part (``pkg/kcp/provider/gcp/rediscluster``'s
``focal`` and ``loadSubnet`` steps): one turn's decision over what was read (pure).

:func:`plan` takes the GcpRedisCluster, its Scope, whether the Scope's provider is known and the KCP
GcpSubnet ``spec.subnet.name`` names (read only within the object's Scope), and answers an
:class:`~kube.toolkit.Outcome`, in the original's order:

1. the Scope: missing -> Error ``ScopeNoFound`` (sic) ``Scope <name> does not exist``, back after 60 s
   (while deleting nothing can have been made: the finalizer goes);
2. deleting: the provider's delete (``handoff`` ``delete``; an unknown provider: the finalizer goes);
3. the GcpSubnet missing -> Error ``NotFound`` ``Referred GcpSubnet <ns>/<name> does not exist``, back
   after 60 s; an unknown provider -> Error ``Unknown`` ``Unknown provider <name>``;
4. the GcpSubnet not Ready -> back after ``wait_ready`` seconds (its service connection policy lists it
   only then: a cluster created before finds no policy for its network);
5. the finalizer and the provider's turn (``handoff`` ``reconcile``).

Deliberate differences: the GcpSubnet must be Ready (the original only loads it, and the create fails at
Google while the policy is missing); a GcpSubnet of another Scope is one that does not exist (the
original loads it by name unchecked); a missing GcpSubnet is looked at again after 60 s (the original
forgets the object until its next change); a deleting object does not need its GcpSubnet (the original
stops at ``Referred GcpSubnet ... does not exist`` with the cluster left behind).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.kcp.iprange_plan import scope_name
from tasks.cloud.step import StepBuilder, gone

__all__ = ["Seen", "in_scope", "plan", "subnet_name"]


@dataclass(frozen=True)
class Seen:
    """What one turn read: the object, its Scope (``None``: missing), whether the Scope's provider is
    registered, its KCP GcpSubnet (``None``: missing, unnamed or of another Scope)."""

    obj: Mapping[str, Any]
    scope: Mapping[str, Any] | None
    provider_known: bool = True
    subnet: Mapping[str, Any] | None = None


def subnet_name(obj: Mapping[str, Any]) -> str:
    """``spec.subnet.name``."""
    return str(((obj.get("spec") or {}).get("subnet") or {}).get("name") or "")


def in_scope(obj: Mapping[str, Any], subnet: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``subnet`` when it lives in ``obj``'s Scope (the same non-empty ``spec.scope.name``), else ``None``."""
    if subnet is None or not scope_name(obj) or scope_name(subnet) != scope_name(obj):
        return None
    return subnet


def plan(seen: Seen, t: Callable[[float], float], wait_ready: float = 5.0, now: str | None = None) -> Outcome:
    """One turn up to the provider's (see the module doc)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    if seen.scope is None:
        return run.scope_missing(t)
    if run.deleting:
        return Outcome(handoff="delete") if seen.provider_known else gone()
    if seen.subnet is None:
        return run.fail(names.REASON_NOT_FOUND,
                        f"Referred GcpSubnet {run.namespace}/{subnet_name(obj)} does not exist", requeue_after=t(60))
    if not seen.provider_known:
        return run.fail(names.REASON_UNKNOWN, f"Unknown provider {(seen.scope.get('spec') or {}).get('provider')}")
    if not cond.is_true((seen.subnet.get("status") or {}).get("conditions") or [], names.COND_READY):
        return run.step(requeue_after=t(wait_ready))
    return run.step(add_finalizer=None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER,
                    handoff="reconcile")
