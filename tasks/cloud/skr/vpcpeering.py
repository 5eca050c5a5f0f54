"""The SKR VPC peering reconcilers (AwsVpcPeering, GcpVpcPeering, AzureVpcPeering), run once per connect
per object: read → :func:`~.vpcpeering_plan.plan` → apply.

The decisions are the pure plan in :mod:`tasks.cloud.skr.vpcpeering_plan`; this module reads what it
needs (the object, the connect's peerings of the kind, the KCP VpcPeering and remote Network named by
the object's id: never for an id that is not a UUID) and makes the plan's writes in one order: the id
label, the finalizer, the KCP objects (create / delete), the status and Event, the finalizer's removal.
Only the kind of the SKR's provider is reconciled (its CRD is the only one installed).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from kube.clock import now_rfc3339
from kube.toolkit import add_finalizer, execute
from tasks.cloud import names
from tasks.cloud.kcp.common import ignored
from tasks.cloud.ownership import invalid_id
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.vpcpeering_plan import KINDS, Seen, SkrPlan, identity, plan
from workers.controller import Result

__all__ = ["apply", "read", "reconcile"]


def read(ctx: SkrContext, obj: dict[str, Any]) -> Seen:
    """What the plan needs (the KCP objects only for a UUID id). Raises ``kube.ApiError``."""
    res = KINDS[ctx.provider]
    ident = identity(obj)
    peering = network = None
    if ident and invalid_id(ident) is None:  # ownership before action: never a path from an unchecked id
        peering = ctx.kcp.get(names.VPC_PEERING, ident, ctx.kcp_namespace)
        network = ctx.kcp.get(names.NETWORK, ident, ctx.kcp_namespace)
    return Seen(provider=ctx.provider, obj=obj, kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace,
                peering=peering, network=network, everyone=ctx.objects(res),
                quota=ctx.settings.quota(ctx.kyma, names.quota_key(res)))


def apply(ctx: SkrContext, obj: dict[str, Any], decided: SkrPlan) -> dict[str, Any] | None:
    """Make ``decided``'s writes in order. Returns the SKR object as last written (``None`` once gone).
    Raises ``kube.ApiError``."""
    res = KINDS[ctx.provider]
    name = str(obj["metadata"]["name"])
    current = obj
    if decided.label_id is not None:
        current = ctx.skr.patch(res, name, {"metadata": {"labels": {names.LABEL_SKR_ID: decided.label_id}}})
    step = decided.step
    if step.add_finalizer:
        current = add_finalizer(ctx.skr, res, current, step.add_finalizer)
    for kind, body in decided.create:
        ctx.kcp.create(kind, body)
    for kind, kcp_name in decided.delete:
        ctx.kcp.delete(kind, kcp_name, ctx.kcp_namespace)
    return execute(replace(step, add_finalizer=None), ctx.skr, res, current).obj


def reconcile(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the SKR peering ``name`` of the SKR's provider: read, plan, apply."""
    res = KINDS.get(ctx.provider)
    if res is None:
        return Result.done()
    obj = ctx.get(res, name)
    if obj is None or ignored(obj):
        return Result.done()
    decided = plan(read(ctx, obj), str(uuid.uuid4()), ctx.settings.t, now_rfc3339())
    written = apply(ctx, obj, decided)
    ctx.track(name, written or obj)
    return decided.step.as_result()
