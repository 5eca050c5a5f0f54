"""The ``cloud-nuke`` controller: deletes every KCP object of a scope whose runtime is gone (``pkg/kcp/nuke``).

Lists, in the Nuke's namespace, the objects of :data:`tasks.cloud.names.NUKED_KINDS` whose
``spec.scope.name`` is the nuked scope (kinds that are not served are skipped), deletes those not yet
being deleted, and tracks each in ``status.resources[]{kind, resourceType: KCP, objects{name: state}}``
(``Deleting``, then ``Deleted``). Ready when all are gone; a Ready Nuke is done for good. A list error is
state Error reason ``ErrorListingResources`` (requeue 300 s).
"""

from __future__ import annotations

from typing import Any

from kube import ApiError, ResourceMissing, client_for
from kube.clock import now_rfc3339
from kube.toolkit import StatusWriter, deleting
from tasks.cloud import names, settings
from workers.controller import Key, Result

__all__ = ["reconcile"]


def reconcile(key: Key) -> Result:
    """Reconcile the Nuke ``key``."""
    s = settings.current()
    kcp = client_for(key.cluster)
    nuke = kcp.get(names.NUKE, key.name, key.namespace)
    if nuke is None or deleting(nuke) or (nuke.get("status") or {}).get("state") == names.STATE_READY:
        return Result.done()  # a completed Nuke never acts again (a runtime re-created under the name is safe)
    scope_name = str(((nuke.get("spec") or {}).get("scope") or {}).get("name") or "")
    status = StatusWriter(kcp, names.NUKE, nuke)
    before = {r.get("kind"): dict(r.get("objects") or {}) for r in status.status.get("resources") or []}
    resources: list[dict[str, Any]] = []
    remaining = 0
    for res in names.NUKED_KINDS:
        try:
            found = kcp.list(res, key.namespace)
        except ResourceMissing:
            continue
        except ApiError as exc:
            status.fail(names.REASON_ERROR_LISTING_RESOURCES, f"Error listing {res.kind} resources: {exc.message}")
            return Result.requeue(s.t(300))
        objects = {name: "Deleted" for name in before.get(res.kind, {})}
        for obj in found:
            if str(((obj.get("spec") or {}).get("scope") or {}).get("name") or "") != scope_name:
                continue
            name = str(obj["metadata"]["name"])
            if not deleting(obj):
                kcp.delete(res, name, key.namespace)
            objects[name] = "Deleting"
            remaining += 1
        if objects:
            resources.append({"kind": res.kind, "resourceType": "KCP", "objects": objects})
    fields: dict[str, Any] = {"resources": resources}
    if not status.status.get("initializedOn"):
        fields["initializedOn"] = now_rfc3339()
    if remaining:
        status.patch(state=names.STATE_PROCESSING, **fields)
        return Result.requeue(s.t(1))
    status.ready(**fields)
    return Result.done()
