"""Every read the API Gateway controllers make, one function per kind, on the domain's reader.

The APIRule, APIGateway and RateLimit controllers read the cluster only through these functions, each a
call on a :class:`informers.reader.Reader`; a reconcile builds its reader with ``READS.reader(kube)``. The kinds
:data:`READS` registers as cached are read from the worker process's informers (controller-runtime's
cached client: no API request once synced; the worker's own writes are seen at once); the primary
objects (the APIRule, APIGateway or RateLimit being reconciled), CRDs, cluster-wide APIRule lists and
the operator's rare reads go to the API server. A kind that is not served (its CRD is missing) reads as
absent or empty, never as an error; every other API failure raises :class:`kube.ApiError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from informers.reader import Cached, Reader, Reads
from kube import Resource, ResourceMissing, resources
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


#: The domain's read registration: the kinds the APIRule and RateLimit reconciles read on every run,
#: from informers (one cluster-wide informer each; Pods and ConfigMaps one per namespace read, and of
#: the ConfigMaps only api-gateway's own two: ``kube-system/shoot-info``, read by the APIGateway
#: operator, goes to the API server). The operator's rare reads (Certificates, DNSEntries, Nodes,
#: CRDs: a 10 h resync) and the primary objects go to the API server.
READS = Reads((
    Cached(GATEWAY), Cached(EXTERNAL_GATEWAY), Cached(resources.SERVICE),
    Cached(resources.CONFIGMAP, per_namespace=True, objects=frozenset({model.CONFIG_MAP, model.ISTIO_CONFIG_MAP})),
    Cached(resources.POD, per_namespace=True),
    # one or two of each per APIRule, read by owner label or host: packed (a fraction of the memory)
    Cached(VIRTUAL_SERVICE, packed=True), Cached(AUTHORIZATION_POLICY, packed=True),
    Cached(REQUEST_AUTHENTICATION, packed=True), Cached(ORY_RULE, packed=True),
    Cached(ENVOY_FILTER), Cached(RATELIMIT),
))


def get(reader: Reader, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """One object, or ``None`` when it (or its kind) does not exist."""
    try:
        return reader.get(res, name, namespace)
    except ResourceMissing:
        return None


def list_objects(reader: Reader, res: Resource, namespace: str | None = None,
                 label_selector: str | None = None) -> list[dict[str, Any]] | None:
    """Every matching object, or ``None`` when the kind is not served."""
    try:
        return reader.list(res, namespace, label_selector)
    except ResourceMissing:
        return None


def selector_text(selector: Mapping[str, str]) -> str:
    """``k=v,k2=v2`` (sorted) for a label selector query."""
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


# --- per kind -------------------------------------------------------------------------------------


def apirule(reader: Reader, namespace: str, name: str) -> dict[str, Any] | None:
    """The APIRule (read as v2), or ``None``. Raises :class:`ResourceMissing` when APIRules are not served."""
    return reader.get(APIRULE, name, namespace)


def apirules(reader: Reader) -> list[dict[str, Any]]:
    """Every APIRule of the cluster (``[]`` without the CRD)."""
    return list_objects(reader, APIRULE) or []


def gateways(reader: Reader, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The Istio Gateways that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(reader, GATEWAY, ref[1], ref[0])) is not None}


def external_gateways(reader: Reader, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The ExternalGateways that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(reader, EXTERNAL_GATEWAY, ref[1], ref[0])) is not None}


def services(reader: Reader, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The Services that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(reader, resources.SERVICE, ref[1], ref[0])) is not None}


def service(reader: Reader, ref: NamespacedName) -> dict[str, Any] | None:
    return get(reader, resources.SERVICE, ref[1], ref[0])


def namespaces(reader: Reader, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The Namespaces that exist among ``names`` (one GET each from the API server: Namespaces are
    not among :data:`READS`, and only APIRules with a Service in another namespace read them)."""
    return {name: obj for name in names if (obj := get(reader, resources.NAMESPACE, name)) is not None}


def config_maps(reader: Reader, refs: Iterable[NamespacedName]) -> dict[NamespacedName, dict[str, Any]]:
    """The ConfigMaps that exist among ``refs``."""
    return {ref: obj for ref in refs if (obj := get(reader, resources.CONFIGMAP, ref[1], ref[0])) is not None}


def config_map(reader: Reader, ref: NamespacedName) -> dict[str, Any] | None:
    return get(reader, resources.CONFIGMAP, ref[1], ref[0])


def pods(reader: Reader, namespace: str, selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Pods of ``namespace`` (those matching ``selector`` when given)."""
    return reader.list(resources.POD, namespace, selector_text(selector) if selector else None)


def owned(reader: Reader, res: Resource, selectors: Iterable[str] | None) -> list[dict[str, Any]] | None:
    """Objects of ``res`` matching any of the owner label ``selectors`` (``None``: all of them), merged;
    ``None`` when the kind is not served."""
    found: list[dict[str, Any]] = []
    for selector in selectors if selectors is not None else (None,):
        items = list_objects(reader, res, label_selector=selector)
        if items is None:
            return None
        found.extend(items)
    return found


def virtual_services(reader: Reader) -> list[dict[str, Any]]:
    """Every VirtualService of the cluster (``[]`` without the CRD)."""
    return list_objects(reader, VIRTUAL_SERVICE) or []


def ory_rules(reader: Reader) -> list[dict[str, Any]]:
    """Every Ory Oathkeeper Rule of the cluster (``[]`` without the CRD)."""
    return list_objects(reader, ORY_RULE) or []


def apigateways(reader: Reader) -> list[dict[str, Any]] | None:
    """Every APIGateway CR (``None`` without the CRD)."""
    return list_objects(reader, APIGATEWAY)


def apigateway(reader: Reader, name: str) -> dict[str, Any] | None:
    """The APIGateway CR. Raises :class:`ResourceMissing` when APIGateways are not served."""
    return reader.get(APIGATEWAY, name)


def ratelimits(reader: Reader, namespace: str | None = None) -> list[dict[str, Any]]:
    """RateLimits of ``namespace`` (all namespaces when ``None``; ``[]`` without the CRD)."""
    return list_objects(reader, RATELIMIT, namespace=namespace) or []


def ratelimit(reader: Reader, namespace: str, name: str) -> dict[str, Any] | None:
    """The RateLimit. Raises :class:`ResourceMissing` when RateLimits are not served."""
    return reader.get(RATELIMIT, name, namespace)


def envoy_filter(reader: Reader, namespace: str, name: str) -> dict[str, Any] | None:
    return get(reader, ENVOY_FILTER, name, namespace)


def nodes(reader: Reader) -> list[dict[str, Any]]:
    return reader.list(resources.NODE)


def crds(reader: Reader, names: Iterable[str]) -> frozenset[str]:
    """Which of the CRDs ``names`` are installed (one GET each)."""
    return frozenset(n for n in names if get(reader, resources.CRD, n) is not None)


def managed(reader: Reader, refs: Iterable[tuple[str, str, str]],
            kinds: Mapping[str, Resource]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The objects ``(kind, namespace, name)`` among ``refs`` that exist (``kinds``: kind → resource)."""
    out = {}
    for ref in refs:
        kind, namespace, name = ref
        obj = get(reader, kinds[kind], name, namespace or None)
        if obj is not None:
            out[ref] = obj
    return out
