"""NGINX edge benchmark: time from a Service or Node change until every host holds the new servers.

Setup (defaults): the dev API server, 100 Services (one ``nkl-`` port each) x 20 worker nodes, two NGINX
Plus stand-in hosts declaring the 100 upstreams; everything synced once first.

Mode ``platform`` (default): the real system. A local Redis, then one ``reconcilery watch --controllers
nginx-upstream`` process and two ``reconcilery worker -Q nginx -c 4`` processes; each change is made
through the API server and timed until both stand-ins hold the expected servers (polled every 5 ms), so
the numbers include the watch, the workqueue, the 250-750 ms sync jitter (by design) and the Celery hop.
Reconciles are counted from the workers' Prometheus metrics (``controller_runtime_reconcile_total``).

Mode ``direct``: the watch mapping of :mod:`tasks.nginx.watches` turns each change into
keys and a thread pool (``--concurrency``, like one threads worker) calls the reconcile; the 250-750 ms
``sync_delay`` jitter the workqueue adds before each sync is *not* included (add it to the numbers: it
is there by design). Prints p50/p99 per change kind and the NGINX Plus API requests per sync.

Mode ``slices``: the nlk mode's EndpointSlice churn. Platform as above with ``RECONCILERY_NGINX_MODES=nlk``
and two NGINXaaS stand-ins that require the API key; one annotated ClusterIP Service (port ``http-shop``)
whose Deployment rolls ``--pods`` pods in batches of ``--surge`` (what the EndpointSlice controller
writes: new endpoints appear not ready, become ready, the old ones turn terminating, then disappear;
four slice writes per batch). Each write that changes the servers is timed until both hosts hold exactly
the ready endpoints; NGINX Plus requests and reconciles are counted per slice write.

    .venv/bin/python -m bench.nginx [--mode platform|direct|slices] [--services 100] [--nodes 20] [--changes 20]
        [--node-changes 10] [--hosts 2] [--seed|--no-seed] [--workers 2] [--concurrency 4|8] [--pods 100]
        [--surge 10]

Platform and slices end with one JSON line (``service_change_p99_ms``, ``node_change_p99_ms``, ... /
``slice_change_p99_ms``, ...), the tables above it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
import requests
from kubernetes import config
from prometheus_client.parser import text_string_to_metric_families

from informers import informer
from informers.store import Stores
from kube import Kube, resources
from kubedev import DevAPIServer
from reconcilery.localredis import LocalRedis
from standins.nginxplus import NginxPlusStandIn
from tasks.nginx import controller
from tasks.nginx.controller import parse_host_key, reconcile, sync_host, sync_upstream
from tasks.nginx.plan import record_key, record_value
from tasks.nginx.reads import ENDPOINTSLICE
from tasks.nginx.synclock import SyncLocks
from tasks.nginx.translate import UpstreamRef
from tasks.nginx.watches import CONFIG, NODES, SERVICES, map_node, map_service
from tests.fixtures.processes import stop_process
from watchers.engine import WatchEvent
from workers.controller import Key, ResultKind


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Bench:
    def __init__(self, services: int, nodes: int, concurrency: int, hosts: int = 2) -> None:
        self.n_services, self.n_nodes, self.n_hosts = services, nodes, hosts
        self.pool = ThreadPoolExecutor(concurrency)
        self.api = DevAPIServer(port=0).start()
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
        self.kubeconfig = self.workdir / "kubeconfig"
        self.api.write_kubeconfig(self.kubeconfig)
        self.kube = Kube(config.new_client_from_config(str(self.kubeconfig)))
        names = [f"svc-{i}" for i in range(services)]
        self.hosts = [NginxPlusStandIn(http_upstreams=names).start() for _ in range(hosts)]
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

    def create_objects(self) -> None:
        """The namespaces, the settings ConfigMap naming both hosts, the Nodes and the Services."""
        k = self.kube
        for ns in ("nkl", "nginx-ingress"):
            k.create(resources.NAMESPACE, {"metadata": {"name": ns}})
        k.create(resources.CONFIGMAP, {"metadata": {"name": "nkl-config", "namespace": "nkl"},
                                       "data": {"nginx-hosts": ",".join(h.url for h in self.hosts)}})
        for n in range(self.n_nodes):
            k.create(resources.NODE, self.node_body(f"w{n}", f"10.1.{n // 250}.{n % 250 + 1}"))
        for i in range(self.n_services):
            k.create(resources.SERVICE, self.service_body(i, 30000 + i))

    def setup(self) -> float:
        """Create the objects and sync every key once; returns the seconds of that sync."""
        self.create_objects()
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
            shard = parse_host_key(key.name)  # a Node change's keys sync a shard of a whole host
            reports = ([r for r, _ in sync_host(self.kube, key.namespace, shard=shard)] if shard is not None
                       else [sync_upstream(self.kube, key.namespace, UpstreamRef.parse(key.name))])
            for report in reports:
                self.requests.append(report.requests)
                if report.error or report.stopped:
                    raise RuntimeError(report.error or str(report.stopped))

        list(self.pool.map(one, keys))

    def holds(self, upstream: str, addresses: set[str]) -> bool:
        return all(h.state.addresses("http", upstream) == addresses for h in self.hosts)

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


ROOT = Path(__file__).resolve().parents[1]
RECONCILE_METRIC = "controller_runtime_reconcile"
POLL_SECONDS = 0.005


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Callable[[], object], timeout: float, what: str, interval: float = POLL_SECONDS) -> None:
    """Poll ``predicate`` every ``interval`` s; raises ``TimeoutError`` naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class PlatformBench(Bench):
    """The real pipeline: local Redis, one watcher process, ``workers`` worker processes (``-Q nginx``).

    Changes go through the API server; each is timed until both stand-ins hold the expected servers.
    Every process is started in its own process group and stopped by :meth:`close`.
    """

    def __init__(self, services: int, nodes: int, concurrency: int, workers: int, hosts: int = 2,
                 seed: bool = False) -> None:
        super().__init__(services, nodes, concurrency, hosts)
        self.n_workers, self.seed = workers, seed
        self.redis = LocalRedis(free_port()).start()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.metrics_ports: list[int] = []
        self.health_url = ""
        #: node name -> InternalIP, and Service index -> nodePort: what the hosts must hold.
        self.node_ips = {f"w{n}": f"10.1.{n // 250}.{n % 250 + 1}" for n in range(nodes)}
        self.node_ports = {i: 30000 + i for i in range(services)}
        self._expected: dict[int, set[str]] = {}

    def close(self) -> None:
        try:
            for proc in reversed(self.procs):
                stop_process(proc)
        finally:
            self.redis.stop()
            super().close()

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"RECONCILERY_REDIS_URL": self.redis.url, "RECONCILERY_KUBECONFIG": str(self.kubeconfig),
                    "RECONCILERY_DOMAINS": "tasks.nginx.controller", "RECONCILERY_TASK_EVENTS": "0",
                    "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
        env.update(extra)
        return env

    def spawn(self, name: str, args: list[str], **env: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "reconcilery.cli", *args], env=self.env(**env),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
        self.procs.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-3000:]
                         for p in sorted(self.workdir.glob("*.log")))

    def alive(self, proc: subprocess.Popen[bytes], what: str) -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{self.logs()}")

    def start_workers(self) -> None:
        client = redis.Redis.from_url(self.redis.url)
        new = []
        for i in range(self.n_workers):
            port = free_port()
            self.metrics_ports.append(port)
            new.append(self.spawn(f"worker-{i}", ["worker", "-Q", "nginx", "-c", str(self.pool._max_workers),
                                                  "--name", f"bench{i}-{os.getpid()}@%h", "--loglevel", "WARNING"],
                                  RECONCILERY_METRICS_PORT=str(port)))
        for i, proc in enumerate(new):
            def ready(p: subprocess.Popen[bytes] = proc, n: int = i) -> bool:
                self.alive(p, f"worker {n}")
                return bool(client.sismember("reconcilery:workers-ready", str(p.pid)))

            wait_until(ready, 60, f"worker {i} ready", interval=0.05)

    def start_watcher(self) -> None:
        port = free_port()
        self.health_url = f"http://127.0.0.1:{port}"
        proc = self.spawn("watcher", ["watch", "--controllers", "nginx-upstream", "--health-port", str(port),
                                      "--health-host", "127.0.0.1"])

        def ready() -> bool:
            self.alive(proc, "watcher")
            with contextlib.suppress(requests.RequestException):
                return requests.get(self.health_url + "/readyz", timeout=1).status_code == 200
            return False

        wait_until(ready, 60, "watcher /readyz", interval=0.02)

    def reconciles(self) -> int:
        """``controller_runtime_reconcile_total{controller="nginx-upstream"}`` summed over workers and results."""
        total = 0.0
        for port in self.metrics_ports:
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            for family in text_string_to_metric_families(text):
                if family.name == RECONCILE_METRIC:
                    total += sum(s.value for s in family.samples if s.name.endswith("_total")
                                 and s.labels.get("controller") == "nginx-upstream")
        return int(total)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds (user + system) used so far by the workers, the watcher and this process (the
        stand-ins and the bench): what a change costs, whatever else shares the machine's cores."""
        def of(pid: int) -> float:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            return 0.0

        return {"workers_cpu_s": sum(of(p.pid) for p in self.procs[:self.n_workers]),
                "watcher_cpu_s": sum(of(p.pid) for p in self.procs[self.n_workers:]),
                "standins_and_bench_cpu_s": of(os.getpid())}

    def metric_sums(self) -> dict[str, float]:
        """Over the workers: seconds spent in reconciles (``controller_runtime_reconcile_time_seconds``)
        and in syncs (``reconcilery_nginx_sync_seconds``, cluster read + the host's requests) of the
        edge, and how many (``..._count``); where a Node change's time goes."""
        sums = {"reconcile_s": 0.0, "reconciles": 0.0, "sync_s": 0.0, "syncs": 0.0}
        for port in self.metrics_ports:
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if family.name == "controller_runtime_reconcile_time_seconds" and \
                            sample.labels.get("controller") != "nginx-upstream":
                        continue
                    name = {"controller_runtime_reconcile_time_seconds_sum": "reconcile_s",
                            "controller_runtime_reconcile_time_seconds_count": "reconciles",
                            "reconcilery_nginx_sync_seconds_sum": "sync_s",
                            "reconcilery_nginx_sync_seconds_count": "syncs"}.get(sample.name)
                    if name:
                        sums[name] += sample.value
        return sums

    def quiet(self, seconds: float = 1.5) -> int:
        """Wait until no reconcile ran for ``seconds`` (longer than the jitter); returns the reconcile count."""
        last, since = self.reconciles(), time.monotonic()
        while time.monotonic() - since < seconds:
            time.sleep(0.1)
            now = self.reconciles()
            if now != last:
                last, since = now, time.monotonic()
        return last

    def requests_sent(self) -> int:
        return sum(h.request_count for h in self.hosts)

    def expected(self, i: int) -> set[str]:
        # kept until a node or the Service's nodePort changes: the convergence poll asks once per write
        kept = self._expected.get(i)
        if kept is None:
            kept = self._expected[i] = {f"{ip}:{self.node_ports[i]}" for ip in self.node_ips.values()}
        return kept

    def all_hold(self) -> bool:
        return self.converged()

    def converged(self) -> bool:
        """Whether every host holds exactly the expected servers of every Service. Incremental: the first
        look after :meth:`expect_all` checks every (host, Service); later ones only those a host wrote
        since (:meth:`standins.nginxplus.PlusState.take_written`), so the bench's polling costs what the
        writes cost and leaves the GIL to the stand-ins it shares a process with."""
        written = [h.state.take_written() for h in self.hosts]
        if self._full:
            self._full = False
            candidates = set(self._pending)
        else:
            candidates = {(h, i) for h, names in enumerate(written) for _, name in names
                          if (h, i := int(name.removeprefix("svc-"))) in self._pending}
        for h, i in candidates:
            if self.hosts[h].state.addresses("http", f"svc-{i}") == self.expected(i):
                self._pending.discard((h, i))
        return not self._pending

    def expect_all(self) -> None:
        """Look at every (host, Service) again on the next :meth:`converged`."""
        self._pending = {(h, i) for h in range(len(self.hosts)) for i in range(self.n_services)}
        self._full = True
        self._expected = {}

    _pending: set[tuple[int, int]] = set()
    _full = True

    def seed_hosts(self) -> None:
        """Give every host the servers it should hold and record them as the edge's (the ownership
        ConfigMap), as a running edge leaves them: the watcher's start then only checks them (one GET
        per key) instead of writing hundreds of thousands of servers."""
        for host in self.hosts:
            for i in range(self.n_services):
                host.state.declare("http", f"svc-{i}", servers=[{"server": a} for a in sorted(self.expected(i))])
        data = {record_key(h.url, UpstreamRef("http", f"svc-{i}")): record_value(h.url, UpstreamRef("http", f"svc-{i}"))
                for h in self.hosts for i in range(self.n_services)}
        self.kube.create(resources.CONFIGMAP, {"metadata": {"name": "nginx-edge-upstreams", "namespace": "nkl"},
                                               "data": data})

    def setup(self) -> float:
        """Objects, workers, then the watcher; returns seconds from the watcher's start until every host
        holds every server (includes the watcher's start-up and initial list)."""
        self.create_objects()
        if self.seed:
            self.seed_hosts()
        self.start_workers()
        t0 = time.perf_counter()
        self.start_watcher()
        self.watcher_ready = time.perf_counter() - t0
        self.expect_all()
        wait_until(self.all_hold, 300, "initial sync", interval=0.05)
        return time.perf_counter() - t0

    def diagnose(self) -> str:
        """What each host holds against what it should, and the workers' reconcile results and NGINX edge
        errors: printed when a change does not converge in time."""
        lines = []
        if isinstance(self, SliceBench):
            want = self.expected_servers()
            for h in self.hosts:
                held = h.state.addresses("http", "shop")
                lines.append(f"{h.url}: {len(held)} servers, {len(want - held)} missing, {len(held - want)} extra")
        for port in self.metrics_ports:
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            lines += [line for line in text.splitlines() if line.startswith(
                ("controller_runtime_reconcile_total", "reconcilery_nginx_sync_errors_total"))]
        if isinstance(self, SliceBench):
            # the same sync from the API server's state (no informer) in this process: whether the workers
            # synced from a state that lagged the write (the watcher enqueued the key on it) or planned wrong
            os.environ.update({k: v for k, v in self.env().items() if k.startswith(("RECONCILERY_", "NGINXAAS_"))})
            controller.SYNC_LOCKS = SyncLocks(redis.Redis.from_url(self.redis.url))
            with informer.direct_reads():
                for h in self.hosts:
                    report = sync_upstream(self.kube, h.url, UpstreamRef("http", "shop"))
                    lines.append(f"{h.url}: a sync from the API server's state made {report.changes.summary()}, "
                                 f"error {report.error or report.stopped}; holds exactly the ready endpoints now: "
                                 f"{h.state.addresses('http', 'shop') == self.expected_servers()}")
        return "\n".join(lines)

    def timed(self, change: Callable[[], object], done: Callable[[], bool], what: str) -> float:
        t0 = time.perf_counter()
        change()
        try:
            wait_until(done, 120, what)
        except TimeoutError:
            print(f"{what} did not converge:\n{self.diagnose()}", file=sys.stderr, flush=True)
            raise
        elapsed = time.perf_counter() - t0
        print(f"  {what}: {elapsed * 1000:.0f} ms", file=sys.stderr, flush=True)
        return elapsed

    def service_change(self, i: int, node_port: int) -> float:
        old = self.kube.get(resources.SERVICE, f"svc-{i}", "nginx-ingress")
        assert old is not None
        body = self.service_body(i, node_port)
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        self.node_ports[i] = node_port
        self._expected.pop(i, None)
        return self.timed(lambda: self.kube.replace(resources.SERVICE, body),
                          lambda: self.holds(f"svc-{i}", self.expected(i)), f"svc-{i} nodePort {node_port}")

    def node_change(self, n: int) -> float:
        """Even ``n``: node ``extra-n`` joins; odd ``n``: the node that joined before leaves."""
        joins = n % 2 == 0
        name, ip = f"extra-{n - n % 2}", f"10.2.0.{n - n % 2 + 1}"

        def change() -> None:
            if joins:
                self.kube.create(resources.NODE, self.node_body(name, ip))
            else:
                self.kube.delete(resources.NODE, name)

        if joins:
            self.node_ips[name] = ip
        else:
            del self.node_ips[name]
        self.expect_all()
        return self.timed(change, self.all_hold, f"node {'join' if joins else 'leave'} {name}")


class SliceBench(PlatformBench):
    """EndpointSlice churn in the nlk mode: one ClusterIP Service, a Deployment of ``pods`` pods rolled in
    batches of ``surge``; two NGINXaaS stand-ins requiring the API key."""

    API_KEY = "bench-api-key"

    def __init__(self, pods: int, surge: int, nodes: int, concurrency: int, workers: int, hosts: int = 2) -> None:
        super().__init__(0, nodes, concurrency, workers, hosts)
        for h in self.hosts:
            h.stop()
        self.hosts = [NginxPlusStandIn(http_upstreams=["shop"], api_key=self.API_KEY).start() for _ in range(hosts)]
        self.n_pods, self.surge = pods, surge
        #: slice name -> its endpoints (address -> conditions); what the EndpointSlice controller holds.
        self.slices: dict[str, dict[str, dict[str, bool]]] = {"shop-old": {}, "shop-new": {}}

    def env(self, **extra: str) -> dict[str, str]:
        return super().env(RECONCILERY_NGINX_MODES="nlk", NGINXAAS_DATAPLANE_API_KEY=self.API_KEY, **extra)

    def create_objects(self) -> None:
        k = self.kube
        for ns in ("nlk", "shop"):
            k.create(resources.NAMESPACE, {"metadata": {"name": ns}})
        hosts = "".join(f"  - {h.url}\n" for h in self.hosts)
        k.create(resources.CONFIGMAP, {"metadata": {"name": "nlk-config", "namespace": "nlk"},
                                       "data": {"config.yaml": f"nginx-hosts:\n{hosts}tls-mode: no-tls\n"}})
        for n in range(self.n_nodes):
            k.create(resources.NODE, self.node_body(f"w{n}", f"10.1.{n // 250}.{n % 250 + 1}"))
        k.create(resources.SERVICE, {"metadata": {"name": "shop", "namespace": "shop",
                                                  "annotations": {"nginx.com/nginxaas": "nginxaas"}},
                                     "spec": {"type": "ClusterIP", "ports": [{"name": "http-shop", "port": 80}]}})
        self.slices["shop-old"] = {self.pod_ip(0, i): {"ready": True, "serving": True, "terminating": False}
                                   for i in range(self.n_pods)}
        for name in self.slices:
            k.create(ENDPOINTSLICE, {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                                     "metadata": {"name": name, "namespace": "shop",
                                                  "labels": {"kubernetes.io/service-name": "shop"}},
                                     "addressType": "IPv4", "ports": [{"name": "http-shop", "port": 8080}],
                                     "endpoints": self.endpoints(name)})

    @staticmethod
    def pod_ip(generation: int, i: int) -> str:
        return f"10.{100 + generation}.{i // 250}.{i % 250 + 1}"

    def endpoints(self, name: str) -> list[dict[str, Any]]:
        return [{"addresses": [ip], "conditions": dict(c)} for ip, c in self.slices[name].items()]

    def write(self, name: str) -> None:
        self.kube.patch(ENDPOINTSLICE, name, {"endpoints": self.endpoints(name)}, namespace="shop")

    def expected_servers(self) -> set[str]:
        return {f"{ip}:8080" for eps in self.slices.values() for ip, c in eps.items() if c["ready"]}

    def all_hold(self) -> bool:
        return self.holds("shop", self.expected_servers())

    def rollout(self) -> tuple[list[float], int]:
        """Roll every pod to a new generation; returns the times of the writes that change the servers
        and the number of slice writes."""
        times: list[float] = []
        writes = 0
        old, new = self.slices["shop-old"], self.slices["shop-new"]
        for start in range(0, self.n_pods, self.surge):
            batch = range(start, min(self.n_pods, start + self.surge))
            for i in batch:  # new pods scheduled, not ready yet: no server changes
                new[self.pod_ip(1, i)] = {"ready": False, "serving": False, "terminating": False}
            self.write("shop-new")
            for i in batch:
                new[self.pod_ip(1, i)] = {"ready": True, "serving": True, "terminating": False}
            times.append(self.timed(lambda: self.write("shop-new"), self.all_hold, f"batch {start} ready"))
            for i in batch:
                old[self.pod_ip(0, i)] = {"ready": False, "serving": True, "terminating": True}
            times.append(self.timed(lambda: self.write("shop-old"), self.all_hold, f"batch {start} terminating"))
            for i in batch:  # terminated pods leave the slice: no server changes
                del old[self.pod_ip(0, i)]
            self.write("shop-old")
            writes += 4
        return times, writes


def run_slices(args: argparse.Namespace) -> None:
    bench = SliceBench(args.pods, args.surge, args.nodes, args.concurrency or 4, args.workers, args.hosts)
    try:
        try:
            initial = bench.setup()
            bench.quiet()
            print(f"setup: nlk mode, 1 ClusterIP Service, {args.pods} pods in 2 EndpointSlices, {args.hosts} NGINXaaS "
                  f"hosts (API key required), {args.workers} workers x {bench.pool._max_workers} threads; initial sync "
                  f"{initial:.2f} s from the watcher's start; jitter included")
            before_r, before_q = bench.quiet(), bench.requests_sent()
            before_m, before_cpu = bench.metric_sums(), bench.cpu_seconds()
            times, writes = bench.rollout()
            reconciles, sent = bench.quiet() - before_r, bench.requests_sent() - before_q
            spent = {k: v - before_m[k] for k, v in bench.metric_sums().items()}
            cpu = {k: round(1000 * (v - before_cpu[k]) / max(1, writes), 1) for k, v in bench.cpu_seconds().items()}
            rejected = sum(h.rejected for h in bench.hosts)
        except Exception:
            print(bench.logs(), file=sys.stderr)
            raise
        report(f"EndpointSlice write -> all hosts ({len(times)})", times)
        print(f"rollout of {args.pods} pods in batches of {args.surge}: {writes} slice writes, {reconciles} "
              f"reconciles, {sent} NGINX Plus requests: {sent / writes:.1f} requests and {reconciles / writes:.1f} "
              f"reconciles per slice write ({sent / max(1, reconciles):.1f} per reconcile); {rejected} rejected (401)")
        reconcile_ms = round(1000 * spent["reconcile_s"] / max(1, spent["reconciles"]), 2)
        sync_ms = round(1000 * spent["sync_s"] / max(1, spent["syncs"]), 2)
        print(f"per reconcile: {reconcile_ms} ms mean (of which the sync, cluster read + NGINX Plus requests, "
              f"{sync_ms} ms); CPU ms per slice write: workers {cpu['workers_cpu_s']}, watcher "
              f"{cpu['watcher_cpu_s']}, stand-ins and bench {cpu['standins_and_bench_cpu_s']}")
        changing = len(times)
        # the original (v1.2, client v2.4): per server-changing write and host, GET servers + one POST or
        # DELETE per endpoint that changed (surge), as here; the writes that change nothing cost it a GET
        original = args.hosts * (changing * (1 + args.surge) + (writes - changing))
        print(json.dumps({
            "slice_change_p50_ms": ms(pct(times, 0.5)), "slice_change_p99_ms": ms(pct(times, 0.99)),
            "slice_change_max_ms": ms(max(times)), "pods": args.pods, "surge": args.surge, "hosts": args.hosts,
            "slice_writes": writes, "reconciles": reconciles, "plus_requests": sent,
            "plus_requests_per_slice_write": round(sent / writes, 2),
            "original_plus_requests_per_slice_write": round(original / writes, 2),
            "rejected_401": rejected, "initial_sync_s": round(initial, 2), "reconcile_ms_mean": reconcile_ms,
            "sync_ms_mean": sync_ms, "cpu_ms_per_slice_write": {k.replace("_cpu_s", ""): v for k, v in cpu.items()}}))
    finally:
        bench.close()


#: The CPU seconds per change the platform run reports (:meth:`PlatformBench.cpu_seconds`).
CPU_KEYS = ("workers_cpu_s", "watcher_cpu_s", "standins_and_bench_cpu_s")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def report(label: str, times: list[float]) -> None:
    print(f"{label:<34} n={len(times):<3} p50={pct(times, 0.5) * 1000:8.1f} ms  "
          f"p99={pct(times, 0.99) * 1000:8.1f} ms  max={max(times) * 1000:8.1f} ms")


def run_platform(args: argparse.Namespace) -> None:
    seed = args.seed if args.seed is not None else args.services * args.nodes * args.hosts > 20_000
    bench = PlatformBench(args.services, args.nodes, args.concurrency or 4, args.workers, args.hosts, seed)
    keys = args.hosts * args.services
    try:
        try:
            initial = bench.setup()
            setup_reconciles, setup_requests = bench.quiet(), bench.requests_sent()
            print(f"setup: {args.services} Services x {args.nodes} nodes x {args.hosts} hosts, {args.workers} workers "
                  f"x {bench.pool._max_workers} threads; initial sync of {keys} (host, upstream) pairs "
                  f"({keys * args.nodes} servers{', hosts seeded with them' if seed else ''}) took {initial:.2f} s "
                  f"from the watcher's start (watcher ready after {bench.watcher_ready:.2f} s); mode platform, "
                  "jitter included")
            print(f"initial sync: {setup_reconciles} reconciles, {setup_requests} NGINX Plus requests "
                  f"({setup_requests / max(1, setup_reconciles):.1f} per sync)")
            phases: list[tuple[str, list[float], int, int]] = []
            where: list[dict[str, float]] = []
            for label, changes in (
                    (f"Service nodePort change ({args.hosts} pairs)",
                     [lambda i=i: bench.service_change(i % args.services, 31000 + i) for i in range(args.changes)]),
                    (f"Node join/leave ({keys} pairs)",
                     [lambda n=n: bench.node_change(n) for n in range(args.node_changes)])):
                before_r, before_q, before_m = bench.quiet(), bench.requests_sent(), bench.metric_sums()
                before_cpu = bench.cpu_seconds()
                times = [change() for change in changes]
                cpu = {k: round((v - before_cpu[k]) / max(1, len(times)), 2) for k, v in bench.cpu_seconds().items()}
                phases.append((label, times, bench.quiet() - before_r, bench.requests_sent() - before_q))
                spent = {k: v - before_m[k] for k, v in bench.metric_sums().items()}
                slots = args.workers * bench.pool._max_workers
                where.append({
                    "reconcile_ms_mean": round(1000 * spent["reconcile_s"] / max(1, spent["reconciles"]), 2),
                    "sync_ms_mean": round(1000 * spent["sync_s"] / max(1, spent["syncs"]), 2),
                    "slots_busy": round(spent["reconcile_s"] / max(1e-9, slots * sum(times)), 2), **cpu})
        except Exception:
            print(bench.logs(), file=sys.stderr)
            raise
        for label, times, _, _ in phases:
            report(label, times)
        for (label, _, _, _), spent in zip(phases, where, strict=True):
            print(f"{label.split(' (')[0]}: reconcile {spent['reconcile_ms_mean']} ms mean (of which the sync, "
                  f"cluster read + NGINX Plus requests, {spent['sync_ms_mean']} ms); reconcile slots busy "
                  f"{spent['slots_busy']:.0%} of the changes' time; CPU per change: workers "
                  f"{spent['workers_cpu_s']} s, watcher {spent['watcher_cpu_s']} s, stand-ins and bench "
                  f"{spent['standins_and_bench_cpu_s']} s")
        print("NGINX Plus API requests per change (stand-in requests / changes) and reconciles: " + ", ".join(
            f"{label.split(' (')[0]} {sent / max(1, len(times)):.1f} ({sent}/{len(times)}, {syncs} reconciles)"
            for label, times, syncs, sent in phases))
        (_, service_times, service_syncs, service_sent), (_, node_times, node_syncs, node_sent) = phases
        # the original (nginx-loadbalancer-kubernetes v1.2, nginx-plus-go-client v2.4): a nodePort change is
        # per host GET servers + a POST and a DELETE per node; a Node joining or leaving is, per NodePort
        # Service and host, GET servers + one POST or DELETE (the seed's era did nothing on a Node change)
        print(json.dumps({
            "service_change_p50_ms": ms(pct(service_times, 0.5)), "service_change_p99_ms": ms(pct(service_times, 0.99)),
            "node_change_p50_ms": ms(pct(node_times, 0.5)), "node_change_p99_ms": ms(pct(node_times, 0.99)),
            "services": args.services, "nodes": args.nodes, "hosts": args.hosts,
            "workers": args.workers, "threads": bench.pool._max_workers,
            "plus_requests_per_service_change": round(service_sent / max(1, len(service_times)), 1),
            "original_plus_requests_per_service_change": args.hosts * (1 + 2 * args.nodes),
            "plus_requests_per_node_change": round(node_sent / max(1, len(node_times)), 1),
            "original_plus_requests_per_node_change": 2 * args.hosts * args.services,
            "reconciles_per_service_change": round(service_syncs / max(1, len(service_times)), 1),
            "reconciles_per_node_change": round(node_syncs / max(1, len(node_times)), 1),
            "node_change_reconcile_ms_mean": where[1]["reconcile_ms_mean"],
            "node_change_slots_busy": where[1]["slots_busy"],
            "node_change_cpu_s": {k: where[1][k] for k in CPU_KEYS},
            "service_change_cpu_s": {k: where[0][k] for k in CPU_KEYS},
            "initial_sync_s": round(initial, 2), "seeded": seed}))
    finally:
        bench.close()


def run_direct(args: argparse.Namespace) -> None:
    bench = Bench(args.services, args.nodes, args.concurrency or 8)
    try:
        initial = bench.setup()
        print(f"setup: {args.services} Services x {args.nodes} nodes x 2 hosts; initial sync of "
              f"{2 * args.services} keys ({2 * args.services * args.nodes} servers) took {initial:.2f} s "
              f"(concurrency {args.concurrency or 8}, mode direct, jitter not included)")
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
            report(label, times)
        print(f"API requests per sync: converged {statistics.mean(converged):.1f}, Service change "
              f"{statistics.mean(service_requests):.1f} (1 GET + {args.nodes} POST + {args.nodes} DELETE), "
              f"Node join {statistics.mean(node_requests):.1f} (1 GET + 1 POST)")
        assert reconcile(Key("local", bench.hosts[0].url, "http:svc-0"), kube=bench.kube).outcome is ResultKind.SUCCESS
    finally:
        bench.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("platform", "direct", "slices"), default="platform")
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--changes", type=int, default=20, help="Service changes measured")
    parser.add_argument("--node-changes", type=int, default=10,
                        help="Node joins/leaves measured (platform; direct measures changes/4 joins)")
    parser.add_argument("--hosts", type=int, default=2, help="NGINX Plus stand-in hosts")
    parser.add_argument("--seed", action=argparse.BooleanOptionalAction, default=None,
                        help="give the hosts their servers before the watcher starts (platform; default: when "
                             "services x nodes x hosts > 20,000)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (platform)")
    parser.add_argument("--concurrency", type=int, default=0,
                        help="threads per worker (platform, default 4) or in the pool (direct, default 8)")
    parser.add_argument("--pods", type=int, default=100, help="pods of the rolled Deployment (slices)")
    parser.add_argument("--surge", type=int, default=10, help="pods rolled per batch (slices)")
    args = parser.parse_args()
    # a timeout's SIGTERM stops the processes the bench started (each in a session of its own)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    {"platform": run_platform, "direct": run_direct, "slices": run_slices}[args.mode](args)


if __name__ == "__main__":
    main()
