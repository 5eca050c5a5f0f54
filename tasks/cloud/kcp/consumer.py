"""The common shell of the KCP objects that live in a KCP IpRange (NfsInstance, RedisInstance): what
cloud-manager's ``pkg/kcp/nfsinstance`` and ``pkg/kcp/redisinstance`` do alike before the provider's
flow (:mod:`tasks.cloud.providers`).

1. load the object and its Scope (missing Scope: Error ``ScopeNoFound`` (sic) ``Scope <name> does not
   exist``, requeue 60 s; while deleting nothing can have been made: the finalizer goes);
2. the KCP IpRange ``spec.ipRange.name`` (same namespace): missing -> Error ``InvalidIpRangeReference``
   ``Referred IpRange <ns>/<name> does not exist``, forget; an unknown provider -> Error ``Unknown``;
   the IpRange not Ready yet -> come back after the kind's :attr:`ConsumerKind.wait_ready`;
3. the kind's :attr:`ConsumerKind.prepare` (NFS: ``copyStatusHostsToHost``), the finalizer;
4. the provider's turn (reconcile, or delete while deleting), whose Step is carried out here.

Deliberate difference: a deleting object whose IpRange is gone still reaches the provider's delete (the
original stops it with ``InvalidIpRangeReference`` for ever).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import kube.toolkit.conditions as cond
from kube import Resource
from kube.toolkit import StatusWriter, Step, deleting, remove_finalizer
from tasks.cloud import names, providers
from tasks.cloud.kcp.common import carry_out_step, finalized, load
from tasks.cloud.providers import NfsInstanceContext, Provider, RedisInstanceContext
from workers.controller import Key, Result

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "ConsumerKind", "reconcile"]

REASON_INVALID_IPRANGE_REFERENCE = "InvalidIpRangeReference"

C = TypeVar("C", NfsInstanceContext, RedisInstanceContext)


@dataclass(frozen=True)
class ConsumerKind(Generic[C]):
    """What differs between the consumers.

    Attributes:
        res: the KCP kind.
        context: the provider's context class (built with ``kube, obj, scope, settings, iprange``).
        turn: the provider's reconcile (``p.reconcile_nfsinstance``).
        delete: the provider's delete (``p.delete_nfsinstance``).
        wait_ready: seconds (scaled by ``settings.t``) to come back while the IpRange is not Ready.
        prepare: a status write before the finalizer (``None``: none).
    """

    res: Resource
    context: type[C]
    turn: Callable[[Provider, C], Step]
    delete: Callable[[Provider, C], Step]
    wait_ready: float
    prepare: Callable[[StatusWriter], None] | None = None


def reconcile(key: Key, kind: ConsumerKind[C]) -> Result:
    """Reconcile the KCP object ``key`` of ``kind`` (see the module doc). Raises ``kube.ApiError``."""
    s, kcp, obj = load(key, kind.res)
    if obj is None:
        return Result.done()
    status = StatusWriter(kcp, kind.res, obj)
    spec = obj.get("spec") or {}
    scope_name = str((spec.get("scope") or {}).get("name") or "")
    scope = kcp.get(names.SCOPE, scope_name, key.namespace)
    if scope is None:
        if deleting(obj):
            remove_finalizer(kcp, kind.res, obj, names.FINALIZER, names.LEGACY_FINALIZERS)
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
        if not cond.is_true((iprange.get("status") or {}).get("conditions") or [], names.COND_READY):
            return Result.requeue(s.t(kind.wait_ready))
        if kind.prepare is not None:
            kind.prepare(status)
        status.obj = finalized(kcp, kind.res, status.obj)
    ctx = kind.context(kube=kcp, obj=status.obj, scope=scope, settings=s, iprange=iprange)
    if provider is None:  # deleting: nothing can have been made
        remove_finalizer(kcp, kind.res, status.obj, names.FINALIZER, names.LEGACY_FINALIZERS)
        return Result.done()
    step = kind.delete(provider, ctx) if deleting(status.obj) else kind.turn(provider, ctx)
    return carry_out_step(kcp, kind.res, status.obj, step)
