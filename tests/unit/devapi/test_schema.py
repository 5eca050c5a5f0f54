"""CRD schemas in the dev API server (kubedev.schema, kubedev.cel): messages as the API server words them,
pruning, defaults, CEL rules, ratcheting, and property tests over generated schemas."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubedev.errors import ApiError
from kubedev.schema import FieldError, Schema, aggregate, go_float
from kubedev.store import Store
from tasks.apigateway.install import load_crds

Obj = dict[str, Any]


def schema_of(spec: Obj, status: Obj | None = None) -> Schema:
    props: Obj = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                  "spec": spec}
    if status is not None:
        props["status"] = status
    return Schema.compile({"type": "object", "properties": props})


def messages(schema: Schema, spec: Any, old_spec: Any = None) -> list[str]:
    old = {"spec": old_spec} if old_spec is not None else None
    obj, _ = schema.normalize({"spec": spec})
    return [str(e) for e in schema.validate(obj, old)]


# ---- messages, one per keyword, as k8s.io/apiextensions-apiserver words them ----------------------

SPEC = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "multipleOf": 0.5},
        "mode": {"type": "string", "enum": ["A", "B"]},
        "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "port": {"x-kubernetes-int-or-string": True},
        "when": {"type": "string", "format": "date-time"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "opt": {"type": "string", "nullable": True},
        "thing": {"type": "object", "x-kubernetes-embedded-resource": True,
                  "x-kubernetes-preserve-unknown-fields": True},
    },
}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"name": "abc"}, []),
    ({}, ["spec.name: Required value"]),
    ({"name": "ab"}, ['spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long']),
    ({"name": "abcdef"}, ["spec.name: Too long: may not be longer than 5"]),
    ({"name": "ABC"}, ['spec.name: Invalid value: "ABC": spec.name in body should match \'^[a-z]+$\'']),
    ({"name": "abc", "count": 0}, ["spec.count: Invalid value: 0: spec.count in body should be greater than or "
                                    "equal to 1"]),
    ({"name": "abc", "count": 11}, ["spec.count: Invalid value: 11: spec.count in body should be less than or "
                                     "equal to 10"]),
    ({"name": "abc", "count": "3"}, ['spec.count: Invalid value: "string": spec.count in body must be of type '
                                      'integer: "string"']),
    ({"name": "abc", "count": 3.0}, []),  # an integral float is an integer, as in Go
    ({"name": "abc", "count": 3.5}, ['spec.count: Invalid value: "number": spec.count in body must be of type '
                                      'integer: "number"']),
    ({"name": "abc", "ratio": 0}, ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]),
    ({"name": "abc", "ratio": 0.7}, ["spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of "
                                      "0.5"]),
    ({"name": "abc", "mode": "C"}, ['spec.mode: Unsupported value: "C": supported values: "A", "B"']),
    ({"name": "abc", "tags": []}, ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]),
    ({"name": "abc", "tags": ["a", "b", "c"]}, ["spec.tags: Too many: 3: must have at most 2 items"]),
    ({"name": "abc", "tags": ["a", 1]}, ['spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of '
                                          'type string: "integer"']),
    ({"name": "abc", "set": ["a", "a"]}, ['spec.set[1]: Duplicate value: "a"']),
    ({"name": "abc", "port": 8080}, []),
    ({"name": "abc", "port": "http"}, []),
    ({"name": "abc", "port": True}, ['spec.port: Invalid value: "boolean": spec.port in body must be of type '
                                      'integer,string: "boolean"']),
    ({"name": "abc", "when": "2026-01-02T03:04:05Z"}, []),
    ({"name": "abc", "when": "yesterday"}, ['spec.when: Invalid value: "yesterday": spec.when in body must be of '
                                             'type date-time: "yesterday"']),
    ({"name": "abc", "labels": {"a": 1}}, ['spec.labels[a]: Invalid value: "integer": spec.labels.a in body must '
                                            'be of type string: "integer"']),
    ({"name": "abc", "free": {"anything": [1, {"x": None}]}}, []),
    ({"name": "abc", "opt": None}, []),
    ({"name": "abc", "thing": {"metadata": {"name": "x"}}}, ["spec.thing.apiVersion: Required value: must not be "
                                                              "empty", "spec.thing.kind: Required value: must not "
                                                              "be empty"]),
    ({"name": "abc", "thing": {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}}, []),
])
def test_keyword_messages(spec: Obj, expected: list[str]) -> None:
    found = messages(schema_of(SPEC), spec)
    blocking = [m for m in found if m.startswith("<nil>")]
    assert [m for m in found if not m.startswith("<nil>")] == expected
    # type and enum errors block CEL evaluation, with the API server's note
    assert bool(blocking) == any("must be of type" in m or "Unsupported" in m for m in expected)


def test_pruning_nulls_and_defaults() -> None:
    schema = schema_of({
        "type": "object",
        "properties": {
            "a": {"type": "string", "default": "x"},
            "b": {"type": "integer"},
            "n": {"type": "string", "nullable": True},
            "o": {"type": "object", "default": {}, "properties": {"d": {"type": "integer", "default": 3}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "k": {"type": "string", "default": "v"}}}},
            "keep": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    })
    obj, pruned = schema.normalize({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "extra": 1},
                                    "spec": {"b": None, "n": None, "unknown": 1, "items": [{"z": 1}],
                                             "keep": {"u": {"v": 1}}},
                                    "top": 1})
    assert obj == {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "extra": 1},
                   "spec": {"a": "x", "n": None, "o": {"d": 3}, "items": [{"k": "v"}], "keep": {"u": {"v": 1}}}}
    assert sorted(pruned) == ["spec.items[0].z", "spec.unknown", "top"]
    assert schema.validate(obj) == []


CEL_SPEC = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "!(has(self.a) && has(self.b))", "message": "Only one of a or b can be specified"},
        {"rule": "self.size() < 4", "messageExpression": "'too many fields: ' + string(self.size())"},
        {"rule": "!has(self.f) || self.f != 'forbidden'", "reason": "FieldValueForbidden", "fieldPath": ".f",
         "message": "f is forbidden"},
    ],
    "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "f": {"type": "string"},
        "host": {"type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z.]+$')"}]},
        "immutable": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "immutable is immutable"}]},
        "up": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "only up"}]},
        "list": {"type": "array", "items": {"type": "string"},
                 "x-kubernetes-validations": [{"rule": "self.all(x, x.lowerAscii() == x)", "message": "lowercase"}]},
        "broken": {"type": "string", "x-kubernetes-validations": [{"rule": "self.("}]},
        "eval": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "x-kubernetes-validations": [{"rule": "self.missing == 1"}]},
    },
}


@pytest.mark.parametrize(("spec", "old", "expected"), [
    ({"a": "x"}, None, []),
    ({"a": "x", "b": "y"}, None, ['spec: Invalid value: "object": Only one of a or b can be specified']),
    ({"a": "x", "f": "y", "host": "a", "list": []}, None, ['spec: Invalid value: "object": too many fields: 4']),
    ({"f": "forbidden"}, None, ["spec.f: Forbidden: f is forbidden"]),
    ({"host": "Bad"}, None, ['spec.host: Invalid value: "string": failed rule: self.matches(\'^[a-z.]+$\')']),
    ({"list": ["a", "B"]}, None, ['spec.list: Invalid value: "array": lowercase']),
    # transition rules: only on update, only with an old value
    ({"immutable": "x"}, None, []),
    ({"immutable": "y"}, {"immutable": "x"}, ['spec.immutable: Invalid value: "string": immutable is immutable']),
    ({"immutable": "x", "a": "z"}, {"immutable": "x"}, []),
    ({"up": 1}, {"up": 2}, ['spec.up: Invalid value: "integer": only up']),
    ({"up": 3}, {"up": 2}, []),
    ({"broken": "x"}, None, ['spec.broken: Invalid value: "string": compilation failed']),
    ({"eval": {}}, None, ['spec.eval: Invalid value: "object": no such member']),
])
def test_cel_rules(spec: Obj, old: Obj | None, expected: list[str]) -> None:
    found = messages(schema_of(CEL_SPEC), spec, old)
    assert len(found) == len(expected), found
    for got, want in zip(found, expected, strict=True):
        assert got.startswith(want), (got, want)


def test_ratcheting_keeps_unchanged_invalid_values() -> None:
    """An object stored before a schema tightened can still be updated elsewhere (Kubernetes >= 1.30)."""
    schema = schema_of({"type": "object", "properties": {"name": {"type": "string", "maxLength": 2},
                                                         "other": {"type": "integer"}}},
                       status={"type": "object", "properties": {"state": {"type": "string", "enum": ["Ready"]}}})
    old = {"spec": {"name": "too long"}}
    assert schema.validate({"spec": {"name": "too long", "other": 1}}, old) == []
    assert [e.field for e in schema.validate({"spec": {"name": "still long"}}, old)] == ["spec.name"]
    # a status update validates the status only
    errors = schema.validate({"spec": {"name": "too long"}, "status": {"state": "Bad"}}, old, only=("status",))
    assert [e.field for e in errors] == ["status.state", "<nil>"]


def test_aggregate_and_go_numbers() -> None:
    a = FieldError("FieldValueRequired", "spec.a")
    b = FieldError("FieldValueInvalid", "spec.b", 1.5, "detail")
    assert aggregate([a]) == "spec.a: Required value"
    assert aggregate([a, b, a]) == "[spec.a: Required value, spec.b: Invalid value: 1.5: detail]"
    assert [go_float(v) for v in (1.0, 0.5, 1e21, 1e-05, 3900.0)] == ["1", "0.5", "1e+21", "1e-05", "3900"]


# ---- the APIRule CRD through the store: the API server's 422 -------------------------------------


@pytest.fixture(scope="module")
def apirule_store() -> Store:
    store = Store()
    crd_rt = store.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert crd_rt is not None
    store.create(crd_rt, None, load_crds(istio=False)[0])
    return store


def apirule(spec: Any, name: str = "r") -> Obj:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


GOOD_SPEC = {"hosts": ["shop.example.com"], "service": {"name": "shop", "port": 80},
             "gateway": "kyma-system/kyma-gateway", "rules": [{"path": "/orders/{**}", "methods": ["GET"],
                                                               "noAuth": True}]}


def test_apirule_v2_rejections(apirule_store: Store) -> None:
    rt = apirule_store.registry.lookup("gateway.kyma-project.io", "v2", "apirules")
    assert rt is not None
    spec = copy.deepcopy(GOOD_SPEC)
    spec["rules"][0] = {"path": "/x", "methods": ["GET"], "noAuth": True, "jwt": {}}
    spec.update(hosts=["Shop"], externalGateway="a/b")
    with pytest.raises(ApiError) as caught:
        apirule_store.create(rt, "default", apirule(spec), dry_run=True)
    err = caught.value
    assert err.code == 422 and err.reason == "Invalid"
    assert err.message.startswith('APIRule.gateway.kyma-project.io "r" is invalid: [')
    assert [(c["field"], c["reason"]) for c in err.details["causes"]] == [
        ("spec", "FieldValueInvalid"), ("spec.hosts[0]", "FieldValueInvalid"), ("spec.rules[0]", "FieldValueInvalid")]
    assert err.details["causes"][0]["message"] == ('Invalid value: "object": Only one of gateway or externalGateway '
                                                   'can be specified')
    assert "One of the following fields must be set: noAuth, jwt, extAuth" in err.details["causes"][2]["message"]
    stored = apirule_store.create(rt, "default", apirule({**GOOD_SPEC, "unknown": 1}), dry_run=True)
    assert "unknown" not in stored["spec"]


# ---- properties over generated schemas -----------------------------------------------------------

NAMES = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@st.composite
def schema_and_value(draw: st.DrawFn, depth: int = 0) -> tuple[Obj, Any]:
    """A structural schema node and a value valid for it."""
    kinds = ["string", "integer", "number", "boolean"] + (["array", "object"] if depth < 3 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        lo = draw(st.integers(0, 3))
        hi = draw(st.integers(lo, lo + 6))
        if draw(st.booleans()):
            options = draw(st.lists(st.text(alphabet="xyz", min_size=lo, max_size=hi), min_size=1, max_size=3,
                                    unique=True))
            return {"type": "string", "enum": options}, draw(st.sampled_from(options))
        return ({"type": "string", "minLength": lo, "maxLength": hi},
                draw(st.text(alphabet="abc-_.", min_size=lo, max_size=hi)))
    if kind == "integer":
        lo = draw(st.integers(-100, 100))
        hi = draw(st.integers(lo, lo + 1000))
        return {"type": "integer", "minimum": lo, "maximum": hi}, draw(st.integers(lo, hi))
    if kind == "number":
        return {"type": "number", "minimum": 0}, draw(st.floats(0, 1e6, allow_nan=False))
    if kind == "boolean":
        return {"type": "boolean"}, draw(st.booleans())
    if kind == "array":
        item_schema, _ = draw(schema_and_value(depth + 1))
        lo = draw(st.integers(0, 2))
        hi = draw(st.integers(lo, lo + 3))
        n = draw(st.integers(lo, hi))
        values = []
        for _ in range(n):  # each item valid for the same item schema
            values.append(draw(value_for(item_schema)))
        return {"type": "array", "minItems": lo, "maxItems": hi, "items": item_schema}, values
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    props: Obj = {}
    value: Obj = {}
    required = []
    for name in names:
        sub_schema, sub_value = draw(schema_and_value(depth + 1))
        props[name] = sub_schema
        if draw(st.booleans()):
            required.append(name)
            value[name] = sub_value
        elif draw(st.booleans()):
            value[name] = sub_value
    node: Obj = {"type": "object", "properties": props}
    if required:
        node["required"] = required
    return node, value


def value_for(schema: Obj) -> st.SearchStrategy[Any]:
    """Values valid for a node made by :func:`schema_and_value`."""
    kind = schema["type"]
    if kind == "string":
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        return st.text(alphabet="abc", min_size=schema["minLength"], max_size=schema["maxLength"])
    if kind == "integer":
        return st.integers(schema["minimum"], schema["maximum"])
    if kind == "number":
        return st.floats(0, 1e6, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(value_for(schema["items"]), min_size=schema["minItems"], max_size=schema["maxItems"])
    required = schema.get("required", [])
    return st.fixed_dictionaries({k: value_for(schema["properties"][k]) for k in required},
                                 optional={k: value_for(s) for k, s in schema["properties"].items()
                                           if k not in required})


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of scalar leaves."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in leaves(v, (*path, i))]
    return [path]


def field_of(path: tuple[Any, ...]) -> str:
    out = "spec"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value(), st.data())
def test_generated_valid_objects_are_accepted_unchanged(pair: tuple[Obj, Any], data: st.DataObject) -> None:
    node, value = pair
    schema = schema_of(node)
    obj, pruned = schema.normalize({"spec": value})
    assert pruned == []
    assert obj == {"spec": value}
    assert schema.validate(obj) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value(), st.data())
def test_a_mutated_type_is_rejected_at_its_path(pair: tuple[Obj, Any], data: st.DataObject) -> None:
    node, value = pair
    paths = [p for p in leaves(value) if p]
    if not paths:
        return
    path = data.draw(st.sampled_from(paths))
    mutated = copy.deepcopy(value)
    target = mutated
    for part in path[:-1]:
        target = target[part]
    old = target[path[-1]]
    replacement = {"string": 7, "integer": "seven", "number": "seven", "boolean": "yes"}
    kind = ("boolean" if isinstance(old, bool) else "string" if isinstance(old, str)
            else "integer" if isinstance(old, int) else "number")
    target[path[-1]] = replacement[kind]
    errors = schema_of(node).validate({"spec": mutated})
    assert [(e.field, e.reason) for e in errors if e.field != "<nil>"] == [(field_of(path), "FieldValueTypeInvalid")]
    assert errors[-1].field == "<nil>"  # CEL was not evaluated: the API server's blocking note


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value(), st.data())
def test_unknown_fields_are_pruned(pair: tuple[Obj, Any], data: st.DataObject) -> None:
    node, value = pair
    if not isinstance(value, dict):
        return
    extra = data.draw(st.dictionaries(st.text(alphabet="KLMN", min_size=1, max_size=3),
                                      st.integers() | st.text(), min_size=1, max_size=3))
    obj, pruned = schema_of(node).normalize({"spec": {**value, **extra}})
    assert obj == {"spec": value}
    assert sorted(pruned) == sorted(f"spec.{k}" for k in extra)


@functools.cache
def _v2_schema() -> Schema:
    return Schema.compile(load_crds(istio=False)[0]["spec"]["versions"][2]["schema"]["openAPIV3Schema"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                max_size=3), max_leaves=12))
def test_arbitrary_json_never_raises(spec: Any) -> None:
    """Any JSON value in any field gives errors, never an exception (the APIRule v2 schema, CEL included)."""
    schema = _v2_schema()
    for candidate in (spec, {"hosts": spec}, {"rules": [spec]}, {"rules": [{"path": "/a", "methods": ["GET"],
                                                                               "jwt": spec}]}):
        obj, _ = schema.normalize({"spec": candidate, "status": spec})
        errors = schema.validate(obj)
        assert all(isinstance(e, FieldError) and str(e) for e in errors)


_KEYWORDS = st.sampled_from(["type", "properties", "items", "required", "enum", "pattern", "minimum", "maximum",
                             "exclusiveMinimum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems",
                             "nullable", "default", "format", "allOf", "anyOf", "oneOf", "not",
                             "additionalProperties", "x-kubernetes-int-or-string",
                             "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                             "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-validations"])
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.sampled_from(
        ["string", "integer", "object", "array", "number", "boolean", "date-time", "set", "map", "^[a-z]+$", "(",
         "self.size() > 1", "self == oldSelf", "has(self.a)", "a"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYWORDS | st.text(max_size=3), inner, max_size=4)
    | st.builds(lambda rule, msg: [{"rule": rule, "messageExpression": msg}], inner, inner),
    max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYWORDS, _VALUES, max_size=6), _VALUES, _VALUES)
def test_arbitrary_schemas_and_objects_never_raise(node: Obj, value: Any, old: Any) -> None:
    """Whatever a CRD declares and a client sends, the validator answers with errors, never an exception."""
    schema = schema_of(node)
    obj, _ = schema.normalize({"spec": value})
    for previous in (None, {"spec": old}):
        assert all(str(e) for e in schema.validate(obj, previous))
