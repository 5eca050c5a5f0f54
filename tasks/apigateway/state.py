"""The cluster snapshot one APIRule reconcile reads: :class:`ClusterState`.

The planner (:func:`tasks.apigateway.plan.plan`) is pure and only looks at this snapshot.
Two builders fill it: :meth:`ClusterState.from_manifests` from a list of manifests (``render`` and
unit tests), and the worker's builder through the ``kube`` layer (wired separately), which reads the
objects listed in :func:`reads_for`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.apigateway import model
from tasks.apigateway.externalgateway.model import Names
from tasks.apigateway.namespaces import foreign_service_namespaces
from tasks.apigateway.v1beta1.model import looks_v1beta1
from tasks.apigateway.v1beta1.model import referenced_services as v1beta1_services

NamespacedName = tuple[str, str]


@dataclass(frozen=True)
class ClusterState:
    """What one reconcile may look up, as plain manifests.

    Attributes:
        gateways: Istio Gateways by ``(namespace, name)``.
        external_gateways: ExternalGateway CRs by ``(namespace, name)``.
        services: Services by ``(namespace, name)``.
        config_maps: ConfigMaps by ``(namespace, name)`` (``api-gateway-config``, Istio's ``istio``).
        pods: Pods (at least those selected by the referenced Services).
        virtual_services: every VirtualService visible (occupied-host check, and the owned ones).
        authorization_policies, request_authentications, ory_rules: at least the ones owned by the
            APIRule; others are ignored.
        crds: names of installed CRDs (``virtualservices.networking.istio.io``...); ``None`` = not
            known, assume the required ones are installed.
        namespaces: Namespaces by name (at least those of Services in another namespace than the
            APIRule's: their ``allow-apirules-from`` annotation, :mod:`tasks.apigateway.namespaces`);
            a namespace absent here is treated as not found.
    """

    gateways: Mapping[NamespacedName, dict[str, Any]] = field(default_factory=dict)
    external_gateways: Mapping[NamespacedName, dict[str, Any]] = field(default_factory=dict)
    services: Mapping[NamespacedName, dict[str, Any]] = field(default_factory=dict)
    config_maps: Mapping[NamespacedName, dict[str, Any]] = field(default_factory=dict)
    pods: tuple[dict[str, Any], ...] = ()
    virtual_services: tuple[dict[str, Any], ...] = ()
    authorization_policies: tuple[dict[str, Any], ...] = ()
    request_authentications: tuple[dict[str, Any], ...] = ()
    ory_rules: tuple[dict[str, Any], ...] = ()
    crds: frozenset[str] | None = None
    namespaces: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_manifests(cls, manifests: Iterable[Mapping[str, Any]]) -> ClusterState:
        """Sort manifests into a snapshot by ``kind``; unknown kinds (and APIRules) are ignored.

        A namespaced object without ``metadata.namespace`` is taken to be in ``default``, as kubectl does.
        """
        gateways: dict[NamespacedName, dict[str, Any]] = {}
        external: dict[NamespacedName, dict[str, Any]] = {}
        services: dict[NamespacedName, dict[str, Any]] = {}
        config_maps: dict[NamespacedName, dict[str, Any]] = {}
        pods: list[dict[str, Any]] = []
        vss: list[dict[str, Any]] = []
        aps: list[dict[str, Any]] = []
        ras: list[dict[str, Any]] = []
        rules: list[dict[str, Any]] = []
        crds: set[str] = set()
        namespaces: dict[str, dict[str, Any]] = {}
        for raw in manifests:
            obj = _with_namespace(raw)
            kind = obj.get("kind")
            group = str(obj.get("apiVersion", "")).rpartition("/")[0]
            key = namespaced_name(obj)
            if kind == "Gateway" and group == model.GATEWAY.group:
                gateways[key] = obj
            elif kind == model.EXTERNAL_GATEWAY.kind and group == model.GROUP:
                external[key] = obj
            elif kind == "Service" and group == "":
                services[key] = obj
            elif kind == "ConfigMap" and group == "":
                config_maps[key] = obj
            elif kind == "Pod" and group == "":
                pods.append(obj)
            elif kind == model.VIRTUAL_SERVICE.kind:
                vss.append(obj)
            elif kind == model.AUTHORIZATION_POLICY.kind:
                aps.append(obj)
            elif kind == model.REQUEST_AUTHENTICATION.kind:
                ras.append(obj)
            elif kind == model.ORY_RULE.kind and group == model.ORY_RULE.group:
                rules.append(obj)
            elif kind == "Namespace" and group == "":
                namespaces[key[1]] = obj
            elif kind == "CustomResourceDefinition":
                crds.add(str((raw.get("metadata") or {}).get("name", "")))
        return cls(
            gateways=gateways,
            external_gateways=external,
            services=services,
            config_maps=config_maps,
            pods=tuple(pods),
            virtual_services=tuple(vss),
            authorization_policies=tuple(aps),
            request_authentications=tuple(ras),
            ory_rules=tuple(rules),
            crds=frozenset(crds) if crds else None,
            namespaces=namespaces,
        )

    def pods_selected(self, namespace: str, selector: Mapping[str, str]) -> list[dict[str, Any]]:
        """Pods in ``namespace`` whose labels contain every ``selector`` pair (a Service's selection)."""
        selected = []
        for pod in self.pods:
            meta = pod.get("metadata") or {}
            labels = meta.get("labels") or {}
            if meta.get("namespace") == namespace and all(labels.get(k) == v for k, v in selector.items()):
                selected.append(pod)
        return selected


def namespaced_name(obj: Mapping[str, Any]) -> NamespacedName:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


_CLUSTER_SCOPED = {"Namespace", "Node", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}


def _with_namespace(raw: Mapping[str, Any]) -> dict[str, Any]:
    obj = dict(raw)
    meta = dict(obj.get("metadata") or {})
    if obj.get("kind") not in _CLUSTER_SCOPED and not meta.get("namespace"):
        meta["namespace"] = "default"
    obj["metadata"] = meta
    return obj


@dataclass(frozen=True)
class Reads:
    """What the worker's state builder reads for one APIRule (see :func:`reads_for`).

    Attributes:
        gateways: Gateways to get (the APIRule's ``spec.gateway`` and the default kyma-gateway).
        external_gateways: ExternalGateways to get.
        services: Services to get; then Pods in each Service's namespace selected by its selector.
        config_maps: ConfigMaps to get (operator config, and Istio's mesh config when extAuth is used).
        owner_selectors: label selectors for the owned VirtualServices, AuthorizationPolicies,
            RequestAuthentications and Ory Rules (cluster-wide lists, results merged).
        all_virtual_services: list every VirtualService (the occupied-host check needs them).
        namespaces: Namespaces to get: those of the Services outside the APIRule's namespace.
    """

    gateways: tuple[NamespacedName, ...]
    external_gateways: tuple[NamespacedName, ...]
    services: tuple[NamespacedName, ...]
    config_maps: tuple[NamespacedName, ...]
    owner_selectors: tuple[str, ...]
    all_virtual_services: bool = True
    namespaces: tuple[str, ...] = ()


def reads_for(apirule: Mapping[str, Any] | model.APIRule) -> Reads:
    """The reads a reconcile of ``apirule`` (a manifest, or the parsed rule) needs, so the worker
    builds a complete :class:`ClusterState`
    (v1beta1 APIRules: the Services of their v1beta1 spec as well)."""
    rule = model.APIRule.of(apirule)
    gateways = [model.DEFAULT_GATEWAY]
    external: list[NamespacedName] = []
    if rule.gateway and "/" in rule.gateway:
        ns, _, name = rule.gateway.partition("/")
        gateways.append((ns, name))
    if rule.external_gateway and "/" in rule.external_gateway:
        ns, _, name = rule.external_gateway.partition("/")
        external.append((ns, name))
        gateways.append((ns, external_gateway_gateway_name(name)))
    config_maps = [model.CONFIG_MAP]
    if any(r.ext_auth is not None for r in rule.rules):
        config_maps.append(model.ISTIO_CONFIG_MAP)
    services = model.referenced_services(rule)
    if rule.original_version == "v1beta1" or (rule.original_version is None and looks_v1beta1(rule.raw)):
        services = [*services, *(s for s in v1beta1_services(rule.v1beta1) if s not in services)]
    return Reads(
        gateways=tuple(dict.fromkeys(gateways)),
        external_gateways=tuple(external),
        services=tuple(services),
        config_maps=tuple(config_maps),
        owner_selectors=tuple(model.owner_label_selectors(rule.name, rule.namespace)),
        namespaces=tuple(ns for _, ns in foreign_service_namespaces(rule)),
    )


def external_gateway_gateway_name(name: str) -> str:
    """Name of the Istio Gateway generated for ExternalGateway ``name``: ``<base>-gw`` where base is the
    name, or its first 37 characters + ``-`` + 7 hex digits of its sha256 when longer than 45
    (:func:`tasks.apigateway.externalgateway.model.base_name`)."""
    return Names.of(name).gateway
