"""The SKR IpRange reconciler, run once per connect per IpRange: read → :func:`~.iprange_plan.plan` → apply.

The decisions (the original's eleven steps, reasons and messages) are the pure plan in
:mod:`tasks.cloud.skr.iprange_plan`; this module reads what the plan needs (the object, the connect's
IpRanges, the KCP mirror, the consumers while deleting) and makes the plan's writes in one order:
the id label, the finalizer, the KCP mirror (create / delete), the status and Event, the finalizer's
removal last. One turn creates the mirror of a new IpRange.

Deliberate difference: a quota-exceeded IpRange is checked again at the next connect, not every
300 ms inside the connect's window (which would hold a worker for the whole window).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from kube.clock import now_rfc3339
from kube.toolkit import add_finalizer, execute
from tasks.cloud import names, registry
from tasks.cloud.kcp.common import ignored, used_by
from tasks.cloud.ownership import invalid_id
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.iprange_plan import Seen, SkrPlan, identity, plan
from tasks.cloud.skr.iprange_plan import mirror as project
from workers.controller import Result

__all__ = ["apply", "mirror", "read", "reconcile"]


def mirror(ctx: SkrContext, obj: dict[str, Any], kcp_name: str) -> dict[str, Any]:
    """The KCP IpRange projected from the SKR IpRange ``obj`` (name = its ``status.id``)."""
    return project(obj, kcp_name, ctx.kyma, ctx.provider, ctx.kcp_namespace)


def read(ctx: SkrContext, obj: dict[str, Any]) -> Seen:
    """What the plan needs: the connect's IpRanges, the KCP mirror named by the object's id (none
    without an id or for an id that is not a UUID: the plan refuses it), the consumers (only while
    deleting). Raises ``kube.ApiError``."""
    name = str(obj["metadata"]["name"])
    ident = identity(obj)
    kcp_obj = None
    if ident and invalid_id(ident) is None:  # ownership before action: never a path from an unchecked id
        kcp_obj = ctx.kcp.get(names.KCP_IPRANGE, ident, ctx.kcp_namespace)
    users: list[str] = []
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        found = used_by(ctx.skr, registry.iprange_consumers(skr=True), None, name, default_name="default")
        users = [ref for refs in found.values() for ref in refs]
    return Seen(obj=obj, everyone=ctx.objects(names.SKR_IPRANGE), kcp=kcp_obj, kyma=ctx.kyma,
                provider=ctx.provider, kcp_namespace=ctx.kcp_namespace,
                quota=ctx.quota(names.SKR_IPRANGE), users=users)


def apply(ctx: SkrContext, obj: dict[str, Any], decided: SkrPlan) -> dict[str, Any] | None:
    """Make ``decided``'s writes in order (id label, finalizer, KCP mirror, status and Event,
    finalizer removal). Returns the SKR object as last written (``None`` once it is gone). Raises
    ``kube.ApiError``."""
    name = str(obj["metadata"]["name"])
    current = obj
    if decided.label_id is not None:
        labels = {names.LABEL_SKR_ID: decided.label_id}
        current = ctx.skr.patch(names.SKR_IPRANGE, name, {"metadata": {"labels": labels}})
    step = decided.step
    if step.add_finalizer:
        current = add_finalizer(ctx.skr, names.SKR_IPRANGE, current, step.add_finalizer)
    if decided.create is not None:
        ctx.kcp.create(names.KCP_IPRANGE, decided.create)
    if decided.delete is not None:
        ctx.kcp.delete(names.KCP_IPRANGE, decided.delete, ctx.kcp_namespace)
    return execute(replace(step, add_finalizer=None), ctx.skr, names.SKR_IPRANGE, current).obj


def reconcile(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the SKR IpRange ``name``: read, plan, apply."""
    obj = ctx.get(names.SKR_IPRANGE, name)
    if obj is None or ignored(obj):
        return Result.done()
    decided = plan(read(ctx, obj), str(uuid.uuid4()), ctx.settings.t, now_rfc3339())
    written = apply(ctx, obj, decided)
    ctx.track(name, written or obj)
    return decided.step.as_result()
