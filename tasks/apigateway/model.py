"""APIRule v2 / v2alpha1 as typed, read-only values, and the constants of the API Gateway domain.

The parser never raises: objects from a cluster were checked by the CRD schema (when it is enforced), but
``render`` reads any YAML and a dev API server may store anything, so a field of the wrong type is read as
absent and recorded in ``APIRule.type_failures`` (see :mod:`tasks.apigateway.parsing`). ``None`` and an
empty list stay distinct where the original's validation distinguishes them (``authorizations: []``).
Names, labels and constants are api-gateway's (``apis/gateway/v2alpha1``, ``internal/processing``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.apigateway.parsing import (
    CorsPolicy,
    JwtConfig,
    Reader,
    ServiceRef,
    ValidationFailure,
    as_dict,
    as_str,
    open_manifest,
    opt_int,
    str_map,
)
from tasks.apigateway.v1beta1.model import V1beta1APIRule

GROUP = "gateway.kyma-project.io"
KIND = "APIRule"
PLURAL = "apirules"
VERSIONS = ("v1beta1", "v2alpha1", "v2")

#: Finalizer that protects the owned Istio objects (api-gateway's ``subresources`` finalizer).
FINALIZER = "gateway.kyma-project.io/subresources"
#: Which pipeline reconciles the APIRule: ``v1beta1``, ``v2alpha1`` or ``v2``.
ORIGINAL_VERSION_ANNOTATION = "gateway.kyma-project.io/original-version"
#: Zero-downtime migration from Ory Rules to Istio (api-gateway's ``processors/migration``): the step the
#: last successful reconcile completed; removed once the Ory Rules are gone.
MIGRATION_STEP_ANNOTATION = "gateway.kyma-project.io/migration-step"
MIGRATION_APPLY_ISTIO_AUTHORIZATION = "apply-istio-authorization"
MIGRATION_VS_SWITCH_TO_SERVICE = "vs-switch-to-service"
MIGRATION_REMOVE_ORY_RULE = "remove-ory-rule"
#: When that step completed (RFC 3339; ours, not the original's): the next step waits for the migration
#: interval even when an event (our own VirtualService update) enqueues the APIRule earlier.
MIGRATION_STEP_AT_ANNOTATION = "reconcilery.kyma-project.io/migration-step-at"

#: Owner labels written on every generated object.
OWNER_NAME_LABEL = "apirule.gateway.kyma-project.io/name"
OWNER_NAMESPACE_LABEL = "apirule.gateway.kyma-project.io/namespace"
#: Legacy owner label (value ``<name>.<namespace>``): no longer written, still owns old objects.
LEGACY_OWNER_LABEL = "apirule.gateway.kyma-project.io/v1beta1"
#: AuthorizationPolicy diff labels.
HASH_LABEL = "gateway.kyma-project.io/hash"
INDEX_LABEL = "gateway.kyma-project.io/index"
COMMON_LABELS: Mapping[str, str] = {
    "kyma-project.io/module": "api-gateway",
    "app.kubernetes.io/managed-by": "api-gateway",
    "app.kubernetes.io/component": "api-gateway",
    "app.kubernetes.io/part-of": "api-gateway",
}

#: The default Kyma gateway (``namespace``, ``name``), source of the default domain.
DEFAULT_GATEWAY = ("kyma-system", "kyma-gateway")
#: The operator's config map (``namespace``, ``name``) and its data key.
CONFIG_MAP = ("kyma-system", "api-gateway-config")
CONFIG_MAP_KEY = "api-gateway-config"
#: Istio's mesh config map, source of the extAuth providers.
ISTIO_CONFIG_MAP = ("istio-system", "istio")
ISTIO_MESH_KEY = "mesh"

DEFAULT_TIMEOUT_SECONDS = 180
INGRESS_GATEWAY_PRINCIPAL = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
#: Ory Oathkeeper's principal (its Pods run as the maester's ServiceAccount): admitted during a migration.
OATHKEEPER_PRINCIPAL = "cluster.local/ns/kyma-system/sa/oathkeeper-maester-account"
ISTIO_PROXY_CONTAINER = "istio-proxy"

#: CRDs the v2 pipeline needs (api-gateway's dependency check).
REQUIRED_CRDS = (
    "virtualservices.networking.istio.io",
    "authorizationpolicies.security.istio.io",
    "requestauthentications.security.istio.io",
)


@dataclass(frozen=True)
class Kind:
    """A generated or read kind: ``api_version`` (``group/version``), ``kind``, ``plural``."""

    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


VIRTUAL_SERVICE = Kind("networking.istio.io", "v1beta1", "VirtualService", "virtualservices")
GATEWAY = Kind("networking.istio.io", "v1beta1", "Gateway", "gateways")
AUTHORIZATION_POLICY = Kind("security.istio.io", "v1beta1", "AuthorizationPolicy", "authorizationpolicies")
REQUEST_AUTHENTICATION = Kind("security.istio.io", "v1beta1", "RequestAuthentication", "requestauthentications")
ORY_RULE = Kind("oathkeeper.ory.sh", "v1alpha1", "Rule", "rules")
EXTERNAL_GATEWAY = Kind(GROUP, "v1alpha1", "ExternalGateway", "externalgateways")
#: The version the controllers read and write: the storage version (the conversion hub), as the
#: original does, so their own writes never go through the conversion webhook.
APIRULE = Kind(GROUP, "v2alpha1", KIND, PLURAL)
ENVOY_FILTER = Kind("networking.istio.io", "v1alpha3", "EnvoyFilter", "envoyfilters")
RATELIMIT = Kind(GROUP, "v1alpha1", "RateLimit", "ratelimits")
APIGATEWAY = Kind("operator.kyma-project.io", "v1alpha1", "APIGateway", "apigateways")
CERTIFICATE = Kind("cert.gardener.cloud", "v1alpha1", "Certificate", "certificates")
DNS_ENTRY = Kind("dns.gardener.cloud", "v1alpha1", "DNSEntry", "dnsentries")
#: Kinds the controller writes or deletes, by ``kind`` (the ``Action.kind`` values).
OWNED_KINDS: Mapping[str, Kind] = {
    k.kind: k for k in (VIRTUAL_SERVICE, AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION, ORY_RULE)
}


@dataclass(frozen=True)
class ExtAuth:
    """``extAuth``: Istio extension provider names (json key ``authorizers``) and JWT restrictions."""

    authorizers: tuple[str, ...]
    restrictions: JwtConfig | None

    @classmethod
    def parse(cls, raw: Any, path: str = ".extAuth", reader: Reader | None = None) -> ExtAuth | None:
        r, obj = Reader.section(reader, raw, path)
        if obj is None:
            return None
        return cls(r.strings(obj.get("authorizers"), path + ".authorizers"),
                   JwtConfig.parse(obj.get("restrictions"), path + ".restrictions", r))


@dataclass(frozen=True)
class Rule:
    """One ``spec.rules[i]``; exactly one of ``no_auth``, ``jwt``, ``ext_auth`` is set in valid input."""

    path: str
    methods: tuple[str, ...]
    service: ServiceRef | None
    no_auth: bool
    jwt: JwtConfig | None
    ext_auth: ExtAuth | None
    timeout: int | None
    request_headers: dict[str, str] = field(default_factory=dict)
    request_cookies: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Any, path: str = ".spec.rules[0]", reader: Reader | None = None) -> Rule:
        r = reader or Reader()
        obj = r.object(raw, path)
        request = r.object(obj.get("request"), path + ".request")
        return cls(
            path=r.string(obj.get("path"), path + ".path") or "",
            methods=r.strings(obj.get("methods"), path + ".methods"),
            service=ServiceRef.parse(obj.get("service"), path + ".service", r),
            no_auth=r.boolean(obj.get("noAuth"), path + ".noAuth") is True,
            jwt=JwtConfig.parse(obj.get("jwt"), path + ".jwt", r),
            ext_auth=ExtAuth.parse(obj.get("extAuth"), path + ".extAuth", r),
            timeout=r.integer(obj.get("timeout"), path + ".timeout"),
            request_headers=r.string_map(request.get("headers"), path + ".request.headers"),
            request_cookies=r.string_map(request.get("cookies"), path + ".request.cookies"),
        )


@dataclass(frozen=True)
class APIRule:
    """An APIRule read as v2 (v2alpha1 has the same shape). ``raw`` is the object as given.

    ``type_failures`` lists every field whose JSON type is wrong (the field reads as absent); the
    planner reports them as an ``Error`` before anything else, as the API server would with a schema.
    """

    name: str
    namespace: str
    api_version: str
    annotations: dict[str, str]
    deleting: bool
    spec_empty: bool
    hosts: tuple[str, ...]
    service: ServiceRef | None
    gateway: str | None
    external_gateway: str | None
    cors: CorsPolicy | None
    rules: tuple[Rule, ...]
    timeout: int | None
    raw: dict[str, Any]
    type_failures: tuple[ValidationFailure, ...] = ()

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> APIRule:
        """Read an APIRule manifest (any of the served versions; a v1beta1 spec reads as a v2 spec
        without hosts and rules: :mod:`tasks.apigateway.v1beta1` reads those). Never raises."""
        raw, meta, r, spec = open_manifest(obj)
        return cls(
            name=meta.name,
            namespace=meta.namespace,
            api_version=as_str(raw.get("apiVersion")),
            annotations=meta.annotations,
            deleting=meta.deleting,
            spec_empty=not any(v not in (None, [], {}, "") for v in spec.values()),
            hosts=r.strings(spec.get("hosts"), ".spec.hosts"),
            service=ServiceRef.parse(spec.get("service"), ".spec.service", r),
            gateway=r.string(spec.get("gateway"), ".spec.gateway"),
            external_gateway=r.string(spec.get("externalGateway"), ".spec.externalGateway"),
            cors=CorsPolicy.parse(spec.get("corsPolicy"), ".spec.corsPolicy", r),
            rules=tuple(Rule.parse(item, f".spec.rules[{i}]", r)
                        for i, item in r.objects(spec.get("rules"), ".spec.rules")),
            timeout=r.integer(spec.get("timeout"), ".spec.timeout"),
            raw=raw,
            type_failures=tuple(r.failures),
        )

    @classmethod
    def of(cls, obj: Mapping[str, Any] | APIRule) -> APIRule:
        """``obj`` when it is parsed already, else :meth:`parse` of it: a reconcile parses its APIRule
        once and hands the result to reads, plan and status alike. Never raises."""
        return obj if isinstance(obj, APIRule) else cls.parse(obj)

    @functools.cached_property
    def v1beta1(self) -> V1beta1APIRule:
        """The v1beta1 view of the same object, parsed on first use and kept (the v1beta1 reads, the
        occupied-host check and the v1beta1 plan share it)."""
        return V1beta1APIRule.parse(self.raw)

    @property
    def original_version(self) -> str | None:
        """The ``original-version`` annotation, or ``None`` when absent."""
        return self.annotations.get(ORIGINAL_VERSION_ANNOTATION)

    def rule_service(self, rule: Rule) -> ServiceRef | None:
        """The service a rule routes to: the rule's own, else ``spec.service``."""
        return rule.service if rule.service is not None else self.service

    def service_namespace(self, rule: Rule) -> str:
        """Namespace of a rule's service: rule.service.namespace → spec.service.namespace → the APIRule's
        namespace, ``default`` when empty (api-gateway's ``FindServiceNamespace``)."""
        if rule.service is not None and rule.service.namespace:
            return rule.service.namespace
        if self.service is not None and self.service.namespace:
            return self.service.namespace
        return self.namespace or "default"


def owner_labels(name: str, namespace: str) -> dict[str, str]:
    """The labels of every object generated for APIRule ``namespace/name``, in api-gateway's order."""
    return {OWNER_NAME_LABEL: name, OWNER_NAMESPACE_LABEL: namespace, **COMMON_LABELS}


def legacy_owner_value(name: str, namespace: str) -> str:
    return f"{name}.{namespace}"


def owner_label_selectors(name: str, namespace: str) -> list[str]:
    """Label selectors that find the objects owned by APIRule ``namespace/name`` (new labels, and the
    legacy label when its value fits a label value), as api-gateway's subresource repository queries."""
    selectors = [f"{OWNER_NAME_LABEL}={name},{OWNER_NAMESPACE_LABEL}={namespace}"]
    legacy = legacy_owner_value(name, namespace)
    if len(legacy) <= 63:
        selectors.append(f"{LEGACY_OWNER_LABEL}={legacy}")
    return selectors


def is_owned_by(obj: Mapping[str, Any], name: str, namespace: str) -> bool:
    """Whether ``obj`` carries the owner labels (new pair, or legacy) of APIRule ``namespace/name``.

    As api-gateway's ownership check for occupied hosts: a legacy label decides alone when present.
    """
    labels = str_map(as_dict(obj.get("metadata")).get("labels"))
    if LEGACY_OWNER_LABEL in labels:
        return labels[LEGACY_OWNER_LABEL] == legacy_owner_value(name, namespace)
    return labels.get(OWNER_NAME_LABEL) == name and labels.get(OWNER_NAMESPACE_LABEL) == namespace


def owned_objects(objects: Iterable[Mapping[str, Any]], name: str, namespace: str) -> list[dict[str, Any]]:
    """The objects owned by APIRule ``namespace/name`` (either label set), deduplicated by
    namespace/name keeping the higher ``metadata.generation``, sorted by namespace/name."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    legacy = legacy_owner_value(name, namespace)
    for obj in objects:
        meta = as_dict(obj.get("metadata"))
        labels = str_map(meta.get("labels"))
        by_new = labels.get(OWNER_NAME_LABEL) == name and labels.get(OWNER_NAMESPACE_LABEL) == namespace
        by_legacy = len(legacy) <= 63 and labels.get(LEGACY_OWNER_LABEL) == legacy
        if not (by_new or by_legacy):
            continue
        key = (as_str(meta.get("namespace")), as_str(meta.get("name")))
        previous = found.get(key)
        if previous is None or (opt_int(meta.get("generation")) or 0) > (
            opt_int(as_dict(previous.get("metadata")).get("generation")) or 0
        ):
            found[key] = dict(obj)
    return [found[k] for k in sorted(found)]


def referenced_services(apirule: Mapping[str, Any] | APIRule) -> list[tuple[str, str]]:
    """``(namespace, name)`` of every Service an APIRule (a manifest, or parsed) references (spec
    level and rule level), in first-use order. The Service watch maps a Service event to the
    APIRules whose list contains it."""
    rule = APIRule.of(apirule)
    refs: list[tuple[str, str]] = []
    candidates = [(r, rule.rule_service(r)) for r in rule.rules]
    if rule.service is not None and not rule.rules:
        candidates.append((Rule.parse({}), rule.service))
    for r, service in candidates:
        if service is None or not service.name:
            continue
        ref = (rule.service_namespace(r), service.name)
        if ref not in refs:
            refs.append(ref)
    return refs
