"""APIRule conversion between v1beta1, v2alpha1 (the hub and storage version) and v2 (pure).

As api-gateway's ``apis/gateway/{v1beta1,v2}/apirule_conversion.go`` (+ ``jwt_conversion.go``,
``path_conversion.go``, ``internal/gatewaytranslator``); notes §1.5-§1.6. Objects are plain dicts;
:func:`convert` takes any of the three versions to any other through the hub. What survives which
step:

- **v1beta1 → v2alpha1**: metadata; status ``APIRuleStatus.code`` → ``state`` (OK→Ready, ERROR→Error,
  WARNING→Warning, SKIPPED→Warning); unless ``original-version`` is ``v2``/``v2alpha1`` the whole v1beta1
  spec goes to the ``v1beta1-spec`` annotation (JSON, Go's field order) and ``original-version`` becomes
  ``v1beta1``; the gateway in the legacy format (``name.namespace.svc.cluster.local``) becomes
  ``namespace/name`` (dropped when that is not a valid ``namespace/name``); ``host`` → ``hosts``;
  service, timeout, CORS (``maxAge`` duration → whole seconds); rules only when *every* rule converts
  (v2 path syntax, access strategies ``no_auth`` or a convertible ``jwt``), ``header``/``cookie``
  mutators → ``request.headers``/``request.cookies``; or the rules of the ``v2alpha1-rules``
  annotation for objects of a v2 origin.
- **v2alpha1 → v1beta1**: metadata; status ``state`` → code (Ready→OK, Error→ERROR, Warning→WARNING,
  Deleting→OK); the spec comes back from ``v1beta1-spec`` when ``original-version`` is ``v1beta1``,
  else it is empty. So v1beta1 → v2alpha1 → v1beta1 keeps the spec exactly.
- **v2 → v2alpha1**: a copy; ``original-version`` becomes ``v2`` when absent, or when it says
  ``v1beta1`` but the v2 object has rules.
- **v2alpha1 → v2**: a copy; without ``spec.gateway`` an object of v1beta1 origin gets gateway,
  service, timeout, host (and CORS, only if the object has a CORS policy: the original's quirk) from
  its ``v1beta1-spec`` annotation. The original resolves a one-part legacy gateway name against an
  empty namespace there (so it is dropped): reproduced.

Deliberate differences: status ``observedGeneration`` (a Reconcilery addition to v2/v2alpha1) maps to
the v1beta1 status field of that name; a v2 read of a v1beta1-origin object whose annotation has no
CORS policy keeps its CORS policy (the original dereferences nil and the webhook call fails); a
``jwt`` access strategy whose ``config`` is not an object makes the rules unconvertible (the original
fails the conversion); an annotation that is missing or not JSON is ignored (the original fails the
conversion, and a failing object makes every LIST of that version fail). Only an object that is not an
APIRule of a served version raises :class:`ConversionError`.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from tasks.apigateway import model
from tasks.apigateway.parsing import V1BETA1_SPEC_ANNOTATION

__all__ = [
    "HUB",
    "ConversionError",
    "convert",
    "format_go_duration",
    "parse_go_duration",
    "translate_gateway",
]

Obj = dict[str, Any]
HUB = "v2alpha1"
V2ALPHA1_RULES_ANNOTATION = "gateway.kyma-project.io/v2alpha1-rules"
ORIGINAL = model.ORIGINAL_VERSION_ANNOTATION
V1BETA1_SPEC = V1BETA1_SPEC_ANNOTATION

_V1_TO_STATE = {"OK": "Ready", "ERROR": "Error", "WARNING": "Warning", "SKIPPED": "Warning"}
_STATE_TO_V1 = {"Ready": "OK", "Error": "ERROR", "Warning": "WARNING", "Deleting": "OK"}
#: The v2 path syntax (literal segments, ``{*}``, ``{**}``, or exactly ``/*``).
V2_PATH = re.compile(r"^((\/([A-Za-z0-9-._~!$&'()+,;=:@]|%[0-9a-fA-F]{2})*)|(\/\{\*{1,2}\}))+$|^\/\*$")
_OLD_GATEWAY = re.compile(r"^[0-9a-z-_]+(\/[0-9a-z-_]+|(\.[0-9a-z-_]+)*)$")
_NEW_GATEWAY = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\/([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)$")


class ConversionError(Exception):
    """An object that cannot be converted (the ConversionReview then fails with this message)."""


# ---- gateway names (internal/gatewaytranslator) ---------------------------------------------------


def is_new_gateway_format(name: str) -> bool:
    """``namespace/name`` with RFC 1123 labels."""
    return bool(_NEW_GATEWAY.match(name))


def is_old_gateway_format(name: str) -> bool:
    """The v1beta1 pattern, not already ``namespace/name``."""
    return not is_new_gateway_format(name) and bool(_OLD_GATEWAY.match(name))


def translate_gateway(name: str, namespace: str) -> str:
    """A legacy gateway name as ``namespace/name``: ``gw.ns.svc.cluster.local``, ``gw.ns.svc.cluster``,
    ``gw.ns.svc``, ``gw.ns`` → ``ns/gw``; ``gw`` → ``<namespace>/gw``. Raises :class:`ValueError`
    ("gateway name (X) is not in old gateway format") otherwise."""
    parts = name.split(".")
    if len(parts) == 5:
        name = name.removesuffix(".svc.cluster.local")
    elif len(parts) == 4:
        name = name.removesuffix(".svc.cluster")
    elif len(parts) == 3:
        name = name.removesuffix(".svc")
    elif len(parts) == 2:
        return f"{parts[1]}/{parts[0]}"
    elif len(parts) == 1:
        return f"{namespace}/{name}"
    parts = name.split(".")
    if len(parts) == 2:
        return f"{parts[1]}/{parts[0]}"
    raise ValueError(f"gateway name ({name}) is not in old gateway format")


def _converted_gateway(gateway: Any, namespace: str) -> str | None:
    if not isinstance(gateway, str):
        return None
    if is_old_gateway_format(gateway):
        try:
            gateway = translate_gateway(gateway, namespace)
        except ValueError:
            return None
    return gateway if is_new_gateway_format(gateway) else None


# ---- Go durations (metav1.Duration of v1beta1 corsPolicy.maxAge) -----------------------------------

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds of a Go duration string (``90s``, ``1m30s``, ``1.5h``, ``-2s``, ``0``).

    Raises :class:`ValueError` for anything ``time.ParseDuration`` rejects.
    """
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"time: invalid duration {text!r}")
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s):
        raise ValueError(f"time: invalid duration {text!r}")
    return sign * total


def format_go_duration(seconds: float) -> str:
    """``time.Duration.String()``: ``1m30s``, ``1h0m0s``, ``500ms``, ``0s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                value = f"{ns / size:.9f}".rstrip("0").rstrip(".")
                return f"{sign}{value}{unit}"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = f"{rest / 1e9:.9f}".rstrip("0").rstrip(".")
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


# ---- Go-shaped JSON of the v1beta1 spec (the v1beta1-spec annotation) ------------------------------

# (json key, how Go emits it, nested shape): "always" (no omitempty: null when absent), "ptr" (a pointer
# with omitempty: left out only when nil), "slice" (omitempty slice or map: left out when nil or empty)
_SERVICE = (("name", "always", None), ("namespace", "ptr", None), ("port", "always", None), ("external", "ptr", None))
_HANDLER = (("handler", "always", None), ("config", "ptr", None))
_CORS = (("allowHeaders", "slice", None), ("allowMethods", "slice", None), ("allowOrigins", "slice", None),
         ("allowCredentials", "ptr", None), ("exposeHeaders", "slice", None), ("maxAge", "ptr", "duration"))
_RULE = (("path", "always", None), ("service", "ptr", _SERVICE), ("methods", "always", None),
         ("accessStrategies", "always", [_HANDLER]), ("mutators", "slice", [_HANDLER]), ("timeout", "ptr", None))
_SPEC = (("host", "always", None), ("service", "ptr", _SERVICE), ("gateway", "always", None),
         ("corsPolicy", "ptr", _CORS), ("rules", "always", [_RULE]), ("timeout", "ptr", None))


def _go_shape(value: Any, shape: Any) -> Any:
    if shape == "duration":
        if isinstance(value, str):
            try:
                return format_go_duration(parse_go_duration(value))
            except ValueError:
                return value
        return value
    if isinstance(shape, list):
        return [_go_shape(v, shape[0]) for v in value] if isinstance(value, list) else value
    if isinstance(shape, tuple) and isinstance(value, Mapping):
        out: Obj = {}
        for key, mode, sub in shape:
            item = value.get(key)
            if item is None:
                if mode == "always":
                    out[key] = None
            elif mode != "slice" or item not in ([], {}):
                out[key] = _go_shape(item, sub) if sub is not None else item
        return out
    return value


def go_json(value: Any) -> str:
    """``json.Marshal`` bytes as text: compact, HTML characters escaped as Go does."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def v1beta1_spec_annotation(spec: Mapping[str, Any]) -> str:
    """The ``v1beta1-spec`` annotation of a v1beta1 spec (``json.Marshal(ruleV1.Spec)``)."""
    return go_json(_go_shape(spec, _SPEC))


def _drop_nulls(value: Any) -> Any:
    """What the API server keeps of Go's ``null`` fields (non-nullable nulls are pruned)."""
    if isinstance(value, Mapping):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


# ---- helpers ---------------------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> Obj:
    meta = obj.get("metadata")
    return copy.deepcopy(dict(meta)) if isinstance(meta, Mapping) else {}


def _annotations(meta: Obj) -> Obj:
    ann = meta.get("annotations")
    if not isinstance(ann, dict):
        ann = {}
        meta["annotations"] = ann
    return ann


def _map(value: Any) -> Obj:
    return dict(value) if isinstance(value, Mapping) else {}


def _version(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or "/" not in api_version:
        raise ConversionError(f"object has no apiVersion of group {model.GROUP}: {api_version!r}")
    group, _, version = api_version.partition("/")
    if group != model.GROUP or version not in model.VERSIONS:
        raise ConversionError(f"unsupported apiVersion {api_version!r}: expected {model.GROUP}/"
                              f"{'|'.join(model.VERSIONS)}")
    return version


def _object(version: str, meta: Obj, spec: Obj | None, status: Obj | None) -> Obj:
    out: Obj = {"apiVersion": f"{model.GROUP}/{version}", "kind": model.KIND, "metadata": meta}
    if spec is not None:
        out["spec"] = spec
    if status:
        out["status"] = status
    return out


# ---- jwt (jwt_conversion.go) -----------------------------------------------------------------------

_ISTIO_AUTHN = ("issuer", "jwksUri", "fromHeaders", "fromParams")
_ISTIO_AUTHZ = ("requiredScopes", "audiences")


def _istio_jwt(config: Mapping[str, Any]) -> tuple[list[Any] | None, list[Any] | None]:
    authn = config.get("authentications")
    authz = config.get("authorizations")
    return (authn if isinstance(authn, list) else None), (authz if isinstance(authz, list) else None)


def _ory_jwt(config: Mapping[str, Any]) -> tuple[list[str], list[str], list[Any] | None, list[Any] | None]:
    def strs(key: str) -> list[str]:
        value = config.get(key)
        return [str(v) for v in value] if isinstance(value, list) else []

    scopes, audiences = config.get("required_scope"), config.get("target_audience")
    return (strs("trusted_issuers"), strs("jwks_urls"), scopes if isinstance(scopes, list) else None,
            audiences if isinstance(audiences, list) else None)


def _jwt_convertible(strategy: Mapping[str, Any]) -> bool:
    config = strategy.get("config")
    if not isinstance(config, Mapping):
        return False
    authn, authz = _istio_jwt(config)
    if authn or authz:
        return True
    issuers, jwks, _, _ = _ory_jwt(config)
    return len(issuers) == 1 and len(jwks) == 1


def _jwt_config(strategy: Mapping[str, Any]) -> Obj:
    """A convertible ``jwt`` access strategy's config as a v2alpha1 ``jwt`` (Istio or Ory style)."""
    config = _map(strategy.get("config"))
    authn, authz = _istio_jwt(config)
    if authn is None and authz is None:
        issuers, jwks, scopes, audiences = _ory_jwt(config)
        authorization: Obj = {}
        if scopes:
            authorization["requiredScopes"] = scopes
        if audiences:
            authorization["audiences"] = audiences
        return {"authentications": [{"issuer": issuers[0], "jwksUri": jwks[0]}], "authorizations": [authorization]}
    out: Obj = {}
    if authn:
        out["authentications"] = [_pick(a, _ISTIO_AUTHN, required=("issuer", "jwksUri")) for a in authn]
    if authz:
        out["authorizations"] = [_pick(a, _ISTIO_AUTHZ) for a in authz]
    return out


def _pick(value: Any, keys: tuple[str, ...], required: tuple[str, ...] = ()) -> Any:
    if not isinstance(value, Mapping):
        return value
    out = {k: copy.deepcopy(value[k]) for k in keys if value.get(k) not in (None, [], "") or k in required}
    for k in required:
        out.setdefault(k, "")
        if out[k] is None:
            out[k] = ""
    return out


# ---- v1beta1 <-> hub ---------------------------------------------------------------------------------


def _rules_convertible(rules: list[Any]) -> bool:
    for rule in rules:
        rule = _map(rule)
        if not isinstance(rule.get("path"), str) or not V2_PATH.match(rule["path"]):
            return False
        for strategy in rule.get("accessStrategies") or []:
            strategy = _map(strategy)
            if strategy.get("handler") == "no_auth":
                continue
            if strategy.get("handler") == "jwt" and _jwt_convertible(strategy):
                continue
            return False
    return True


def _convert_rule(rule: Mapping[str, Any]) -> Obj:
    out: Obj = {k: copy.deepcopy(rule[k]) for k in ("path", "service", "methods", "timeout") if rule.get(k) is not None}
    for strategy in rule.get("accessStrategies") or []:
        strategy = _map(strategy)
        if strategy.get("handler") == "no_auth":
            out["noAuth"] = True
        elif strategy.get("handler") == "jwt":
            out["jwt"] = _jwt_config(strategy)
    mutators = rule.get("mutators")
    if isinstance(mutators, list):
        request: Obj = {}
        for mutator in mutators:
            mutator = _map(mutator)
            config = _map(mutator.get("config"))
            if mutator.get("handler") == "header" and isinstance(config.get("headers"), Mapping):
                request["headers"] = {str(k): str(v) for k, v in config["headers"].items()}
            elif mutator.get("handler") == "cookie" and isinstance(config.get("cookies"), Mapping):
                request["cookies"] = {str(k): str(v) for k, v in config["cookies"].items()}
        out["request"] = request
    return out


def _cors_v1_to_v2(cors: Mapping[str, Any]) -> Obj:
    out: Obj = {k: copy.deepcopy(cors[k]) for k in ("allowHeaders", "allowMethods", "allowOrigins",
                                                    "allowCredentials", "exposeHeaders") if cors.get(k) is not None}
    max_age = cors.get("maxAge")
    if isinstance(max_age, str):
        try:
            seconds = parse_go_duration(max_age)
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds >= 0:
            out["maxAge"] = int(seconds)  # truncated to whole seconds, as uint64(d.Seconds())
    elif isinstance(max_age, int) and not isinstance(max_age, bool) and max_age >= 0:
        out["maxAge"] = max_age
    return out


def v1beta1_to_hub(obj: Mapping[str, Any]) -> Obj:
    """A v1beta1 APIRule as v2alpha1 (see the module doc). Raises :class:`ConversionError`."""
    meta = _meta(obj)
    namespace = str(meta.get("namespace") or "")
    spec = _map(obj.get("spec"))
    v1_status = _map(obj.get("status"))
    status: Obj = {}
    code = _map(v1_status.get("APIRuleStatus")).get("code")
    if code:
        status["state"] = _V1_TO_STATE.get(str(code), "")
        desc = _map(v1_status.get("APIRuleStatus")).get("desc")
        if desc:
            status["description"] = desc
        if v1_status.get("lastProcessedTime"):
            status["lastProcessedTime"] = v1_status["lastProcessedTime"]
        if v1_status.get("observedGeneration"):
            status["observedGeneration"] = v1_status["observedGeneration"]
    annotations = _annotations(meta)
    if annotations.get(ORIGINAL) not in ("v2", "v2alpha1"):
        annotations[V1BETA1_SPEC] = v1beta1_spec_annotation(spec)
        annotations[ORIGINAL] = "v1beta1"
    hub: Obj = {}
    gateway = _converted_gateway(spec.get("gateway"), namespace)
    if gateway is not None:
        hub["gateway"] = gateway
    for key in ("service", "timeout"):
        if spec.get(key) is not None:
            hub[key] = copy.deepcopy(spec[key])
    if isinstance(spec.get("corsPolicy"), Mapping):
        hub["corsPolicy"] = _cors_v1_to_v2(spec["corsPolicy"])
    if isinstance(spec.get("host"), str):
        hub["hosts"] = [spec["host"]]
    raw_rules = spec.get("rules")
    rules: list[Any] = raw_rules if isinstance(raw_rules, list) else []
    if _rules_convertible(rules):
        v2_rules = _map(obj.get("metadata")).get("annotations") or {}
        raw = v2_rules.get(V2ALPHA1_RULES_ANNOTATION) if isinstance(v2_rules, Mapping) else None
        annotated = _json_list(raw) if annotations.get(ORIGINAL) in ("v2", "v2alpha1") else None
        if annotated is not None:
            hub["rules"] = annotated
        elif rules:
            hub["rules"] = [_convert_rule(_map(r)) for r in rules]
    return _object(HUB, meta, _drop_nulls(hub), status)


T = TypeVar("T")


def _json_of(raw: Any, type_: type[T]) -> T | None:
    """``raw`` (an annotation value) read as JSON of ``type_``; ``None`` when it is not."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return value if isinstance(value, type_) else None


def _json_list(raw: Any) -> list[Any] | None:
    return _json_of(raw, list)


def hub_to_v1beta1(obj: Mapping[str, Any]) -> Obj:
    """A v2alpha1 APIRule as v1beta1 (see the module doc). Raises :class:`ConversionError`."""
    meta = _meta(obj)
    status: Obj = {}
    hub_status = _map(obj.get("status"))
    state = hub_status.get("state")
    if state:
        rule_status: Obj = {}
        code = _STATE_TO_V1.get(str(state), "")
        if code:
            rule_status["code"] = code
        if hub_status.get("description"):
            rule_status["desc"] = hub_status["description"]
        status["APIRuleStatus"] = rule_status
        if hub_status.get("lastProcessedTime"):
            status["lastProcessedTime"] = hub_status["lastProcessedTime"]
        if hub_status.get("observedGeneration"):
            status["observedGeneration"] = hub_status["observedGeneration"]
    spec: Obj = {}
    annotations = _map(meta.get("annotations"))
    if annotations.get(ORIGINAL) == "v1beta1":
        spec = _v1beta1_spec_of(annotations) or {}
    return _object("v1beta1", meta, _drop_nulls(spec), status)


def _v1beta1_spec_of(annotations: Mapping[str, Any]) -> Obj | None:
    """The spec of the ``v1beta1-spec`` annotation; ``None`` when it is missing or not a JSON object
    (the original fails the whole conversion, so one edited annotation breaks listing every APIRule)."""
    return _json_of(annotations.get(V1BETA1_SPEC), dict)


# ---- v2 <-> hub --------------------------------------------------------------------------------------


def v2_to_hub(obj: Mapping[str, Any]) -> Obj:
    """A v2 APIRule as v2alpha1: a copy, and ``original-version: v2`` when absent (or v1beta1 with rules)."""
    meta = _meta(obj)
    annotations = _annotations(meta)
    spec = copy.deepcopy(_map(obj.get("spec")))
    if ORIGINAL not in annotations or (annotations[ORIGINAL] == "v1beta1" and spec.get("rules")):
        annotations[ORIGINAL] = "v2"
    return _object(HUB, meta, spec, copy.deepcopy(_map(obj.get("status"))))


def hub_to_v2(obj: Mapping[str, Any]) -> Obj:
    """A v2alpha1 APIRule as v2: a copy; objects of v1beta1 origin without a gateway get gateway,
    service, timeout and host (and CORS, see the module doc) from their ``v1beta1-spec``."""
    meta = _meta(obj)
    spec = copy.deepcopy(_map(obj.get("spec")))
    annotations = _map(meta.get("annotations"))
    v1 = _v1beta1_spec_of(annotations) if annotations.get(ORIGINAL) == "v1beta1" else None
    if spec.get("gateway") is None and v1 is not None:
        gateway = _converted_gateway(v1.get("gateway"), "")  # the original's empty namespace
        spec.pop("gateway", None)
        if gateway is not None:
            spec["gateway"] = gateway
        for key in ("service", "timeout"):
            spec.pop(key, None)
            if v1.get(key) is not None:
                spec[key] = copy.deepcopy(v1[key])
        if spec.get("corsPolicy") is not None and isinstance(v1.get("corsPolicy"), Mapping):
            spec["corsPolicy"] = _cors_v1_to_v2(v1["corsPolicy"])
        if isinstance(v1.get("host"), str):
            spec["hosts"] = [v1["host"]]
    return _object("v2", meta, spec, copy.deepcopy(_map(obj.get("status"))))


# ---- any to any ----------------------------------------------------------------------------------------


def convert(obj: Mapping[str, Any], desired_api_version: str) -> Obj:
    """``obj`` (an APIRule of any served version) as ``desired_api_version``, through the hub.

    An object already in the desired version comes back unchanged (a copy). Raises
    :class:`ConversionError` for an object or version that is not an APIRule's, or an unreadable
    annotation.
    """
    if not isinstance(obj, Mapping):
        raise ConversionError(f"object is not a JSON object: {type(obj).__name__}")
    source = _version(obj)
    target = _version({"apiVersion": desired_api_version})
    if source == target:
        return copy.deepcopy(dict(obj))
    hub = dict(obj) if source == HUB else (v1beta1_to_hub(obj) if source == "v1beta1" else v2_to_hub(obj))
    if target == HUB:
        return hub if source != HUB else copy.deepcopy(hub)
    return hub_to_v1beta1(hub) if target == "v1beta1" else hub_to_v2(hub)
