"""The pure part of the caBundle sync."""

from __future__ import annotations

import base64

import pytest

from tasks.snatch.certs import generate_ca
from tasks.snatch.controller import CAError, validate_ca, with_ca_bundle

CA = generate_ca().cert_pem
OTHER = generate_ca().cert_pem


def config(*bundles: str | None) -> dict:
    hooks = []
    for i, b in enumerate(bundles):
        cc: dict = {"service": {"name": "svc", "namespace": "kyma-system", "path": "/mutate--v1-pod"}}
        if b is not None:
            cc["caBundle"] = b
        hooks.append({"name": f"hook-{i}", "clientConfig": cc})
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "cfg", "resourceVersion": "7"}, "webhooks": hooks}


def b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


@pytest.mark.parametrize(("bundles", "changed"), [
    ((None,), ["hook-0"]),
    ((b64(OTHER),), ["hook-0"]),
    ((b64(CA),), []),
    ((b64(CA), None, "not-base64!"), ["hook-1", "hook-2"]),
    ((), []),
])
def test_with_ca_bundle(bundles: tuple, changed: list[str]) -> None:
    original = config(*bundles)
    updated, names = with_ca_bundle(original, CA)
    assert names == changed
    if not changed:
        assert updated is None
        return
    assert updated is not None
    assert all(base64.b64decode(h["clientConfig"]["caBundle"]) == CA for h in updated["webhooks"])
    assert updated["metadata"]["resourceVersion"] == "7"  # optimistic concurrency kept
    assert original == config(*bundles)  # input untouched
    assert updated["webhooks"][0]["clientConfig"]["service"] == original["webhooks"][0]["clientConfig"]["service"]


def test_validate_ca() -> None:
    assert validate_ca(CA) == CA
    for bad in (b"", b"garbage", b"-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n"):
        with pytest.raises(CAError):
            validate_ca(bad)
