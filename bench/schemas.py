"""Cost of CRD schema enforcement and APIRule conversion in the dev API server (prints numbers).

    .venv/bin/python -m bench.schemas [--n 2000]

Measured in one process, on the :class:`kubedev.store.Store` directly (no HTTP): creating ``--n``
APIRules (v2, a gateway, one host, three rules: every CEL rule of the CRD runs) with the schema
enforced and with a schema-less copy of the CRD, a status update of each (ratcheting: the unchanged
spec is not validated again), and the pure conversion v1beta1 → v2alpha1 → v2 per object. Then, over
HTTPS through the real ``/convert`` listener: one ConversionReview of ``--n`` objects (what a LIST of a
converted version costs).
"""

from __future__ import annotations

import argparse
import copy
import json
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubedev.store import Store  # noqa: E402
from tasks.apigateway import certificate  # noqa: E402
from tasks.apigateway.conversion import convert  # noqa: E402
from tasks.apigateway.install import load_crds  # noqa: E402
from tasks.apigateway.webhook import ConversionWebhook  # noqa: E402
from webhooks import ThreadedListener  # noqa: E402

G = "gateway.kyma-project.io"


def spec(i: int) -> dict[str, Any]:
    return {"hosts": [f"h{i}.example.com"], "service": {"name": "s", "port": 80}, "gateway": "kyma-system/kyma-gateway",
            "rules": [{"path": "/a", "methods": ["GET"], "noAuth": True},
                      {"path": "/b/{**}", "methods": ["GET", "POST"], "jwt": {"authentications": [
                          {"issuer": "https://i", "jwksUri": "https://i/jwks"}]}},
                      {"path": "/c", "methods": ["PUT"], "extAuth": {"authorizers": ["x"]}}]}


def store_with(schema: bool) -> tuple[Store, Any]:
    store = Store(event_log_size=100)
    crd = load_crds(istio=False)[0]
    if not schema:
        for version in crd["spec"]["versions"]:
            version["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    crd_rt = store.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert crd_rt is not None
    store.create(crd_rt, None, crd)
    store.create(store.registry.lookup("", "v1", "namespaces"), None, {"metadata": {"name": "shop"}})  # type: ignore[arg-type]
    return store, store.registry.lookup(G, "v2", "apirules")


def timed_writes(schema: bool, n: int) -> tuple[float, float]:
    store, rt = store_with(schema)
    started = time.perf_counter()
    for i in range(n):
        store.create(rt, "shop", {"metadata": {"name": f"r{i}"}, "spec": spec(i)})
    created = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(n):
        store.replace(rt, "shop", f"r{i}", {"metadata": {"name": f"r{i}"}, "status": {"state": "Ready"}}, "status")
    return created, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    loose_create, loose_status = timed_writes(False, n)
    strict_create, strict_status = timed_writes(True, n)
    print(f"store.create x{n}: no schema {loose_create / n * 1e6:.0f} µs, schema + CEL {strict_create / n * 1e6:.0f} µs"
          f" per object (+{(strict_create - loose_create) / n * 1e6:.0f} µs)")
    print(f"status update x{n}: no schema {loose_status / n * 1e6:.0f} µs, schema {strict_status / n * 1e6:.0f} µs "
          f"per object")

    v1 = {"apiVersion": f"{G}/v1beta1", "kind": "APIRule", "metadata": {"name": "x", "namespace": "shop"},
          "spec": {"host": "h", "gateway": "kyma-gateway.kyma-system.svc.cluster.local",
                   "service": {"name": "s", "port": 80},
                   "rules": [{"path": "/a", "methods": ["GET"], "accessStrategies": [{"handler": "no_auth"}]}]}}
    started = time.perf_counter()
    for _ in range(n):
        convert(convert(copy.deepcopy(v1), f"{G}/v2alpha1"), f"{G}/v2")
    print(f"convert v1beta1 -> v2alpha1 -> v2: {(time.perf_counter() - started) / n * 1e6:.0f} µs per object")

    pair = certificate.generate(key_size=2048)
    secret = {"data": pair.secret_data()}
    listener = ThreadedListener(ConversionWebhook(lambda: secret, host="127.0.0.1", port=0)).start()
    try:
        hub = convert(v1, f"{G}/v2alpha1")
        objects = [{**hub, "metadata": {**hub["metadata"], "name": f"r{i}"}} for i in range(n)]
        body = json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                           "request": {"uid": "b", "desiredAPIVersion": f"{G}/v2", "objects": objects}}).encode()
        context = ssl.create_default_context(cadata=pair.cert_pem.decode())
        context.check_hostname = False
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            request = urllib.request.Request(listener.listener.url, data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, context=context, timeout=60) as resp:
                assert len(json.loads(resp.read())["response"]["convertedObjects"]) == n
            best = min(best, time.perf_counter() - started)
        print(f"/convert review of {n} objects over HTTPS: {best * 1000:.0f} ms ({best / n * 1e6:.0f} µs per object)")
    finally:
        listener.stop()


if __name__ == "__main__":
    main()
