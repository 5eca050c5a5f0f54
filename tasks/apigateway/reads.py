"""Every read the API Gateway controllers make, one function per kind (the I/O layer of reads).

The APIRule, APIGateway and RateLimit controllers read the cluster only through these functions.
Kinds in :data:`CACHED` are read from the worker process's informers (:mod:`informers.informer`,
controller-runtime's cached client: no API request once synced; the worker's own writes are seen
at once); the primary objects (the APIRule, APIGateway or RateLimit being reconciled), CRDs and
cluster-wide APIRule lists go to the API server. A kind that is not served (its CRD is missing)
reads as absent or empty, never as an error; every other API failure raises :class:`kube.ApiError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from informers import informer as informers
from kube import Kube, Resource, ResourceMissing, resources
from tasks.apigateway import model

NamespacedName = tuple[str, str]


def resource_of(kind: model.Kind, namespaced: bool = True) -> Resource:
    """The ``kube`` resource reference of a domain kind."""
    return Resource(kind.group, kind.version, kind.plural, kind.kind, namespaced)


APIRULE = resource_of(model.APIRULE)
GATEWAY = resource_of(model.GATEWAY)
EXTERNAL_GATEWAY = resource_of(model.EXTERNAL_GATEWAY)
VIRTUAL_SERVICE = resource_of(model.VIRTUAL_SERVICE)
AUTHORIZATION_POLICY = resource_of(model.AUTHORIZATION_POLICY)
REQUEST_AUTHENTICATION = resource_of(model.REQUEST_AUTHENTICATION)
ORY_RULE = resource_of(model.ORY_RULE)
ENVOY_FILTER = resource_of(model.ENVOY_FILTER)
RATELIMIT = resource_of(model.RATELIMIT)
APIGATEWAY = resource_of(model.APIGATEWAY, namespaced=False)
CERTIFICATE = resource_of(model.CERTIFICATE)
DNS_ENTRY = resource_of(model.DNS_ENTRY)


#: Kinds read from informers (those the APIRule and RateLimit reconciles read on every run): resource
#: full name -> ``True`` for one informer per namespace (Pods, ConfigMaps: only the namespaces the
#: controllers read), ``False`` for one cluster-wide informer. The APIGateway operator's rare reads
#: (Certificates, DNSEntries, Nodes, CRDs: a 10 h resync) go to the API server.
CACHED: Mapping[str, bool] = {
    GATEWAY.full_name: False, EXTERNAL_GATEWAY.full_name: False, resources.SERVICE.full_name: False,
    resources.CONFIGMAP.full_name: True, resources.POD.full_name: True, VIRTUAL_SERVICE.full_name: False,
    AUTHORIZATION_POLICY.full_name: False, REQUEST_AUTHENTICATION.full_name: False, ORY_RULE.full_name: False,
    ENVOY_FILTER.full_name: False, RATELIMIT.full_name: False,
}


#: The ConfigMaps read from (their namespace's) informer; others (``kube-system/shoot-info``, read
#: by the APIGateway operator) are read from the API server.
CACHED_CONFIG_MAPS = frozenset({model.CONFIG_MAP, model.ISTIO_CONFIG_MAP})


def _read(kube: Kube, res: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
    per_namespace = CACHED.get(res.full_name)
    if per_namespace is None or (res.full_name == resources.CONFIGMAP.full_name
                                 and (namespace or "", name) not in CACHED_CONFIG_MAPS):
        return kube.get(res, name, namespace)
    return informers.get(kube, res, name, namespace, watch_namespace=namespace if per_namespace else None)


def _list(kube: Kube, res: Resource, namespace: str | None, label_selector: str | None) -> list[dict[str, Any]]:
    per_namespace = CACHED.get(res.full_name)
    if per_namespace is None or (per_namespace and namespace is None):
        return kube.list(res, namespace=namespace, label_selector=label_selector)
    return informers.list_objects(kube, res, namespace, label_selector,
                                  watch_namespace=namespace if per_namespace else None)


def get(kube: Kube, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """One object, or ``None`` when it (or its kind) does not exist (cached kinds: from the informer)."""
    try:
        return _read(kube, res, name, namespace)
    except ResourceMissing:
        return None


def list_objects(kube: Kube, res: Resource, namespace: str | None = None,
                 label_selector: str | None = None) -> list[dict[str, Any]] | None:
    """Every matching object, or ``None`` when the kind is not served (cached kinds: from the informer)."""
    try:
        return _list(kube, res, namespace, label_selector)
    except ResourceMissing:
        return None


def selector_text(selector: Mapping[str, str]) -> str:
    """``k=v,k2=v2`` (sorted) for a label selector query."""
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


# --- per kind -------------------------------------------------------------------------------------


def apirule(kube: Kube, namespace: str, name: str) -> dict[str, Any] | None:
    """The APIRule (read as v2), or ``None``. Raises :class:`ResourceMissing` when APIRules are not served."""
    return kube.get(APIRULE, name, namespace)


def apirules(kube: Kube) -> list[dict[str, Any]]:
    """Every APIRule of the cluster (``[]`` without the CRD)."""
    return list_objects(kube, APIRULE) or []


def gateways(kube: Kube, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The Istio Gateways that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(kube, GATEWAY, ref[1], ref[0])) is not None}


def external_gateways(kube: Kube, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The ExternalGateways that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(kube, EXTERNAL_GATEWAY, ref[1], ref[0])) is not None}


def services(kube: Kube, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The Services that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(kube, resources.SERVICE, ref[1], ref[0])) is not None}


def service(kube: Kube, ref: NamespacedName) -> dict[str, Any] | None:
    return get(kube, resources.SERVICE, ref[1], ref[0])


def config_maps(kube: Kube, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The ConfigMaps that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(kube, resources.CONFIGMAP, ref[1], ref[0])) is not None}


def config_map(kube: Kube, ref: NamespacedName) -> dict[str, Any] | None:
    return get(kube, resources.CONFIGMAP, ref[1], ref[0])


def pods(kube: Kube, namespace: str, selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Pods of ``namespace`` (those matching ``selector`` when given)."""
    return _list(kube, resources.POD, namespace, selector_text(selector) if selector else None)


def owned(kube: Kube, res: Resource, selectors: Iterable[str] | None) -> list[dict[str, Any]] | None:
    """Objects of ``res`` matching any of the owner label ``selectors`` (``None``: all of them), merged;
    ``None`` when the kind is not served."""
    found: list[dict[str, Any]] = []
    for selector in selectors if selectors is not None else (None,):
        items = list_objects(kube, res, label_selector=selector)
        if items is None:
            return None
        found.extend(items)
    return found


def virtual_services(kube: Kube) -> list[dict[str, Any]]:
    """Every VirtualService of the cluster (``[]`` without the CRD)."""
    return list_objects(kube, VIRTUAL_SERVICE) or []


def ory_rules(kube: Kube) -> list[dict[str, Any]]:
    """Every Ory Oathkeeper Rule of the cluster (``[]`` without the CRD)."""
    return list_objects(kube, ORY_RULE) or []


def apigateways(kube: Kube) -> list[dict[str, Any]] | None:
    """Every APIGateway CR (``None`` without the CRD)."""
    return list_objects(kube, APIGATEWAY)


def apigateway(kube: Kube, name: str) -> dict[str, Any] | None:
    """The APIGateway CR. Raises :class:`ResourceMissing` when APIGateways are not served."""
    return kube.get(APIGATEWAY, name)


def ratelimits(kube: Kube, namespace: str | None = None) -> list[dict[str, Any]]:
    """RateLimits of ``namespace`` (all namespaces when ``None``; ``[]`` without the CRD)."""
    return list_objects(kube, RATELIMIT, namespace=namespace) or []


def ratelimit(kube: Kube, namespace: str, name: str) -> dict[str, Any] | None:
    """The RateLimit. Raises :class:`ResourceMissing` when RateLimits are not served."""
    return kube.get(RATELIMIT, name, namespace)


def envoy_filter(kube: Kube, namespace: str, name: str) -> dict[str, Any] | None:
    return get(kube, ENVOY_FILTER, name, namespace)


def nodes(kube: Kube) -> list[dict[str, Any]]:
    return kube.list(resources.NODE)


def crds(kube: Kube, names: Iterable[str]) -> frozenset[str]:
    """Which of the CRDs ``names`` are installed (one GET each)."""
    return frozenset(n for n in names if get(kube, resources.CRD, n) is not None)


def managed(kube: Kube, refs: Iterable[tuple[str, str, str]],
            kinds: Mapping[str, Resource]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The objects ``(kind, namespace, name)`` among ``refs`` that exist (``kinds``: kind → resource)."""
    out = {}
    for ref in refs:
        kind, namespace, name = ref
        obj = get(kube, kinds[kind], name, namespace or None)
        if obj is not None:
            out[ref] = obj
    return out
