"""The CloudResources module CR reconciler (``pkg/skr/cloudresources``): read → pure plan
(:mod:`.cloudresources_plan`, which states the rules: the group's CRDs deleted before the instance's
finalizer goes) → :func:`kube.toolkit.execute`."""

from __future__ import annotations

from typing import Any

from kube import Resource, ResourceMissing, resources
from kube.clock import now_rfc3339
from tasks.cloud import names
from tasks.cloud.kcp.common import ignored
from tasks.cloud.skr.cloudresources_plan import Seen, plan
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.kind import carry_out
from workers.controller import Result

__all__ = ["read", "reconcile"]

_OWN_CRD = f"{names.CLOUD_RESOURCES.plural}.{names.SKR_GROUP}"


def _group_kinds(ctx: SkrContext) -> list[tuple[str, Resource]]:
    out = []
    for crd in ctx.skr.list(resources.CRD):
        name = str(crd["metadata"]["name"])
        if not name.endswith(f".{names.SKR_GROUP}") or name == _OWN_CRD:
            continue
        spec = crd.get("spec") or {}
        version = next((v["name"] for v in spec.get("versions") or [] if v.get("served", True)), names.VERSION)
        out.append((name, Resource(names.SKR_GROUP, version, spec["names"]["plural"], spec["names"]["kind"],
                                   spec.get("scope", "Namespaced") == "Namespaced")))
    return out


def read(ctx: SkrContext, obj: dict[str, Any]) -> Seen:
    """What the plan needs; the group's CRDs and their objects only while the instance is deleting."""
    everyone = ctx.objects(names.CLOUD_RESOURCES)
    if not (obj.get("metadata") or {}).get("deletionTimestamp"):
        return Seen(obj, everyone)
    kinds = _group_kinds(ctx)
    in_use = []
    for _, res in kinds:
        try:
            if ctx.skr.list(res):
                in_use.append(res.kind)
        except ResourceMissing:
            continue
    return Seen(obj, everyone, [crd for crd, _ in kinds], in_use)


def reconcile(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the CloudResources ``namespace/name``: read, plan, apply."""
    obj = ctx.get(names.CLOUD_RESOURCES, name, namespace)
    if obj is None or ignored(obj):
        return Result.done()
    done = carry_out(ctx, names.CLOUD_RESOURCES, plan(read(ctx, obj), ctx.settings.t, now_rfc3339()), obj,
                     legacy_finalizers=names.LEGACY_FINALIZERS)
    ctx.track(f"{namespace}/{name}", done.obj or obj)
    return done.result
