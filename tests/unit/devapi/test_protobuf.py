"""Decoding kubectl's protobuf request bodies (kubedev.protobuf)."""

from __future__ import annotations

import pytest

from kubedev.protobuf import MAGIC, ProtobufError, decode_object


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes | str | bool) -> bytes:
    if isinstance(payload, bool):
        return varint(number << 3) + varint(int(payload))
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return MAGIC + field(1, field(1, api_version) + field(2, kind)) + field(2, raw)


def test_decodes_a_configmap_like_kubectl_create_sends() -> None:
    meta = field(1, "c2") + field(2, "") + field(3, "ns1") + field(11, field(1, "app") + field(2, "x"))
    raw = field(1, meta) + field(2, field(1, "a") + field(2, "b")) + field(4, True)
    assert decode_object(envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "immutable": True,
        "metadata": {"name": "c2", "namespace": "ns1", "labels": {"app": "x"}}}


def test_secret_bytes_become_base64_and_namespace_finalizers_list() -> None:
    secret = decode_object(envelope("v1", "Secret", field(1, field(1, "s")) + field(2, field(1, "p") + field(2, b"q"))))
    assert secret["data"] == {"p": "cQ=="}
    ns = decode_object(envelope("v1", "Namespace", field(1, field(1, "n")) + field(2, field(1, "kubernetes"))))
    assert ns["spec"] == {"finalizers": ["kubernetes"]}


@pytest.mark.parametrize("body", [b"{}", envelope("apps/v1", "Deployment", b""), MAGIC + b"\x0a\xff"])
def test_unsupported_bodies_raise(body: bytes) -> None:
    with pytest.raises(ProtobufError):
        decode_object(body)
