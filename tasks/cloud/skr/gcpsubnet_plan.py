"""The SKR GcpSubnet plan (``pkg/skr/gcpsubnet``): one turn's decision over what was read (pure).

An SKR ``GcpSubnet`` (cluster scoped, GCP SKRs only; ``spec.cidr``) is mirrored into the KCP
``GcpSubnet`` ``kcp-system/<status.id>`` (scope, remoteRef, the ``<kyma>--kyma`` network, the CIDR,
purpose ``PRIVATE``), which the KCP loop provisions. In the original's order, all in one turn where the
original re-reads between steps:

0. ownership before action (:mod:`tasks.cloud.ownership`): an id that is not a UUID is an Error
   ``InvalidId``; a KCP GcpSubnet of that name without this SKR's kyma label and this object's remote
   name label is an Error ``NotOwned``; nothing is written to the KCP then;
1. ``updateId``: a UUID in ``status.id`` (and the id label), state ``Processing``;
2. the finalizer; the KCP mirror created when missing, state ``Creating``;
3. wait (20 s) until the KCP GcpSubnet has conditions; then its status projected back (``updateStatus``):
   a KCP Error while the SKR has none -> state ``Error``, condition Error ``Error`` with the KCP message,
   Ready removed; a KCP Ready while the SKR has none -> state ``Ready``, condition Ready ``Ready`` with
   the KCP message, Error removed; and ``status.cidr`` the KCP's (the original leaves it empty);
4. deleting: while a GcpRedisCluster of the SKR uses it (``spec.subnet.name``, empty meaning ``default``)
   the single condition Warning ``DeleteWhileUsed`` ``Can not be deleted while used by: [ns/name ...]``,
   state ``Error`` (sic), back after 10 s; then the KCP mirror deleted (condition ``Deleting``
   ``DeletingInstance`` ``Deleting GcpSubnet <name>``, state ``Deleting``) and waited for (60 s; a KCP
   Error is projected as in 3 and the wait ends until the next connect), then the finalizer released.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kube.toolkit.conditions as cond
from kube.resources import Resource
from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome, deleting, has_finalizer
from tasks.cloud import names
from tasks.cloud.ownership import claim_id, foreign, identity, owner_labels
from tasks.cloud.step import StepBuilder, go_list

__all__ = ["KINDS", "SKR_GCP_REDIS_CLUSTER", "SKR_GCP_SUBNET", "Seen", "identity", "mirror", "plan", "using"]

#: The SKR kind (cluster scoped; its CRD is installed in GCP SKRs only).
SKR_GCP_SUBNET = Resource(names.SKR_GROUP, names.VERSION, "gcpsubnets", "GcpSubnet", False)
KINDS: Mapping[str, Resource] = {"gcp": SKR_GCP_SUBNET}
#: The SKR kind that uses a GcpSubnet (``spec.subnet.name``), read while one is deleted (when served).
SKR_GCP_REDIS_CLUSTER = Resource(names.SKR_GROUP, names.VERSION, "gcpredisclusters", "GcpRedisCluster", True)

COND_DELETING = "Deleting"
REASON_DELETING_INSTANCE = "DeletingInstance"
PURPOSE = "PRIVATE"


@dataclass(frozen=True)
class Seen:
    """What one turn read: the SKR GcpSubnet, the runtime (``kyma``, ``kcp_namespace``), the KCP GcpSubnet
    named by its id (``None``: none, no id yet, or an id that is not a UUID) and, while deleting, ``ns/name``
    of the SKR GcpRedisClusters using it."""

    obj: Mapping[str, Any]
    kyma: str
    kcp_namespace: str
    kcp: Mapping[str, Any] | None = None
    used_by: Sequence[str] = field(default_factory=list)


def using(cluster: Mapping[str, Any]) -> str:
    """The GcpSubnet an SKR GcpRedisCluster uses: ``spec.subnet.name``, ``default`` when empty (the
    original's field index)."""
    return str(((cluster.get("spec") or {}).get("subnet") or {}).get("name") or "") or "default"


def mirror(obj: Mapping[str, Any], kcp_name: str, kyma: str, kcp_namespace: str) -> dict[str, Any]:
    """The KCP GcpSubnet of the SKR object (name = its id): owner labels (the ownership rule reads them)
    and, as the original writes them, annotations."""
    name = str(obj["metadata"]["name"])
    owner = owner_labels(kyma, name)
    return {"apiVersion": f"{names.KCP_GROUP}/{names.VERSION}", "kind": "GcpSubnet",
            "metadata": {"name": kcp_name, "namespace": kcp_namespace,
                         "labels": {**owner, names.LABEL_MODULE: names.MODULE_LABEL_VALUE},
                         "annotations": dict(owner)},
            "spec": {"remoteRef": {"namespace": "", "name": name}, "scope": {"name": kyma},
                     "network": {"name": names.kyma_network(kyma)},
                     "cidr": str((obj.get("spec") or {}).get("cidr") or ""), "purpose": PURPOSE}}


def _project_error(run: StepBuilder, kcp_conditions: Sequence[Mapping[str, Any]]) -> bool:
    """A KCP Error the SKR does not show yet, projected (``updateStatus``); whether it was."""
    kcp_error = cond.find([dict(c) for c in kcp_conditions], names.COND_ERROR)
    if kcp_error is None or cond.find(run.conditions, names.COND_ERROR) is not None:
        return False
    conditions = cond.set_condition(cond.remove(run.conditions, names.COND_READY), cond.condition(
        names.COND_ERROR, True, names.REASON_ERROR, str(kcp_error.get("message") or ""), run.now))
    run.set(conditions=conditions, state=names.STATE_ERROR)
    return True


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of the SKR GcpSubnet (see the module doc). ``new_id``: the UUID to assign when the object
    has none; ``t``: scales seconds (``settings.t``); ``now``: RFC 3339 for conditions."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    name = run.name
    finalized = has_finalizer(obj, names.FINALIZER)
    if run.deleting and not finalized:
        return Outcome()
    if run.deleting and not run.status.get("id"):
        return Outcome(remove_finalizer=names.FINALIZER)
    ident, label_id, refused = claim_id(run, new_id, "GcpSubnet", foreign(seen.kcp, seen.kyma, name))  # 0, 1
    if refused is not None:
        return refused
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", SKR_GCP_SUBNET, name, body={names.LABEL_SKR_ID: label_id}))
    kcp = seen.kcp
    if run.deleting:  # 4
        if seen.used_by:
            run.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED,
                          f"Can not be deleted while used by: {go_list(seen.used_by)}", names.STATE_ERROR)
            return run.step(requeue_after=t(10))
        if kcp is None:
            return run.step(remove_finalizer=names.FINALIZER)
        if not deleting(kcp):
            run.set(conditions=cond.set_condition(run.conditions, cond.condition(
                COND_DELETING, True, REASON_DELETING_INSTANCE, f"Deleting GcpSubnet {name}", run.now)),
                state=names.STATE_DELETING)
            writes.append(Action.named("delete", names.GCP_SUBNET, str(kcp["metadata"]["name"]), seen.kcp_namespace,
                                       cluster="kcp"))
        if _project_error(run, (kcp.get("status") or {}).get("conditions") or []):
            return run.step().also(*writes)
        return run.step(requeue_after=t(60)).also(*writes)
    add = None if finalized else names.FINALIZER  # 2
    if kcp is None:
        run.set(state=names.STATE_CREATING)
        writes.append(Action.on("create", names.GCP_SUBNET, mirror(obj, ident, seen.kyma, seen.kcp_namespace),
                                cluster="kcp"))
        return run.step(add_finalizer=add, requeue_after=t(20)).also(*writes)
    kcp_status = kcp.get("status") or {}
    kcp_conditions = kcp_status.get("conditions") or []
    if not kcp_conditions:  # 3
        return run.step(add_finalizer=add, requeue_after=t(20)).also(*writes)
    if not _project_error(run, kcp_conditions):
        kcp_ready = cond.find(kcp_conditions, names.COND_READY)
        if kcp_ready is not None and cond.find(run.conditions, names.COND_READY) is None:
            conditions = cond.set_condition(cond.remove(run.conditions, names.COND_ERROR), cond.condition(
                names.COND_READY, True, names.REASON_READY, str(kcp_ready.get("message") or ""), run.now))
            run.set(conditions=conditions, state=names.STATE_READY)
    if kcp_status.get("cidr") and run.current("cidr") != kcp_status["cidr"]:
        run.set(cidr=str(kcp_status["cidr"]))
    return run.step(add_finalizer=add).also(*writes)
