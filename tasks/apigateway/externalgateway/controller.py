"""The ``externalgateway`` controller: one workqueue key per ExternalGateway, on the ``apigateway`` queue.

The thin shell around :func:`tasks.apigateway.externalgateway.plan.plan` (api-gateway's
``internal/controller/gateway/external``). One reconcile:

1. GET the ExternalGateway (gone, or its CRD not served → done);
2. read from the API server: Gardener's two CRDs, the generated objects
   (:func:`~tasks.apigateway.externalgateway.plan.refs`; the Gardener ones only with Gardener), and,
   unless it is being deleted, ``kube-system/shoot-info``, every ExternalGateway (domain uniqueness),
   every Istio Gateway (``externalDomain`` no other Gateway's host), the regions ConfigMap, the CA
   Secret (one of another namespace only after its Namespace, and only when that allows it:
   :func:`~tasks.apigateway.externalgateway.plan.ca_secret_readable`) and (Gardener) the ingress
   gateway Service: 12 requests with the ExternalGateway's own GET, 16 with Gardener (one more for a
   CA Secret of another namespace); a steady-state reconcile writes nothing;
3. plan; :func:`kube.toolkit.execute` carries its Outcome out: the finalizer first, the writes in order
   (the first refused write stops and becomes the ``Error`` status of its step), the status when
   changed, the Event, the finalizer's removal after a deletion.

Results: ``Ready`` → requeue after 1 h; ``Processing`` (Gardener's DNSEntry/Certificate not ready yet)
→ after 5 s; ``Error`` → retried with backoff (1 s doubling to 1000 s, as the original's rate limiter).
"""

from __future__ import annotations

from typing import Any

import structlog

from kube import Kube, Resource, ResourceMissing, client_for, resources
from kube import toolkit as tk
from tasks.apigateway import reads
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.externalgateway.plan import (
    RECONCILIATION_SECONDS,
    ExternalGatewayPlan,
    ExternalGatewayState,
    ca_secret_readable,
    gardener_refs,
    plan,
    refs,
)
from tasks.apigateway.guard import api_errors_as_results
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = structlog.get_logger("tasks.apigateway.externalgateway")

CONTROLLER_NAME = "externalgateway"
QUEUE = "apigateway"
EXTERNAL_GATEWAY = reads.EXTERNAL_GATEWAY
#: ``Action.kind`` → resource of every generated kind.
KINDS: dict[str, Resource] = {
    "Gateway": reads.GATEWAY, "EnvoyFilter": reads.ENVOY_FILTER, "Secret": resources.SECRET,
    "Certificate": reads.CERTIFICATE, "DNSEntry": reads.DNS_ENTRY,
}


def _get(kube: Kube, res: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
    return reads.get(kube, res, name, namespace) if name else None


def read_state(kube: Kube, obj: dict[str, Any]) -> ExternalGatewayState:
    """The snapshot of one reconcile: API server reads (the ExternalGateway's references are in other
    namespaces than any informer of the domain watches; a reconcile runs about hourly), but for every
    Gateway and ExternalGateway, which the domain's informers hold."""
    eg = m.ExternalGateway.of(obj)
    crds = reads.crds(kube, m.GARDENER_CRDS)
    gardener = all(c in crds for c in m.GARDENER_CRDS)
    existing = {}
    for ref in refs(eg):
        if not gardener and ref in gardener_refs(eg):
            continue  # neither written nor deleted without Gardener
        found = _get(kube, KINDS[ref[0]], ref[2], ref[1])
        if found is not None:
            existing[ref] = found
    if eg.deleting:
        return ExternalGatewayState(crds=crds, existing=existing)
    cached = reads.READS.reader(kube)  # every Gateway and ExternalGateway: the domain's informers
    others, gateways = (tuple(reads.list_objects(cached, res) or ()) for res in (EXTERNAL_GATEWAY, reads.GATEWAY))
    ca_namespace = None
    if eg.ca_secret[0] != eg.namespace:  # another namespace's Secret: read only where it allows us
        ca_namespace = _get(kube, resources.NAMESPACE, eg.ca_secret[0], None)
    return ExternalGatewayState(
        crds=crds,
        shoot_info=_get(kube, resources.CONFIGMAP, m.SHOOT_INFO[1], m.SHOOT_INFO[0]),
        external_gateways=others,
        regions_config_map=_get(kube, resources.CONFIGMAP, eg.regions_config_map, eg.namespace),
        ca_secret=_get(kube, resources.SECRET, eg.ca_secret[1], eg.ca_secret[0])
        if ca_secret_readable(eg, ca_namespace) else None,
        ca_namespace=ca_namespace,
        gateways=gateways,
        ingress_service=_get(kube, resources.SERVICE, m.INGRESS_SERVICE[1], m.INGRESS_SERVICE[0]) if gardener
        else None,
        existing=existing,
    )


def reconcile_object(kube: Kube, obj: dict[str, Any], now: str | None = None) -> tuple[ExternalGatewayPlan,
                                                                                      tk.Executed]:
    """Reconcile one ExternalGateway (as read): the plan and what carrying it out did. Raises
    :class:`ApiError` (the caller retries)."""
    p = plan(obj, read_state(kube, obj), now or tk.now_rfc3339())
    return p, tk.execute(p.outcome, kube, EXTERNAL_GATEWAY, obj, resources=KINDS)


@api_errors_as_results(CONTROLLER_NAME, log)
def reconcile(key: Key) -> Result:
    """The ``externalgateway`` controller's reconcile of ``key`` (cluster, namespace, name)."""
    kube = client_for(key.cluster)
    obj = kube.get(EXTERNAL_GATEWAY, key.name, key.namespace)
    if obj is None:
        return Result.done()
    p, done = reconcile_object(kube, obj)
    log.info("externalgateway reconciled", cluster=key.cluster, key=key.ref, state=p.state or "deleted",
             writes=[w.describe() for w in p.outcome.writes], error=done.outcome.error)
    return done.result


def list_keys() -> list[Key]:
    """Every ExternalGateway of the local cluster (the resync)."""
    try:
        items = client_for(LOCAL_CLUSTER).list(EXTERNAL_GATEWAY)
    except ResourceMissing:
        return []
    return [Key(LOCAL_CLUSTER, str((o.get("metadata") or {}).get("namespace") or ""),
                str((o.get("metadata") or {}).get("name"))) for o in items]


CONTROLLER = registry.register(Controller(CONTROLLER_NAME, QUEUE, reconcile, Backoff(base=1.0, cap=1000.0, jitter=0.1),
                                          RECONCILIATION_SECONDS, list_keys))
