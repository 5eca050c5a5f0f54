"""The CloudResources module CR plan (``pkg/skr/cloudresources``): one turn's decision (pure).

Only one instance is served: when none has ``status.served=True`` the reconciled one becomes served;
the others get ``served=False``, state ``Warning`` and an Error condition ``OtherIsServed``. The served
one gets the finalizer and state ``Ready``. Deleting it is refused while any object of another
``cloud-resources.kyma-project.io`` kind exists (state ``Warning``, reason ``ResourcesExist``,
``Can not deactivate module while cloud resources exist: [kinds]``, requeue 10 s); otherwise every CRD
of the group but CloudResources' own is deleted and the finalizer released.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kube.resources as resources
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, has_finalizer
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["Seen", "plan"]


@dataclass(frozen=True)
class Seen:
    """What one turn read: the instance, every instance, and (only while deleting) the group's other
    CRDs and the kinds of them that still have objects."""

    obj: Mapping[str, Any]
    everyone: Sequence[Mapping[str, Any]]
    crds: Sequence[str] = field(default_factory=list)
    kinds_in_use: Sequence[str] = field(default_factory=list)


def plan(seen: Seen, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of the CloudResources instance (see the module doc)."""
    run = StepBuilder(seen.obj, now)
    served = [o for o in seen.everyone if (o.get("status") or {}).get("served") == "True"]
    if not served:
        return run.set(served="True").step(requeue_after=0)
    if run.status.get("served") != "True":
        other = served[0].get("metadata") or {}
        run.exclusive(names.COND_ERROR, True, names.REASON_OTHER_IS_SERVED,
                      f"Only one instance of CloudResources is allowed: {other.get('namespace')}/"
                      f"{other.get('name')} is served", names.STATE_WARNING, served="False")
        return run.step()
    if not run.deleting:
        ready = run.ready()
        return Outcome(status=ready.status,
                       add_finalizer=None if has_finalizer(seen.obj, names.FINALIZER) else names.FINALIZER)
    if seen.kinds_in_use:
        kinds = "[" + " ".join(sorted(seen.kinds_in_use)) + "]"
        run.exclusive(names.COND_WARNING, True, names.REASON_RESOURCES_EXIST,
                      f"Can not deactivate module while cloud resources exist: {kinds}", names.STATE_WARNING)
        return run.step(requeue_after=t(10))
    return Outcome(remove_finalizer=names.FINALIZER, writes=tuple(
        Action.named("delete", resources.CRD, crd) for crd in seen.crds))  # the CRDs go before the finalizer
