"""One connect to one SKR: the ``cloud-skr-connect`` controller's reconcile (``handleOneSkr``).

Key ``local/kcp-system/<kyma>``; the workqueue never runs two reconciles of one key at once, which is
the per-SKR gate. A connect:

1. drops the key when the SKR is no longer active (deactivated mid-sweep);
2. loads the Scope (missing: the connect fails) and builds a short-lived client from Secret
   ``kcp-system/kubeconfig-<kyma>`` (key ``config``), closed when the connect ends;
3. checks readiness: the CloudResources CRD is served, an instance exists and not all instances are
   deleted and finalizer-less (retried every 1 s for ~3.5 s); not ready: SkrStatus says so and the
   connect ends;
4. installs/updates the SKR CRDs by version annotation (:mod:`.installer`);
5. runs every SKR reconciler over all its objects within the window ``reconcile_timeout``
   (CloudResources, then the declared kinds of the provider in their order; skipped on ``trial`` plans,
   whose APIs are disabled); an object of a timed kind that asks to come back later becomes a key of
   its own at that time (:mod:`.timed`);
6. saves SkrStatus; 7. reports to the rotation (:meth:`tasks.cloud.sweep.Rotation.finish`), which puts
   the SKR back at the tail, with backoff when the connect failed.

A connect that fails (SKR unreachable, bad kubeconfig, API errors) is a terminal error for the
workqueue (no workqueue retry: the rotation owns the retry and its backoff), so one unreachable SKR
costs one short failed connect per turn and never slows the others. ``connect_delay`` injects a
delay (benchmarks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import structlog

from kube import ApiError, Kube, ReadLimitExceeded, ResourceMissing, client_for, clusters
from kube.kubeconfig import KubeconfigError
from kube.toolkit.metrics import counter, histogram
from tasks.cloud import kind_metrics, names, reads, registry, settings, sweep
from tasks.cloud.settings import CloudSettings
from tasks.cloud.skr import cloudresources, fleet, installer, kind, skrstatus, timed
from tasks.cloud.skr.context import SkrContext, run_object
from workers.controller import Key, Result, ResultKind

log = structlog.get_logger("tasks.cloud.skr")

__all__ = ["ConnectReport", "connect", "ready", "reconcile"]


CONNECTS = counter("reconcilery_cloud_skr_connects_total",
                   "SKR connects by result (ok, not_ready, failed, inactive) and kind (rotation, notification).",
                   ["result", "kind"])
CONNECT_SECONDS = histogram("reconcilery_cloud_skr_connect_seconds",
                            "Duration of SKR connects in seconds, by result (ok, not_ready, failed) and the SKR's "
                            "provider (aws, gcp, azure, openstack; empty when its Scope was not read).",
                            ["result", "provider"], buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300))


def _fleet() -> tuple[dict[str, str], int]:
    rotation = sweep.rotation(settings.current())
    return rotation.health(), rotation.fleet()


fleet.register(_fleet)  # reconcilery_cloud_skrs and ..._unreachable_longest_seconds, read at scrape

#: An SKR reconciler: ``(ctx, namespace, name) -> Result``, and the kind it reconciles.
Reconciler = Callable[[SkrContext, str, str], Result]


@dataclass
class ConnectReport:
    """What one connect did: ``result`` ``ok`` / ``not_ready`` / ``failed``, the handles for SkrStatus, the
    Scope's ``provider`` (``""`` before it was read)."""

    kyma: str
    result: str = "ok"
    message: str = ""
    handles: list[dict[str, Any]] = field(default_factory=list)
    objects: int = 0
    provider: str = ""

    @property
    def ok(self) -> bool:
        return self.result != "failed"


def ready(skr: Kube, s: CloudSettings) -> tuple[list[dict[str, Any]], int] | None:
    """The SKR readiness check, retried every 1 s up to ~3.5 s: the CloudResources instances when ready
    (the connect's snapshot of them) and their raw bytes, still charged to ``skr.budget``; ``None``
    when not."""
    deadline = time.monotonic() + s.t(3.5)
    while True:
        try:
            found, _, size = skr.list_measured(names.CLOUD_RESOURCES)
        except ResourceMissing:
            found, size = [], 0
        alive = [o for o in found
                 if not (o["metadata"].get("deletionTimestamp") and not o["metadata"].get("finalizers"))]
        if alive:
            return found, size
        if skr.budget is not None:
            skr.budget.give(size)
        if time.monotonic() + s.t(1) > deadline:
            return None
        time.sleep(s.t(1))


def _run(ctx: SkrContext, res: Any, reconcile: Reconciler, title: str,
         later: list[tuple[str, str, float]] | None = None,
         states: dict[tuple[str, str], int] | None = None) -> dict[str, Any]:
    """Every object of ``res``, each until done or asking to come back later (``later``: a timed kind's
    objects that asked, ``(namespace, name, seconds)``; ``states``: ``(kind label, state label) -> n`` of
    the objects reconciled, for ``reconcilery_cloud_objects``)."""
    outcomes: list[str] = []
    ok = True
    try:
        objects = list(ctx.objects(res))
    except ResourceMissing:
        objects = []
    for obj in objects:
        if ctx.remaining() <= 0:
            outcomes.append("window ended")
            break
        meta = obj["metadata"]
        ref = f"{meta.get('namespace')}/{meta['name']}" if meta.get("namespace") else str(meta["name"])
        try:
            result = run_object(ctx, reconcile, res, str(meta.get("namespace") or ""), str(meta["name"]))
        except ReadLimitExceeded:
            raise  # the SKR answered past a bound: the connect stops reading (status, Event, backoff)
        except ApiError as exc:
            ok = False
            outcomes.append(f"{ref}: {exc.reason}: {exc.message}"[:300])
            continue
        if later is not None and result.outcome is ResultKind.REQUEUE_AFTER:
            later.append((str(meta.get("namespace") or ""), str(meta["name"]), result.requeue_after or 0.0))
        if result.outcome in (ResultKind.ERROR, ResultKind.TERMINAL):
            ok = False
            outcomes.append(f"{ref}: {result.message}"[:300])
        else:
            outcomes.append(f"{ref}: {ctx.state_of(ref)}")
        if states is not None and ctx.state_of(ref) != "gone":
            counted = (kind_metrics.kind_label(res.kind, res.group), kind_metrics.state_label(ctx.state_of(ref)))
            states[counted] = states.get(counted, 0) + 1
    # the kind's turn is over: its snapshot (and any other kind's it read) is dropped, but kinds declared
    # ``kept`` (read by name by later kinds)
    ctx.forget_all(keep=registry.kept_skr_resources())
    return {"title": f"Controller {title}", "objKindGroup": f"{res.kind.lower()}.{res.group}", "ok": ok,
            "outcomes": outcomes}


def connect(kcp: Kube, kyma: str, s: CloudSettings, report: ConnectReport | None = None) -> ConnectReport:
    """One connect (steps 2-6 of the module doc), told in ``report`` (default a new one; given, it keeps
    what the connect learnt, the provider, when it raises). Raises ``ApiError`` / ``KubeconfigError``."""
    report = report or ConnectReport(kyma)
    kcp_reads = reads.kcp_reader(kcp)  # the KCP objects read by name: the informers' (tasks.cloud.reads)
    scope = kcp_reads.get(names.SCOPE, kyma, s.kcp_namespace)
    if scope is None:
        time.sleep(0.1)
        report.result, report.message = "failed", "SKR scope not found"
        return report
    provider = report.provider = str((scope.get("spec") or {}).get("provider") or "")
    with clusters.remote(kcp, s.kcp_namespace, names.kubeconfig_secret(kyma), cluster=kyma,
                         timeout=s.skr_request_timeout) as skr:
        seen = ready(skr, s) if provider else ([], 0)
        if seen is None:
            report.result = "not_ready"
            report.handles.append({"title": "Readiness", "ok": False, "outcomes": ["NotReady"]})
            skrstatus.save(kcp, s.kcp_namespace, kyma, scope, report.handles)
            return report
        if s.connect_delay:
            time.sleep(s.connect_delay)
        ctx = SkrContext(kyma=kyma, skr=skr, kcp=kcp, scope=scope, settings=s,
                         deadline=time.monotonic() + s.reconcile_timeout, kcp_reader=kcp_reads)
        instances, size = seen
        if instances:
            ctx.remember(names.CLOUD_RESOURCES, instances, size)
        trial = ctx.broker_plan == "trial"
        outcomes = installer.install_crds(skr, provider, s, api_disabled=trial)
        report.handles.append({"title": "Installer", "ok": True, "outcomes": outcomes})
        states: dict[tuple[str, str], int] = {}
        report.handles.append(_run(ctx, names.CLOUD_RESOURCES, cloudresources.reconcile, "CloudResources",
                                   states=states))
        if not trial:
            for declared, res in registry.skr_kinds(provider):
                later: list[tuple[str, str, float]] | None = [] if declared.skr and declared.skr.timed else None
                report.handles.append(_run(ctx, res, partial(kind.reconcile, kind=declared, res=res), res.kind,
                                           later, states))
                timed.schedule(kyma, declared.name, later or [])  # each a key at its time (:mod:`.timed`)
        report.objects = sum(len(h.get("outcomes") or []) for h in report.handles[1:])
        if not any("window ended" in (h.get("outcomes") or []) for h in report.handles):
            kind_metrics.record_skr(kyma, states)  # every object seen: this SKR's objects by state
    skrstatus.save(kcp, s.kcp_namespace, kyma, scope, report.handles)
    report.result = "ok"
    return report


def reconcile(key: Key) -> Result:
    """The connect controller's reconcile (see the module doc)."""
    s = settings.current()
    kyma = key.name
    rotation = sweep.rotation(s)
    if not rotation.is_active(kyma):
        CONNECTS.labels("inactive", "none").inc()
        kind_metrics.forget_skr(kyma)
        return Result.done()
    started = time.perf_counter()
    report = ConnectReport(kyma, result="failed")
    fleet.REVISIT_TARGET.set(s.revisit_target)
    fleet.IN_FLIGHT.inc()
    try:
        connect(client_for(key.cluster), kyma, s, report)
    except ReadLimitExceeded as exc:  # the SKR answered past the read limits: its SkrStatus and an Event say so
        report.message = f"{type(exc).__name__}: {exc}"
        try:
            kcp = client_for(key.cluster)
            scope = kcp.get(names.SCOPE, kyma, s.kcp_namespace)
            saved = skrstatus.save(kcp, s.kcp_namespace, kyma, scope, [
                {"title": "Read limits", "ok": False, "outcomes": [f"{exc.reason}: {exc.message}"[:300]]}])
            kcp.emit_event(saved, "ReadLimitExceeded", f"connect refused: {exc.message}"[:1000], "Warning")
        except ApiError as write_failed:
            log.warning("SkrStatus of a refused connect not saved", kyma=kyma, error=str(write_failed))
    except (ApiError, KubeconfigError) as exc:
        report.message = f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        log.exception("connect raised", kyma=kyma)
        report.message = f"{type(exc).__name__}: {exc}"
    finally:
        fleet.IN_FLIGHT.dec()
        finished = rotation.finish(kyma, report.ok, report.result)  # the health entry too, in the same call
        elapsed = time.perf_counter() - started
        CONNECTS.labels(report.result, finished.kind).inc()
        CONNECT_SECONDS.labels(report.result, report.provider).observe(elapsed)
    if not report.ok:
        log.warning("connect failed", kyma=kyma, error=report.message, failures=finished.failures,
                    next_in=round(finished.delay, 3), kind=finished.kind)
        return Result.terminal(f"connect to SKR {kyma} failed: {report.message}")
    log.info("connected", kyma=kyma, result=report.result, kind=finished.kind, objects=report.objects,
             seconds=round(elapsed, 3), next_in=round(finished.delay, 3))
    return Result.done()
