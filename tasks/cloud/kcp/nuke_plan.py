"""The Nuke plan (``pkg/kcp/nuke``): what to delete of a gone runtime's scope and the Nuke's status (pure).

Over the objects listed per kind (kinds not served are absent), the objects whose ``spec.scope.name``
is the nuked scope are deleted (those not yet being deleted) and tracked in
``status.resources[]{kind, resourceType: KCP, objects{name: state}}`` (``Deleting``, then ``Deleted``).
Ready when all are gone; until then state ``Processing`` and a requeue after 1 s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["plan"]


def plan(nuke: Mapping[str, Any], found: Mapping[str, Sequence[Mapping[str, Any]]], t: Callable[[float], float],
         now: str) -> Outcome:
    """One turn of ``nuke`` over ``found`` (kind → objects listed in its namespace, in the order of
    :func:`tasks.cloud.registry.nuked`): the deletes of the scope's objects not yet being deleted (actions
    naming their kind, in that order), then the Nuke's status."""
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
    run.set(resources=resources)
    if not run.status.get("initializedOn"):
        run.set(initializedOn=run.now)
    remaining = sum(1 for r in resources for state in r["objects"].values() if state == "Deleting")
    done = run.set(state=names.STATE_PROCESSING).step(requeue_after=t(1)) if remaining else run.ready()
    return replace(done, writes=tuple(deletes))
