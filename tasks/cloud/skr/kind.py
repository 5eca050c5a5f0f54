"""The SKR reconcile of every declared Cloud kind (:mod:`tasks.cloud.registry`), one turn of one object in
a connect: read → pure plan → :func:`kube.toolkit.execute` (the KCP writes go to the KCP client, provider
calls of a kind without a KCP mirror to its clients).

As cloud-manager's ``pkg/skr/<kind>`` reconcilers, each run by the connect's short-lived manager.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from informers.reader import Reader
from kube import Resource
from kube.clock import now_rfc3339
from kube.toolkit import Executed, Outcome, execute
from tasks.cloud import kind_metrics, settings
from tasks.cloud.kcp.common import ignored
from tasks.cloud.ownership import foreign, invalid_id
from tasks.cloud.registry import Kind
from tasks.cloud.skr.context import SkrContext
from workers.controller import Result

__all__ = ["carry_out", "mirror", "reconcile", "writes"]


def writes(outcome: Outcome) -> bool:
    """Whether carrying out ``outcome`` writes anything (a write or call, a status, an Event, a finalizer)."""
    return bool(outcome.writes or outcome.status is not None or outcome.event is not None
                or outcome.add_finalizer or outcome.remove_finalizer)


def carry_out(ctx: SkrContext, res: Resource, outcome: Outcome, obj: dict[str, Any], **options: Any) -> Executed:
    """``execute(outcome, ctx.skr, res, obj, **options)``; when anything was written (a write of any
    step of its chain, a status, an Event, a finalizer), or may have been (it raised), the snapshot of
    ``res`` and the connect's kept reads are dropped, so later turns read what it wrote. Raises what
    :func:`kube.toolkit.execute` raises."""
    made: list[Any] = []
    try:
        done = execute(outcome, ctx.skr, res, obj, written=lambda write, answer: made.append(write), **options)
    except Exception:
        ctx.forget(res)  # some of its writes may have been made
        raise
    if made or writes(outcome) or writes(done.outcome):
        ctx.forget(res)
    return done


def reconcile(ctx: SkrContext, namespace: str, name: str, *, kind: Kind, res: Resource) -> Result:
    """One turn of the SKR object ``namespace/name`` of ``kind`` (its resource ``res`` in this SKR): read,
    plan, execute; its state is tracked for SkrStatus. Raises ``kube.ApiError``."""
    side = kind.skr
    assert side is not None and side.read is not None and side.plan is not None, f"{kind.name} has no SKR plan"
    obj = ctx.get(res, name, namespace or None)
    if obj is None or ignored(obj):
        return Result.done()
    seen = side.read(ctx, res, obj)
    outcome = side.plan(seen, str(uuid.uuid4()), ctx.settings.t, now_rfc3339())
    clients: Any = side.clients(ctx) if side.clients is not None else {}
    done = carry_out(ctx, res, outcome, obj, clusters={"kcp": ctx.kcp}, clients=clients, scale=ctx.settings.t)
    ref = f"{namespace}/{name}" if namespace else name
    # requeues and time to Ready; its state counts with its SKR's, once per connect (connect._run)
    kind_metrics.record(kind_metrics.kind_label(res.kind, res.group), ref, obj, done, owner=False)
    ctx.track(ref, done.obj or obj)
    return done.result


def mirror(kcp: Reader, res: Resource, obj: Mapping[str, Any], kyma: str) -> dict[str, Any] | None:
    """The KCP mirror (of resource ``res``, in the KCP namespace) that the SKR object ``obj`` of runtime
    ``kyma`` names by its ``status.id``; ``None`` when it has no id, one that is no canonical UUID (never
    read), the mirror is gone or is not this object's (its owner labels: ownership before action, also for
    presentation such as ``up``'s summary)."""
    ident = str((obj.get("status") or {}).get("id") or "")
    if not ident or invalid_id(ident) is not None:
        return None
    found = kcp.get(res, ident, settings.current().kcp_namespace)
    meta = obj.get("metadata") or {}
    if foreign(found, kyma, str(meta.get("name") or ""), str(meta.get("namespace") or "")) is not None:
        return None
    return found
