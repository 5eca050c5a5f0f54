"""The SKR IpRange reconciler (``pkg/skr/iprange/reconciler.go``), run once per connect per IpRange.

Steps, in the original's order (each stops the turn with a :class:`~workers.controller.Result`):

1. ``updateId``: a UUID in label ``cloud-resources.kyma-project.io/id`` and ``status.id``, state
   ``Processing``;
2. ``preventCidrChange``: ``spec.cidr`` differing from ``status.cidr`` -> exclusive condition
   ``Error`` with status **False** (sic) reason ``CidrCanNotBeChanged`` ``IpRange CIDR can not be
   changed``, state Error;
3. ``validateCidr``: ``InvalidCidr`` with the original's messages, else ``status.cidr = spec.cidr``;
4. ``preventCidrOverlap``: the newer of two overlapping IpRanges gets ``CidrOverlap`` ``CIDR overlaps
   with <older>``; 5. the overlap condition is removed once the overlap is gone;
6. the KCP mirror ``kcp-system/<status.id>``; 7. the quota (default 1 per SKR, older wins):
   ``QuotaExceeded`` ``Maximum number of <n> resources exceeded``;
8. the finalizer; 9. the KCP mirror created (scope, remoteRef, kyma labels), condition ``Submitted``
   ``SubmissionSucceeded`` ``Resource is submitted for provisioning``, state ``Creating``;
10. deletion: refused while a consumer uses it (``DeleteWhileUsed`` ``Can not be deleted while used by:
    [ns/name ...]``), else the mirror is deleted and, once gone, the finalizer released;
11. the KCP status projected back (:func:`tasks.cloud.state.project_kcp_iprange`).

Deliberate difference: a quota-exceeded IpRange is checked again at the next connect, not every
300 ms inside the connect's window (which would hold a worker for the whole window).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from kube import ResourceMissing
from tasks.cloud import conditions as cond
from tasks.cloud import names
from tasks.cloud.kcp.common import add_finalizer, go_list, ignored, remove_finalizer, used_by
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.state import derive_state, project_kcp_iprange
from tasks.cloud.status import StatusWriter
from tasks.cloud.validate import cidr_failure, overlap_winner, quota_exceeded
from workers.controller import Result

__all__ = ["mirror", "reconcile"]


def mirror(ctx: SkrContext, obj: dict[str, Any], kcp_name: str) -> dict[str, Any]:
    """The KCP IpRange projected from the SKR IpRange ``obj`` (name = its ``status.id``)."""
    name = str(obj["metadata"]["name"])
    network = names.cm_network(ctx.kyma) if ctx.provider == "azure" else names.kyma_network(ctx.kyma)
    spec: dict[str, Any] = {"remoteRef": {"namespace": "", "name": name}, "scope": {"name": ctx.kyma},
                            "network": {"name": network}}
    cidr = str((obj.get("spec") or {}).get("cidr") or "")
    if cidr:
        spec["cidr"] = cidr
    return {"metadata": {"name": kcp_name, "namespace": ctx.kcp_namespace,
                         "labels": {names.LABEL_KYMA_NAME: ctx.kyma, names.LABEL_REMOTE_NAME: name,
                                    names.LABEL_REMOTE_NAMESPACE: "",
                                    names.LABEL_MODULE: names.MODULE_LABEL_VALUE}},
            "spec": spec}


def reconcile(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the SKR IpRange ``name``."""
    t = ctx.settings.t
    skr, kcp = ctx.skr, ctx.kcp
    obj = ctx.get(names.SKR_IPRANGE, name)
    if obj is None or ignored(obj):
        return Result.done()
    status = StatusWriter(skr, names.SKR_IPRANGE, obj)
    ctx.track(name, status)
    meta = obj["metadata"]
    deleting = bool(meta.get("deletionTimestamp"))
    spec_cidr = str((obj.get("spec") or {}).get("cidr") or "")

    ident = str(status.status.get("id") or "")
    if not ident:  # 1
        if deleting and names.FINALIZER not in (meta.get("finalizers") or []):
            return Result.done()
        ident = str((meta.get("labels") or {}).get(names.LABEL_SKR_ID) or uuid.uuid4())
        if (meta.get("labels") or {}).get(names.LABEL_SKR_ID) != ident:
            status.obj = skr.patch(names.SKR_IPRANGE, name, {"metadata": {"labels": {names.LABEL_SKR_ID: ident}}})
        status.patch(id=ident, state=names.STATE_PROCESSING)
        return Result.requeue(0)
    status_cidr = str(status.status.get("cidr") or "")
    if not deleting and spec_cidr and status_cidr and spec_cidr != status_cidr:  # 2
        status.exclusive(names.COND_ERROR, False, names.REASON_CIDR_CAN_NOT_BE_CHANGED,
                         "IpRange CIDR can not be changed", names.STATE_ERROR)
        return Result.done()
    if not deleting and spec_cidr and not status_cidr:  # 3
        failure = cidr_failure(spec_cidr)
        if failure is not None:
            status.fail(names.REASON_INVALID_CIDR, failure)
            return Result.done()
        status.patch(cidr=spec_cidr)
    everyone = ctx.objects(names.SKR_IPRANGE)
    if not deleting:
        winner = overlap_winner(obj, everyone)  # 4
        if winner is not None:
            status.fail(names.REASON_CIDR_OVERLAP, f"CIDR overlaps with {winner}")
            return Result.done()
        error = cond.find(status.conditions, names.COND_ERROR)  # 5
        if error is not None and error.get("reason") == names.REASON_CIDR_OVERLAP:
            status.set_conditions(cond.remove(status.conditions, names.COND_ERROR), names.STATE_PROCESSING)
            return Result.requeue(0)
    kcp_obj = kcp.get(names.KCP_IPRANGE, ident, ctx.kcp_namespace)  # 6
    if kcp_obj is None and not deleting:  # 7
        quota = ctx.settings.quota(ctx.kyma, names.IPRANGE_QUOTA_KEY)
        if quota_exceeded(obj, everyone, quota):
            status.exclusive(names.COND_QUOTA_EXCEEDED, True, names.REASON_QUOTA_EXCEEDED,
                             f"Maximum number of {quota} resources exceeded", names.STATE_ERROR)
            return Result.done()
        if cond.find(status.conditions, names.COND_QUOTA_EXCEEDED) is not None:
            status.set_conditions(cond.remove(status.conditions, names.COND_QUOTA_EXCEEDED), names.STATE_PROCESSING)
            return Result.requeue(0)
    if not deleting:
        if names.FINALIZER not in (meta.get("finalizers") or []):  # 8
            status.obj = add_finalizer(skr, names.SKR_IPRANGE, obj)
            return Result.requeue(0)
        if kcp_obj is None:  # 9
            kcp.create(names.KCP_IPRANGE, mirror(ctx, obj, ident))
            status.exclusive(names.COND_SUBMITTED, True, names.REASON_SUBMISSION_SUCCEEDED,
                             "Resource is submitted for provisioning", names.STATE_CREATING)
            return Result.requeue(t(0.1))
    else:  # 10
        return _delete(ctx, status, name, kcp_obj, ident)
    assert kcp_obj is not None
    projected = project_kcp_iprange(kcp_obj, status.conditions, cond.now_rfc3339())  # 11
    if projected.wait or projected.conditions is None:
        return Result.requeue(t(10))
    status.set_conditions(projected.conditions, derive_state(projected.conditions, status.state))
    return Result.done()


def _delete(ctx: SkrContext, status: StatusWriter, name: str, kcp_obj: dict[str, Any] | None, ident: str) -> Result:
    t = ctx.settings.t
    if names.FINALIZER not in (status.obj["metadata"].get("finalizers") or []):
        return Result.done()
    warning = cond.find(status.conditions, names.COND_WARNING)
    if not (warning and warning.get("reason") == names.REASON_DELETE_WHILE_USED) and \
            status.state not in (names.STATE_PROCESSING, names.STATE_DELETING):
        status.patch(state=names.STATE_PROCESSING)
    users = used_by(ctx.skr, names.SKR_IPRANGE_CONSUMERS, None, name, default_name="default")
    if users:
        refs = [r for found in users.values() for r in found]
        status.exclusive(names.COND_WARNING, True, names.REASON_DELETE_WHILE_USED,
                         f"Can not be deleted while used by: {go_list(refs)}", names.STATE_ERROR)
        return Result.requeue(t(10))
    if kcp_obj is not None:
        if not (kcp_obj.get("metadata") or {}).get("deletionTimestamp"):
            ctx.kcp.delete(names.KCP_IPRANGE, ident, ctx.kcp_namespace)
        status.set_conditions(cond.remove(status.conditions, names.COND_WARNING), names.STATE_DELETING)
        return Result.requeue(t(10))
    with contextlib.suppress(ResourceMissing):
        remove_finalizer(ctx.skr, names.SKR_IPRANGE, status.obj)
    return Result.done()
