"""The KCP controller of every declared Cloud kind (:mod:`tasks.cloud.registry`): read → plan → execute,
then the Scope's provider: its clients, its read, its pure plan, execute.

One reconcile of the KCP object ``key`` of a kind:

1. load it (gone, or carrying the ignore label: done);
2. the kind's provider-independent read and plan (:attr:`~tasks.cloud.registry.KcpSide.read`,
   :attr:`~tasks.cloud.registry.KcpSide.plan`: the Scope, the dependencies, the finalizer), carried out by
   :func:`kube.toolkit.execute`;
3. when that outcome hands the object on (:attr:`~kube.toolkit.Outcome.handoff` ``"reconcile"`` or
   ``"delete"``), the provider's turn on the object as written: the provider's clients and read (a refused
   one is the provider's ``read_failed``), its create or delete plan, carried out with those clients. A
   provider the kind does not support answers the original's ``<Kind> is not supported on provider <p>``
   (and lets a deleting object go: it made nothing).

Every reconcile's end is recorded per kind (:mod:`tasks.cloud.kind_metrics`: objects by state, time to
Ready, requeues). As cloud-manager's ``pkg/kcp/<kind>`` reconcilers with their ``pkg/kcp/provider/<type>/<kind>`` flows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kube.refusal import Refusal
from kube.toolkit import Outcome, execute
from tasks.cloud import kind_metrics, names, provider_metrics
from tasks.cloud.kcp.common import load
from tasks.cloud.registry import Kind, ProviderSide, Turn
from tasks.cloud.step import StepBuilder, gone
from workers.controller import Key, Result

log = structlog.get_logger("tasks.cloud.kcp")

__all__ = ["provider_turn", "reconcile"]

HANDOFFS = ("reconcile", "delete")


def reconcile(key: Key, *, kind: Kind) -> Result:
    """Reconcile the KCP object ``key`` of ``kind`` (see the module doc). Raises ``kube.ApiError``."""
    side = kind.kcp
    assert side is not None and side.read is not None and side.plan is not None, f"{kind.name} has no controller"
    s, kcp, obj = load(key, side.resource)
    if obj is None:
        return Result.done()
    label = kind_metrics.kind_label(side.resource.kind, side.resource.group)
    seen = side.read(kcp, obj, key.namespace)
    decided = side.plan(seen, s.t)
    done = execute(decided, kcp, side.resource, obj, legacy_finalizers=names.LEGACY_FINALIZERS)
    scope = getattr(seen, "scope", None)
    if decided.handoff not in HANDOFFS or done.obj is None or scope is None:
        kind_metrics.record(label, f"{key.namespace}/{key.name}", obj, done)
        return done.result
    turn = Turn(kube=kcp, obj=done.obj, scope=scope, settings=s, seen=seen)
    # the provider calls of this turn are counted with the Scope's region (tasks.cloud.provider_metrics)
    with provider_metrics.region_scope(str((scope.get("spec") or {}).get("region") or "")):
        outcome, clients = provider_turn(kind, turn, deleting=decided.handoff == "delete")
        done = execute(outcome, kcp, side.resource, done.obj, clients=clients, scale=s.t,
                       legacy_finalizers=names.LEGACY_FINALIZERS)
    kind_metrics.record(label, f"{key.namespace}/{key.name}", obj, done)
    return done.result


def provider_turn(kind: Kind, turn: Turn, deleting: bool, clients: Mapping[str, Any] | None = None
                  ) -> tuple[Outcome, Mapping[str, Any]]:
    """The provider's outcome for ``turn`` and the clients to carry it out with (reads made here;
    ``clients``: these instead of the provider's own, for tests)."""
    provider = kind.providers.get(turn.provider)
    if provider is None:
        return _unsupported(kind, turn, deleting), {}
    given = clients
    clients = {}
    try:
        clients = given if given is not None else provider.clients(turn)
        found = provider.read(clients, turn)
    except Refusal as exc:
        log.info("provider read refused", kind=kind.name, object=f"{turn.namespace}/{turn.name}",
                 provider=turn.provider, error=str(exc))
        return _read_failed(provider, exc, turn), clients
    return (provider.delete if deleting else provider.create)(found, turn), clients


def _read_failed(provider: ProviderSide, exc: Refusal, turn: Turn) -> Outcome:
    failure = exc.failure
    if provider.read_failed is not None:
        return provider.read_failed(failure, turn)
    if failure.retryable:
        return Outcome(requeue_after=turn.t(failure.delay if failure.delay is not None else 10.0))
    return Outcome(error=str(failure))


def _unsupported(kind: Kind, turn: Turn, deleting: bool) -> Outcome:
    if deleting:
        return gone()
    res = kind.kcp.resource.kind if kind.kcp is not None else kind.name
    return StepBuilder(turn.obj).fail(names.REASON_UNKNOWN, f"{res} is not supported on provider {turn.provider}")
