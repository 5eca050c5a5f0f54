"""Dev API server CPU per request on an SKR connect's reads: ``python bench/devapi_requests.py [--skrs 200]
[--rounds 3]``.

One :class:`kubedev.DevAPIServer` in this process serves ``--skrs`` SKR clusters seeded as
``bench/skr_sweep.py`` seeds them (:func:`bench.skr_fleet.seed_cluster`: the AWS module and SKR CRDs, the
CloudResources CR); a client in another process (``http.client``, one keep-alive connection per SKR, as a
connect's client) makes a steady connect's reads per SKR: the CloudResources CRD and the CR list, one GET
per CRD (the installer), one list per Cloud kind. The server's CPU is this process's (``time.process_time``,
the client apart). Measured in turn, ``--rounds`` times each: ``plain`` (every answer encoded whole, as
before ``kubedev.encoding``) and ``cached`` (a CRD's spec encoded once). Prints one line per round and a
JSON line ``{"plain_us_per_request", "cached_us_per_request", "requests"}`` (medians).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import skr_fleet  # noqa: E402
from kubedev import DevAPIServer, encoding  # noqa: E402
from kubedev import server as server_module  # noqa: E402
from tasks.cloud import names  # noqa: E402


def paths(provider: str) -> list[str]:
    """The read paths of a steady connect of an SKR of ``provider`` (relative to its cluster's URL)."""
    crds = skr_fleet.skr_crds(provider)
    cr = names.CLOUD_RESOURCES
    out = [f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{cr.plural}.{cr.group}",
           f"/apis/{cr.group}/{cr.version}/namespaces/{names.KYMA_SYSTEM}/{cr.plural}"]
    for crd in crds:
        out.append(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
    for crd in crds:
        spec = crd["spec"]
        if spec["group"] == "cloud-resources.kyma-project.io":
            version = next(v["name"] for v in spec["versions"] if v.get("storage", True))
            out.append(f"/apis/{spec['group']}/{version}/{spec['names']['plural']}")
    return out


def client(port: int, skrs: int, provider: str) -> None:
    """Make every SKR's connect reads against ``127.0.0.1:port``; exits non-zero on any answer but 200."""
    reads = paths(provider)
    for i in range(skrs):
        conn = http.client.HTTPConnection("127.0.0.1", port)
        for path in reads:
            conn.request("GET", f"/clusters/{skr_fleet.kyma_name(i)}{path}")
            answer = conn.getresponse()
            answer.read()
            if answer.status != 200:
                sys.exit(f"{path}: {answer.status}")
        conn.close()


def measure(server: DevAPIServer, skrs: int, provider: str) -> tuple[float, int]:
    """Server CPU seconds and requests of one client pass."""
    before, requests = time.process_time(), server.request_count("*")
    subprocess.run([sys.executable, __file__, "--client", str(server.port), "--skrs", str(skrs)], check=True)
    return time.process_time() - before, server.request_count("*") - requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skrs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--client", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client(args.client, args.skrs, "aws")
        return
    server = DevAPIServer(port=0)
    for i in range(args.skrs):
        skr_fleet.seed_cluster(server.clusters.add(skr_fleet.kyma_name(i)), "aws")
    cached = (server_module._dumps, encoding.dumps_list)

    def plain_list(head: dict[str, Any], items: list[Any]) -> bytes:
        return json.dumps({**head, "items": items}, separators=(",", ":")).encode()

    plain = (lambda obj: json.dumps(obj, separators=(",", ":")).encode(), plain_list)
    results: dict[str, list[float]] = {"plain": [], "cached": []}
    count = 0
    with server.start():
        for n in range(args.rounds):
            for name, (dumps, dumps_list) in (("plain", plain), ("cached", cached)):
                server_module._dumps, encoding.dumps_list = dumps, dumps_list
                cpu, count = measure(server, args.skrs, "aws")
                results[name].append(cpu / count * 1e6)
                print(f"round {n + 1} {name}: {count} requests, server CPU {cpu:.2f} s, "
                      f"{cpu / count * 1e6:.0f} us per request", flush=True)
        server_module._dumps, encoding.dumps_list = cached
    print(json.dumps({"plain_us_per_request": round(statistics.median(results["plain"]), 1),
                      "cached_us_per_request": round(statistics.median(results["cached"]), 1),
                      "requests": count}))


if __name__ == "__main__":
    main()
