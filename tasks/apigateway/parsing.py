"""Parsing the API Gateway domain's objects: wrong JSON types become failures with attribute paths.

Every parser of the domain (APIRule v2/v2alpha1 and v1beta1, RateLimit, APIGateway) reads through a
:class:`Reader`, so parsing never raises on a value of the wrong type: the reader returns a harmless
default (``None``, ``[]``, ``{}``) and records a :class:`ValidationFailure` naming the attribute, and the planner
turns the failures into an ``Error`` status. ``null`` counts as absent (the API server prunes ``null``
from fields that are not nullable). Cluster objects and metadata are read leniently (:func:`as_dict`,
:class:`Metadata`). The spec values both APIRule versions share (service, JWT, CORS) live here, so the
v2 model (:mod:`tasks.apigateway.model`) and the v1beta1 one (:mod:`tasks.apigateway.v1beta1.model`)
import this module and never each other the other way round.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kube.manifests import json_type
from kube.toolkit.outcome import deleting

#: The annotation holding the v1beta1 spec of an APIRule stored as v2alpha1 (the conversion webhook's).
V1BETA1_SPEC_ANNOTATION = "gateway.kyma-project.io/v1beta1-spec"

_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
                   "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration_ns(text: str) -> int:
    """Nanoseconds of a Go duration string (``time.ParseDuration``: ``60s``, ``1m30s``, ``50ms``,
    ``-1.5h``, ``0``), exact (no float rounding). Raises ``ValueError`` with Go's wording otherwise."""
    raw = text
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f'time: invalid duration "{raw}"')
    total, pos = Decimal(0), 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            if re.fullmatch(r"[0-9.]+", text[pos:]):
                raise ValueError(f'time: missing unit in duration "{raw}"')
            raise ValueError(f'time: invalid duration "{raw}"')
        total += Decimal(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * int(total)


@dataclass(frozen=True)
class ValidationFailure:
    """One validation failure: ``attribute_path`` (``.spec.rules[0].path``) and the ``message``."""

    attribute_path: str
    message: str

    def __str__(self) -> str:
        return f"Attribute '{self.attribute_path}': {self.message}"


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (reading cluster objects defensively)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]``."""
    return value if isinstance(value, list) else []


def type_message(expected: str, value: Any) -> str:
    """``must be of type array, got integer``."""
    return f"must be of type {expected}, got {json_type(value)}"


@dataclass
class Reader:
    """Collects the failures of one parse. Each ``read`` method takes the raw value and its attribute
    path and returns the value when its type is right, otherwise a default (and records why)."""

    failures: list[ValidationFailure] = field(default_factory=list)

    def fail(self, path: str, message: str) -> None:
        self.failures.append(ValidationFailure(path, message))

    def _typed(self, value: Any, path: str, expected: str, ok: bool) -> bool:
        if value is None:
            return False
        if not ok:
            self.fail(path, type_message(expected, value))
        return ok

    def object(self, value: Any, path: str) -> dict[str, Any]:
        """A JSON object (``{}`` when absent or of another type)."""
        return value if self._typed(value, path, "object", isinstance(value, dict)) else {}

    def opt_object(self, value: Any, path: str) -> dict[str, Any] | None:
        """A JSON object, or ``None`` when absent or of another type."""
        return value if self._typed(value, path, "object", isinstance(value, dict)) else None

    @classmethod
    def section(cls, reader: Reader | None, raw: Any, path: str) -> tuple[Reader, dict[str, Any] | None]:
        """``reader`` (a new one for ``None``) and the optional object ``raw`` at ``path``
        (:meth:`opt_object`): how a nested parser starts."""
        r = reader or cls()
        return r, r.opt_object(raw, path)

    def array(self, value: Any, path: str) -> list[Any]:
        """A JSON array (``[]`` when absent or of another type)."""
        return value if self._typed(value, path, "array", isinstance(value, list)) else []

    def opt_array(self, value: Any, path: str) -> list[Any] | None:
        """A JSON array, or ``None`` when absent or of another type (``[]`` stays ``[]``)."""
        return value if self._typed(value, path, "array", isinstance(value, list)) else None

    def string(self, value: Any, path: str) -> str | None:
        return value if self._typed(value, path, "string", isinstance(value, str)) else None

    def integer(self, value: Any, path: str) -> int | None:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if self._typed(value, path, "integer", ok) else None

    def boolean(self, value: Any, path: str) -> bool | None:
        return value if self._typed(value, path, "boolean", isinstance(value, bool)) else None

    def duration(self, value: Any, path: str) -> int | None:
        """A Go duration string (``60s``, ``50ms``) in nanoseconds; other values are failures."""
        text = self.string(value, path)
        if text is None:
            return None
        try:
            return parse_duration_ns(text)
        except ValueError as exc:
            self.fail(path, f"must be a duration such as 60s or 50ms: {exc}")
            return None

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        """An array of strings; entries of another type are failures and left out."""
        return tuple(s for i, item in enumerate(self.array(value, path))
                     if (s := self.string_item(item, f"{path}[{i}]")) is not None)

    def opt_strings(self, value: Any, path: str) -> tuple[str, ...] | None:
        """As :meth:`strings`, but ``None`` when absent (``[]`` stays ``()``)."""
        return None if self.opt_array(value, path) is None else self.strings(value, path)

    def string_item(self, value: Any, path: str) -> str | None:
        """An array entry that must be a string (``null`` entries are failures too)."""
        if value is None:
            self.fail(path, type_message("string", value))
            return None
        return self.string(value, path)

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        """An object of strings (labels, headers, cookies); other values are failures and left out."""
        return {str(k): s for k, item in self.object(value, path).items()
                if (s := self.string_item(item, f"{path}.{k}")) is not None}

    def objects(self, value: Any, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index, object)`` for every array entry that is an object; other entries are failures."""
        for i, item in enumerate(self.array(value, path)):
            if isinstance(item, dict):
                yield i, item
            else:
                self.fail(f"{path}[{i}]", type_message("object", item))


# --- lenient readers (metadata and cluster objects; user specs go through Reader) ----------


def as_str(value: Any) -> str:
    """``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def opt_int(value: Any) -> int | None:
    """``value`` when it is an integer (not a bool), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def strs(value: Any) -> tuple[str, ...]:
    """The strings of a JSON array (others left out); ``()`` for anything else."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def str_map(value: Any) -> dict[str, str]:
    """The string values of a JSON object (others left out); ``{}`` for anything else."""
    return {str(k): v for k, v in value.items() if isinstance(v, str)} if isinstance(value, dict) else {}


# --- values both APIRule versions share -------------------------------------------------------


@dataclass(frozen=True)
class ServiceRef:
    """``spec.service`` / ``spec.rules[i].service``: ``name``, optional ``namespace``, ``port``."""

    name: str | None
    namespace: str | None
    port: int | None

    @classmethod
    def parse(cls, raw: Any, path: str = ".spec.service", reader: Reader | None = None) -> ServiceRef | None:
        r, obj = Reader.section(reader, raw, path)
        if obj is None:
            return None
        return cls(r.string(obj.get("name"), path + ".name"), r.string(obj.get("namespace"), path + ".namespace"),
                   r.integer(obj.get("port"), path + ".port"))


@dataclass(frozen=True)
class FromHeader:
    name: str
    prefix: str | None


@dataclass(frozen=True)
class JwtAuthentication:
    """One trusted issuer: ``issuer``, ``jwksUri``, token locations ``fromHeaders`` / ``fromParams``."""

    issuer: str
    jwks_uri: str
    from_headers: tuple[FromHeader, ...]
    from_params: tuple[str, ...]

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, r: Reader) -> JwtAuthentication:
        headers = tuple(
            FromHeader(r.string(h.get("name"), f"{path}.fromHeaders[{i}].name") or "",
                       r.string(h.get("prefix"), f"{path}.fromHeaders[{i}].prefix"))
            for i, h in r.objects(raw.get("fromHeaders"), path + ".fromHeaders")
        )
        return cls(r.string(raw.get("issuer"), path + ".issuer") or "",
                   r.string(raw.get("jwksUri"), path + ".jwksUri") or "", headers,
                   r.strings(raw.get("fromParams"), path + ".fromParams"))


@dataclass(frozen=True)
class JwtAuthorization:
    """``requiredScopes`` and ``audiences``; ``None`` = not given, ``()`` = given empty."""

    required_scopes: tuple[str, ...] | None
    audiences: tuple[str, ...] | None


@dataclass(frozen=True)
class JwtConfig:
    """``jwt`` of a rule or ``extAuth.restrictions``; an authorization entry is ``None`` when null."""

    authentications: tuple[JwtAuthentication, ...]
    authorizations: tuple[JwtAuthorization | None, ...] | None

    @classmethod
    def parse(cls, raw: Any, path: str = ".jwt", reader: Reader | None = None) -> JwtConfig | None:
        r, obj = Reader.section(reader, raw, path)
        if obj is None:
            return None
        authentications = tuple(JwtAuthentication.parse(a, f"{path}.authentications[{i}]", r)
                                for i, a in r.objects(obj.get("authentications"), path + ".authentications"))
        authorizations: tuple[JwtAuthorization | None, ...] | None = None
        items = r.opt_array(obj.get("authorizations"), path + ".authorizations")
        if items is not None:
            parsed: list[JwtAuthorization | None] = []
            for i, a in enumerate(items):
                at = f"{path}.authorizations[{i}]"
                if a is None:
                    parsed.append(None)  # "authorization is empty", as the original
                elif (item := r.opt_object(a, at)) is not None:
                    parsed.append(JwtAuthorization(r.opt_strings(item.get("requiredScopes"), at + ".requiredScopes"),
                                                   r.opt_strings(item.get("audiences"), at + ".audiences")))
            authorizations = tuple(parsed)
        return cls(authentications, authorizations)




@dataclass(frozen=True)
class CorsPolicy:
    """``spec.corsPolicy``; ``allow_origins`` keeps the one-key maps (``exact``/``prefix``/``regex``).

    ``max_age`` is seconds (v2: an integer; v1beta1: a Go duration string, read by the v1beta1 model).
    """

    allow_origins: tuple[dict[str, str], ...]
    allow_methods: tuple[str, ...]
    allow_headers: tuple[str, ...]
    expose_headers: tuple[str, ...]
    allow_credentials: bool | None
    max_age: int | None

    @classmethod
    def parse(cls, raw: Any, path: str = ".spec.corsPolicy", reader: Reader | None = None,
              max_age: int | None = None, read_max_age: bool = True) -> CorsPolicy | None:
        r, obj = Reader.section(reader, raw, path)
        if obj is None:
            return None
        return cls(
            allow_origins=tuple(r.string_map(o, f"{path}.allowOrigins[{i}]")
                                for i, o in r.objects(obj.get("allowOrigins"), path + ".allowOrigins")),
            allow_methods=r.strings(obj.get("allowMethods"), path + ".allowMethods"),
            allow_headers=r.strings(obj.get("allowHeaders"), path + ".allowHeaders"),
            expose_headers=r.strings(obj.get("exposeHeaders"), path + ".exposeHeaders"),
            allow_credentials=r.boolean(obj.get("allowCredentials"), path + ".allowCredentials"),
            max_age=r.integer(obj.get("maxAge"), path + ".maxAge") if read_max_age else max_age,
        )


@dataclass(frozen=True)
class Metadata:
    """What every parser reads from ``metadata`` (the API server guarantees its types; a manifest given
    to ``render`` may not, so this never raises either)."""

    name: str
    namespace: str
    annotations: dict[str, str]
    labels: dict[str, str]
    finalizers: tuple[str, ...]
    deleting: bool
    generation: int | None
    creation_timestamp: str
    uid: str = ""

    @classmethod
    def parse(cls, obj: Mapping[str, Any], default_namespace: str = "default") -> Metadata:
        meta = as_dict(obj.get("metadata"))
        return cls(
            name=as_str(meta.get("name")),
            namespace=as_str(meta.get("namespace")) or default_namespace,
            annotations=str_map(meta.get("annotations")),
            labels=str_map(meta.get("labels")),
            finalizers=strs(meta.get("finalizers")),
            deleting=deleting(obj),
            generation=opt_int(meta.get("generation")),
            creation_timestamp=as_str(meta.get("creationTimestamp")),
            uid=as_str(meta.get("uid")),
        )


def open_manifest(obj: Mapping[str, Any], default_namespace: str = "default") -> tuple[
        dict[str, Any], Metadata, Reader, dict[str, Any]]:
    """What every custom resource parser starts with: ``(raw copy, metadata, a fresh Reader, spec)``
    (a ``spec`` of the wrong type is a failure in the reader and reads as ``{}``). Never raises."""
    raw = dict(obj)
    r = Reader()
    return raw, Metadata.parse(raw, default_namespace), r, r.object(raw.get("spec"), ".spec")
