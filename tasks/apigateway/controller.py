"""The ``apirule`` controller: one workqueue key per APIRule, reconciled by the ``apigateway`` workers.

The thin shell around :func:`tasks.apigateway.plan` (all decisions are there). One reconcile, in
api-gateway's APIRule controller order (``internal/controller/gateway``):

1. GET the APIRule (gone, or its CRD gone → done);
2. build the :class:`ClusterState` snapshot through ``kube`` following :func:`state.reads_for`
   (Gateways, Services and the Pods they select, ConfigMaps, the owned VirtualServices /
   AuthorizationPolicies / RequestAuthentications / Ory Rules by owner labels, and the other
   VirtualServices for the occupied-host check from the worker process's watch-fed cache,
   :mod:`tasks.apigateway.cache`). A kind that is not served (CRD missing) reads as empty, so an APIRule never blocks
   forever because a CRD is gone; which of the required kinds are served fills ``ClusterState.crds``;
3. :func:`plan`;
4. :func:`kube.toolkit.execute` carries out the plan's Outcome (``Plan.outcome``): on deletion the
   deletes, then the release of the finalizer ``gateway.kyma-project.io/subresources`` and the
   ``Deleted`` Event; otherwise the finalizer (merge patch with a resourceVersion precondition), the
   actions one by one (create / replace / delete; the first failure stops, as ``applyChanges``), the
   migration annotations, the status via the status subresource unless it is unchanged
   (``lastProcessedTime`` alone is no change), and an Event on the APIRule when state or description
   changed.

Results: ``Ready`` / ``Warning`` → requeue after the reconciliation interval (seed: 30 min);
``Error`` → :meth:`Result.error`, retried with backoff starting at the error retry interval (seed:
1 min); a 409 Conflict or an API failure → :meth:`Result.error` without touching the status.

Environment (seconds): ``RECONCILERY_APIRULE_RECONCILIATION_SECONDS`` (1800),
``RECONCILERY_APIRULE_ERROR_RETRY_SECONDS`` (60), ``RECONCILERY_APIRULE_ERROR_RETRY_CAP_SECONDS``
(300, at least the retry), ``RECONCILERY_APIRULE_RESYNC_SECONDS`` (1800: beat enqueues every APIRule),
``RECONCILERY_APIRULE_V1BETA1_ACCESS`` (``deny``; ``allow`` reconciles v1beta1 APIRules, the original's
signed ``apirule-access`` ConfigMap, and migrates v2 APIRules that still own Ory Rules),
``RECONCILERY_APIRULE_MIGRATION_SECONDS`` (60: the requeue while the ``migration-step`` annotation is
present; after each step the annotation is patched, then the status written).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from informers import informer as informers
from kube import ApiError, Conflict, Kube, NotFound, Resource, ResourceMissing, client_for
from kube import toolkit as tk
from tasks.apigateway import cache as vs_cache
from tasks.apigateway import model, reads, state
from tasks.apigateway import settings as domain_settings
from tasks.apigateway import status as rule_status
from tasks.apigateway.namespaces import ALLOW_APIRULES, allows
from tasks.apigateway.plan import APIRULE_KIND, PIPELINE_DELETION, Plan, RulePolicy, plan
from tasks.apigateway.settings import ApiGatewaySettings
from tasks.apigateway.state import ClusterState
from tasks.apigateway.v1beta1.model import looks_v1beta1
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = structlog.get_logger("tasks.apigateway")

CONTROLLER_NAME = "apirule"
QUEUE = "apigateway"


resource_of = reads.resource_of
APIRULE = reads.APIRULE
GATEWAY = reads.GATEWAY
EXTERNAL_GATEWAY = reads.EXTERNAL_GATEWAY
#: Resources of the kinds the controller writes, by ``Action.kind``.
OWNED: Mapping[str, Resource] = {kind: resource_of(k) for kind, k in model.OWNED_KINDS.items()}


@dataclass(frozen=True)
class ControllerSettings:
    """Timing of the ``apirule`` controller.

    Attributes:
        plan: the planner's settings (reconciliation interval, error retry interval), seconds.
        error_retry_cap: longest backoff between retries of a failing APIRule, seconds.
        resync_interval: seconds between two resyncs of every APIRule (beat).
    """

    plan: RulePolicy
    error_retry_cap: float
    resync_interval: float

    @classmethod
    def of(cls, domain: ApiGatewaySettings) -> ControllerSettings:
        """The ``apirule`` part of the domain's settings."""
        return cls(
            plan=RulePolicy(reconciliation_interval=domain.apirule_reconciliation,
                          error_retry_interval=domain.apirule_error_retry, v1beta1_access=domain.v1beta1_access,
                          migration_interval=domain.apirule_migration,
                          allow_cross_namespace_services=domain.allow_cross_namespace_services),
            error_retry_cap=max(domain.apirule_error_retry, domain.apirule_error_retry_cap),
            resync_interval=domain.apirule_resync,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ControllerSettings:
        """Read ``RECONCILERY_APIRULE_*`` (see the module doc) from ``environ``, default this process's
        settings. Raises :class:`config.SettingsError` (a ``ValueError``) naming a bad value."""
        return cls.of(domain_settings.current() if environ is None else ApiGatewaySettings.load(environ))


RECONCILES = tk.counter(
    "reconcilery_apirule_reconciles_total",
    "APIRule reconciles by result: the status written (Ready, Error, Warning), Deleted (finalizer "
    "released), Gone (APIRule not found), Conflict or ApiError (retried).", ["state"])
WRITES = tk.counter(
    "reconcilery_apirule_writes_total", "Istio objects created, updated or deleted for APIRules.",
    ["kind", "verb"])
API_ERRORS = tk.counter(
    "reconcilery_apirule_api_errors_total", "Failed Kubernetes API calls of APIRule reconciles.", ["reason"])
#: api-gateway's ``internal/metrics``: a write of the APIRule refused because it changed since it was read.
OBJECT_MODIFIED_ERRORS = tk.counter(
    "api_gateway_api_rule_object_modified_errors_total",
    "The total number of errors that occurred while modifying the APIRule object")


# ---- reads ---------------------------------------------------------------------------------


def read_state(kube: Kube, apirule: Mapping[str, Any] | model.APIRule,
               allow_cross_namespace_services: bool = False) -> ClusterState:
    """The snapshot one reconcile of ``apirule`` (a manifest, or the parsed rule) needs, read
    through :mod:`tasks.apigateway.reads` following :func:`state.reads_for`.

    The Namespaces of Services outside the APIRule's namespace come first (from the API server); the
    Services (and their Pods) of a namespace that does not allow the APIRule's are not read at all,
    unless ``allow_cross_namespace_services`` (the plan refuses the APIRule before it would look at
    them: :func:`tasks.apigateway.namespaces.service_namespace_failures`), so naming many namespaces
    starts no Pod informer in any of them.

    Reads (every one from the worker process's informers, :mod:`informers.informer`, once synced;
    from the API server when informers are off, not synced in time, or bypassed by
    :func:`informers.informer.direct_reads`): each Gateway, ExternalGateway, Service and ConfigMap;
    the Pods of each referenced Service with a selector; the VirtualServices,
    AuthorizationPolicies, RequestAuthentications and Ory Rules of each owner label selector. The
    other VirtualServices (occupied-host check) come from the VirtualService informer's host index
    (:mod:`tasks.apigateway.cache`: those sharing a first host label with the APIRule's hosts), or
    from one cluster-wide LIST without it. Kinds that are not served read as empty. Raises
    :class:`ApiError` on other failures.
    """
    rule = model.APIRule.of(apirule)
    wanted = state.reads_for(rule)
    served: set[str] = set()
    reader = reads.READS.reader(kube)

    def owned(res: Resource, selectors: tuple[str, ...] | None) -> tuple[dict[str, Any], ...]:
        found = reads.owned(reader, res, selectors)
        if found is None:
            return ()
        served.add(res.full_name)
        return tuple(found)

    namespaces = reads.namespaces(reader, wanted.namespaces)
    services = reads.services(reader, [
        ref for ref in wanted.services if allow_cross_namespace_services
        or allows(ref[0], rule.namespace, namespaces.get(ref[0]), ALLOW_APIRULES)])
    pods: list[dict[str, Any]] = []
    for (namespace, _), service in services.items():
        selector = (service.get("spec") or {}).get("selector") or {}
        if selector and isinstance(selector, dict):
            pods.extend(reads.pods(reader, namespace, {str(k): str(v) for k, v in selector.items()}))
    selectors = wanted.owner_selectors
    return ClusterState(
        gateways=reads.gateways(reader, wanted.gateways),
        external_gateways=reads.external_gateways(reader, wanted.external_gateways),
        services=services,
        config_maps=reads.config_maps(reader, wanted.config_maps),
        pods=tuple(pods),
        virtual_services=_virtual_services(kube, rule, wanted, owned, served),
        authorization_policies=owned(OWNED[model.AUTHORIZATION_POLICY.kind], selectors),
        request_authentications=owned(OWNED[model.REQUEST_AUTHENTICATION.kind], selectors),
        ory_rules=owned(OWNED[model.ORY_RULE.kind], selectors),
        crds=frozenset(served),
        namespaces=namespaces,
    )


def _virtual_services(kube: Kube, rule: model.APIRule, wanted: state.Reads,
                      owned: Callable[[Resource, tuple[str, ...] | None], tuple[dict[str, Any], ...]],
                      served: set[str]) -> tuple[dict[str, Any], ...]:
    """The owned VirtualServices (by owner labels) plus the others that may occupy one of the
    APIRule's hosts (the informer's host index), or every VirtualService (one LIST) without a
    synced informer."""
    res = OWNED[model.VIRTUAL_SERVICE.kind]
    if not wanted.all_virtual_services:
        return owned(res, wanted.owner_selectors)
    cache = vs_cache.cache_for(res, kube) if not informers.bypassed() else None
    if cache is None:
        vs_cache.VS_READS.labels("list").inc()
        with informers.direct_reads():
            return owned(res, None)
    mine = owned(res, wanted.owner_selectors)
    if res.full_name not in served:
        return ()
    vs_cache.VS_READS.labels("cache").inc()
    hosts = [*rule.hosts, *([v1] if (v1 := _v1beta1_host(rule)) else [])]
    direct = {state.namespaced_name(o) for o in mine}
    others = [o for o in cache.with_hosts(hosts) if state.namespaced_name(o) not in direct
              and not model.owned_objects([o], rule.name, rule.namespace)]
    return (*mine, *others)


def recheck_owned(kube: Kube, apirule: Mapping[str, Any] | model.APIRule, snapshot: ClusterState,
                  kinds: Iterable[str]) -> ClusterState:
    """``snapshot`` with the APIRule's (a manifest, or the parsed rule) owned objects of ``kinds``
    read again from the API server (one LIST per owner label selector and kind); objects of other
    owners stay as they were.
    Raises :class:`ApiError`."""
    rule = model.APIRule.of(apirule)
    wanted = state.reads_for(rule)
    fields = {model.VIRTUAL_SERVICE.kind: "virtual_services",
              model.AUTHORIZATION_POLICY.kind: "authorization_policies",
              model.REQUEST_AUTHENTICATION.kind: "request_authentications", model.ORY_RULE.kind: "ory_rules"}
    changes: dict[str, tuple[dict[str, Any], ...]] = {}
    reader = reads.READS.reader(kube)
    with informers.direct_reads():
        for kind in sorted(set(kinds) & set(fields)):
            fresh = reads.owned(reader, OWNED[kind], wanted.owner_selectors)
            if fresh is None:  # not served (any more): the plan's own error path decides
                continue
            current: tuple[dict[str, Any], ...] = getattr(snapshot, fields[kind])
            others = tuple(o for o in current if not model.owned_objects([o], rule.name, rule.namespace))
            changes[fields[kind]] = (*fresh, *others)
    return dataclasses.replace(snapshot, **changes)  # type: ignore[arg-type]


def _v1beta1_host(rule: model.APIRule) -> str | None:
    """The v1beta1 ``host`` (first label is what the cache indexes; a short host keeps it)."""
    if rule.original_version == "v1beta1" or looks_v1beta1(rule.raw):
        return rule.v1beta1.host
    return None


# ---- reconcile -----------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


#: ``Action.kind`` → resource of everything the controller writes (the APIRule itself: finalizer, annotations).
KINDS: Mapping[str, Resource] = {**OWNED, APIRULE_KIND: APIRULE}


def _written(write: tk.Write, _answer: Any) -> None:
    if isinstance(write, tk.Action) and write.kind in OWNED:
        WRITES.labels(write.kind, write.verb).inc()
    elif isinstance(write, tk.Action) and write.verb == "patch":
        log.info("apirule migration step", key=f"{write.namespace}/{write.name}",
                 annotations=dict((write.body or {}).get("metadata", {}).get("annotations") or {}))


def reconcile_object(kube: Kube, apirule: dict[str, Any], settings: ControllerSettings | None = None) -> tuple[
        Plan, tk.Executed]:
    """Reconcile one APIRule object (as read): the plan, and what carrying out its Outcome did.

    Raises :class:`Conflict` and :class:`ApiError` from reads and writes (the caller retries).

    Reads come from the process's informers; when the plan would create an owned object although
    the APIRule was reconciled before (it carries our finalizer), the owned objects of the kinds to
    create are read again from the API server first (:func:`recheck_owned`): another worker process
    may have created one a moment ago, before this process's informer saw the event (a second
    ``generateName`` create otherwise). A write that finds its kind no longer served although the
    informer still served it (a CRD deleted a moment ago) makes the whole reconcile run again on
    reads from the API server (the APIRule read again too), so the APIRule gets the missing-CRD
    Warning of api-gateway.
    """
    settings = settings or ControllerSettings.from_env()
    meta = _meta(apirule)
    cached = informers.enabled() and not informers.bypassed()  # reads may lag the API server
    rule = model.APIRule.parse(apirule)  # once per reconcile: reads, plan and re-check share it
    snapshot = read_state(kube, rule, settings.plan.allow_cross_namespace_services)
    now = datetime.now(UTC)
    p = plan(rule, snapshot, settings.plan, now)
    creating = {a.kind for a in p.actions if a.verb == "create"}
    if creating and tk.has_finalizer(rule.raw, model.FINALIZER) and cached:
        p = plan(rule, recheck_owned(kube, rule, snapshot, creating), settings.plan, now)
    try:
        done = tk.execute(p.outcome, kube, APIRULE, apirule, resources=KINDS, written=_written,
                          raise_missing=cached and p.pipeline != PIPELINE_DELETION)
    except ResourceMissing:
        # the CRD went away before this process's informer saw it: decide from the API server,
        # so that the APIRule gets the "CRD ... is not present" Warning rather than an Error
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        log.info("kind not served any more, reading again", key=key)
        with informers.direct_reads():
            fresh = reads.apirule(kube, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if fresh is None:
                return p, tk.Executed(None, tk.Outcome(), Result.done())
            return reconcile_object(kube, fresh, settings)
    if done.refused is not None:
        write, failure = done.refused
        API_ERRORS.labels(failure.code or str(failure.status)).inc()
        if isinstance(write, tk.Action) and write.kind == APIRULE_KIND and rule_status.object_modified(
                failure.status, failure.code, failure.message, {"kind": model.PLURAL}):
            OBJECT_MODIFIED_ERRORS.inc()
    return p, done


def reconcile(key: Key) -> Result:
    """The ``apirule`` controller's reconcile of ``key`` (cluster, namespace, name of an APIRule)."""
    kube = client_for(key.cluster)
    started = time.perf_counter()
    try:
        apirule = reads.apirule(reads.READS.reader(kube), key.namespace, key.name)
    except ResourceMissing:
        apirule = None
    except ApiError as exc:
        return _failed(key, "ApiError", exc)
    if apirule is None:
        RECONCILES.labels("Gone").inc()
        return Result.done()
    try:
        p, done = reconcile_object(kube, apirule)
    except Conflict as exc:
        return _failed(key, "Conflict", exc)
    except NotFound as exc:  # deleted while we worked: the next event (or none) decides
        log.info("apirule gone during reconcile", cluster=key.cluster, key=key.ref, error=exc.message)
        RECONCILES.labels("Gone").inc()
        return Result.done()
    except ApiError as exc:
        return _failed(key, "ApiError", exc)
    if done.refused is not None and done.outcome.error == str(done.refused[1]) and p.pipeline != PIPELINE_DELETION:
        # a refusal that is no status of the APIRule (a create found its object made meanwhile, the
        # migration annotation refused): counted and logged as a failed API call, retried with backoff
        RECONCILES.labels("Conflict" if done.refused[1].conflict else "ApiError").inc()
        log.warning("apirule reconcile failed", cluster=key.cluster, key=key.ref, status=done.refused[1].status,
                    reason=done.refused[1].code, error=done.refused[1].message)
        return done.result
    status = (done.obj or apirule).get("status")
    label = "Deleted" if p.pipeline == PIPELINE_DELETION else (
        str(status.get("state") or "None") if isinstance(status, dict) and p.status is not None else "None")
    RECONCILES.labels(label).inc()
    # resyncs of unchanged APIRules are the bulk: log them at debug
    emit = log.info if p.actions or done.outcome.error or p.pipeline == PIPELINE_DELETION else log.debug
    emit("apirule reconciled", cluster=key.cluster, key=key.ref, pipeline=p.pipeline, state=label,
         actions=len(p.actions), seconds=round(time.perf_counter() - started, 4))
    return done.result


def _failed(key: Key, label: str, exc: ApiError) -> Result:
    RECONCILES.labels(label).inc()
    details = exc.body.get("details")
    if rule_status.object_modified(exc.status, exc.reason, exc.message, details if isinstance(details, dict) else None):
        OBJECT_MODIFIED_ERRORS.inc()
    API_ERRORS.labels(exc.reason or str(exc.status)).inc()
    log.warning("apirule reconcile failed", cluster=key.cluster, key=key.ref, status=exc.status,
                reason=exc.reason, error=exc.message)
    return Result.error(f"{exc.status} {exc.reason}: {exc.message}")


def list_keys() -> list[Key]:
    """Every APIRule of the local cluster (the resync); none when the APIRule CRD is not installed."""
    items = reads.apirules(reads.READS.reader(client_for(LOCAL_CLUSTER)))
    return [Key(LOCAL_CLUSTER, str(_meta(o).get("namespace") or ""), str(_meta(o).get("name"))) for o in items]


@registry.register
def controller() -> Controller:
    """The registration, with this process's settings (built on the registry's first use)."""
    settings = ControllerSettings.from_env()
    backoff = Backoff(base=settings.plan.error_retry_interval, cap=settings.error_retry_cap, jitter=0.1)
    return Controller(CONTROLLER_NAME, QUEUE, reconcile, backoff, settings.resync_interval or None, list_keys)
