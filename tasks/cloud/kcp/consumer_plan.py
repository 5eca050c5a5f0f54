"""The plan of the KCP objects that live in a KCP IpRange (the IpRange consumers of
:mod:`tasks.cloud.registry`), their provider-independent part (cloud-manager's ``pkg/kcp/<kind>``
reconcilers): one turn's decision over what was read (pure).

:func:`plan` takes the object, its Scope, whether the Scope's provider is known and the KCP IpRange
``spec.ipRange.name`` names, and answers an :class:`~kube.toolkit.Outcome`, in the original's order:

1. the Scope: missing -> Error ``ScopeNoFound`` (sic) ``Scope <name> does not exist``, requeue 60 s
   (while deleting nothing can have been made: the finalizer goes);
2. not deleting: the IpRange missing -> Error ``InvalidIpRangeReference`` ``Referred IpRange
   <ns>/<name> does not exist``, forget; an unknown provider -> Error ``Unknown`` ``Unknown provider
   <name>``; the IpRange not Ready yet -> come back after ``wait_ready`` seconds; then the kind's
   ``prepare`` status fields (a kind's own, e.g. a status field copied from another) and the finalizer;
3. deleting with an unknown provider: nothing can have been made, the finalizer goes;
4. the provider's turn (the outcome's ``handoff``: ``reconcile``, or ``delete`` while deleting, also when
   the IpRange is gone: the original stops that with ``InvalidIpRangeReference`` for ever).

An IpRange reference resolves only within the object's Scope (issue 27; the original loads the IpRange
by name unchecked): the read hands on a KCP IpRange only when its ``spec.scope.name`` is the object's
(:func:`in_scope`), so another runtime's IpRange is, to this object and to its provider's turn, one
that does not exist (the same ``InvalidIpRangeReference`` words: nothing about it is revealed).
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

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "Seen", "in_scope", "iprange_name", "plan"]

REASON_INVALID_IPRANGE_REFERENCE = "InvalidIpRangeReference"


@dataclass(frozen=True)
class Seen:
    """What one turn read: the object, its Scope (``None`` when missing), whether the Scope's provider is
    registered, its KCP IpRange (``None`` when missing or not named)."""

    obj: Mapping[str, Any]
    scope: Mapping[str, Any] | None
    provider_known: bool = True
    iprange: Mapping[str, Any] | None = None


def iprange_name(obj: Mapping[str, Any]) -> str:
    """``spec.ipRange.name``."""
    return str(((obj.get("spec") or {}).get("ipRange") or {}).get("name") or "")


def in_scope(obj: Mapping[str, Any], iprange: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``iprange`` (the KCP IpRange ``obj`` names, as read) when it lives in ``obj``'s Scope (the same
    non-empty ``spec.scope.name``), else ``None``: an IpRange of another Scope is never used."""
    if iprange is None or not scope_name(obj) or scope_name(iprange) != scope_name(obj):
        return None
    return iprange


def plan(seen: Seen, t: Callable[[float], float], wait_ready: float,
         prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
         now: str | None = None) -> Outcome:
    """One turn up to the provider's (see the module doc). ``prepare(obj)`` answers status fields to
    write before the provider's turn (``{}``: none)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    if seen.scope is None:
        return run.scope_missing(t)
    if run.deleting:
        return Outcome(handoff="delete") if seen.provider_known else gone()
    if seen.iprange is None:
        return run.fail(REASON_INVALID_IPRANGE_REFERENCE,
                        f"Referred IpRange {run.namespace}/{iprange_name(obj)} does not exist")
    if not seen.provider_known:
        return run.fail(names.REASON_UNKNOWN, f"Unknown provider {(seen.scope.get('spec') or {}).get('provider')}")
    if not cond.is_true((seen.iprange.get("status") or {}).get("conditions") or [], names.COND_READY):
        return run.step(requeue_after=t(wait_ready))
    if prepare is not None:
        run.set(**prepare(obj))
    return run.step(add_finalizer=None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER,
                    handoff="reconcile")
