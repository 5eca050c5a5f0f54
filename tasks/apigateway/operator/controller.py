"""The ``apigateway`` controller: the APIGateway CR (cluster-scoped), reconciled by the ``apigateway`` workers.

The thin shell around :func:`tasks.apigateway.operator.plan.plan`. One reconcile:

1. GET the APIGateway (gone, or its CRD gone → done); LIST every APIGateway;
2. read the rest through :mod:`tasks.apigateway.reads`: the CRDs it depends on, ``kube-system/shoot-info``,
   the ingress gateway Service, the managed objects, and (for deletion checks) every APIRule,
   VirtualService, Ory Rule and RateLimit, and the Nodes (Oathkeeper's replicas);
3. plan; Secrets whose content is generated get it now (:mod:`.secrets`); :func:`kube.toolkit.execute`
   carries the plan's Outcome out: add finalizers (under the read resourceVersion), the writes in order
   (the first refused write stops and becomes ``Error``), remove finalizers, the status when it changed,
   with an Event. Objects blocking a deletion are logged one by one.

Results: ``Ready`` → requeue after the reconciliation interval (seed: 10 h); ``Processing`` (waiting for
Oathkeeper) → requeue after 2 s; ``Error`` / ``Warning`` → retried with backoff; a non-oldest CR's
``Warning`` → done (the original does not requeue it).

Environment: ``RECONCILERY_APIGATEWAY_RECONCILIATION_SECONDS`` (36000), ``..._ERROR_RETRY_SECONDS`` (1),
``..._ERROR_RETRY_CAP_SECONDS`` (1000), ``..._RESYNC_SECONDS`` (36000),
``RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS`` (120; 0 = do not wait for the Deployment),
``RECONCILERY_APIRULE_V1BETA1_ACCESS`` (installs Oathkeeper when ``allow``), the Oathkeeper images
(:class:`~tasks.apigateway.operator.resources.Images`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from kube import Kube, client_for
from kube import toolkit as tk
from tasks.apigateway import reads
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.guard import api_errors_as_results
from tasks.apigateway.operator import resources as res
from tasks.apigateway.operator import secrets
from tasks.apigateway.operator.plan import (
    APIGATEWAY_KIND,
    GARDENER_CRDS,
    REQUIRED_CRDS,
    OperatorPlan,
    OperatorPolicy,
    OperatorState,
    plan,
)
from tasks.apigateway.parsing import as_dict
from tasks.apigateway.settings import ApiGatewaySettings
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = structlog.get_logger("tasks.apigateway.operator")

CONTROLLER_NAME = "apigateway"
QUEUE = "apigateway"


@dataclass(frozen=True)
class ControllerSettings:
    """The planner's settings plus the backoff and resync of the ``apigateway`` controller (seconds)."""

    plan: OperatorPolicy
    error_retry: float
    error_retry_cap: float
    resync_interval: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ControllerSettings:
        """Read the environment (see the module doc; default this process's settings). Raises
        :class:`config.SettingsError` (a ``ValueError``) naming a bad value."""
        env = domain_settings.current() if environ is None else ApiGatewaySettings.load(environ)
        return cls(
            plan=OperatorPolicy(
                reconciliation_interval=env.apigateway_reconciliation,
                v1beta1_access=env.v1beta1_access,
                oathkeeper_ready_seconds=env.oathkeeper_ready,
                images=res.Images(env.oathkeeper_image, env.oathkeeper_maester_image, env.busybox_image),
            ),
            error_retry=env.apigateway_error_retry,
            error_retry_cap=max(env.apigateway_error_retry, env.apigateway_error_retry_cap),
            resync_interval=env.apigateway_resync,
        )


def read_state(kube: Kube, apigateways: list[dict[str, Any]]) -> OperatorState:
    """The snapshot of one reconcile (see the module doc)."""
    refs = [*res.network_policy_refs(), *res.kyma_gateway_refs(), *res.oathkeeper_refs(),
            *(("ConfigMap", ns, name) for ns, name in res.LEGACY_UI_CONFIG_MAPS)]
    reader = reads.READS.reader(kube)
    return OperatorState(
        apigateways=tuple(apigateways),
        crds=reads.crds(reader, [*REQUIRED_CRDS, *GARDENER_CRDS]),
        shoot_info=reads.config_map(reader, res.SHOOT_INFO),
        ingress_service=reads.service(reader, res.INGRESS_SERVICE),
        managed=reads.managed(reader, refs, res.RESOURCES),
        apirules=tuple(reads.apirules(reader)),
        virtual_services=tuple(reads.virtual_services(reader)),
        ory_rules=tuple(reads.ory_rules(reader)),
        ratelimits=tuple(reads.ratelimits(reader)),
        nodes=tuple(reads.nodes(reader)),
    )


def _domain(state: OperatorState) -> str:
    return str(as_dict((state.shoot_info or {}).get("data")).get("domain") or "") or res.NON_GARDENER_DOMAIN


def _generated(write: tk.Write, state: OperatorState) -> tk.Write:
    """``write`` with the content of a Secret the controller generates (a create of ``data: None``)."""
    if isinstance(write, tk.Action) and write.verb == "create" and write.object.get("data", 0) is None:
        return replace(write, object=secrets.generate(write.object, _domain(state)))
    return write


#: ``Action.kind`` → resource of everything the controller writes (the CR itself: its finalizers).
KINDS = {**res.RESOURCES, APIGATEWAY_KIND: reads.APIGATEWAY}


def reconcile_object(kube: Kube, obj: dict[str, Any], apigateways: list[dict[str, Any]],
                     settings: ControllerSettings | None = None) -> tuple[OperatorPlan, tk.Executed]:
    """Reconcile one APIGateway (as read): the plan and what carrying it out did. Raises
    :class:`ApiError` (the caller retries)."""
    settings = settings or ControllerSettings.from_env()
    state = read_state(kube, apigateways)
    p = plan(obj, state, settings.plan)
    for blocking in p.blocking:
        log.warning("resource blocks the deletion", apigateway=as_dict(obj.get("metadata")).get("name"),
                    resource=blocking, reason=p.status.reason if p.status else "")
    outcome = replace(p.outcome, writes=tuple(_generated(w, state) for w in p.outcome.writes))
    return p, tk.execute(outcome, kube, reads.APIGATEWAY, obj, resources=KINDS)


@api_errors_as_results(CONTROLLER_NAME, log)
def reconcile(key: Key) -> Result:
    """The ``apigateway`` controller's reconcile of ``key`` (cluster, "", name of an APIGateway)."""
    kube = client_for(key.cluster)
    reader = reads.READS.reader(kube)
    obj = reads.apigateway(reader, key.name)
    if obj is None:
        return Result.done()
    p, done = reconcile_object(kube, obj, reads.apigateways(reader) or [obj])
    log.info("apigateway reconciled", cluster=key.cluster, key=key.ref,
             state=p.status.state if p.status else "Deleted", writes=len(p.ops), error=done.outcome.error)
    return done.result


def list_keys() -> list[Key]:
    """Every APIGateway CR of the local cluster (the resync)."""
    items = reads.apigateways(reads.READS.reader(client_for(LOCAL_CLUSTER))) or []
    return [Key(LOCAL_CLUSTER, "", str(as_dict(o.get("metadata")).get("name"))) for o in items]


@registry.register
def controller() -> Controller:
    """The registration, with this process's settings (built on the registry's first use)."""
    settings = ControllerSettings.from_env()
    backoff = Backoff(base=settings.error_retry, cap=settings.error_retry_cap, jitter=0.1)
    return Controller(CONTROLLER_NAME, QUEUE, reconcile, backoff, settings.resync_interval or None, list_keys)
