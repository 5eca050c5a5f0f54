"""The ``cloud-redisinstance`` controller: KCP RedisInstances into the providers' managed Redis
(``pkg/kcp/redisinstance``).

The common part, in the original's order, then the provider's flow (:mod:`tasks.cloud.providers`):

1. load the RedisInstance and its Scope (missing Scope: Error ``ScopeNoFound`` (sic) ``Scope <name>
   does not exist``, requeue 60 s; while deleting there is nothing to remove);
2. the referred KCP IpRange (``spec.ipRange.name``, same namespace): missing -> Error
   ``InvalidIpRangeReference`` ``Referred IpRange <ns>/<name> does not exist`` (forget); not Ready yet
   -> wait 10 s (the provider needs its subnets / range);
3. the finalizer; the provider's turn (read → pure plan → provider calls) whose
   :class:`~kube.toolkit.Step` is carried out here: ``reconcile_redisinstance`` or, deleting,
   ``delete_redisinstance`` (its ``remove_finalizer`` once every cloud piece is gone).
"""

from __future__ import annotations

import kube.toolkit.conditions as cond
from kube.toolkit import StatusWriter, deleting, remove_finalizer
from tasks.cloud import names, providers
from tasks.cloud.kcp.common import carry_out_step, finalized, load
from tasks.cloud.providers import RedisInstanceContext
from workers.controller import Key, Result

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "reconcile"]

REASON_INVALID_IPRANGE_REFERENCE = "InvalidIpRangeReference"


def reconcile(key: Key) -> Result:
    """Reconcile the KCP RedisInstance ``key``."""
    s, kcp, obj = load(key, names.REDIS_INSTANCE)
    if obj is None:
        return Result.done()
    status = StatusWriter(kcp, names.REDIS_INSTANCE, obj)
    spec = obj.get("spec") or {}
    scope_name = str((spec.get("scope") or {}).get("name") or "")
    scope = kcp.get(names.SCOPE, scope_name, key.namespace)
    if scope is None:
        if deleting(obj):
            remove_finalizer(kcp, names.REDIS_INSTANCE, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
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
        if provider is None:
            status.fail(names.REASON_UNKNOWN, f"Unknown provider {(scope.get('spec') or {}).get('provider')}")
            return Result.done()
        if not cond.is_true((iprange.get("status") or {}).get("conditions"), names.COND_READY):
            return Result.requeue(s.t(10))
        obj = finalized(kcp, names.REDIS_INSTANCE, obj)
    ctx = RedisInstanceContext(kube=kcp, obj=obj, scope=scope, settings=s, iprange=iprange)
    if deleting(obj):
        if provider is None:
            remove_finalizer(kcp, names.REDIS_INSTANCE, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
            return Result.done()
        return carry_out_step(kcp, names.REDIS_INSTANCE, obj, provider.delete_redisinstance(ctx))
    assert provider is not None
    return carry_out_step(kcp, names.REDIS_INSTANCE, obj, provider.reconcile_redisinstance(ctx))
