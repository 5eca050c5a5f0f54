"""APIRule v1beta1 as typed, read-only values (api-gateway's ``apis/gateway/v1beta1``).

Where the v1beta1 spec comes from: the ``gateway.kyma-project.io/v1beta1-spec`` annotation the
conversion webhook writes when a v1beta1 object is stored as v2alpha1; without it, the object's own
``spec`` (a v1beta1 manifest given to ``render``, or a v1beta1 object stored by an API server that does
not convert, such as the dev API server with ``conversion: None``). Parsing never raises: wrong JSON
types become ``type_failures`` (see :mod:`tasks.apigateway.parsing`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks.apigateway.parsing import (
    V1BETA1_SPEC_ANNOTATION,
    CorsPolicy,
    JwtConfig,
    Metadata,
    Reader,
    ServiceRef,
    ValidationFailure,
)

ALLOW = "allow"
NO_AUTH = "no_auth"
NOOP = "noop"
JWT = "jwt"
UNAUTHORIZED = "unauthorized"
ANONYMOUS = "anonymous"
COOKIE_SESSION = "cookie_session"
OAUTH2_CLIENT_CREDENTIALS = "oauth2_client_credentials"
OAUTH2_INTROSPECTION = "oauth2_introspection"
SECURE_STRATEGIES = (OAUTH2_CLIENT_CREDENTIALS, OAUTH2_INTROSPECTION, JWT, COOKIE_SESSION)
UNSECURE_STRATEGIES = (NOOP, NO_AUTH, ALLOW, UNAUTHORIZED, ANONYMOUS)
HEADER_MUTATOR = "header"
COOKIE_MUTATOR = "cookie"
SPEC_ANNOTATION_PATH = f".metadata.annotations[{V1BETA1_SPEC_ANNOTATION}]"


@dataclass(frozen=True)
class OryJwtConfig:
    """The Ory flavour of a ``jwt`` strategy's config (``trusted_issuers``, ``jwks_urls``,
    ``required_scope``, ``target_audience``); absent keys are empty."""

    trusted_issuers: tuple[str, ...] = ()
    jwks_urls: tuple[str, ...] = ()
    required_scope: tuple[str, ...] = ()
    target_audience: tuple[str, ...] = ()


@dataclass(frozen=True)
class Handler:
    """An access strategy or a mutator: ``handler`` name and its ``config`` object (``None`` when
    absent or null). For ``jwt`` strategies both config flavours are read (Istio: ``jwt``; Ory:
    ``ory_jwt``); for ``header`` / ``cookie`` mutators ``values`` are the headers / cookies."""

    name: str
    config: dict[str, Any] | None
    jwt: JwtConfig | None = None
    ory_jwt: OryJwtConfig | None = None
    values: dict[str, str] | None = None

    @property
    def config_empty(self) -> bool:
        """No config, ``null`` or ``{}`` (api-gateway's ``configEmpty``)."""
        return not self.config


def _strategy(raw: dict[str, Any], path: str, r: Reader) -> Handler:
    name = r.string(raw.get("handler"), path + ".handler") or ""
    config = r.opt_object(raw.get("config"), path + ".config")
    if name != JWT or config is None:
        return Handler(name, config)
    at = path + ".config"
    ory = OryJwtConfig(*(r.strings(config.get(key), f"{at}.{key}")
                         for key in ("trusted_issuers", "jwks_urls", "required_scope", "target_audience")))
    return Handler(name, config, jwt=JwtConfig.parse(config, at, r), ory_jwt=ory)


def _mutator(raw: dict[str, Any], path: str, r: Reader) -> Handler:
    name = r.string(raw.get("handler"), path + ".handler") or ""
    config = r.opt_object(raw.get("config"), path + ".config")
    values = None
    if config is not None and name in (HEADER_MUTATOR, COOKIE_MUTATOR):
        key = "headers" if name == HEADER_MUTATOR else "cookies"
        values = r.string_map(config.get(key), f"{path}.config.{key}")
    return Handler(name, config, values=values)


@dataclass(frozen=True)
class V1beta1Rule:
    """One ``spec.rules[i]`` of a v1beta1 APIRule."""

    path: str
    methods: tuple[str, ...]
    service: ServiceRef | None
    access_strategies: tuple[Handler, ...]
    mutators: tuple[Handler, ...]
    timeout: int | None

    def has(self, strategy: str) -> bool:
        """The rule has an access strategy named ``strategy`` (``ContainsAccessStrategy``)."""
        return any(a.name == strategy for a in self.access_strategies)

    @property
    def jwt_secured(self) -> bool:
        """Some access strategy is ``jwt`` (``IsJwtSecured``)."""
        return self.has(JWT)

    @property
    def secured_by_oathkeeper(self) -> bool:
        """Some access strategy is neither ``allow`` nor ``no_auth`` (``IsSecuredByOathkeeper``)."""
        return any(a.name not in (ALLOW, NO_AUTH) for a in self.access_strategies)

    @property
    def jwt_strategy(self) -> Handler | None:
        return next((a for a in self.access_strategies if a.name == JWT), None)

    def mutator(self, name: str) -> Handler | None:
        """The first mutator named ``name`` (``GetCookieMutator`` / ``GetHeaderMutator``)."""
        return next((m for m in self.mutators if m.name == name), None)


@dataclass(frozen=True)
class V1beta1APIRule:
    """A v1beta1 APIRule: metadata of the stored object, spec from the annotation or the object."""

    name: str
    namespace: str
    annotations: dict[str, str]
    deleting: bool
    host: str | None
    service: ServiceRef | None
    gateway: str | None
    cors: CorsPolicy | None
    rules: tuple[V1beta1Rule, ...]
    timeout: int | None
    from_annotation: bool
    type_failures: tuple[ValidationFailure, ...] = ()

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> V1beta1APIRule:
        """Read the v1beta1 view of an APIRule object (see the module doc). Never raises."""
        meta = Metadata.parse(obj)
        r = Reader()
        raw_spec, from_annotation = v1beta1_spec(obj, r)
        spec = r.object(raw_spec, ".spec")
        cors = CorsPolicy.parse(spec.get("corsPolicy"), ".spec.corsPolicy", r, read_max_age=False)
        if cors is not None:
            max_age = r.duration((spec.get("corsPolicy") or {}).get("maxAge"), ".spec.corsPolicy.maxAge")
            cors = CorsPolicy(cors.allow_origins, cors.allow_methods, cors.allow_headers, cors.expose_headers,
                              cors.allow_credentials, None if max_age is None else max_age // 1_000_000_000)
        rules = []
        for i, item in r.objects(spec.get("rules"), ".spec.rules"):
            at = f".spec.rules[{i}]"
            rules.append(V1beta1Rule(
                path=r.string(item.get("path"), at + ".path") or "",
                methods=r.strings(item.get("methods"), at + ".methods"),
                service=ServiceRef.parse(item.get("service"), at + ".service", r),
                access_strategies=tuple(_strategy(a, f"{at}.accessStrategies[{k}]", r)
                                        for k, a in r.objects(item.get("accessStrategies"), at + ".accessStrategies")),
                mutators=tuple(_mutator(m, f"{at}.mutators[{k}]", r)
                               for k, m in r.objects(item.get("mutators"), at + ".mutators")),
                timeout=r.integer(item.get("timeout"), at + ".timeout"),
            ))
        return cls(
            name=meta.name, namespace=meta.namespace, annotations=meta.annotations,
            deleting=meta.deleting,
            host=r.string(spec.get("host"), ".spec.host"),
            service=ServiceRef.parse(spec.get("service"), ".spec.service", r),
            gateway=r.string(spec.get("gateway"), ".spec.gateway"),
            cors=cors,
            rules=tuple(rules),
            timeout=r.integer(spec.get("timeout"), ".spec.timeout"),
            from_annotation=from_annotation,
            type_failures=tuple(r.failures),
        )

    def rule_service(self, rule: V1beta1Rule) -> ServiceRef | None:
        return rule.service if rule.service is not None else self.service

    def service_namespace(self, rule: V1beta1Rule | None) -> str:
        """rule.service.namespace → spec.service.namespace → the APIRule's namespace (``FindServiceNamespace``)."""
        if rule is not None and rule.service is not None and rule.service.namespace is not None:
            return rule.service.namespace
        if self.service is not None and self.service.namespace is not None:
            return self.service.namespace
        return self.namespace


def v1beta1_spec(obj: Mapping[str, Any], reader: Reader | None = None) -> tuple[Any, bool]:
    """``(spec, from_annotation)``: the JSON of the ``v1beta1-spec`` annotation when present, else the
    object's ``spec``. An annotation that is not JSON is a failure on the annotation (spec ``None``)."""
    r = reader or Reader()
    annotations = Metadata.parse(obj).annotations
    text = annotations.get(V1BETA1_SPEC_ANNOTATION)
    if text is None:
        return obj.get("spec"), False
    try:
        return json.loads(text), True
    except ValueError as exc:
        r.fail(SPEC_ANNOTATION_PATH, f"must be the JSON of a v1beta1 spec: {exc}")
        return None, True


def looks_v1beta1(obj: Mapping[str, Any]) -> bool:
    """Whether an APIRule without the ``original-version`` annotation is a v1beta1 object: its
    ``apiVersion`` says so, or its spec has v1beta1 fields (``host``, ``accessStrategies``) and none of
    v2 (``hosts``) — what an API server that does not convert returns when read as v2."""
    if str(obj.get("apiVersion", "")).endswith("/v1beta1"):
        return True
    spec = obj.get("spec")
    if not isinstance(spec, dict) or "hosts" in spec:
        return False
    rules = spec.get("rules")
    has_strategies = isinstance(rules, list) and any(isinstance(r, dict) and "accessStrategies" in r for r in rules)
    return "host" in spec or has_strategies


def referenced_services(obj: Mapping[str, Any] | V1beta1APIRule) -> list[tuple[str, str]]:
    """``(namespace, name)`` of every Service a v1beta1 APIRule (a manifest, or parsed) references,
    in first-use order."""
    rule = obj if isinstance(obj, V1beta1APIRule) else V1beta1APIRule.parse(obj)
    refs: list[tuple[str, str]] = []
    candidates: list[tuple[V1beta1Rule | None, ServiceRef | None]] = [(r, rule.rule_service(r)) for r in rule.rules]
    if rule.service is not None:
        candidates.append((None, rule.service))
    for r, service in candidates:
        if service is None or not service.name:
            continue
        namespace = service.namespace or rule.service_namespace(r) or "default"
        if (namespace, service.name) not in refs:
            refs.append((namespace, service.name))
    return refs
