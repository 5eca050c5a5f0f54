"""Decode the Kubernetes protobuf request bodies that kubectl's typed clients send.

``kubectl create namespace|configmap|secret|serviceaccount`` POST their object as
``application/vnd.kubernetes.protobuf``: the 4-byte magic ``k8s\\x00`` then a ``runtime.Unknown``
message (``typeMeta`` = 1, ``raw`` = 2) whose ``raw`` is the object in the field numbering of
``k8s.io/api/core/v1/generated.proto``. Only these kinds are decoded (to the JSON-shaped dict the
API would have received); anything else raises :class:`ProtobufError` (the server answers 415).
Answers are always JSON, which kubectl accepts too.
"""

from __future__ import annotations

import base64
from typing import Any

__all__ = ["MAGIC", "ProtobufError", "decode_object"]

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a decodable Kubernetes protobuf object of a supported kind."""


# A schema maps field number -> (json name, type). Types: "str", "bytes" (base64 in JSON), "int", "bool",
# a nested schema dict, ("map", value type), ("list", item type).
Schema = dict[int, tuple[str, Any]]

_OWNER_REF: Schema = {1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"), 5: ("apiVersion", "str"),
                      6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
_OBJECT_META: Schema = {
    1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"), 5: ("uid", "str"),
    6: ("resourceVersion", "str"), 11: ("labels", ("map", "str")), 12: ("annotations", ("map", "str")),
    13: ("ownerReferences", ("list", _OWNER_REF)), 14: ("finalizers", ("list", "str")),
}
_LOCAL_REF: Schema = {1: ("name", "str")}
_KINDS: dict[str, Schema] = {
    "Namespace": {1: ("metadata", _OBJECT_META), 2: ("spec", {1: ("finalizers", ("list", "str"))})},
    "ConfigMap": {1: ("metadata", _OBJECT_META), 2: ("data", ("map", "str")),
                  3: ("binaryData", ("map", "bytes")), 4: ("immutable", "bool")},
    "Secret": {1: ("metadata", _OBJECT_META), 2: ("data", ("map", "bytes")), 3: ("type", "str"),
               4: ("stringData", ("map", "str")), 5: ("immutable", "bool")},
    "ServiceAccount": {1: ("metadata", _OBJECT_META), 2: ("secrets", ("list", _LOCAL_REF)),
                       3: ("imagePullSecrets", ("list", _LOCAL_REF)),
                       4: ("automountServiceAccountToken", "bool")},
}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """Split a message into (field number, wire type, value) triples."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _scalar(kind: str, value: Any) -> Any:
    if kind == "str":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "bool":
        return bool(value)
    return int(value)


def _message(buf: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, _, value in _fields(buf):
        if number not in schema:
            continue  # fields we do not model (timestamps, managedFields) are server-set anyway
        name, kind = schema[number]
        if isinstance(kind, dict):
            out[name] = _message(value, kind)
        elif isinstance(kind, tuple) and kind[0] == "map":
            entry = dict((n, v) for n, _, v in _fields(value))
            out.setdefault(name, {})[bytes(entry.get(1, b"")).decode()] = _scalar(kind[1], entry.get(2, b""))
        elif isinstance(kind, tuple) and kind[0] == "list":
            item = _message(value, kind[1]) if isinstance(kind[1], dict) else _scalar(kind[1], value)
            out.setdefault(name, []).append(item)
        else:
            scalar = _scalar(kind, value)
            if scalar != "":  # gogo-proto writes empty optional strings; JSON (omitempty) would not
                out[name] = scalar
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """Decode a protobuf-encoded object into its JSON-shaped dict; raises :class:`ProtobufError`."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    unknown = {n: v for n, _, v in _fields(body[len(MAGIC):])}
    type_meta = {n: bytes(v).decode() for n, _, v in _fields(unknown.get(1, b""))}
    api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
    schema = _KINDS.get(kind)
    if schema is None or api_version != "v1":
        raise ProtobufError(f"protobuf bodies of {api_version}/{kind} are not supported; send JSON")
    return {"apiVersion": api_version, "kind": kind, **_message(unknown.get(2, b""), schema)}
