"""The Nuke plan (``pkg/kcp/nuke``): what to delete of a gone runtime's scope and the Nuke's status (pure).

Over the objects listed per kind (kinds not served are absent), the objects whose ``spec.scope.name``
is the nuked scope are deleted (those not yet being deleted) and tracked in
``status.resources[]{kind, resourceType: KCP, objects{name: state}}`` (``Deleting``, then ``Deleted``).
Ready when all are gone; until then state ``Processing`` and a requeue after 1 s.

In the same turn, as cloud-manager's ``pkg/kcp/provider/<provider>/nuke`` after the KCP deletes, the
provider resources Nuke deletes directly (a runtime's NFS backups, :class:`~tasks.cloud.registry.NukeSide`):
each listed one is deleted unless its deletion runs, and tracked in
``status.resources[]{kind, resourceType: ProviderResource, objects{id: state}}`` (``Deleting``; one no longer
listed: ``Deleted``). While any remains the Nuke is ``Deleting`` and comes back after 10 s (the original's
wait for orphan provider resources); a refused delete call comes back after 10 s too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kube.refusal import Failure
from kube.toolkit.actions import Action, Call, Write
from kube.toolkit.outcome import Outcome, deleting
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["KCP", "PROVIDER", "ProviderObject", "plan"]


@dataclass(frozen=True)
class ProviderObject:
    """One provider resource Nuke deletes directly (it has no KCP object), as Nuke's listing found it.

    Attributes:
        id: its name in the Nuke's ``status.resources[].objects`` (the provider's id or resource name).
        deleting: its deletion already runs (no second delete call).
        method, args: the call that deletes it, ``<client>.<method>(*args)`` (made once per turn at most).
    """

    id: str
    deleting: bool
    method: str
    args: tuple[Any, ...] = ()


#: The ``resourceType`` of the Nuke's status entries.
KCP, PROVIDER = "KCP", "ProviderResource"


def plan(nuke: Mapping[str, Any], found: Mapping[str, Sequence[Mapping[str, Any]]], t: Callable[[float], float],
         now: str, provider: Mapping[str, Sequence[ProviderObject]] | None = None) -> Outcome:
    """One turn of ``nuke`` over ``found`` (kind → objects listed in its namespace, in the order of
    :func:`tasks.cloud.registry.nuked`) and ``provider`` (status kind → this runtime's provider resources
    listed, in the order of :func:`tasks.cloud.registry.provider_nuked`): the deletes of the scope's
    objects not yet being deleted (actions naming their kind, in that order), then the provider deletes
    (calls through the client named by the kind), then the Nuke's status."""
    run = StepBuilder(nuke, now)
    scope_name = str((run.spec.get("scope") or {}).get("name") or "")
    before = {r.get("kind"): dict(r.get("objects") or {}) for r in run.status.get("resources") or []}
    resources: list[dict[str, Any]] = []
    deletes: list[Action] = []
    for kind, objs in found.items():
        objects = {name: "Deleted" for name in before.get(kind, {})}
        for obj in objs:
            if str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "") != scope_name:
                continue
            name = str(obj["metadata"]["name"])
            if not deleting(obj):
                deletes.append(Action("delete", kind, {"metadata": {"name": name, "namespace": run.namespace}}))
            objects[name] = "Deleting"
        if objects:
            resources.append({"kind": kind, "resourceType": "KCP", "objects": objects})
    was = {r.get("kind"): dict(r.get("objects") or {}) for r in run.status.get("resources") or []
           if r.get("resourceType") == PROVIDER}
    calls: list[Write] = []
    for kind, listed in (provider or {}).items():
        objects = {ident: "Deleted" for ident in was.get(kind, {})}
        for item in listed:
            if not item.deleting:
                calls.append(Call(item.method, tuple(item.args), client=kind, kind=f"delete {kind}"))
            objects[item.id] = "Deleting"
        if objects:
            resources.append({"kind": kind, "resourceType": PROVIDER, "objects": objects})
    run.set(resources=resources)
    if not run.status.get("initializedOn"):
        run.set(initializedOn=run.now)
    remaining = sum(1 for r in resources if r["resourceType"] == KCP for state in r["objects"].values()
                    if state == "Deleting")
    orphans = any(provider.get(kind) for kind in provider) if provider else False
    if remaining:
        done = run.set(state=names.STATE_PROCESSING).step(requeue_after=t(1))
    elif orphans:
        done = run.set(state=names.STATE_DELETING).step(requeue_after=t(10))
    else:
        done = run.ready()
    if not calls:
        return replace(done, writes=tuple(deletes))

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome:
        return replace(done, writes=(), requeue_after=t(10))

    return replace(done, writes=(*deletes, *calls), refused=refused)
