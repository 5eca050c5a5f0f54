"""Timed SKR objects: the ``cloud-skr-object`` controller, whose key names one SKR object of a kind
declared ``timed`` (:attr:`tasks.cloud.registry.SkrSide.timed`), reconciled at the time it asked for.

SKR objects are reconciled inside a connect, and a requeue past the connect's window waits for the next
connect. A timed kind's object (a backup schedule, issue 28: "a schedule is a key requeued at its next run
time: no sleeping worker, no beat entry per object") is also a workqueue key of its own:

- the connect, for each object of a timed kind whose turn asked to come back later, ``add_after`` s its
  key (:func:`schedule`; the workqueue keeps one key per object, the earliest due time wins);
- the key ``local/<kyma>/<kind>/<namespace>/<name>`` (:func:`key_of`; its name part is quoted by the
  workqueue) is parsed and validated (:func:`parse`: the kind declared and timed, the names Kubernetes
  names, bounded: they come from a customer's cluster); its reconcile (:func:`reconcile`) drops it when the
  SKR is no longer active, its Scope is gone, its provider has no such kind or the plan is ``trial``; else
  it opens the SKR's short-lived client as a connect does (``kcp-system/kubeconfig-<kyma>``), runs that one
  object's turn (:func:`tasks.cloud.skr.kind.reconcile` through
  :func:`~tasks.cloud.skr.context.run_object`) and returns its result: a requeue-after puts the key back at
  the time asked (the next run time), done (the object is gone, or waits for nothing) drops it.

Bounded: one key per object, objects per kind and SKR bounded by the kind's quota (an object over it asks
for no requeue). Failures (SKR unreachable) back off per key up to 5 minutes; the next connect schedules
the key again anyway.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import redis
import structlog

from kube import ApiError, ResourceMissing, client_for, clusters
from kube.kubeconfig import KubeconfigError
from kube.toolkit.metrics import counter
from tasks.cloud import names, reads, registry, settings, sweep
from tasks.cloud.skr import kind
from tasks.cloud.skr.context import SkrContext, run_object
from tasks.cloud.validate import DNS_LABEL, DNS_SUBDOMAIN
from workers.controller import LOCAL_CLUSTER, Key, Result, ResultKind
from workers.workqueue import current as workqueue

log = structlog.get_logger("tasks.cloud.skr")

__all__ = ["OBJECT", "Target", "key_of", "parse", "reconcile", "schedule"]

#: The controller's name (queue ``cloud-skr``; registered in :mod:`tasks.cloud.controller`).
OBJECT = "cloud-skr-object"

RUNS = counter("reconcilery_cloud_skr_timed_total",
               "Reconciles of timed SKR object keys by result (requeued, done, dropped, failed).", ["result"])
SCHEDULED = counter("reconcilery_cloud_skr_timed_scheduled_total",
                    "Timed SKR object keys a connect scheduled (add_after).", ["kind"])

_KIND_NAME = re.compile(r"[a-z0-9]{1,63}")


@dataclass(frozen=True)
class Target:
    """One timed SKR object: the runtime, the declared kind, the object's namespace (``""``: cluster
    scoped) and name."""

    kyma: str
    kind: registry.Kind
    namespace: str
    name: str


def key_of(kyma: str, kind_name: str, namespace: str, name: str) -> Key:
    """The workqueue key of one SKR object: ``local/<kyma>/<kind>/<namespace>/<name>``."""
    return Key(LOCAL_CLUSTER, kyma, f"{kind_name}/{namespace}/{name}")


def parse(key: Key) -> Target | str:
    """The :class:`Target` a key names, or why it names none (a key no connect made)."""
    if key.cluster != LOCAL_CLUSTER:
        return f"not a KCP key: cluster {key.cluster[:64]!r}"
    if len(key.namespace) > 253 or not DNS_SUBDOMAIN.fullmatch(key.namespace):
        return "the runtime is not a Kubernetes name"
    parts = key.name.split("/")
    if len(parts) != 3 or len(key.name) > 400:
        return "expected <kind>/<namespace>/<name>"
    kind_name, namespace, name = parts
    if not _KIND_NAME.fullmatch(kind_name):
        return "the kind is not a kind name"
    try:
        declared = registry.get(kind_name)
    except KeyError:
        return f"unknown kind {kind_name!r}"
    if declared.skr is None or not declared.skr.timed or declared.skr.plan is None:
        return f"kind {kind_name!r} is not timed"
    if namespace and not DNS_LABEL.fullmatch(namespace):
        return "the namespace is not a Kubernetes name"
    if len(name) > 253 or not DNS_SUBDOMAIN.fullmatch(name):
        return "the name is not a Kubernetes name"
    return Target(key.namespace, declared, namespace, name)


def schedule(kyma: str, kind_name: str, later: Sequence[tuple[str, str, float]]) -> None:
    """``add_after`` the keys of the objects ``(namespace, name, seconds)`` of ``kind_name`` in the SKR of
    ``kyma`` (one round trip per batch; an earlier due time already set wins). A Redis failure is logged:
    the next connect schedules them again."""
    if not later:
        return
    items = [(OBJECT, key_of(kyma, kind_name, ns, name), max(0.0, seconds)) for ns, name, seconds in later]
    try:
        workqueue().add_after_batch(items)
    except (redis.RedisError, OSError) as exc:  # the connect's work is done; the keys come again next connect
        log.warning("timed keys not scheduled", kyma=kyma, kind=kind_name, keys=len(items), error=str(exc))
        return
    SCHEDULED.labels(kind_name).inc(len(items))


def reconcile(key: Key) -> Result:
    """The controller's reconcile (see the module doc)."""
    target = parse(key)
    if isinstance(target, str):
        RUNS.labels("dropped").inc()
        log.warning("timed key dropped", key=str(key)[:600], reason=target)
        return Result.terminal(f"not a timed SKR object key: {target}")
    s = settings.current()
    if not sweep.rotation(s).is_active(target.kyma):
        RUNS.labels("dropped").inc()
        return Result.done()
    kcp = client_for(key.cluster)
    scope = reads.kcp_reader(kcp).get(names.SCOPE, target.kyma, s.kcp_namespace)  # the informers' (tasks.cloud.reads)
    side = target.kind.skr
    assert side is not None
    provider = str(((scope or {}).get("spec") or {}).get("provider") or "")
    res = side.resource(provider) if scope is not None else None
    plan = str((((scope or {}).get("metadata") or {}).get("labels") or {}).get(names.LABEL_BROKER_PLAN) or "")
    if res is None or (side.skip_trial and plan == "trial"):
        RUNS.labels("dropped").inc()
        return Result.done()
    try:
        with clusters.remote(kcp, s.kcp_namespace, names.kubeconfig_secret(target.kyma), cluster=target.kyma,
                             timeout=s.skr_request_timeout) as skr:
            ctx = SkrContext(kyma=target.kyma, skr=skr, kcp=kcp, scope=scope or {}, settings=s,
                             deadline=time.monotonic() + s.reconcile_timeout)
            ctx.objects(res)  # one list: the object's first turn and the quota read it (no GET besides)
            result = run_object(ctx, partial(kind.reconcile, kind=target.kind, res=res), res, target.namespace,
                                target.name)
    except ResourceMissing:  # the kind is not served (yet) in this SKR: the connect installs it
        RUNS.labels("dropped").inc()
        return Result.done()
    except (ApiError, KubeconfigError) as exc:
        RUNS.labels("failed").inc()
        return Result.error(f"timed SKR object {target.kyma}/{key.name}: {type(exc).__name__}: {exc}"[:500])
    RUNS.labels("requeued" if result.outcome is ResultKind.REQUEUE_AFTER else "done").inc()
    return result
