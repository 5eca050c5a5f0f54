"""The SKR Redis instance reconcilers (AwsRedisInstance, GcpRedisInstance, AzureRedisInstance), run once
per connect per object: read → :func:`~.redisinstance_plan.plan` → apply.

The decisions are the pure plan in :mod:`tasks.cloud.skr.redisinstance_plan`; this module reads what
it needs (the object; its IpRange through :mod:`tasks.cloud.skr.defaultiprange`, which creates the
default IpRange when missing and gives a not-Ready IpRange its turn; the KCP RedisInstance named by
its id: never for an id that is not a UUID; the auth Secret) and makes the plan's writes in one
order: the id label, the finalizer, the KCP mirror (create / patch / delete), the auth Secret, then
the status and Event and the finalizer's removal. Only the kind of the SKR's provider is reconciled
(its CRD is the only one installed). As cloud-manager's ``pkg/skr/{aws,gcp,azure}redisinstance``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from kube import resources
from kube.clock import now_rfc3339
from kube.toolkit import StatusWriter, add_finalizer, execute
from kube.toolkit.finalizers import remove_finalizer
from tasks.cloud import names
from tasks.cloud.kcp.common import ignored
from tasks.cloud.ownership import invalid_id
from tasks.cloud.skr import defaultiprange
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.redisinstance_plan import KINDS, Seen, SkrPlan, identity, plan, secret_name
from workers.controller import Result

__all__ = ["apply", "read", "reconcile"]


def read(ctx: SkrContext, obj: dict[str, Any]) -> Seen:
    """What the plan needs (the KCP object only for a UUID id). Raises ``kube.ApiError``."""
    ident = identity(obj)
    kcp_obj = None
    if ident and invalid_id(ident) is None:  # ownership before action: never a path from an unchecked id
        kcp_obj = ctx.kcp.get(names.REDIS_INSTANCE, ident, ctx.kcp_namespace)
    namespace = str(obj["metadata"].get("namespace") or "")
    secret = ctx.skr.get(resources.SECRET, secret_name(obj), namespace)
    return Seen(obj=obj, provider=ctx.provider, kyma=ctx.kyma, kcp_namespace=ctx.kcp_namespace,
                iprange=defaultiprange.resolve(ctx, obj), kcp=kcp_obj, secret=secret,
                overrides=ctx.settings.redis_instance_tier_machine_types)


def apply(ctx: SkrContext, obj: dict[str, Any], decided: SkrPlan) -> dict[str, Any] | None:
    """Make ``decided``'s writes in order. Returns the SKR object as last written (``None`` once gone).
    Raises ``kube.ApiError``."""
    res = KINDS[ctx.provider]
    name = str(obj["metadata"]["name"])
    namespace = str(obj["metadata"].get("namespace") or "")
    current = obj
    if decided.label_id is not None:
        current = ctx.skr.patch(res, name, {"metadata": {"labels": {names.LABEL_SKR_ID: decided.label_id}}},
                                namespace)
    step = decided.step
    if step.add_finalizer:
        current = add_finalizer(ctx.skr, res, current, step.add_finalizer)
    if decided.create is not None:
        ctx.kcp.create(names.REDIS_INSTANCE, decided.create)
    if decided.patch is not None:
        ctx.kcp.patch(names.REDIS_INSTANCE, str(identity(current)), decided.patch, ctx.kcp_namespace)
    if decided.delete is not None:
        ctx.kcp.delete(names.REDIS_INSTANCE, decided.delete, ctx.kcp_namespace)
    if decided.secret_release is not None:
        found = ctx.skr.get(resources.SECRET, decided.secret_release, namespace)
        if found is not None:
            remove_finalizer(ctx.skr, resources.SECRET, found, names.FINALIZER)
    if decided.secret_delete is not None:
        ctx.skr.delete(resources.SECRET, decided.secret_delete, namespace)
    if decided.secret_create is not None:
        ctx.skr.create(resources.SECRET, decided.secret_create)
    if decided.secret_update is not None:
        wanted = decided.secret_update
        found = ctx.skr.get(resources.SECRET, wanted["metadata"]["name"], namespace)
        if found is not None:
            meta = {**found["metadata"], "labels": wanted["metadata"]["labels"],
                    "annotations": wanted["metadata"].get("annotations") or {}}
            ctx.skr.replace(resources.SECRET, {**found, "metadata": meta, "data": wanted["data"]})
    return execute(replace(step, add_finalizer=None), ctx.skr, res, current).obj


def reconcile(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the SKR Redis instance ``namespace/name`` of the SKR's provider: read, plan, apply."""
    res = KINDS.get(ctx.provider)
    if res is None:
        return Result.done()
    obj = ctx.get(res, name, namespace)
    if obj is None or ignored(obj):
        return Result.done()
    decided = plan(read(ctx, obj), str(uuid.uuid4()), ctx.settings.t, now_rfc3339())
    written = apply(ctx, obj, decided)
    ctx.track(f"{namespace}/{name}", StatusWriter(ctx.skr, res, written or obj))
    return decided.step.as_result()
