"""The KCP IpRange plan, its provider-independent part (``pkg/kcp/iprange``): one turn's decision over
what was read (pure).

:func:`plan` takes what :func:`tasks.cloud.kcp.iprange.read` read (the IpRange, its Scope, the
provider's ranges and the VpcPeering it wants, the Network, that VpcPeering, the consumers while
deleting) and answers an :class:`IpRangePlan`, in the original's order:

1. the Scope: missing -> Error ``ScopeNoFound`` (sic) ``Scope <name> does not exist``, requeue 60 s
   (while deleting nothing can have been provisioned: the finalizer goes); the finalizer; an unknown
   provider -> Error ``Unknown`` ``Unknown provider <name>``;
2. the CIDR, unless ``status.cidr`` is set: ``spec.cidr`` copied into ``status.cidr``, else the first
   free /22 after the nodes range (:func:`~tasks.cloud.allocate.allocate_cidr`; nodes unknown:
   ``CidrAllocationFailed`` ``Error due to unknown SKR nodes range``; nothing free: ``Unable to
   allocate CIDR``; both forget);
3. the Network (``spec.network.name``, default ``<scope>--kyma``): a missing kyma network is an Error
   ``NotFound`` ``Kyma network not found``, another missing one ``Network not found`` (requeue 300 s);
   a missing ``<scope>--cm`` is created (type ``cloud-resources``, the CIDR, the Scope's region; requeue
   10 s); a Network in Error: ``Network in error state`` (300 s); not Ready yet: requeue 10 s;
4. the provider's VpcPeering (:meth:`~tasks.cloud.providers.Provider.iprange_peering`): one of that name
   not labelled with the Scope's kyma name is someone else's: Error ``VpcPeering <name> exists and does
   not belong to kyma <scope>`` (requeue 60 s), deleting or not;
5. deleting: refused while a consumer uses it (Warning ``DeleteWhileUsed`` ``Can not be deleted while
   used by <Kind>: [ns/name ...]``, state Warning, requeue 10 s); else state ``Deleting`` (the Warning
   goes) and the provider's delete (``provider`` ``delete``) while the Network is there; without it
   (or a provider) the turn's Outcome is :attr:`IpRangePlan.turn`: the VpcPeering deleted first
   (requeue 1 s), then the finalizer;
6. the provider's turn (``provider`` ``reconcile``).

After the provider's turn, :func:`finish` answers the writes its Outcome asks for
(:class:`~tasks.cloud.step.ChildStep`): the VpcPeering created (labels ``kymaName`` = the Scope, the
module's) or deleted, and on deletion the ``<scope>--cm`` Network once the finalizer may go.

Writes the original makes between its reads are one Outcome here: the CIDR is part of the status patch of
whatever the turn ends with (its Warning Event only when the conditions or state changed, as the
original's separate writes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.allocate import AllocationError, allocate_cidr
from tasks.cloud.step import ChildStep, StepBuilder, go_list, gone, with_child

__all__ = ["NETWORK", "VPC_PEERING", "IpRangePlan", "Seen", "finish", "network_name", "plan", "scope_name"]

#: :attr:`~kube.toolkit.Action.kind` of the writes.
NETWORK = names.NETWORK.kind
VPC_PEERING = names.VPC_PEERING.kind


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the KCP IpRange.
        scope: its Scope (``None`` when missing).
        provider_known: whether the Scope's provider is registered.
        ranges: the provider's ``existing_ranges(scope)`` (``[nodes, pods, services]``; ``[]`` without
            a provider).
        network: the KCP Network :func:`network_name` names (``None`` when missing).
        wanted: the provider's ``iprange_peering(scope)`` (``None``: it wants none).
        peering: the KCP VpcPeering of that name (``None`` when missing or not wanted).
        users: ``kind -> [ns/name ...]`` of the consumers using it (read while deleting).
    """

    obj: Mapping[str, Any]
    scope: Mapping[str, Any] | None
    provider_known: bool = True
    ranges: Sequence[str] = ()
    network: Mapping[str, Any] | None = None
    wanted: Mapping[str, Any] | None = None
    peering: Mapping[str, Any] | None = None
    users: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class IpRangePlan:
    """One turn: ``step`` is carried out first, then ``actions`` are written; then the turn is either
    over (``step`` says when to come back), or the provider's (``provider``: ``reconcile`` /
    ``delete``, with the object as ``step`` left it), or ``turn`` stands for the provider's Outcome (deleting
    without one). A provider's (or ``turn``'s) Outcome is completed by :func:`finish`.

    Attributes:
        warning: a line for the log (why the allocation failed), ``""`` for none.
    """

    step: Outcome
    actions: tuple[Action, ...] = ()
    provider: str = ""
    turn: Outcome | None = None
    warning: str = ""


def scope_name(obj: Mapping[str, Any]) -> str:
    """``spec.scope.name``."""
    return str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "")


def network_name(obj: Mapping[str, Any]) -> str:
    """``spec.network.name``, default ``<scope>--kyma``."""
    return str(((obj.get("spec") or {}).get("network") or {}).get("name") or names.kyma_network(scope_name(obj)))


def _with(step: Outcome, fields: Mapping[str, Any]) -> Outcome:
    """``step`` whose status patch also writes ``fields`` (written before it in the original: no Event
    of their own)."""
    if not fields:
        return step
    return replace(step, status={**fields, **(step.status or {})})


def _ours(peering: Mapping[str, Any], scope: str) -> bool:
    """Whether the VpcPeering carries the Scope's kyma name (made by an IpRange of it)."""
    return ((peering.get("metadata") or {}).get("labels") or {}).get(names.LABEL_KYMA_NAME) == scope


def _cidr(run: StepBuilder, ranges: Sequence[str]) -> tuple[dict[str, Any], Outcome | None, str]:
    """``(status fields to write, a Outcome that ends the turn or None, a log line)``."""
    if run.status.get("cidr"):
        return {}, None, ""
    spec_cidr = str(run.spec.get("cidr") or "")
    if spec_cidr:
        return {"cidr": spec_cidr}, None, ""
    if not ranges or not ranges[0]:
        return {}, run.fail(names.REASON_CIDR_ALLOCATION_FAILED, "Error due to unknown SKR nodes range"), ""
    try:
        return {"cidr": allocate_cidr(list(ranges))}, None, ""
    except AllocationError as exc:
        return {}, run.fail(names.REASON_CIDR_ALLOCATION_FAILED, "Unable to allocate CIDR"), str(exc)


def _network(seen: Seen, run: StepBuilder, cidr: str, t: Callable[[float], float]
             ) -> tuple[Outcome, tuple[Action, ...]] | None:
    """The Network's decision while provisioning (``None``: Ready, go on)."""
    scope, wanted = scope_name(seen.obj), network_name(seen.obj)
    if seen.network is None:
        if wanted == names.kyma_network(scope):
            return run.fail(names.REASON_NOT_FOUND, "Kyma network not found", requeue_after=t(300)), ()
        if wanted != names.cm_network(scope):
            return run.fail(names.REASON_NOT_FOUND, "Network not found", requeue_after=t(300)), ()
        network = {
            "metadata": {"name": wanted, "namespace": run.namespace, "labels": {names.LABEL_KYMA_NAME: scope}},
            "spec": {"scope": {"name": scope}, "type": "cloud-resources",
                     "network": {"managed": {"cidr": cidr,
                                             "location": ((seen.scope or {}).get("spec") or {}).get("region", "")}}},
        }
        return run.step(requeue_after=t(10)), (Action.on("create", names.NETWORK, network),)
    status = seen.network.get("status") or {}
    conditions = status.get("conditions") or []
    if cond.is_true(conditions, names.COND_ERROR) or status.get("state") == names.STATE_ERROR:
        return run.fail(names.REASON_UNKNOWN, "Network in error state", requeue_after=t(300)), ()
    if not cond.is_true(conditions, names.COND_READY):
        return run.step(requeue_after=t(10)), ()
    return None


def plan(seen: Seen, t: Callable[[float], float], now: str | None = None) -> IpRangePlan:
    """One turn of the KCP IpRange up to the provider's (see the module doc)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    scope = scope_name(obj)
    if seen.scope is None:
        if run.deleting:  # nothing can have been provisioned without a Scope to reach the cloud with
            return IpRangePlan(gone())
        return IpRangePlan(run.fail(names.REASON_SCOPE_NOT_FOUND, f"Scope {scope} does not exist", requeue_after=t(60)))
    fields: dict[str, Any] = {}
    has_finalizer = names.FINALIZER in ((obj.get("metadata") or {}).get("finalizers") or [])
    add = None if has_finalizer or run.deleting else names.FINALIZER
    if not run.deleting:
        if not seen.provider_known:
            step = run.fail(names.REASON_UNKNOWN, f"Unknown provider {(seen.scope.get('spec') or {}).get('provider')}")
            return IpRangePlan(replace(step, add_finalizer=add))
        fields, stop, warning = _cidr(run, seen.ranges)
        if stop is not None:
            return IpRangePlan(replace(stop, add_finalizer=add), warning=warning)
        cidr = str(fields.get("cidr") or run.status.get("cidr") or "")
        waiting = _network(seen, run, cidr, t)
        if waiting is not None:
            return IpRangePlan(replace(_with(waiting[0], fields), add_finalizer=add), waiting[1])
    if seen.wanted and seen.peering is not None and not _ours(seen.peering, scope):
        name = seen.wanted["metadata"]["name"]
        step = run.fail(names.REASON_UNKNOWN, f"VpcPeering {name} exists and does not belong to kyma {scope}",
                        requeue_after=t(60))
        return IpRangePlan(replace(_with(step, fields), add_finalizer=add))
    if not run.deleting:
        return IpRangePlan(_with(Outcome(add_finalizer=add), fields), provider="reconcile")
    if seen.users:
        message = "; ".join(f"Can not be deleted while used by {kind}: {go_list(refs)}"
                            for kind, refs in seen.users.items())
        run.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED, message, names.STATE_WARNING)
        return IpRangePlan(run.step(requeue_after=t(10)))
    deleting = run.without(names.COND_WARNING).set(state=names.STATE_DELETING).step()
    if seen.provider_known and seen.network is not None:
        return IpRangePlan(deleting, provider="delete")
    if seen.peering is not None:  # the network is gone, the provider has nothing left: the VpcPeering still goes first
        return IpRangePlan(deleting, turn=with_child(Outcome(requeue_after=t(1)), False))
    return IpRangePlan(deleting, turn=gone())


def finish(seen: Seen, step: Outcome) -> tuple[Action, ...]:
    """The writes the provider's ``step`` (or :attr:`IpRangePlan.turn`) asks for, made before it is
    carried out: the VpcPeering created or deleted as a :class:`~tasks.cloud.step.ChildStep` says, and
    while deleting the ``<scope>--cm`` Network once ``step`` releases the finalizer."""
    obj = seen.obj
    scope, namespace = scope_name(obj), str((obj.get("metadata") or {}).get("namespace") or "")
    actions: list[Action] = []
    if seen.wanted and isinstance(step, ChildStep) and step.child is not None:
        meta = dict(seen.wanted.get("metadata") or {})
        if step.child and seen.peering is None:
            meta["namespace"] = namespace
            meta["labels"] = {**(meta.get("labels") or {}), names.LABEL_KYMA_NAME: scope,
                              names.LABEL_MODULE: names.MODULE_LABEL_VALUE}
            actions.append(Action.on("create", names.VPC_PEERING, {**seen.wanted, "metadata": meta}))
        elif not step.child and seen.peering is not None \
                and not (seen.peering.get("metadata") or {}).get("deletionTimestamp"):
            gone_peering = {"metadata": {"name": str(meta["name"]), "namespace": namespace}}
            actions.append(Action.on("delete", names.VPC_PEERING, gone_peering, actual=dict(seen.peering)))
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    name = network_name(obj)
    if deleting and step.remove_finalizer and name == names.cm_network(scope) and seen.network is not None:
        actions.append(Action.on("delete", names.NETWORK, {"metadata": {"name": name, "namespace": namespace}},
                                 actual=dict(seen.network)))
    return tuple(actions)
