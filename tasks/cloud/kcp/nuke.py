"""The ``cloud-nuke`` controller: deletes every KCP object of a scope whose runtime is gone (``pkg/kcp/nuke``).

Lists, in the Nuke's namespace, the objects of the kinds declared with a place in Nuke's order
(:func:`tasks.cloud.registry.nuked`) whose
``spec.scope.name`` is the nuked scope (kinds that are not served are skipped), deletes those not yet
being deleted, and tracks each in ``status.resources[]{kind, resourceType: KCP, objects{name: state}}``
(``Deleting``, then ``Deleted``). Ready when all are gone; a Ready Nuke is done for good. A list error is
state Error reason ``ErrorListingResources`` (requeue 300 s).

While the Scope is there, the provider resources Nuke deletes directly (the runtime's NFS backups:
:func:`tasks.cloud.registry.provider_nuked` of the Scope's provider) are listed through the Scope's
credentials and deleted in the same turn (:mod:`.nuke_plan`); a refused listing is state Error with the
kind's reason (``ErrorListingGcpFilestoreBackups``), back after 10 s, as the original.
"""

from __future__ import annotations

from typing import Any

from kube import ApiError, ResourceMissing, client_for
from kube.clock import now_rfc3339
from kube.refusal import Refusal
from kube.toolkit import StatusWriter, deleting, execute
from tasks.cloud import names, registry, settings
from tasks.cloud.kcp.nuke_plan import plan
from workers.controller import Key, Result

__all__ = ["reconcile"]


def reconcile(key: Key) -> Result:
    """Reconcile the Nuke ``key``: list the kinds, plan (:func:`~.nuke_plan.plan`), delete, write status."""
    s = settings.current()
    kcp = client_for(key.cluster)
    nuke = kcp.get(names.NUKE, key.name, key.namespace)
    if nuke is None or deleting(nuke) or (nuke.get("status") or {}).get("state") == names.STATE_READY:
        return Result.done()  # a completed Nuke never acts again (a runtime re-created under the name is safe)
    found: dict[str, list[dict[str, Any]]] = {}
    nuked = registry.nuked()
    kinds = {res.kind: res for res in nuked}
    for res in nuked:
        try:
            found[res.kind] = kcp.list(res, key.namespace)
        except ResourceMissing:
            continue
        except ApiError as exc:
            StatusWriter(kcp, names.NUKE, nuke).fail(names.REASON_ERROR_LISTING_RESOURCES,
                                                     f"Error listing {res.kind} resources: {exc.message}")
            return Result.requeue(s.t(300))
    scope_name = str(((nuke.get("spec") or {}).get("scope") or {}).get("name") or "")
    scope = kcp.get(names.SCOPE, scope_name, key.namespace) if scope_name else None
    provider: dict[str, list[registry.ProviderObject]] = {}
    clients: dict[str, object] = {}
    for side in registry.provider_nuked(str(((scope or {}).get("spec") or {}).get("provider") or "")):
        try:
            clients[side.kind] = side.clients(scope or {}, s)
            provider[side.kind] = side.list(clients[side.kind], scope or {})
        except Refusal as exc:
            StatusWriter(kcp, names.NUKE, nuke).fail(side.list_failed, exc.failure.message)
            return Result.requeue(s.t(10))
    return execute(plan(nuke, found, s.t, now_rfc3339(), provider), kcp, names.NUKE, nuke, resources=kinds,
                   clients=clients).result
