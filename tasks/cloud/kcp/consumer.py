"""The common shell of the KCP objects that live in a KCP IpRange (NfsInstance, RedisInstance): what
cloud-manager's ``pkg/kcp/nfsinstance`` and ``pkg/kcp/redisinstance`` do alike before the provider's
flow (:mod:`tasks.cloud.providers`): read (the object, its Scope, its KCP IpRange) →
:func:`~.consumer_plan.plan` (the Scope, the IpRange Ready, the kind's ``prepare`` fields, the finalizer)
→ apply → the provider's turn (reconcile, or delete while deleting), whose Outcome is carried out here.

Deliberate difference: a deleting object whose IpRange is gone still reaches the provider's delete (the
original stops it with ``InvalidIpRangeReference`` for ever).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kube import Kube, Resource
from kube.toolkit import Outcome, execute
from tasks.cloud import names, providers
from tasks.cloud.kcp.common import carry_out_step, load
from tasks.cloud.kcp.consumer_plan import REASON_INVALID_IPRANGE_REFERENCE, Seen, iprange_name, plan
from tasks.cloud.kcp.iprange_plan import scope_name
from tasks.cloud.providers import NfsInstanceContext, Provider
from workers.controller import Key, Result

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "ConsumerKind", "read", "reconcile"]

C = TypeVar("C", bound=NfsInstanceContext)


@dataclass(frozen=True)
class ConsumerKind(Generic[C]):
    """What differs between the consumers.

    Attributes:
        res: the KCP kind.
        context: the provider's context class (built with ``kube, obj, scope, settings, iprange``).
        turn: the provider's reconcile (``p.reconcile_nfsinstance``).
        delete: the provider's delete (``p.delete_nfsinstance``).
        wait_ready: seconds (scaled by ``settings.t``) to come back while the IpRange is not Ready.
        prepare: status fields to write before the finalizer, from the object as read (pure; ``None``:
            none).
    """

    res: Resource
    context: type[C]
    turn: Callable[[Provider, C], Outcome]
    delete: Callable[[Provider, C], Outcome]
    wait_ready: float
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope, whether its provider is known and the KCP IpRange. Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace)
    if scope is None:
        return Seen(obj, None)
    known = providers.get(str((scope.get("spec") or {}).get("provider") or "")) is not None
    name = iprange_name(obj)
    iprange = kcp.get(names.KCP_IPRANGE, name, namespace) if name else None
    return Seen(obj, scope, known, iprange)


def reconcile(key: Key, kind: ConsumerKind[C]) -> Result:
    """Reconcile the KCP object ``key`` of ``kind``: read → :func:`~.consumer_plan.plan` → apply (see the
    module doc). Raises ``kube.ApiError``."""
    s, kcp, obj = load(key, kind.res)
    if obj is None:
        return Result.done()
    seen = read(kcp, obj, key.namespace)
    decided = plan(seen, s.t, kind.wait_ready, kind.prepare)
    current = execute(decided, kcp, kind.res, obj, legacy_finalizers=names.LEGACY_FINALIZERS).obj
    provider = providers.get(str(((seen.scope or {}).get("spec") or {}).get("provider") or ""))
    if not decided.handoff or provider is None or seen.scope is None:
        return decided.as_result()
    ctx = kind.context(kube=kcp, obj=current or obj, scope=seen.scope, settings=s, iprange=seen.iprange)
    step = kind.delete(provider, ctx) if decided.handoff == "delete" else kind.turn(provider, ctx)
    return carry_out_step(kcp, kind.res, current or obj, step)
