"""The KCP IpRange plan, its provider-independent part (``pkg/kcp/iprange``): one turn's decision over
what was read (pure).

:func:`plan` takes what :func:`tasks.cloud.kcp.iprange.read` read (the IpRange, its Scope, the
provider's ranges and the VpcPeering it wants, the Network, that VpcPeering, the consumers while
deleting) and answers an :class:`~kube.toolkit.Outcome`, in the original's order:

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
   goes) and the provider's delete (handoff ``delete``) while the Network is there; without it (or a
   provider) the VpcPeering is deleted first (requeue 1 s), then the finalizer;
6. the provider's turn (handoff ``reconcile``).

A provider's deletion turn is completed by :func:`finish`: the ``<scope>--cm`` Network goes once it
releases the finalizer. The kyma VpcPeering a provider's turn depends on is created or deleted by that
turn's own Outcome (:func:`peering_writes`: labels ``kymaName`` = the Scope, the module's).

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
from kube.toolkit.outcome import Outcome, at_end, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.allocate import AllocationError, allocate_cidr
from tasks.cloud.step import StepBuilder, go_list

__all__ = ["NETWORK", "VPC_PEERING", "Seen", "finish", "network_name", "network_names", "peering_writes", "plan",
           "scope_name"]

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


def scope_name(obj: Mapping[str, Any]) -> str:
    """``spec.scope.name``."""
    return str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "")


def network_name(obj: Mapping[str, Any]) -> str:
    """``spec.network.name``, default ``<scope>--kyma``."""
    return str(((obj.get("spec") or {}).get("network") or {}).get("name") or names.kyma_network(scope_name(obj)))


def network_names(obj: Mapping[str, Any]) -> list[str]:
    """The Network the IpRange lives in (:func:`network_name`): its deletion waits for the IpRange, its
    status changes wake it."""
    return [network_name(obj)]


def _with(step: Outcome, fields: Mapping[str, Any]) -> Outcome:
    """``step`` whose status patch also writes ``fields`` (written before it in the original: no Event
    of their own)."""
    if not fields:
        return step
    return replace(step, status={**fields, **(step.status or {})})


def _ours(peering: Mapping[str, Any], scope: str) -> bool:
    """Whether the VpcPeering carries the Scope's kyma name (made by an IpRange of it)."""
    return ((peering.get("metadata") or {}).get("labels") or {}).get(names.LABEL_KYMA_NAME) == scope


def _cidr(run: StepBuilder, ranges: Sequence[str]) -> tuple[dict[str, Any], Outcome | None]:
    """``(status fields to write, an Outcome that ends the turn or None)``."""
    if run.status.get("cidr"):
        return {}, None
    spec_cidr = str(run.spec.get("cidr") or "")
    if spec_cidr:
        return {"cidr": spec_cidr}, None
    if not ranges or not ranges[0]:
        return {}, run.fail(names.REASON_CIDR_ALLOCATION_FAILED, "Error due to unknown SKR nodes range")
    try:
        return {"cidr": allocate_cidr(list(ranges))}, None
    except AllocationError:
        return {}, run.fail(names.REASON_CIDR_ALLOCATION_FAILED, "Unable to allocate CIDR")


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


def plan(seen: Seen, t: Callable[[float], float], now: str | None = None) -> Outcome:
    """One turn of the KCP IpRange up to the provider's (see the module doc): an Outcome that ends the
    turn, or hands the object to the provider (:attr:`~kube.toolkit.Outcome.handoff` ``reconcile`` /
    ``delete``)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    scope = scope_name(obj)
    if seen.scope is None:  # deleting: nothing can have been provisioned without a Scope to reach the cloud with
        return run.scope_missing(t)
    fields: dict[str, Any] = {}
    finalized = has_finalizer(obj, names.FINALIZER)
    add = None if finalized or run.deleting else names.FINALIZER
    if not run.deleting:
        if not seen.provider_known:
            step = run.fail(names.REASON_UNKNOWN, f"Unknown provider {(seen.scope.get('spec') or {}).get('provider')}")
            return replace(step, add_finalizer=add)
        fields, stop = _cidr(run, seen.ranges)
        if stop is not None:
            return replace(stop, add_finalizer=add)
        cidr = str(fields.get("cidr") or run.status.get("cidr") or "")
        waiting = _network(seen, run, cidr, t)
        if waiting is not None:
            return replace(_with(waiting[0], fields), add_finalizer=add).first(*waiting[1])
    if seen.wanted and seen.peering is not None and not _ours(seen.peering, scope):
        name = seen.wanted["metadata"]["name"]
        step = run.fail(names.REASON_UNKNOWN, f"VpcPeering {name} exists and does not belong to kyma {scope}",
                        requeue_after=t(60))
        return replace(_with(step, fields), add_finalizer=add)
    if not run.deleting:
        return _with(Outcome(add_finalizer=add, handoff="reconcile"), fields)
    if seen.users:
        message = "; ".join(f"Can not be deleted while used by {kind}: {go_list(refs)}"
                            for kind, refs in seen.users.items())
        run.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED, message, names.STATE_WARNING)
        return run.step(requeue_after=t(10))
    deleting = run.without(names.COND_WARNING).set(state=names.STATE_DELETING).step()
    if seen.provider_known and seen.network is not None:
        return replace(deleting, handoff="delete")
    if seen.peering is not None and seen.wanted:  # the network is gone, the provider has nothing left
        return replace(deleting, requeue_after=t(1)).also(*peering_writes(obj, seen.wanted, seen.peering, False))
    return finish(seen, replace(deleting, remove_finalizer=names.FINALIZER))


def peering_writes(obj: Mapping[str, Any], wanted: Mapping[str, Any], peering: Mapping[str, Any] | None,
                   exist: bool) -> tuple[Action, ...]:
    """The writes that make the KCP VpcPeering ``wanted`` (the provider's, for the IpRange ``obj``) exist
    (``exist``; created when ``peering``, as read, is ``None``: in the IpRange's namespace, labelled with
    the Scope's kyma name and the module's) or be gone (deleted unless already being deleted), as the
    original's ``kymaPeeringCreate`` / ``kymaPeeringDelete``."""
    scope, namespace = scope_name(obj), str((obj.get("metadata") or {}).get("namespace") or "")
    meta = dict(wanted.get("metadata") or {})
    if exist and peering is None:
        meta["namespace"] = namespace
        meta["labels"] = {**(meta.get("labels") or {}), names.LABEL_KYMA_NAME: scope,
                          names.LABEL_MODULE: names.MODULE_LABEL_VALUE}
        return (Action.on("create", names.VPC_PEERING, {**wanted, "metadata": meta}),)
    if not exist and peering is not None and not deleting(peering):
        gone_peering = {"metadata": {"name": str(meta["name"]), "namespace": namespace}}
        return (Action.on("delete", names.VPC_PEERING, gone_peering, actual=dict(peering)),)
    return ()


def finish(seen: Seen, outcome: Outcome) -> Outcome:
    """A deletion turn's ``outcome`` (the provider's, or the plan's own) completed: once its final
    Outcome releases the finalizer, the ``<scope>--cm`` Network the IpRange lived in goes first (pure)."""
    obj = seen.obj
    scope, namespace = scope_name(obj), str((obj.get("metadata") or {}).get("namespace") or "")
    name = network_name(obj)
    if not deleting(obj) or name != names.cm_network(scope) \
            or seen.network is None:
        return outcome
    gone_network = Action.on("delete", names.NETWORK, {"metadata": {"name": name, "namespace": namespace}},
                             actual=dict(seen.network))
    return at_end(outcome, lambda last: last.first(gone_network) if last.remove_finalizer else last)
