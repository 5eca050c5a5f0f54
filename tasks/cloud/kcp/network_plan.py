"""The KCP Network plan (``pkg/kcp/network``): one turn's decision over what was read (pure).

:func:`plan` takes the Network, its Scope and who uses it, and answers one :class:`~kube.toolkit.Outcome`
(its ``handoff`` ``reconcile`` / ``delete`` hands a managed network to the Scope's provider):

1. deleting: refused while used (Warning ``DeleteWhileUsed``, state ``Warning``, requeue 10 s) by a KCP
   IpRange (``Can not be deleted while used by: [ns/name ...]``), a VpcPeering's local network (``Can
   not be deleted while used by VpcPeering local network: [...]``) or its remote network (``... remote
   network: [...]``), in the original's order; then a managed network (type ``cloud-resources``) is
   deleted by the provider, a reference network just releases its finalizer;
2. the finalizer;
3. a reference network (type ``kyma``, ``external``): its reference copied into ``status.network``
   (completed from the Scope as the original's ``handleNetworkReference``: the AWS account, the GCP
   project, the Azure subscription and tenant when the reference leaves them empty),
   ``status.networkType``, state ``Ready`` and the single condition Ready/True ``Ready``;
4. a managed network: its Scope gone -> Error ``ScopeNoFound`` ``Scope <name> does not exist`` (60 s;
   deleting: nothing to clean, the finalizer goes); else the provider's turn (handoff ``reconcile``):
   Azure's (:mod:`tasks.cloud.azure.network`); AWS and GCP have none (:func:`unsupported`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.step import StepBuilder, go_list, gone

__all__ = ["MANAGED", "Seen", "complete_reference", "plan", "unsupported"]

MANAGED = "cloud-resources"


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the Network.
        scope: its Scope (``None`` when gone).
        ipranges: ``ns/name`` of the KCP IpRanges in it (read while deleting).
        peering_local / peering_remote: ``ns/name`` of the VpcPeerings naming it as their local / remote
            network (read while deleting).
    """

    obj: Mapping[str, Any]
    scope: Mapping[str, Any] | None = None
    ipranges: Sequence[str] = field(default_factory=list)
    peering_local: Sequence[str] = field(default_factory=list)
    peering_remote: Sequence[str] = field(default_factory=list)


def kind_of(obj: Mapping[str, Any]) -> str:
    """``spec.type`` (default ``external``)."""
    return str((obj.get("spec") or {}).get("type") or "external")


def complete_reference(reference: Mapping[str, Any], scope: Mapping[str, Any] | None) -> dict[str, Any]:
    """``reference`` with the Scope's account / project / subscription / tenant where it leaves them empty."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in reference.items()}
    info = ((scope or {}).get("spec") or {}).get("scope") or {}
    fill = {"aws": {"awsAccountId": ("aws", "accountId")}, "gcp": {"gcpProject": ("gcp", "project")},
            "azure": {"subscriptionId": ("azure", "subscriptionId"), "tenantId": ("azure", "tenantId")}}
    for provider, keys in fill.items():
        if not isinstance(out.get(provider), dict):
            continue
        for key, (section, source) in keys.items():
            if not out[provider].get(key) and (info.get(section) or {}).get(source):
                out[provider][key] = str(info[section][source])
    return out


def plan(seen: Seen, t: Callable[[float], float], now: str | None = None) -> Outcome:
    """One turn of the Network (see the module doc)."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    kind = kind_of(obj)
    if run.deleting:
        for users, what in ((seen.ipranges, ""), (seen.peering_local, " VpcPeering local network"),
                            (seen.peering_remote, " VpcPeering remote network")):
            if users:
                run.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED,
                              f"Can not be deleted while used by{what}: {go_list(users)}", names.STATE_WARNING)
                return run.step(requeue_after=t(10))
        if kind == MANAGED:  # its Scope gone: nothing can be left to remove
            return run.scope_missing(t) if seen.scope is None else Outcome(handoff="delete")
        return Outcome(remove_finalizer=names.FINALIZER)
    add = None if has_finalizer(obj, names.FINALIZER) else names.FINALIZER
    if kind == MANAGED:
        if seen.scope is None:
            return replace(run.scope_missing(t), add_finalizer=add)
        return Outcome(add_finalizer=add, handoff="reconcile")
    reference = ((obj.get("spec") or {}).get("network") or {}).get("reference") or {}
    return run.exclusive(names.COND_READY, True, names.REASON_READY, names.REASON_READY, names.STATE_READY,
                         network=complete_reference(reference, seen.scope), networkType=kind).step(add_finalizer=add)


def unsupported(obj: Mapping[str, Any]) -> Outcome:
    """The turn of a provider without managed networks (AWS, GCP): Error ``Unknown`` ``Unsupported network
    type`` (deleting: nothing was made, the finalizer goes)."""
    run = StepBuilder(obj)
    return gone() if run.deleting else run.fail(names.REASON_UNKNOWN, "Unsupported network type")
