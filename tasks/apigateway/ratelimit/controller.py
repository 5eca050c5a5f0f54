"""The ``ratelimit`` controller: one workqueue key per RateLimit, reconciled by the ``apigateway`` workers.

The thin shell around :func:`tasks.apigateway.ratelimit.plan.plan`: read (through
:mod:`tasks.apigateway.reads`) the EnvoyFilter CRD, the APIGateway CRs, the Pods and RateLimits of the
RateLimit's namespace and its EnvoyFilter; plan; :func:`kube.toolkit.execute` carries the Outcome out
(create or update the EnvoyFilter: a refused write is ``Error`` "failed to create EnvoyFilter: <error>",
as the original; the status when it changed, with an Event). ``Ready`` → requeue after the
reconciliation interval (seed: 30 min); ``Warning`` and ``Error`` → retried with backoff (the original
returns an error for both).

The EnvoyFilter has the RateLimit as controller owner, so the cluster's garbage collector removes it
with the RateLimit; a reconcile that finds the RateLimit gone deletes the EnvoyFilter itself when it
is still there and owned by that RateLimit (clusters without a garbage collector, such as the dev API
server).

Environment (seconds): ``RECONCILERY_RATELIMIT_RECONCILIATION_SECONDS`` (1800),
``RECONCILERY_RATELIMIT_ERROR_RETRY_SECONDS`` (1), ``RECONCILERY_RATELIMIT_ERROR_RETRY_CAP_SECONDS`` (300),
``RECONCILERY_RATELIMIT_RESYNC_SECONDS`` (1800).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kube import Kube, client_for
from kube import toolkit as tk
from tasks.apigateway import model, reads
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.guard import api_errors_as_results
from tasks.apigateway.parsing import as_dict
from tasks.apigateway.ratelimit.plan import ENVOY_FILTER_CRD, RateLimitState, collect_garbage, plan
from tasks.apigateway.settings import ApiGatewaySettings
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = structlog.get_logger("tasks.apigateway.ratelimit")

CONTROLLER_NAME = "ratelimit"
QUEUE = "apigateway"


@dataclass(frozen=True)
class ControllerSettings:
    """Timing of the ``ratelimit`` controller, seconds (see the module doc for the variables)."""

    reconciliation_interval: float = 1800.0
    error_retry: float = 1.0
    error_retry_cap: float = 300.0
    resync_interval: float = 1800.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ControllerSettings:
        """Read ``RECONCILERY_RATELIMIT_*`` (default: this process's settings). Raises
        :class:`config.SettingsError` (a ``ValueError``) naming a bad value."""
        env = domain_settings.current() if environ is None else ApiGatewaySettings.load(environ)
        return cls(
            reconciliation_interval=env.ratelimit_reconciliation,
            error_retry=env.ratelimit_error_retry,
            error_retry_cap=max(env.ratelimit_error_retry, env.ratelimit_error_retry_cap),
            resync_interval=env.ratelimit_resync,
        )


def read_state(kube: Kube, namespace: str, name: str) -> RateLimitState:
    """The snapshot of one reconcile: 1 GET (CRD) + 1 LIST (APIGateways) + 2 LISTs (Pods, RateLimits of
    the namespace) + 1 GET (EnvoyFilter)."""
    reader = reads.READS.reader(kube)
    return RateLimitState(
        crds=reads.crds(reader, [ENVOY_FILTER_CRD]),
        apigateways=tuple(reads.apigateways(reader) or ()),
        pods=tuple(reads.pods(reader, namespace)),
        ratelimits=tuple(reads.ratelimits(reader, namespace)),
        envoy_filter=reads.envoy_filter(reader, namespace, name),
    )


#: ``Action.kind`` → resource of what the controller writes.
KINDS = {model.ENVOY_FILTER.kind: reads.ENVOY_FILTER}


def reconcile_object(kube: Kube, obj: dict[str, Any], settings: ControllerSettings | None = None) -> tk.Executed:
    """Reconcile one RateLimit object (as read): its plan carried out. Raises :class:`ApiError` (the
    caller retries)."""
    settings = settings or ControllerSettings.from_env()
    meta = as_dict(obj.get("metadata"))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    outcome = plan(obj, read_state(kube, namespace, name), settings.reconciliation_interval)
    return tk.execute(outcome, kube, reads.RATELIMIT, obj, resources=KINDS)


@api_errors_as_results(CONTROLLER_NAME, log)
def reconcile(key: Key) -> Result:
    """The ``ratelimit`` controller's reconcile of ``key`` (cluster, namespace, name of a RateLimit)."""
    kube = client_for(key.cluster)
    reader = reads.READS.reader(kube)
    # the primary object from the API server (kube is the API reader): a RateLimit the cache has not seen
    # yet would read as gone, and nothing would enqueue it again
    obj = reads.ratelimit(kube, key.namespace, key.name)
    if obj is None:
        gone = tk.execute(collect_garbage(key.name, reads.envoy_filter(reader, key.namespace, key.name)), kube,
                          resources=KINDS)
        if gone.answers:
            log.info("envoyfilter of deleted ratelimit removed", cluster=key.cluster, key=key.ref)
        return Result.done()
    if tk.deleting(obj):
        return Result.done()  # no finalizer: the garbage collector removes the EnvoyFilter
    done = reconcile_object(kube, obj)
    log.info("ratelimit reconciled", cluster=key.cluster, key=key.ref,
             state=as_dict((done.obj or obj).get("status")).get("state"),
             writes=[w.describe() for w in done.outcome.writes], error=done.outcome.error)
    return done.result


def list_keys() -> list[Key]:
    """Every RateLimit of the local cluster (the resync)."""
    items = reads.ratelimits(reads.READS.reader(client_for(LOCAL_CLUSTER)))
    return [Key(LOCAL_CLUSTER, str(as_dict(o.get("metadata")).get("namespace") or ""),
                str(as_dict(o.get("metadata")).get("name"))) for o in items]


@registry.register
def controller() -> Controller:
    """The registration, with this process's settings (built on the registry's first use)."""
    settings = ControllerSettings.from_env()
    backoff = Backoff(base=settings.error_retry, cap=settings.error_retry_cap, jitter=0.1)
    return Controller(CONTROLLER_NAME, QUEUE, reconcile, backoff, settings.resync_interval or None, list_keys)
