"""Structural OpenAPI v3 schemas of CRD versions: pruning, defaulting and validation (pure).

What the API server does to a custom object on create and update, after
``k8s.io/apiextensions-apiserver/pkg/apiserver/schema`` (pruning, defaulting) and ``.../validation``
(kube-openapi validation, then ``x-kubernetes-validations``):

1. **prune** fields no schema declares (unless ``x-kubernetes-preserve-unknown-fields: true`` or
   ``additionalProperties``); ``apiVersion``, ``kind`` and ``metadata`` of the root and of
   ``x-kubernetes-embedded-resource`` objects stay;
2. drop ``null`` values of properties that are not ``nullable`` and have no default, then apply
   ``default`` values of missing (or such ``null``) properties;
3. **validate** types (``integer``, ``number``, ``string``, ``boolean``, ``object``, ``array``;
   ``x-kubernetes-int-or-string``; ``nullable``), ``required``, ``enum``, ``pattern`` (RE2),
   ``minimum``/``maximum`` (and exclusive), ``multipleOf``, ``minLength``/``maxLength``,
   ``minItems``/``maxItems``, ``minProperties``/``maxProperties``, cheap ``format`` s (``date-time``,
   ``date``, ``byte``, ``uuid``, ``ipv4``, ``ipv6``, ``cidr``, ``int32``, ``int64``), ``allOf`` /
   ``anyOf`` / ``oneOf`` / ``not``, ``x-kubernetes-list-type`` ``set``/``map`` uniqueness, and the
   ``apiVersion``/``kind`` of embedded resources;
4. evaluate ``x-kubernetes-validations`` (:mod:`kubedev.cel`) unless step 3 found a type or enum
   error (the API server's "blocking" errors).

Updates ratchet as Kubernetes ≥ 1.30 does (``CRDValidationRatcheting``): a value equal to the old
object's value at the same place (object properties, map keys and ``x-kubernetes-list-type: map``
items correlate) is not validated again, so an object stored before a schema tightened can still get
its status written. Errors are :class:`FieldError` s worded as ``k8s.io/apimachinery/.../field``
(``spec.rules[0].path: Invalid value: "x": spec.rules[0].path in body should match '^/'``).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import json
import math
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubedev import cel

try:  # Go's regexp is RE2; google-re2 (a dependency of cel-python) has the same syntax
    import re2 as _re2
except ImportError:  # pragma: no cover - fall back to Python's engine
    _re2 = None

__all__ = ["OMIT", "FieldError", "Schema", "aggregate", "go_value"]


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


#: A :class:`FieldError` without a value (``Required value``, ``Forbidden``, ``Too long``).
OMIT: Any = _Omit()

_WORDS = {
    "FieldValueRequired": "Required value", "FieldValueInvalid": "Invalid value",
    "FieldValueTypeInvalid": "Invalid value", "FieldValueNotSupported": "Unsupported value",
    "FieldValueTooLong": "Too long", "FieldValueTooMany": "Too many", "FieldValueForbidden": "Forbidden",
    "FieldValueDuplicate": "Duplicate value", "FieldValueNotFound": "Not found",
}
_NO_VALUE = {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong"}
#: Error reasons after which the API server does not evaluate CEL rules.
BLOCKING = {"FieldValueTypeInvalid", "FieldValueNotSupported"}
NOT_CHECKED = ("some validation rules were not checked because the object was invalid; correct the existing "
               "errors to complete validation")


def go_float(value: float) -> str:
    """``fmt.Sprintf("%v", f)`` of a Go float64 (shortest repr, exponent form outside 1e-4..1e21)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(float(value))
    mantissa, _, exp = text.partition("e")
    digits = len(mantissa.replace("-", "").replace(".", "").lstrip("0").rstrip("0")) or 1
    exponent = math.floor(math.log10(abs(value))) if value else 0
    if exponent < -4 or exponent >= max(21, digits):
        m, _, e = f"{value:.{max(0, digits - 1)}e}".partition("e")
        sign, num = e[0], e[1:].lstrip("0").rjust(2, "0")
        return f"{m}e{sign}{num}"
    if exp:
        text = f"{value:.{max(0, digits - 1 - exponent)}f}"
    return text[:-2] if text.endswith(".0") else text


def go_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: strings quoted, numbers and booleans plain."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))}:{_go_inner(v)}" for k, v in sorted(value.items()))
        return f"map[string]interface {{}}{{{inner}}}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_inner(v) for v in value) + "}"
    return json.dumps(value, default=str)


def _go_inner(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (Mapping, list)):
        return go_value(value)
    return go_value(value)


@dataclass(frozen=True)
class FieldError:
    """One validation failure: ``reason`` (``FieldValueInvalid``...), ``field`` path, bad ``value``
    (:data:`OMIT` for none) and ``detail``. ``str()`` is ``<field>: <body>``."""

    reason: str
    field: str
    value: Any = OMIT
    detail: str = ""

    @property
    def body(self) -> str:
        """``field.Error.ErrorBody()``: ``Invalid value: "x": detail``."""
        text = _WORDS.get(self.reason, "Invalid value")
        if self.reason not in _NO_VALUE and self.value is not OMIT:
            text = f"{text}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"


def aggregate(errors: list[FieldError]) -> str:
    """``ErrorList.ToAggregate().Error()``: one message, or ``[m1, m2]`` (duplicates dropped)."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


# ---- paths ---------------------------------------------------------------------------------------

Path = tuple[tuple[str, Any], ...]  # ("key", name) | ("index", i) | ("mapkey", k)


def _field(path: Path) -> str:
    out = ""
    for kind, part in path:
        if kind == "key":
            out = f"{out}.{part}" if out else str(part)
        else:
            out += f"[{part}]"
    return out or "<nil>"


def _name(path: Path) -> str:
    """The path as kube-openapi names it in messages (map keys with dots)."""
    out = ""
    for kind, part in path:
        out = f"{out}[{part}]" if kind == "index" else (f"{out}.{part}" if out else str(part))
    return out


def _join_field(path: Path, relative: str) -> Path:
    """``fieldPath`` of a rule (``.a.b``, ``.a['b']``, ``.a[0]``) appended to ``path``."""
    out = list(path)
    for m in re.finditer(r"\.([A-Za-z0-9_\-]+)|\[\s*'([^']*)'\s*\]|\[(\d+)\]", relative):
        if m.group(1) is not None:
            out.append(("key", m.group(1)))
        elif m.group(2) is not None:
            out.append(("key", m.group(2)))
        else:
            out.append(("index", int(m.group(3))))
    return tuple(out)


# ---- the compiled schema -------------------------------------------------------------------------


#: JSON Schema type names by Python type, in test order (``bool`` before ``int``: it is one).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
    (list, "array"), (Mapping, "object"),
)


def _json_type(value: Any) -> str:
    """The JSON Schema type name of ``value`` as the API server names it in its errors."""
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _same(a: Any, b: Any) -> bool:
    """JSON equality (``True`` is not ``1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _compile_pattern(pattern: str) -> Any:
    if _re2 is not None:
        try:
            return _re2.compile(pattern)
        except Exception:  # google-re2 raises its own error type; fall back to re
            pass
    try:
        return re.compile(pattern)
    except re.error:
        return None


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _format_ok(fmt: str, value: str) -> bool:
    try:
        if fmt in ("date-time", "datetime"):
            if not _DATE_TIME.match(value):
                return False
            datetime.datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
            return True
        if fmt == "date":
            datetime.date.fromisoformat(value)
            return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None
        if fmt == "byte":
            base64.b64decode(value, validate=True)
            return True
        if fmt == "uuid":
            uuid.UUID(value)
            return re.fullmatch(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}",
                                value) is not None
        if fmt == "ipv4":
            ipaddress.IPv4Address(value)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(value)
            return True
        if fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
            return "/" in value
    except (ValueError, binascii.Error):
        return False
    return True  # formats not checked here (hostname, uri, ...) accept everything


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class Node:
    """One compiled schema node (see :meth:`Schema.compile`)."""

    raw: Mapping[str, Any]
    type: str = ""
    nullable: bool = False
    int_or_string: bool = False
    preserve_unknown: bool = False
    embedded: bool = False
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    additional_any: bool = False
    items: Node | None = None
    required: tuple[str, ...] = ()
    default: Any = OMIT
    pattern: Any = None
    rules: list[cel.CompiledRule | cel.CelError] = field(default_factory=list)
    all_of: list[Node] = field(default_factory=list)
    any_of: list[Node] = field(default_factory=list)
    one_of: list[Node] = field(default_factory=list)
    not_: Node | None = None
    list_type: str = ""
    map_keys: tuple[str, ...] = ()

    @classmethod
    def build(cls, raw: Mapping[str, Any]) -> Node:
        node = cls(raw=raw)
        node.type = str(raw.get("type") or "")
        node.nullable = bool(raw.get("nullable"))
        node.int_or_string = bool(raw.get("x-kubernetes-int-or-string"))
        node.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields"))
        node.embedded = bool(raw.get("x-kubernetes-embedded-resource"))
        properties = raw.get("properties")
        for name, sub in (properties.items() if isinstance(properties, Mapping) else ()):
            if isinstance(sub, Mapping):
                node.properties[str(name)] = cls.build(sub)
        additional = raw.get("additionalProperties")
        if isinstance(additional, Mapping):
            node.additional = cls.build(additional)
        elif additional is True:
            node.additional_any = True
        if isinstance(raw.get("items"), Mapping):
            node.items = cls.build(raw["items"])
        required = raw.get("required")
        node.required = tuple(str(r) for r in required) if isinstance(required, list) else ()
        if "default" in raw:
            node.default = raw["default"]
        if isinstance(raw.get("pattern"), str):
            node.pattern = _compile_pattern(raw["pattern"])
        rules = raw.get("x-kubernetes-validations")
        for entry in rules if isinstance(rules, list) else ():
            if not isinstance(entry, Mapping):
                continue
            try:
                node.rules.append(cel.compile_rule(entry))
            except cel.CelError as exc:
                node.rules.append(exc)
        node.all_of = [cls.build(s) for s in _list(raw.get("allOf")) if isinstance(s, Mapping)]
        node.any_of = [cls.build(s) for s in _list(raw.get("anyOf")) if isinstance(s, Mapping)]
        node.one_of = [cls.build(s) for s in _list(raw.get("oneOf")) if isinstance(s, Mapping)]
        if isinstance(raw.get("not"), Mapping):
            node.not_ = cls.build(raw["not"])
        node.list_type = str(raw.get("x-kubernetes-list-type") or "")
        node.map_keys = tuple(str(k) for k in _list(raw.get("x-kubernetes-list-map-keys")))
        return node

    @property
    def type_name(self) -> str:
        """The schema type as CEL errors show it (``object``, ``string``; ``""`` for int-or-string)."""
        return self.type


_ROOT_KEEP = ("apiVersion", "kind", "metadata")


class Schema:
    """The compiled ``openAPIV3Schema`` of one CRD version. Build with :meth:`compile` (cache it)."""

    def __init__(self, root: Node) -> None:
        self.root = root

    @classmethod
    def compile(cls, openapi: Mapping[str, Any]) -> Schema:
        """Compile a version's ``schema.openAPIV3Schema`` (CEL rules included; a rule that does not
        compile is kept and reported on each validation)."""
        return cls(Node.build(openapi))

    # ---- steps 1 and 2 ---------------------------------------------------------------------

    def normalize(self, obj: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """A pruned and defaulted deep copy of ``obj``; also the pruned fields (``spec.foo``)."""
        pruned: list[str] = []
        out = _normalize(self.root, obj, (), pruned, root=True)
        return (out if isinstance(out, dict) else dict(obj)), pruned

    # ---- steps 3 and 4 ---------------------------------------------------------------------

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None,
                 only: tuple[str, ...] | None = None) -> list[FieldError]:
        """The errors of ``obj`` (``old``: the object before an update, for ratcheting and
        ``oldSelf``). ``only`` limits validation to these top-level fields (``("status",)`` for a
        status update); ``apiVersion``, ``kind`` and ``metadata`` are the store's business."""
        errors: list[FieldError] = []
        fields = [k for k in self.root.properties if k not in _ROOT_KEEP and (only is None or k in only)]
        has_old = old is not None
        for key in fields:
            node = self.root.properties[key]
            if key in obj:
                old_value = old.get(key) if old is not None else None
                _validate(node, obj[key], old_value, has_old and key in (old or {}), (("key", key),), errors)
        if only is None:
            for name in self.root.required:
                if name not in _ROOT_KEEP and name not in obj:
                    errors.append(FieldError("FieldValueRequired", name, OMIT, ""))
        if any(e.reason in BLOCKING for e in errors):
            errors.append(FieldError("FieldValueInvalid", "<nil>", "null", NOT_CHECKED))
            return errors
        for key in fields:
            if key in obj:
                old_value = old.get(key) if old is not None else None
                _rules(self.root.properties[key], obj[key], old_value, has_old and key in (old or {}),
                       (("key", key),), errors)
        if only is None and self.root.rules:
            _rules(self.root, obj, old, has_old, (), errors, shallow=True)
        return errors


def _normalize(node: Node, value: Any, path: Path, pruned: list[str], root: bool = False) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        declared = bool(node.properties) or node.additional is not None
        keep_unknown = node.preserve_unknown or node.additional_any or (not declared and not node.type)
        for key, sub in value.items():
            if (root or node.embedded) and key in _ROOT_KEEP:
                out[key] = sub  # the store owns metadata (and keeps writing to it)
                continue
            child = node.properties.get(key) or node.additional
            if child is None:
                if keep_unknown:
                    out[key] = sub
                else:
                    pruned.append(_field((*path, ("key", key))))
                continue
            if sub is None and key in node.properties and not child.nullable:
                if child.default is not OMIT:
                    out[key] = json.loads(json.dumps(child.default))
                continue  # the API server drops nulls of non-nullable fields before defaulting
            out[key] = _normalize(child, sub, (*path, ("key", key)), pruned)
        for key, child in node.properties.items():
            if key not in out and child.default is not OMIT and not (key in value and value[key] is None):
                out[key] = _normalize(child, json.loads(json.dumps(child.default)), (*path, ("key", key)), pruned)
        return out
    if isinstance(value, list):
        if node.items is None:
            return list(value)
        return [_normalize(node.items, v, (*path, ("index", i)), pruned) for i, v in enumerate(value)]
    return value


def _type_ok(node: Node, value: Any) -> bool:
    actual = _json_type(value)
    if node.int_or_string:
        return actual in ("integer", "string") or (actual == "number" and float(value).is_integer())
    wanted = node.type
    if not wanted:
        return True
    if actual == wanted:
        return True
    if wanted == "number" and actual == "integer":
        return True
    return wanted == "integer" and actual == "number" and math.isfinite(value) and float(value).is_integer()


def _num(raw: Any) -> str:
    return go_float(float(raw))


def _correlate_items(node: Node, value: list[Any], old: Any) -> list[tuple[Any, bool]]:
    """(old item, has old) per item: only ``x-kubernetes-list-type: map`` lists correlate, by keys."""
    if node.list_type != "map" or not node.map_keys or not isinstance(old, list):
        return [(None, False)] * len(value)
    by_key: dict[str, Any] = {}
    for item in old:
        if isinstance(item, Mapping):
            by_key[json.dumps([item.get(k) for k in node.map_keys], sort_keys=True)] = item
    out: list[tuple[Any, bool]] = []
    for item in value:
        if isinstance(item, Mapping):
            k = json.dumps([item.get(k) for k in node.map_keys], sort_keys=True)
            out.append((by_key.get(k), k in by_key))
        else:
            out.append((None, False))
    return out


def _validate(node: Node, value: Any, old: Any, has_old: bool, path: Path,
              errors: list[FieldError]) -> None:
    if has_old and _same(value, old):
        return  # ratcheting: an unchanged value is not validated again
    name, fld = _name(path), _field(path)
    if value is None:
        if not node.nullable and (node.type or node.int_or_string):
            errors.append(FieldError("FieldValueTypeInvalid", fld, "null",
                                     f'{name} in body must be of type {node.type or "integer,string"}: "null"'))
        return
    if not _type_ok(node, value):
        actual = _json_type(value)
        wanted = "integer,string" if node.int_or_string else node.type
        errors.append(FieldError("FieldValueTypeInvalid", fld, actual,
                                 f'{name} in body must be of type {wanted}: "{actual}"'))
        return
    raw = node.raw
    if "enum" in raw and isinstance(raw["enum"], list) and not any(_same(value, e) for e in raw["enum"]):
        allowed = [e if isinstance(e, str) else json.dumps(e) for e in raw["enum"]]
        errors.append(FieldError("FieldValueNotSupported", fld, value,
                                 "supported values: " + ", ".join(json.dumps(a) for a in allowed)))
    if isinstance(value, str):
        _validate_string(node, value, name, fld, errors)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(node, value, name, fld, errors)
    for sub in node.all_of:
        _validate(sub, value, None, False, path, errors)
    if node.any_of and not any(not _errors_of(sub, value, path) for sub in node.any_of):
        errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body must validate at least one "
                                                                   f"schema (anyOf)"))
    if node.one_of and sum(1 for sub in node.one_of if not _errors_of(sub, value, path)) != 1:
        errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body must validate one and only one "
                                                                   f"schema (oneOf)"))
    if node.not_ is not None and not _errors_of(node.not_, value, path):
        errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body must not validate the schema "
                                                                   f"(not)"))
    if isinstance(value, list):
        _validate_array(node, value, old, has_old, path, name, fld, errors)
    elif isinstance(value, Mapping):
        _validate_object(node, value, old, has_old, path, name, fld, errors)


def _errors_of(node: Node, value: Any, path: Path) -> list[FieldError]:
    found: list[FieldError] = []
    _validate(node, value, None, False, path, found)
    return found


def _validate_string(node: Node, value: str, name: str, fld: str, errors: list[FieldError]) -> None:
    raw = node.raw
    if _int(raw.get("maxLength")) and len(value) > raw["maxLength"]:
        errors.append(FieldError("FieldValueTooLong", fld, OMIT, f"may not be longer than {raw['maxLength']}"))
    if _int(raw.get("minLength")) and len(value) < raw["minLength"]:
        errors.append(FieldError("FieldValueInvalid", fld, value,
                                 f"{name} in body should be at least {raw['minLength']} chars long"))
    if isinstance(raw.get("pattern"), str) and (node.pattern is None or not node.pattern.search(value)):
        errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body should match '{raw['pattern']}'"))
    fmt = raw.get("format")
    if isinstance(fmt, str) and fmt and not _format_ok(fmt, value):
        errors.append(FieldError("FieldValueTypeInvalid", fld, value, f'{name} in body must be of type {fmt}: '
                                                                       f'{json.dumps(value)}'))


def _validate_number(node: Node, value: float, name: str, fld: str, errors: list[FieldError]) -> None:
    raw = node.raw
    fmt = raw.get("format")
    if fmt in ("int32", "int64") and isinstance(value, int):
        bits = 31 if fmt == "int32" else 63
        if not -(2**bits) <= value < 2**bits:
            errors.append(FieldError("FieldValueTypeInvalid", fld, "number", f'{name} in body must be of type '
                                                                              f'{fmt}: "number"'))
    maximum, minimum = raw.get("maximum"), raw.get("minimum")
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool):
        if raw.get("exclusiveMaximum") is True and value >= maximum:
            errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body should be less than "
                                                                       f"{_num(maximum)}"))
        elif value > maximum:
            errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body should be less than or equal "
                                                                       f"to {_num(maximum)}"))
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        if raw.get("exclusiveMinimum") is True and value <= minimum:
            errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body should be greater than "
                                                                       f"{_num(minimum)}"))
        elif value < minimum:
            errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body should be greater than or "
                                                                       f"equal to {_num(minimum)}"))
    factor = raw.get("multipleOf")
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0:
        quotient = value / factor
        if not math.isfinite(quotient) or abs(quotient - round(quotient)) > 1e-9:
            errors.append(FieldError("FieldValueInvalid", fld, value, f"{name} in body should be a multiple of "
                                                                       f"{_num(factor)}"))


def _validate_array(node: Node, value: list[Any], old: Any, has_old: bool, path: Path, name: str, fld: str,
                    errors: list[FieldError]) -> None:
    raw = node.raw
    if _int(raw.get("maxItems")) and len(value) > raw["maxItems"]:
        errors.append(FieldError("FieldValueTooMany", fld, len(value), f"must have at most {raw['maxItems']} items"))
    if _int(raw.get("minItems")) and len(value) < raw["minItems"]:
        errors.append(FieldError("FieldValueInvalid", fld, len(value),
                                 f"{name} in body should have at least {raw['minItems']} items"))
    if node.items is not None:
        for i, ((old_item, item_has_old), item) in enumerate(zip(_correlate_items(node, value, old), value,
                                                                 strict=True)):
            _validate(node.items, item, old_item, item_has_old, (*path, ("index", i)), errors)
    if node.list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if any(_same(item, s) for s in seen):
                errors.append(FieldError("FieldValueDuplicate", _field((*path, ("index", i))), item))
            seen.append(item)
    elif node.list_type == "map" and node.map_keys:
        keys: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                continue
            k = json.dumps([item.get(key) for key in node.map_keys], sort_keys=True)
            if k in keys:
                errors.append(FieldError("FieldValueDuplicate", _field((*path, ("index", i))),
                                         {key: item.get(key) for key in node.map_keys}))
            keys.add(k)


def _fields(node: Node, value: Mapping[str, Any], old: Any, has_old: bool, path: Path
            ) -> Iterator[tuple[Node, Any, Any, bool, Path]]:
    """``(schema, value, old value, has old, path)`` of each field of an object that has a schema
    (a property, else ``additionalProperties``); an embedded resource's apiVersion/kind/metadata are
    the API server's and skipped."""
    old_map = old if has_old and isinstance(old, Mapping) else None
    for key, sub in value.items():
        if node.embedded and key in _ROOT_KEEP:
            continue
        child = node.properties.get(key)
        sub_path: Path = (*path, ("key", key))
        if child is None and node.additional is not None:
            child, sub_path = node.additional, (*path, ("mapkey", key))
        if child is not None:
            yield child, sub, old_map.get(key) if old_map else None, bool(old_map) and key in (old_map or {}), sub_path


def _validate_object(node: Node, value: Mapping[str, Any], old: Any, has_old: bool, path: Path, name: str,
                     fld: str, errors: list[FieldError]) -> None:
    raw = node.raw
    if _int(raw.get("maxProperties")) and len(value) > raw["maxProperties"]:
        errors.append(FieldError("FieldValueTooMany", fld, len(value),
                                 f"must have at most {raw['maxProperties']} items"))
    if _int(raw.get("minProperties")) and len(value) < raw["minProperties"]:
        errors.append(FieldError("FieldValueInvalid", fld, len(value),
                                 f"{name} in body should have at least {raw['minProperties']} properties"))
    for req in node.required:
        if req not in value:
            errors.append(FieldError("FieldValueRequired", _field((*path, ("key", req))), OMIT, ""))
    if node.embedded:
        for req in ("apiVersion", "kind"):
            if not isinstance(value.get(req), str) or not value.get(req):
                errors.append(FieldError("FieldValueRequired", _field((*path, ("key", req))), OMIT,
                                         "must not be empty"))
    for child, sub, old_sub, has_old_sub, sub_path in _fields(node, value, old, has_old, path):
        _validate(child, sub, old_sub, has_old_sub, sub_path, errors)


def _rules(node: Node, value: Any, old: Any, has_old: bool, path: Path, errors: list[FieldError],
           shallow: bool = False) -> None:
    """``x-kubernetes-validations`` of ``node`` and (unless ``shallow``) of every node below."""
    if value is None or (has_old and _same(value, old)):
        return
    for rule in node.rules:
        if isinstance(rule, cel.CelError):
            errors.append(FieldError("FieldValueInvalid", _field(path), node.type_name, str(rule)))
            continue
        if rule.transition and not has_old:
            continue
        outcome = cel.evaluate(rule, value, old, has_old)
        if outcome.ok:
            continue
        target = _field(_join_field(path, rule.field_path)) if rule.field_path else _field(path)
        if outcome.error:
            errors.append(FieldError("FieldValueInvalid", target, node.type_name, outcome.message))
        elif rule.reason == "FieldValueForbidden":
            errors.append(FieldError("FieldValueForbidden", target, OMIT, outcome.message))
        elif rule.reason == "FieldValueRequired":
            errors.append(FieldError("FieldValueRequired", target, OMIT, outcome.message))
        elif rule.reason == "FieldValueDuplicate":
            errors.append(FieldError("FieldValueDuplicate", target, node.type_name))
        else:
            errors.append(FieldError("FieldValueInvalid", target, node.type_name, outcome.message))
    if shallow:
        return
    if isinstance(value, Mapping):
        for child, sub, old_sub, has_old_sub, sub_path in _fields(node, value, old, has_old, path):
            _rules(child, sub, old_sub, has_old_sub, sub_path, errors)
    elif isinstance(value, list) and node.items is not None:
        for i, ((old_item, item_has_old), item) in enumerate(zip(_correlate_items(node, value, old), value,
                                                                 strict=True)):
            _rules(node.items, item, old_item, item_has_old, (*path, ("index", i)), errors)
