"""The CloudResources module CR reconciler (``pkg/skr/cloudresources``).

Only one instance is served: when none has ``status.served=True`` the reconciled one becomes served;
the others get ``served=False``, state ``Warning`` and an Error condition ``OtherIsServed``. The served
one gets the finalizer and state ``Ready``. Deleting it is refused while any object of another
``cloud-resources.kyma-project.io`` kind exists (state ``Warning``, reason ``ResourcesExist``,
``Can not deactivate module while cloud resources exist: [kinds]``, requeue 10 s); otherwise every CRD
of the group but CloudResources' own is deleted and the finalizer released.
"""

from __future__ import annotations

from kube import Resource, ResourceMissing, resources
from kube.toolkit import StatusWriter, add_finalizer, remove_finalizer
from tasks.cloud import names
from tasks.cloud.kcp.common import go_list, ignored
from tasks.cloud.skr.context import SkrContext
from workers.controller import Result

__all__ = ["reconcile"]

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


def reconcile(ctx: SkrContext, namespace: str, name: str) -> Result:
    """One turn of the CloudResources ``namespace/name``."""
    skr = ctx.skr
    obj = ctx.get(names.CLOUD_RESOURCES, name, namespace)
    if obj is None or ignored(obj):
        return Result.done()
    status = StatusWriter(skr, names.CLOUD_RESOURCES, obj)
    ctx.track(f"{namespace}/{name}", status)
    everyone = ctx.objects(names.CLOUD_RESOURCES)
    served = [o for o in everyone if (o.get("status") or {}).get("served") == "True"]
    if not served:
        status.patch(served="True")
        return Result.requeue(0)
    if status.status.get("served") != "True":
        other = served[0]["metadata"]
        status.exclusive(names.COND_ERROR, True, names.REASON_OTHER_IS_SERVED,
                         f"Only one instance of CloudResources is allowed: {other.get('namespace')}/"
                         f"{other.get('name')} is served", names.STATE_WARNING, served="False")
        return Result.done()
    if not (obj["metadata"].get("deletionTimestamp")):
        status.obj = add_finalizer(skr, names.CLOUD_RESOURCES, obj, names.FINALIZER)
        status.ready()
        return Result.done()
    kinds = _group_kinds(ctx)
    existing = []
    for _, res in kinds:
        try:
            if skr.list(res):
                existing.append(res.kind)
        except ResourceMissing:
            continue
    if existing:
        status.exclusive(names.COND_WARNING, True, names.REASON_RESOURCES_EXIST,
                         f"Can not deactivate module while cloud resources exist: {go_list(sorted(existing))}",
                         names.STATE_WARNING)
        return Result.requeue(ctx.settings.t(10))
    for crd_name, _ in kinds:
        skr.delete(resources.CRD, crd_name)
    remove_finalizer(skr, names.CLOUD_RESOURCES, status.obj, names.FINALIZER, names.LEGACY_FINALIZERS)
    return Result.done()
