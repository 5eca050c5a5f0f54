"""NGINX edge benchmark: time from a Service or Node change until every host holds the new servers.

Setup (defaults): the dev API server, 100 Services (one ``nkl-`` port each) x 20 worker nodes, two NGINX
Plus stand-in hosts declaring the 100 upstreams; everything synced once first.

Mode ``direct`` (the only one so far): the watch mapping of :mod:`watchers.nginx` turns each change into
keys and a thread pool (``--concurrency``, like one threads worker) calls the reconcile; the 250-750 ms
``sync_delay`` jitter the workqueue adds before each sync is *not* included (add it to the numbers: it
is there by design). Prints p50/p99 per change kind and the NGINX Plus API requests per sync.

    .venv/bin/python -m bench.nginx [--services 100] [--nodes 20] [--changes 20] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import config

from kube import Kube, resources
from kubedev import DevAPIServer
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx.controller import reconcile, sync_upstream
from tasks.nginx.translate import UpstreamRef
from watchers.cache import Stores
from watchers.engine import WatchEvent
from watchers.nginx import CONFIG, NODES, SERVICES, map_node, map_service
from workers.controller import Key, Outcome


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Bench:
    def __init__(self, services: int, nodes: int, concurrency: int) -> None:
        self.n_services, self.n_nodes = services, nodes
        self.pool = ThreadPoolExecutor(concurrency)
        self.api = DevAPIServer(port=0).start()
        kubeconfig = Path(tempfile.mkdtemp()) / "kubeconfig"
        self.api.write_kubeconfig(kubeconfig)
        self.kube = Kube(config.new_client_from_config(str(kubeconfig)))
        names = [f"svc-{i}" for i in range(services)]
        self.hosts = [NginxPlusStandIn(http_upstreams=names).start() for _ in range(2)]
        self.requests: list[int] = []

    def close(self) -> None:
        self.pool.shutdown()
        for h in self.hosts:
            h.stop()
        self.api.stop()

    def service_body(self, i: int, node_port: int) -> dict[str, Any]:
        return {"metadata": {"name": f"svc-{i}", "namespace": "nginx-ingress"},
                "spec": {"type": "NodePort", "ports": [{"name": f"nkl-svc-{i}", "port": 80, "nodePort": node_port}]}}

    def node_body(self, name: str, ip: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}

    def setup(self) -> float:
        k = self.kube
        for ns in ("nkl", "nginx-ingress"):
            k.create(resources.NAMESPACE, {"metadata": {"name": ns}})
        k.create(resources.CONFIGMAP, {"metadata": {"name": "nkl-config", "namespace": "nkl"},
                                       "data": {"nginx-hosts": ",".join(h.url for h in self.hosts)}})
        for n in range(self.n_nodes):
            k.create(resources.NODE, self.node_body(f"w{n}", f"10.1.{n // 250}.{n % 250 + 1}"))
        for i in range(self.n_services):
            k.create(resources.SERVICE, self.service_body(i, 30000 + i))
        t0 = time.perf_counter()
        keys = [key for _, key in map_node(WatchEvent("ADDED", self.node_body("x", "1.1.1.1"), None, "local"),
                                           self.stores())]
        self.run(keys)
        return time.perf_counter() - t0

    def stores(self) -> Stores:
        stores = Stores()
        stores.add(SERVICES).replace(self.kube.list(resources.SERVICE, namespace="nginx-ingress"))
        stores.add(NODES).replace(self.kube.list(resources.NODE))
        stores.add(CONFIG).replace([c for c in self.kube.list(resources.CONFIGMAP, namespace="nkl")])
        return stores

    def run(self, keys: list[Key]) -> None:
        def one(key: Key) -> None:
            upstream = UpstreamRef.parse(key.name)
            report = sync_upstream(self.kube, key.namespace, upstream)
            self.requests.append(report.requests)
            if report.failures:
                raise RuntimeError(report.failures)

        list(self.pool.map(one, keys))

    def holds(self, upstream: str, addresses: set[str]) -> bool:
        return all(set(h.addresses("http", upstream)) == addresses for h in self.hosts)

    def service_change(self, i: int, node_port: int) -> float:
        old = self.kube.get(resources.SERVICE, f"svc-{i}", "nginx-ingress")
        body = self.service_body(i, node_port)
        assert old is not None
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        t0 = time.perf_counter()
        new = self.kube.replace(resources.SERVICE, body)
        stores = self.stores()
        keys = [key for _, key in map_service(WatchEvent("MODIFIED", new, old, "local"), stores)]
        self.run(keys)
        elapsed = time.perf_counter() - t0
        ips = [a["address"] for n in stores.list(NODES) for a in n["status"]["addresses"]]
        assert self.holds(f"svc-{i}", {f"{ip}:{node_port}" for ip in ips})
        return elapsed

    def node_change(self, n: int) -> float:
        body = self.node_body(f"extra-{n}", f"10.2.0.{n + 1}")
        t0 = time.perf_counter()
        new = self.kube.create(resources.NODE, body)
        keys = [key for _, key in map_node(WatchEvent("ADDED", new, None, "local"), self.stores())]
        self.run(keys)
        elapsed = time.perf_counter() - t0
        assert all(f"10.2.0.{n + 1}:" in " ".join(h.addresses("http", "svc-0")) for h in self.hosts)
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--changes", type=int, default=20, help="Service changes measured (Node changes: 1/4)")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    bench = Bench(args.services, args.nodes, args.concurrency)
    try:
        initial = bench.setup()
        print(f"setup: {args.services} Services x {args.nodes} nodes x 2 hosts; initial sync of "
              f"{2 * args.services} keys ({2 * args.services * args.nodes} servers) took {initial:.2f} s "
              f"(concurrency {args.concurrency}, mode direct, jitter not included)")
        converged_before = len(bench.requests)
        bench.run([Key("local", h.url, f"http:svc-{i}") for h in bench.hosts for i in range(3)])
        converged = bench.requests[converged_before:]
        bench.requests.clear()
        service_times = [bench.service_change(i % args.services, 31000 + i) for i in range(args.changes)]
        service_requests = list(bench.requests)
        bench.requests.clear()
        node_times = [bench.node_change(n) for n in range(max(2, args.changes // 4))]
        node_requests = list(bench.requests)
        for label, times in (("Service nodePort change (2 keys)", service_times),
                             (f"Node join ({2 * args.services} keys)", node_times)):
            print(f"{label:<34} n={len(times):<3} p50={pct(times, 0.5) * 1000:8.1f} ms  "
                  f"p99={pct(times, 0.99) * 1000:8.1f} ms  max={max(times) * 1000:8.1f} ms")
        print(f"API requests per sync: converged {statistics.mean(converged):.1f}, Service change "
              f"{statistics.mean(service_requests):.1f} (1 GET + {args.nodes} POST + {args.nodes} DELETE), "
              f"Node join {statistics.mean(node_requests):.1f} (1 GET + 1 POST)")
        assert reconcile(Key("local", bench.hosts[0].url, "http:svc-0"), kube=bench.kube).outcome is Outcome.SUCCESS
    finally:
        bench.close()


if __name__ == "__main__":
    main()
