"""The ``cloud-nfsinstance`` controller: KCP NfsInstances into the provider's file service (``pkg/kcp/nfsinstance``).

The common part, then the provider's flow (:mod:`tasks.cloud.providers`, ``reconcile_nfsinstance`` /
``delete_nfsinstance``):

1. load the NfsInstance and its Scope (missing Scope: Error ``ScopeNoFound`` (sic) ``Scope <name> does
   not exist``, requeue 60 s; while deleting nothing can have been made: the finalizer goes);
2. the KCP IpRange ``spec.ipRange.name`` (same namespace): missing -> Error ``InvalidIpRangeReference``
   ``Referred IpRange <ns>/<name> does not exist``, forget; not Ready yet -> come back (5 s);
3. ``copyStatusHostsToHost``: ``status.host`` follows ``status.hosts[0]``; the finalizer;
4. the provider's turn, whose Step is carried out here.

Deliberate difference: a deleting NfsInstance whose IpRange is gone still reaches the provider's delete
(the original stops it with ``InvalidIpRangeReference`` for ever).
"""

from __future__ import annotations

import kube.toolkit.conditions as cond
from kube.toolkit import StatusWriter, deleting, remove_finalizer
from tasks.cloud import names, providers
from tasks.cloud.kcp.common import carry_out_step, finalized, load
from tasks.cloud.providers import NfsInstanceContext
from workers.controller import Key, Result

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "reconcile"]

REASON_INVALID_IPRANGE_REFERENCE = "InvalidIpRangeReference"


def reconcile(key: Key) -> Result:
    """Reconcile the KCP NfsInstance ``key``."""
    s, kcp, obj = load(key, names.NFS_INSTANCE)
    if obj is None:
        return Result.done()
    status = StatusWriter(kcp, names.NFS_INSTANCE, obj)
    spec = obj.get("spec") or {}
    scope_name = str((spec.get("scope") or {}).get("name") or "")
    scope = kcp.get(names.SCOPE, scope_name, key.namespace)
    if scope is None:
        if deleting(obj):
            remove_finalizer(kcp, names.NFS_INSTANCE, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
            return Result.done()
        status.fail(names.REASON_SCOPE_NOT_FOUND, f"Scope {scope_name} does not exist")
        return Result.requeue(s.t(60))
    provider = providers.get(str((scope.get("spec") or {}).get("provider") or ""))
    iprange_name = str((spec.get("ipRange") or {}).get("name") or "")
    iprange = kcp.get(names.KCP_IPRANGE, iprange_name, key.namespace) if iprange_name else None
    if not deleting(obj):
        if iprange is None:
            status.fail(REASON_INVALID_IPRANGE_REFERENCE,
                        f"Referred IpRange {key.namespace}/{iprange_name} does not exist")
            return Result.done()
        if not cond.is_true((iprange.get("status") or {}).get("conditions") or [], names.COND_READY):
            return Result.requeue(s.t(5))
        hosts = list((obj.get("status") or {}).get("hosts") or [])
        if hosts and (obj.get("status") or {}).get("host") != hosts[0]:
            status.patch(host=str(hosts[0]))
        obj = finalized(kcp, names.NFS_INSTANCE, status.obj)
        status.obj = obj
        if provider is None:
            status.fail(names.REASON_UNKNOWN, f"Unknown provider {(scope.get('spec') or {}).get('provider')}")
            return Result.done()
    ctx = NfsInstanceContext(kube=kcp, obj=status.obj, scope=scope, settings=s, iprange=iprange)
    if deleting(obj):
        if provider is None:
            remove_finalizer(kcp, names.NFS_INSTANCE, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
            return Result.done()
        return carry_out_step(kcp, names.NFS_INSTANCE, status.obj, provider.delete_nfsinstance(ctx))
    assert provider is not None
    return carry_out_step(kcp, names.NFS_INSTANCE, status.obj, provider.reconcile_nfsinstance(ctx))
