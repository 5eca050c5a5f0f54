"""The SKR IpRange plan (``pkg/skr/iprange/reconciler.go``): one turn's decision over what was read (pure).

:func:`plan` takes the SKR IpRange, the connect's other IpRanges, its KCP mirror (found by id) and
its consumers, and answers the turn's :class:`~kube.toolkit.Outcome`: its writes in the original's order
(the id label, the finalizer, the KCP mirror created or deleted on cluster ``kcp``), then the SKR object's
status, Event, finalizer removal and requeue (carried out by :mod:`tasks.cloud.skr.kind`).
The original's steps, in its order, all in one turn (the original re-reads between them):

0. ownership before action (:mod:`tasks.cloud.ownership`): an id (``status.id``, else the id label)
   that is not a UUID is an Error ``InvalidId`` ``IpRange id '<id>' is not a UUID``; a KCP IpRange of
   that name without this SKR's kyma and this object's remote labels is an Error ``NotOwned``. Either
   way nothing is written to the KCP and no KCP status is copied (the original loads it unchecked);
1. ``updateId``: a UUID in label ``cloud-resources.kyma-project.io/id`` and ``status.id``, state
   ``Processing``;
2. ``preventCidrChange``: ``spec.cidr`` differing from ``status.cidr`` -> exclusive condition
   ``Error`` with status **False** (sic) reason ``CidrCanNotBeChanged`` ``IpRange CIDR can not be
   changed``, state Error;
3. ``validateCidr``: ``InvalidCidr`` with the original's messages, else ``status.cidr = spec.cidr``;
4. ``preventCidrOverlap``: the newer of two overlapping IpRanges gets ``CidrOverlap`` ``CIDR overlaps
   with <older>``; 5. the overlap condition is removed once the overlap is gone (state Processing);
6. the KCP mirror ``kcp-system/<status.id>``; 7. the quota (default 1 per SKR, older wins):
   ``QuotaExceeded`` ``Maximum number of <n> resources exceeded``, removed once within the quota;
8. the finalizer; 9. the KCP mirror created (scope, remoteRef, kyma labels), condition ``Submitted``
   ``SubmissionSucceeded`` ``Resource is submitted for provisioning``, state ``Creating``;
10. deletion: refused while a consumer uses it (``DeleteWhileUsed`` ``Can not be deleted while used by:
    [ns/name ...]``), else the mirror is deleted and, once gone, the finalizer released;
11. the KCP status projected back (:func:`tasks.cloud.state.project_kcp_iprange`).

So the mirror is created in the turn that first sees the IpRange (id, finalizer and mirror at once).
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
from tasks.cloud.ownership import claim_id, foreign, identity
from tasks.cloud.state import derive_state, project_kcp_iprange
from tasks.cloud.step import StepBuilder, go_list
from tasks.cloud.validate import cidr_failure, overlap_winner

__all__ = ["KINDS", "Seen", "identity", "mirror", "plan"]

SUBMITTED_MESSAGE = "Resource is submitted for provisioning"

#: provider -> the SKR kind (the same on every provider).
KINDS: Mapping[str, Resource] = {"*": names.SKR_IPRANGE}


@dataclass(frozen=True)
class Seen:
    """What one turn read.

    Attributes:
        obj: the SKR IpRange.
        everyone: every SKR IpRange of the connect (overlaps, quota).
        kcp: the KCP IpRange named by :func:`identity` (``None``: none, no id yet, or an id that is
            not a UUID, which is never looked up).
        users: ``ns/name`` of the SKR objects using it (read only while deleting).
        kyma: the runtime; provider: its cloud (``azure`` IpRanges live in the ``--cm`` network).
        kcp_namespace: where the mirrors live.
        quota: IpRanges allowed in this SKR.
    """

    obj: Mapping[str, Any]
    everyone: Sequence[Mapping[str, Any]]
    kcp: Mapping[str, Any] | None
    kyma: str
    provider: str
    kcp_namespace: str
    quota: int | None = 1
    users: Sequence[str] = field(default_factory=list)


def _outcome(step: Outcome, seen: Seen, *, label_id: str | None = None, add_finalizer: bool = False,
             create: dict[str, Any] | None = None, delete: str | None = None) -> Outcome:
    """``step`` with the turn's writes in the original's order: the id label, the finalizer, the KCP
    mirror created or deleted (on cluster ``kcp``)."""
    name = str((seen.obj.get("metadata") or {}).get("name") or "")
    writes: list[Action] = []
    if label_id is not None:
        writes.append(Action.named("label", names.SKR_IPRANGE, name, body={names.LABEL_SKR_ID: label_id}))
    if add_finalizer:
        writes.append(Action.finalizer(True, names.SKR_IPRANGE, seen.obj, names.FINALIZER))
    if create is not None:
        writes.append(Action.on("create", names.KCP_IPRANGE, create, cluster="kcp"))
    if delete is not None:
        writes.append(Action.named("delete", names.KCP_IPRANGE, delete, seen.kcp_namespace, cluster="kcp"))
    return step.also(*writes)


def mirror(obj: Mapping[str, Any], kcp_name: str, kyma: str, provider: str, kcp_namespace: str) -> dict[str, Any]:
    """The KCP IpRange projected from the SKR IpRange ``obj`` (name = its id)."""
    name = str(obj["metadata"]["name"])
    network = names.cm_network(kyma) if provider == "azure" else names.kyma_network(kyma)
    spec: dict[str, Any] = {"remoteRef": {"namespace": "", "name": name}, "scope": {"name": kyma},
                            "network": {"name": network}}
    cidr = str((obj.get("spec") or {}).get("cidr") or "")
    if cidr:
        spec["cidr"] = cidr
    return {"metadata": {"name": kcp_name, "namespace": kcp_namespace,
                         "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: name,
                                    names.LABEL_REMOTE_NAMESPACE: "",
                                    names.LABEL_MODULE: names.MODULE_LABEL_VALUE}},
            "spec": spec}


def plan(seen: Seen, new_id: str, t: Callable[[float], float], now: str) -> Outcome:
    """One turn of the SKR IpRange (see the module doc). ``new_id``: the UUID to assign when the
    object has none; ``t``: scales seconds (``settings.t``); ``now``: RFC 3339 for conditions."""
    obj = seen.obj
    run = StepBuilder(obj, now)
    meta = obj.get("metadata") or {}
    finalized = has_finalizer(obj, names.FINALIZER)
    spec_cidr = str(run.spec.get("cidr") or "")

    if not run.status.get("id") and run.deleting and not finalized:
        return Outcome()
    ident, label_id, refused = claim_id(run, new_id, "IpRange",
                                        foreign(seen.kcp, seen.kyma, str(meta.get("name") or "")))  # 0, 1
    if refused is not None:
        return refused

    def stop(step: Outcome, **writes: Any) -> Outcome:
        return _outcome(step, seen, label_id=label_id, **writes)

    if run.deleting:  # 10
        return _delete(run, seen, ident, finalized, label_id, t)
    status_cidr = str(run.status.get("cidr") or "")
    if spec_cidr and status_cidr and spec_cidr != status_cidr:  # 2
        run.exclusive(names.COND_ERROR, False, names.REASON_CIDR_CAN_NOT_BE_CHANGED,
                      "IpRange CIDR can not be changed", names.STATE_ERROR)
        return stop(run.step())
    if spec_cidr and not status_cidr:  # 3
        failure = cidr_failure(spec_cidr)
        if failure is not None:
            return stop(run.fail(names.REASON_INVALID_CIDR, failure))
        run.set(cidr=spec_cidr)
    winner = overlap_winner(obj, seen.everyone)  # 4
    if winner is not None:
        return stop(run.fail(names.REASON_CIDR_OVERLAP, f"CIDR overlaps with {winner}"))
    error = cond.find(run.conditions, names.COND_ERROR)  # 5
    if error is not None and error.get("reason") == names.REASON_CIDR_OVERLAP:
        run.without(names.COND_ERROR).set(state=names.STATE_PROCESSING)
    kcp_obj = seen.kcp  # 6
    if kcp_obj is None:  # 7
        over = run.over_quota(seen.everyone, seen.quota)
        if over is not None:
            return stop(over)
        run.exclusive(names.COND_SUBMITTED, True, names.REASON_SUBMISSION_SUCCEEDED, SUBMITTED_MESSAGE,
                      names.STATE_CREATING)  # 8, 9
        return stop(run.step(requeue_after=t(0.1)), add_finalizer=not finalized,
                    create=mirror(obj, ident, seen.kyma, seen.provider, seen.kcp_namespace))
    projected = project_kcp_iprange(kcp_obj, run.conditions, run.now)  # 8, 11
    if projected.wait or projected.conditions is None:
        return stop(run.step(requeue_after=t(10)), add_finalizer=not finalized)
    run.set(conditions=projected.conditions, state=derive_state(projected.conditions, str(run.current("state") or "")))
    return stop(run.step(), add_finalizer=not finalized)


def _delete(run: StepBuilder, seen: Seen, ident: str, finalized: bool, label_id: str | None,
            t: Callable[[float], float]) -> Outcome:
    if not finalized:
        return _outcome(run.step(), seen, label_id=label_id)
    warning = cond.find(run.conditions, names.COND_WARNING)
    if not (warning and warning.get("reason") == names.REASON_DELETE_WHILE_USED) and \
            run.current("state") not in (names.STATE_PROCESSING, names.STATE_DELETING):
        run.set(state=names.STATE_PROCESSING)
    if seen.users:
        run.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED,
                      f"Can not be deleted while used by: {go_list(list(seen.users))}", names.STATE_ERROR)
        return _outcome(run.step(requeue_after=t(10)), seen, label_id=label_id)
    if seen.kcp is not None:
        run.without(names.COND_WARNING).set(state=names.STATE_DELETING)
        return _outcome(run.step(requeue_after=t(10)), seen, label_id=label_id,
                        delete=None if deleting(seen.kcp) else ident)
    return _outcome(run.step(remove_finalizer=names.FINALIZER), seen, label_id=label_id)
