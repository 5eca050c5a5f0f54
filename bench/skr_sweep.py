# mypy: disable-error-code="union-attr, arg-type, method-assign"
"""The SKR sweep at fleet scale: ``python bench/skr_sweep.py [--skrs 1000] [--connect 0.2] [--workers 1,2,4,8,16]
[--providers aws,gcp,azure] [--kcp-ipranges 20]``.

The bench's own dev API server holds the KCP, and ``--apiservers N`` dev API server processes
(``bench/skr_shard.py``, SKR ``i`` on server ``i mod N``; ``0``: the bench's own server, beside the KCP; a
comma-separated list measures each layout in turn) hold the ``--skrs`` SKR clusters, each with the
CloudResources module CR and every GA kind (``--kinds``) whose KCP mirrors are Ready: the steady state, so
every connect does the real reads of a connect and no cloud work; ``reconcilery worker`` processes consume
``cloud-skr`` with W threads in total (two processes from W=2 on, so both cores are used) and every connect
sleeps ``--connect`` seconds on top of its real work (the injected connect time: real connects take 10-20
s); ``--mode sleep`` replaces the connect by the sleep alone (``bench/skr_sleep_domain.py``), to show the
scheduling cost. All SKRs are activated in Redis, the sweep is started, and the run ends when every SKR was
connected ``--sweeps`` times.

Measured from outside the engine: a connect's end is its SkrStatus write (a KCP store event), request counts
are the dev API servers' (summed over the SKR servers), CPU seconds per group from /proc (workers, SKR
servers, the bench's own process with the KCP server, Redis), Redis load is ``total_commands_processed``.
Printed per W: the first sweep's wall time against the ideal ``SKRs x connect / W``, revisit intervals (min,
max, their ratio), the fewest other SKRs connected between two connects of one SKR (strict rotation: N - 1,
less up to W - 1 in flight), and the request rates.

A mixed fleet (``--providers aws,gcp,azure``, round robin over the SKRs): each SKR's Scope is of its
provider (built by the providers' own Scope builders from a Shoot like those of ``examples/cloud``), and
the connect times (from a connect's start to its SkrStatus write) are printed per provider.

The KCP phase (``--kcp-ipranges N``, after the sweeps; 0 skips it): moto's server and the GCP and Azure
stand-ins are started in this process and seeded (each chosen SKR's VPC in moto, the GCP project, the Azure
resource group and VNet), N SKRs per provider get a new KCP IpRange without a CIDR (allocated) on a Ready
Network (``<kyma>--kyma``; on Azure ``<kyma>--cm``), ``reconcilery worker -Q cloud-kcp`` processes
(``--kcp-workers`` threads in all) reconcile them against moto and the stand-ins, and the time from
enqueueing them all to each one's Ready is printed per provider, with the provider requests per IpRange.
The stand-ins' operations take ``--op-delay`` s and the controllers' waits are divided by
``--time-scale`` (``RECONCILERY_CLOUD_TIME_SCALE``; the original's GCP operation wait is 5 s, Azure's
provisioning wait 10 s).
"""

from __future__ import annotations

import argparse
import base64
import functools
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench import procstat, skr_fleet, skr_shard  # noqa: E402
from kubedev import DevAPIServer  # noqa: E402
from kubedev.store import Store, StoreEvent  # noqa: E402
from reconcilery.localredis import LocalRedis  # noqa: E402
from tasks.cloud import install, names  # noqa: E402
from tests.fixtures.processes import free_port, stop_process, wait_for  # noqa: E402

READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
          "lastTransitionTime": "2026-01-01T00:00:00Z"}]
PROJECT_NAMESPACE = "garden-kyma"
GCP_PROJECT = "bench-project-1"
AZURE_CREDENTIALS = {"subscriptionID": "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44",
                     "tenantID": "8e7d6c5b-0000-4a3b-8c2d-1e0f9a8b7c6d"}
NETWORKING = {"type": "calico", "nodes": "10.250.0.0/16", "pods": "100.64.0.0/12", "services": "100.104.0.0/13"}


def shoot_of(provider: str, i: int) -> dict[str, Any]:
    """SKR ``i``'s Garden Shoot on ``provider`` (as in examples/cloud; nodes 10.250.0.0/16)."""
    meta = {"name": f"c-{i}", "namespace": PROJECT_NAMESPACE}
    if provider == "gcp":
        return {"metadata": meta, "spec": {"region": "us-east4", "networking": NETWORKING, "provider": {
            "type": "gcp", "infrastructureConfig": {"networks": {"workers": "10.250.0.0/16"}},
            "workers": [{"name": "cpu-worker-0", "zones": ["us-east4-a", "us-east4-b", "us-east4-c"]}]}}}
    if provider == "azure":
        return {"metadata": meta, "spec": {"region": "northeurope", "networking": NETWORKING, "provider": {
            "type": "azure", "infrastructureConfig": {"zoned": True, "networks": {
                "vnet": {"cidr": "10.250.0.0/16"},
                "zones": [{"name": 1, "cidr": "10.250.0.0/19"}, {"name": 2, "cidr": "10.250.32.0/19"}]}},
            "workers": [{"name": "cpu-worker-0", "zones": ["1", "2"]}]}}}
    return {"metadata": meta, "spec": {"region": "eu-central-1", "networking": NETWORKING, "provider": {
        "type": "aws", "infrastructureConfig": {"networks": {"vpc": {"cidr": "10.250.0.0/16"}, "zones": [
            {"name": f"eu-central-1{z}", "workers": f"10.250.{64 * n}.0/19", "public": f"10.250.{64 * n + 32}.0/20",
             "internal": f"10.250.{64 * n + 48}.0/20"} for n, z in enumerate("abc")]}}}}}


def scope_of(provider: str, shoot: dict[str, Any]) -> dict[str, Any]:
    """``spec.scope`` of a Scope on ``provider``, from the providers' own (pure) Scope builders."""
    from tasks.cloud.aws.scope import aws_scope_info
    from tasks.cloud.azure import scope as azure_scope
    from tasks.cloud.gcp import scope as gcp_scope

    vpc = names.vpc_network(PROJECT_NAMESPACE, shoot["metadata"]["name"])
    if provider == "gcp":
        return dict(gcp_scope.scope_section(shoot, {"serviceaccount.json": f'{{"project_id": "{GCP_PROJECT}"}}'})
                    or {})
    if provider == "azure":
        return dict(azure_scope.scope_section(shoot, AZURE_CREDENTIALS) or {})
    return {"aws": aws_scope_info(shoot, vpc, "123456789012")}


def rt(store: Store, res: Any) -> Any:
    found = store.registry.lookup(res.group, res.version, res.plural)
    assert found is not None, res
    return found


def create_with_status(store: Store, res: Any, namespace: str | None, body: dict, status: dict) -> None:
    t = rt(store, res)
    store.create(t, namespace, body)
    store.patch(t, namespace, body["metadata"]["name"], "merge", {"status": status}, "status")


def skr_ident(i: int) -> str:
    """SKR ``i``'s IpRange id: a canonical UUID for any ``i`` below 2**32."""
    return f"{i:08x}-0000-4000-8000-000000000000"


def seed_skr(server: DevAPIServer, kyma: str, i: int, provider: str) -> None:
    """SKR ``kyma`` (number ``i``) served by ``server`` itself: its cluster (module and SKR CRDs, the
    CloudResources CR, :func:`bench.skr_fleet.seed_cluster`), and in the KCP its kubeconfig Secret and
    Scope (:func:`seed_kcp_side`). Its Cloud objects (the IpRange first) are a template's clone."""
    skr_fleet.seed_cluster(server.clusters.add(kyma), provider)
    seed_kcp_side(server.store, kyma, i, provider, server.kubeconfig(kyma))


def seed_kcp_side(kcp: Store, kyma: str, i: int, provider: str, kubeconfig: dict[str, Any]) -> None:
    """SKR ``kyma``'s (number ``i``) objects in the KCP: its kubeconfig Secret (``kubeconfig``: where its
    cluster is served) and its Scope."""
    secret_rt = kcp.registry.lookup("", "v1", "secrets")
    config = json.dumps(kubeconfig)  # JSON is YAML, and 10x faster to write
    kcp.create(secret_rt, names.KCP_NAMESPACE, {
        "metadata": {"name": names.kubeconfig_secret(kyma), "namespace": names.KCP_NAMESPACE},
        "data": {"config": base64.b64encode(config.encode()).decode()}})
    shoot = shoot_of(provider, i)
    kcp.create(rt(kcp, names.SCOPE), names.KCP_NAMESPACE, {
        "metadata": {"name": kyma, "namespace": names.KCP_NAMESPACE,
                     "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_BROKER_PLAN: provider}},
        "spec": {"kymaName": kyma, "shootName": f"c-{i}", "region": shoot["spec"]["region"],
                 "provider": provider, "scope": scope_of(provider, shoot)}})


def point_kubeconfigs(kcp: Store, kymas: list[str], url_of: Callable[[int], str]) -> None:
    """Re-point each fleet SKR's kubeconfig Secret in the KCP (``kymas``: in fleet order) to its cluster at
    ``url_of(i)`` (another server layout)."""
    secret_rt = kcp.registry.lookup("", "v1", "secrets")
    for i, kyma in enumerate(kymas):
        config = base64.b64encode(json.dumps(skr_shard.kubeconfig_of(url_of(i), kyma)).encode()).decode()
        kcp.patch(secret_rt, names.KCP_NAMESPACE, names.kubeconfig_secret(kyma), "merge", {"data": {"config": config}})


def seed_kcp(server: DevAPIServer) -> None:
    """The KCP's CRDs and namespace."""
    kcp = server.store
    crd_rt = kcp.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    for crd in install.load_crds("kcp"):
        kcp.create(crd_rt, None, crd)
    kcp.create(kcp.registry.lookup("", "v1", "namespaces"), None, {"metadata": {"name": names.KCP_NAMESPACE}})


def seed(server: DevAPIServer, skrs: int, providers: list[str],
         templates: dict[str, skr_fleet.Template]) -> dict[str, str]:
    """Per SKR :func:`seed_skr` (``providers`` round robin) and a clone of its provider's steady template
    (``templates``: provider -> template, ``bench/skr_fleet.py``), every SKR served by ``server`` itself.
    Store calls, no HTTP: setup is not what is measured. Run on the server's loop. Returns kyma -> provider."""
    kymas: dict[str, str] = {}
    for i in range(skrs):
        kyma = skr_fleet.kyma_name(i)
        provider = kymas[kyma] = providers[i % len(providers)]
        seed_skr(server, kyma, i, provider)
        skr_fleet.clone(server, templates[provider], kyma, i)
    return kymas


def seed_kcp_fleet(kcp: Store, skrs: int, providers: list[str], templates: dict[str, skr_fleet.Template],
                   url_of: Callable[[int], str]) -> dict[str, str]:
    """The KCP side of every fleet SKR (``providers`` round robin): its kubeconfig Secret pointing at
    ``url_of(i)``'s ``/clusters/<kyma>``, its Scope and its provider template's KCP objects. Store calls;
    run on the KCP server's loop. Returns kyma -> provider."""
    kymas: dict[str, str] = {}
    for i in range(skrs):
        kyma = skr_fleet.kyma_name(i)
        provider = kymas[kyma] = providers[i % len(providers)]
        seed_kcp_side(kcp, kyma, i, provider, skr_shard.kubeconfig_of(url_of(i), kyma))
        skr_fleet.clone_kcp(kcp, templates[provider], kyma, i)
    return kymas


class InProcessSkrs:
    """Layout 0: the SKR clusters served by the bench's own dev API server, beside the KCP (as before
    ``--apiservers``). Seeds the SKR side of each fleet SKR on :meth:`start`; :meth:`stop` drops them."""

    def __init__(self, server: DevAPIServer, skrs: int, providers: list[str],
                 templates: dict[str, skr_fleet.Template]) -> None:
        self.server = server
        self.skrs = skrs
        self.providers = providers
        self.templates = templates
        self.lock = threading.Lock()
        self._starts: dict[str, list[float]] = defaultdict(list)
        self._requests: dict[str, list[float]] = defaultdict(list)
        self.pids: list[int] = []  # the bench's own process: measured apart (KCP + these SKRs)
        self.seed_s = 0.0

    def start(self) -> None:
        def seed_all() -> None:
            for i in range(self.skrs):
                kyma, provider = skr_fleet.kyma_name(i), self.providers[i % len(self.providers)]
                store = self.server.clusters.add(kyma)
                skr_fleet.seed_cluster(store, provider)
                skr_fleet.clone_skr(store, self.templates[provider], kyma, i)

        started = time.perf_counter()
        self.server.call(seed_all, timeout=None)
        self.seed_s = time.perf_counter() - started
        skr_shard.record_marks(self.server, self._starts, self._requests, self.lock)

    def wait_ready(self) -> float:
        return self.seed_s

    def url(self, i: int) -> str:
        return self.server.url

    def counts(self) -> tuple[int, dict[str, int]]:
        return self.server.request_count("*"), self.server.request_counts("*")

    def marks(self) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        with self.lock:
            out = ({k: list(v) for k, v in self._starts.items() if v},
                   {k: list(v) for k, v in self._requests.items() if v})
            for v in (*self._starts.values(), *self._requests.values()):
                v.clear()
        return out

    def cpu_seconds(self) -> float:
        return 0.0

    def stop(self) -> None:
        for i in range(self.skrs):
            self.server.clusters.remove(skr_fleet.kyma_name(i))


class ShardedLayout:
    """Layout N: the SKR clusters on N dev API server processes (:class:`bench.skr_shard.ShardedSkrs`),
    started on :meth:`start` (each seeds its own SKRs while the bench seeds the KCP side)."""

    def __init__(self, shards: int, skrs: int, providers: list[str], templates: dict[str, skr_fleet.Template],
                 logdir: Path) -> None:
        self.args = (shards, skrs, providers, templates, logdir)
        self.ports = [free_port() for _ in range(shards)]
        self.fleet: skr_shard.ShardedSkrs | None = None

    def start(self) -> None:
        shards, skrs, providers, templates, logdir = self.args
        self.fleet = skr_shard.ShardedSkrs(shards, skrs, providers, templates, logdir, self.ports)

    def _running(self) -> skr_shard.ShardedSkrs:
        assert self.fleet is not None, "not started"
        return self.fleet

    def wait_ready(self) -> float:
        return self._running().wait_ready()

    def url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[skr_shard.shard_of(i, len(self.ports))]}"

    @property
    def pids(self) -> list[int]:
        return self._running().pids

    def counts(self) -> tuple[int, dict[str, int]]:
        return self._running().counts()

    def marks(self) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        return self._running().marks()

    def cpu_seconds(self) -> float:
        return self._running().cpu_seconds()

    def stop(self) -> None:
        if self.fleet is not None:
            self.fleet.stop()
            self.fleet = None


SkrLayout = InProcessSkrs | ShardedLayout


def bootstrap_templates(server: DevAPIServer, redis_url: str, logdir: Path, providers: list[str],
                        kinds: str) -> dict[str, skr_fleet.Template]:
    """Per provider, a template SKR brought to its steady state by real connects in this process
    (``bench/skr_fleet.py``); prints what each one holds and the writes of its last connect (0: steady)."""
    os.environ["RECONCILERY_KUBECONFIG"] = str(logdir / "kubeconfig")
    os.environ["RECONCILERY_REDIS_URL"] = redis_url
    os.environ["RECONCILERY_DOMAINS"] = "tasks.cloud.controller"
    from kube import client_for
    from tasks.cloud.settings import CloudSettings
    from tasks.cloud.skr.connect import connect
    from workers.app import app, configure, load_domains
    from workers.settings import load

    configure(app, load())
    load_domains(("tasks.cloud.controller",))
    settings = CloudSettings()

    def connect_once(kyma: str) -> None:
        report = connect(client_for("local"), kyma, settings)
        if report.result != "ok":
            raise RuntimeError(f"template connect of {kyma}: {report.result} {report.message} {report.handles}")

    templates: dict[str, skr_fleet.Template] = {}
    for n, provider in enumerate(providers):
        kyma = f"tmpl-{provider}"
        server.call(lambda kyma=kyma, n=n, provider=provider: seed_skr(server, kyma, 0xFFFF0000 + n, provider))
        t = templates[provider] = skr_fleet.bootstrap(server, kyma, provider, connect_once, kinds)
        print(f"template {provider}: {len(t.skr_objects) + 1} SKR objects "
              f"({', '.join(sorted({o['kind'] for _, o in t.skr_objects} | {'CloudResources'}))}), "
              f"{len(t.kcp_objects) + 2} KCP objects; steady after {t.connects} connects, last connect's writes: "
              f"SKR {t.writes.get('skr')}, KCP {t.writes.get('kcp')}", flush=True)
        if os.environ.get("SKR_SWEEP_DEBUG"):
            for _, o in t.skr_objects:
                print("  ", o["kind"], o["metadata"]["name"], json.dumps(o.get("status"))[:600])
    return templates


def start_workers(queue: str, threads: int, processes: int, env: dict[str, str], logdir: Path,
                  log_prefix: str, pool: str = "threads") -> list[subprocess.Popen[bytes]]:
    """``reconcilery worker -Q queue`` processes with ``threads`` threads in all (spread evenly), each
    logging to ``logdir/<log_prefix>-<n>.log``; the caller stops them."""
    procs = []
    for n in range(processes):
        count = threads // processes + (1 if n < threads % processes else 0)
        log = open(logdir / f"{log_prefix}-{n}.log", "wb")  # noqa: SIM115 - closed with the process
        # ``python -m reconcilery`` (the ``reconcilery`` command): patches the standard library for -P gevent
        procs.append(subprocess.Popen([sys.executable, "-m", "reconcilery", "worker", "-Q", queue, "-c",
                                       str(count), "-n", f"{log_prefix}{n}@%h", "-l", "WARNING", "-P", pool], env=env,
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT))
    return procs


@dataclass
class Run:
    workers: int
    processes: int
    sweep_s: float
    ideal_s: float
    connects: int
    elapsed_s: float
    revisit_min: float
    revisit_max: float
    between_min: int
    twice_before_once: int
    redis_per_s: float
    kcp_per_s: float
    skr_per_s: float
    load: str
    connect_s: dict[str, list[float]]  # provider -> durations of its connects (start to SkrStatus write)
    pool: str = "threads"
    cpu_s: float = 0.0  # worker CPU (user + system) from the sweep's start to its end
    rss_idle: int = 0  # worker RSS (bytes, all processes) once ready, before the sweep
    rss_peak: int = 0  # the largest worker RSS sampled during the sweep
    in_flight_max: int = 0  # most connects started and not yet ended at once (real mode)
    kcp_verbs: dict[str, int] = field(default_factory=dict)  # KCP requests during the run, by verb
    skr_verbs: dict[str, int] = field(default_factory=dict)  # SKR requests (all clusters), by verb
    failed: int = 0  # connects the workers logged as failed
    load_during: str = ""  # 1-minute load average at the end of the run
    budget: int = 0  # bytes of the per-connect read budget (kube.clusters.connect_budget)
    apiservers: int = 0  # SKR server processes (0: the SKRs in the bench's own server, beside the KCP)
    bench_cpu_s: float = 0.0  # the bench's own process: the KCP's server (and layout 0's SKRs) + measuring
    servers_cpu_s: float = 0.0  # the SKR server processes
    redis_cpu_s: float = 0.0  # redis-server


def connect_durations(requests: dict[str, list[float]], ends: dict[str, list[float]],
                      provider_of: dict[str, str]) -> dict[str, list[float]]:
    """Per provider, each connect's duration: from the first request to the SKR cluster after the
    previous connect's end (the readiness check) to this connect's SkrStatus write."""
    out: dict[str, list[float]] = defaultdict(list)
    for kyma, stops in ends.items():
        seen = sorted(requests.get(kyma, []))
        previous = float("-inf")
        for end in sorted(stops):
            within = [t for t in seen if previous < t <= end]
            if within:
                out[provider_of.get(kyma, "?")].append(end - within[0])
            previous = end
    return out


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by nearest rank; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def run(server: DevAPIServer, redis_url: str, kymas: dict[str, str], workers: int, connect: float, sweeps: int,
        logdir: Path, skrs: SkrLayout, mode: str = "real", pool: str = "threads", processes: int = 0,
        memory_per_process: int = 512 * 2**20, redis_pids: list[int] | None = None, apiservers: int = 0) -> Run:
    """One sweep measurement: ``workers`` connects at once (``pool``) over the fleet ``kymas`` whose SKR
    clusters ``skrs`` serves (the KCP is ``server``), until every SKR was connected ``sweeps`` times."""
    from tasks.cloud.settings import CloudSettings
    from tasks.cloud.sweep import Rotation

    client = redis.Redis.from_url(redis_url)
    client.flushall()
    rotation = Rotation(client, CloudSettings())
    for kyma in kymas:
        rotation.activate(kyma)
    processes = processes or (1 if workers == 1 else 2)
    per_process = -(-workers // processes)
    # the per-connect read budget (issue 27) sized for this concurrency: memory * 0.5 / (connects * 4)
    budget = memory_per_process // 2 // (per_process * 4)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": redis_url,
           "RECONCILERY_REMOTE_CONNECTS": str(per_process), "RECONCILERY_REMOTE_MEMORY_BYTES": str(memory_per_process),
           "RECONCILERY_DOMAINS": "tasks.cloud.controller" if mode == "real" else "bench.skr_sleep_domain",
           "RECONCILERY_KUBECONFIG": str(logdir / "kubeconfig"),
           "RECONCILERY_TASK_EVENTS": "0", "RECONCILERY_CLOUD_CONNECT_DELAY": str(connect),
           "RECONCILERY_CLOUD_CYCLIC_WORKERS": str(workers), "RECONCILERY_CLOUD_SWEEP_TICK": "0.25",
           "RECONCILERY_CLOUD_SKR_REQUEST_TIMEOUT": "30"}
    procs = start_workers("cloud-skr", workers, processes, env, logdir, f"worker-{pool}-{workers}", pool)
    ends: dict[str, list[float]] = defaultdict(list)
    order: list[tuple[float, str]] = []
    lock = threading.Lock()
    skrs.marks()  # drop the marks of earlier runs

    def on_status(event: StoreEvent) -> None:
        if event.type in ("ADDED", "MODIFIED"):
            now = time.monotonic()
            kyma = event.obj["metadata"]["name"]
            with lock:
                ends[kyma].append(now)
                order.append((now, kyma))

    try:
        wait_for(lambda: client.scard("reconcilery:workers-ready") >= processes, timeout=120, message="workers")
        unsubscribe = server.store.subscribe(f"{names.KCP_GROUP}/{names.SKR_STATUS.plural}", on_status)
        os.environ["RECONCILERY_REDIS_URL"] = redis_url
        from tasks.cloud.controller import SWEEP, SWEEP_KEY
        from workers.app import app, configure, workqueue
        from workers.settings import load

        configure(app, load())
        time.sleep(2.0)  # let the workers settle (imports, pools) before the idle RSS
        pids = [p.pid for p in procs]
        rss_idle = procstat.rss_bytes(pids)
        sampler = procstat.RssSampler(pids).start()
        redis_before = int(client.info("stats")["total_commands_processed"])
        kcp_before, (skr_before, skr_verbs_before) = server.request_count(), skrs.counts()
        kcp_verbs_before = server.request_counts()
        load_before = os.getloadavg()[0]
        cpu_before = procstat.cpu_seconds(pids)
        bench_cpu_before, servers_cpu_before = time.process_time(), skrs.cpu_seconds()
        redis_cpu_before = procstat.cpu_seconds(redis_pids or [])
        started = time.monotonic()
        workqueue().add(SWEEP, SWEEP_KEY)
        redis_started = sum(x / 10 ** (6 * i) for i, x in enumerate(client.time()))
        deadline = started + len(kymas) * connect * sweeps / workers * 6 + 120
        while time.monotonic() < deadline:
            if mode == "sleep":
                for raw in client.lrange("bench:ends", len(order), -1):
                    at, _, kyma = raw.decode().partition(":")
                    stamp = started + float(at) - redis_started
                    with lock:
                        ends[kyma].append(stamp)
                        order.append((stamp, kyma))
            with lock:
                done = len(ends) == len(kymas) and min(len(v) for v in ends.values()) >= sweeps
            if done:
                break
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        cpu = procstat.cpu_seconds(pids) - cpu_before
        bench_cpu, servers_cpu = time.process_time() - bench_cpu_before, skrs.cpu_seconds() - servers_cpu_before
        redis_cpu = procstat.cpu_seconds(redis_pids or []) - redis_cpu_before
        rss_peak = sampler.stop()
        load_during = os.getloadavg()[0]
        unsubscribe()
        redis_ops = int(client.info("stats")["total_commands_processed"]) - redis_before
        skr_after, skr_verbs_after = skrs.counts()
        kcp_ops, skr_ops = server.request_count() - kcp_before, skr_after - skr_before
        kcp_verbs = _minus(server.request_counts(), kcp_verbs_before)
        skr_verbs = _minus(skr_verbs_after, skr_verbs_before)
        starts, requests = skrs.marks()
    finally:
        for proc in procs:
            stop_process(proc)
    failed = sum((logdir / f"worker-{pool}-{workers}-{n}.log").read_text(errors="replace").count("connect failed")
                 for n in range(processes))
    with lock:
        firsts = [v[0] for v in ends.values() if v]
        sweep_s = (max(firsts) - started) if len(firsts) == len(kymas) else float("nan")
        intervals = [b - a for v in ends.values() for a, b in itertools.pairwise(v)]
        position: dict[str, int] = {}
        between: list[int] = []
        for index, (_, kyma) in enumerate(order):
            if kyma in position:
                between.append(len({k for _, k in order[position[kyma] + 1:index]} - {kyma}))
            position[kyma] = index
        connects = len(order)
        # "no SKR revisited twice before every other active SKR once", by connect starts (real mode)
        firsts_started = [v[0] for v in starts.values() if v]
        twice = sum(1 for v in starts.values() if len(v) > 1 and v[1] < max(firsts_started)) \
            if len(firsts_started) == len(kymas) else -1
        in_flight = max_in_flight(starts, ends)
    return Run(workers, processes, sweep_s, len(kymas) * connect / workers, connects, elapsed,
               min(intervals) if intervals else float("nan"), max(intervals) if intervals else float("nan"),
               min(between) if between else -1, twice, redis_ops / elapsed, kcp_ops / elapsed, skr_ops / elapsed,
               f"{load_before:.1f}", connect_durations(requests, ends, kymas) if mode == "real" else {},
               pool, cpu, rss_idle, rss_peak, in_flight, kcp_verbs, skr_verbs, failed, f"{load_during:.1f}", budget,
               apiservers, bench_cpu, servers_cpu, redis_cpu)


def _minus(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) - before.get(k, 0)}


def max_in_flight(starts: dict[str, list[float]], ends: dict[str, list[float]]) -> int:
    """The most connects started (``starts``: per SKR, its connects' starts) and not yet ended (``ends``:
    their SkrStatus writes) at one time."""
    events = sorted([(t, 1) for v in starts.values() for t in v] + [(t, -1) for v in ends.values() for t in v])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


@dataclass
class KcpPhase:
    """The KCP phase's outcome: per provider the seconds from enqueueing to Ready of each IpRange."""

    ready_s: dict[str, list[float]]
    failed: dict[str, list[str]]
    wall_s: float
    provider_requests: dict[str, int]
    workers: int


def kcp_phase(server: DevAPIServer, redis_url: str, kymas: dict[str, str], per_provider: int, workers: int,
              logdir: Path, op_delay: float, time_scale: float, timeout: float = 600.0) -> KcpPhase:
    """New KCP IpRanges (allocated CIDR) of ``per_provider`` SKRs of each provider, reconciled by
    ``cloud-kcp`` workers against moto and the GCP and Azure stand-ins (see the module doc)."""
    from moto.server import ThreadedMotoServer

    from localrun.cloud import seed_aws_shoot, seed_azure_shoot
    from standins.azure import AzureStandIn
    from standins.gcp import GcpStandIn
    from tasks.cloud.controller import IPRANGE, LOCAL_CLUSTER
    from workers.app import workqueue
    from workers.controller import Key

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto: one access-log line per AWS call otherwise
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    moto.start()
    aws_url = "http://{}:{}".format(*moto.get_host_and_port())
    gcp = GcpStandIn(op_delay=op_delay, projects=(GCP_PROJECT,)).start()
    azure = AzureStandIn(op_delay=op_delay).start()
    kcp = server.store
    chosen: dict[str, str] = {}
    for provider in sorted(set(kymas.values())):
        chosen.update({k: provider for k in [k for k, p in kymas.items() if p == provider][:per_provider]})
    ready: dict[str, float] = {}
    failed: dict[str, list[str]] = defaultdict(list)
    lock = threading.Lock()
    procs: list[subprocess.Popen[bytes]] = []

    def on_iprange(event: StoreEvent) -> None:
        name = event.obj["metadata"]["name"]
        state = (event.obj.get("status") or {}).get("state")
        if event.type in ("ADDED", "MODIFIED") and name.startswith("kcp-") and state == names.STATE_READY:
            with lock:
                ready.setdefault(name, time.monotonic())

    try:
        def prepare() -> None:
            for kyma, provider in chosen.items():
                i = int(kyma.rsplit("-", 1)[1])
                shoot = shoot_of(provider, i)
                if provider == "aws":
                    seed_aws_shoot(aws_url, shoot, PROJECT_NAMESPACE)
                elif provider == "azure":
                    seed_azure_shoot(azure.url, shoot, PROJECT_NAMESPACE, AZURE_CREDENTIALS)
                network = names.cm_network(kyma) if provider == "azure" else names.kyma_network(kyma)
                create_with_status(kcp, names.NETWORK, names.KCP_NAMESPACE, {
                    "metadata": {"name": network, "namespace": names.KCP_NAMESPACE,
                                 "labels": {names.LABEL_KYMA_NAME: kyma}},
                    "spec": {"scope": {"name": kyma}, "type": "cloud-resources" if provider == "azure" else "kyma",
                             "network": {"managed": {"cidr": "", "location": ""}} if provider == "azure" else {
                                 "reference": {}}}},
                    {"state": "Ready", "conditions": READY})
                spec: dict[str, Any] = {"scope": {"name": kyma}, "remoteRef": {"namespace": "", "name": "bench"}}
                if provider == "azure":
                    spec["network"] = {"name": network}
                kcp.create(rt(kcp, names.KCP_IPRANGE), names.KCP_NAMESPACE, {
                    "metadata": {"name": f"kcp-{kyma}", "namespace": names.KCP_NAMESPACE}, "spec": spec})

        prepare()  # the seeds go over HTTP to moto and the stand-ins; the KCP objects are store calls
        unsubscribe = kcp.subscribe(f"{names.KCP_GROUP}/{names.KCP_IPRANGE.plural}", on_iprange)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": redis_url,
               "RECONCILERY_DOMAINS": "tasks.cloud.controller", "RECONCILERY_KUBECONFIG": str(logdir / "kubeconfig"),
               "RECONCILERY_TASK_EVENTS": "0", "RECONCILERY_CLOUD_TIME_SCALE": str(time_scale),
               "RECONCILERY_AWS_ENDPOINT_URL": aws_url, "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "RECONCILERY_GCP_ENDPOINT_URL": gcp.url,
               "GCP_SA_JSON_KEY_PATH": "", "RECONCILERY_AZURE_ENDPOINT_URL": azure.url, "AZURE_CLIENT_ID": "",
               "AZURE_CLIENT_SECRET": "", "GCP_RETRY_WAIT_DURATION": ""}
        client = redis.Redis.from_url(redis_url)
        client.flushall()
        processes = 1 if workers == 1 else 2
        procs += start_workers("cloud-kcp", workers, processes, env, logdir, "kcp-worker")
        wait_for(lambda: client.scard("reconcilery:workers-ready") >= processes, timeout=120, message="workers")
        os.environ["RECONCILERY_REDIS_URL"] = redis_url
        from workers.app import app, configure
        from workers.settings import load

        configure(app, load())
        gcp_before, azure_before = len(gcp.state.request_log), len(azure.state.request_log)
        started = time.monotonic()
        workqueue().add_many(IPRANGE, [Key(LOCAL_CLUSTER, names.KCP_NAMESPACE, f"kcp-{k}") for k in chosen])
        deadline = started + timeout
        while time.monotonic() < deadline:
            with lock:
                if len(ready) == len(chosen):
                    break
            time.sleep(0.2)
        wall = time.monotonic() - started
        unsubscribe()
        requests = {"gcp": len(gcp.state.request_log) - gcp_before,
                    "azure": len(azure.state.request_log) - azure_before}
        by_provider: dict[str, list[float]] = defaultdict(list)
        with lock:
            for kyma, provider in chosen.items():
                at = ready.get(f"kcp-{kyma}")
                if at is None:
                    try:
                        obj = kcp.get(rt(kcp, names.KCP_IPRANGE), names.KCP_NAMESPACE, f"kcp-{kyma}")
                    except Exception:
                        obj = {}
                    failed[provider].append(f"{kyma}: {(obj.get('status') or {}).get('conditions')}")
                else:
                    by_provider[provider].append(at - started)
        return KcpPhase(dict(by_provider), dict(failed), wall, requests, workers)
    finally:
        for proc in procs:
            stop_process(proc)
        gcp.stop()
        azure.stop()
        moto.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skrs", type=int, default=1000)
    parser.add_argument("--connect", type=float, default=0.2, help="injected seconds per connect")
    parser.add_argument("--workers", default="760",
                        help="total connect concurrency (threads or greenlets) to measure, comma-separated; 760 meets "
                             "20,000 SKRs x 10 s within 300 s")
    parser.add_argument("--pool", default="gevent",
                        help="worker pool(s), comma-separated: threads or gevent (reconcilery worker -P <pool>); "
                             "each is measured at every --workers")
    parser.add_argument("--processes", type=int, default=0,
                        help="worker processes (0: 1 for one thread, else 2, one per core)")
    parser.add_argument("--apiservers", default="2",
                        help="dev API server processes for the SKR clusters, comma-separated layouts measured in turn "
                             "(0: every SKR in the bench's own server beside the KCP, as before); the KCP is always "
                             "in the bench's own process")
    parser.add_argument("--sweeps", type=int, default=2, help="connects per SKR to wait for (>= 2 for revisits)")
    parser.add_argument("--mode", choices=("real", "sleep"), default="real",
                        help="real: connects do their real API work; sleep: connects only sleep (scheduling cost)")
    parser.add_argument("--kinds", choices=("all", "iprange"), default="all",
                        help="all: every SKR holds every GA kind in its steady state; iprange: only its IpRange")
    parser.add_argument("--providers", default="aws", help="the fleet's providers, round robin (aws,gcp,azure)")
    parser.add_argument("--kcp-ipranges", type=int, default=0, help="KCP phase: new IpRanges per provider (0: none)")
    parser.add_argument("--kcp-workers", type=int, default=8, help="KCP phase: cloud-kcp worker threads in all")
    parser.add_argument("--op-delay", type=float, default=0.2, help="KCP phase: stand-in operation time (s)")
    parser.add_argument("--time-scale", type=float, default=10.0, help="KCP phase: controller waits divided by")
    args = parser.parse_args()
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"skr-sweep-{os.getpid()}"
    logdir.mkdir(parents=True, exist_ok=True)
    local_redis = LocalRedis(free_port(), workdir=str(logdir / "redis")).start()
    redis_pids = [local_redis.proc.pid] if local_redis.proc is not None else []
    server = DevAPIServer(port=0).start()
    layouts: list[SkrLayout] = []
    try:
        server.call(lambda: seed_kcp(server))
        server.write_kubeconfig(logdir / "kubeconfig")
        templates = bootstrap_templates(server, local_redis.url, logdir, providers, args.kinds)
        rows = []
        kymas: dict[str, str] = {}
        seed_s = 0.0
        for n, apiservers in enumerate(int(x) for x in args.apiservers.split(",") if x.strip()):
            if layouts:
                layouts[-1].stop()  # the last layout serves on, through the KCP phase
            layout: SkrLayout = (InProcessSkrs(server, args.skrs, providers, templates) if apiservers == 0 else
                                 ShardedLayout(apiservers, args.skrs, providers, templates, logdir))
            layouts.append(layout)
            started = time.perf_counter()
            layout.start()  # server processes seed their SKRs while this one seeds the KCP side
            if n == 0:
                kymas = server.call(functools.partial(seed_kcp_fleet, server.store, args.skrs, providers, templates,
                                                      layout.url), timeout=None)
            else:
                server.call(functools.partial(point_kubeconfigs, server.store, list(kymas), layout.url), timeout=None)
            kcp_s = time.perf_counter() - started
            servers_s = layout.wait_ready()
            seed_s = time.perf_counter() - started
            what = "real reads and writes" if args.mode == "real" else "no API work (sleep mode)"
            where = ("the bench's own dev API server (with the KCP)" if apiservers == 0 else
                     f"{apiservers} dev API server processes (the KCP in the bench's own)")
            print(f"seeded {args.skrs} SKR clusters in {where} in {seed_s:.1f} s (KCP side {kcp_s:.1f} s, "
                  f"SKR side {servers_s:.1f} s); connect = {what} + {args.connect * 1000:.0f} ms injected; "
                  f"{os.cpu_count()} cores; providers {', '.join(providers)}", flush=True)
            for pool in (p.strip() for p in args.pool.split(",") if p.strip()):
                for w in (int(x) for x in args.workers.split(",") if x):
                    r = run(server, local_redis.url, kymas, w, args.connect, args.sweeps, logdir, layout,
                            args.mode, pool, args.processes, redis_pids=redis_pids, apiservers=apiservers)
                    rows.append(r)
                    print(f"  apiservers={apiservers} {pool} W={w}: sweep {r.sweep_s:.1f} s (ideal "
                          f"{r.ideal_s:.1f} s), {r.connects} connects in {r.elapsed_s:.1f} s, {r.failed} failed; "
                          f"load {r.load} before, {r.load_during} at the end", flush=True)
        print()
        print("| worker threads | processes | sweep wall time | ideal N x c / W | ratio | revisit min / max (s) | "
              "max/min | fewest others between two ends | SKRs started twice before all once | Redis cmd/s | "
              "KCP req/s | SKR req/s | load before |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            ratio = r.sweep_s / r.ideal_s if r.ideal_s else float("nan")
            fair = r.revisit_max / r.revisit_min if r.revisit_min else float("nan")
            print(f"| {r.workers} | {r.processes} | {r.sweep_s:.1f} s | {r.ideal_s:.1f} s | {ratio:.2f} | "
                  f"{r.revisit_min:.1f} / {r.revisit_max:.1f} | {fair:.2f} | {r.between_min} of {len(kymas) - 1} | "
                  f"{r.twice_before_once if r.twice_before_once >= 0 else 'n/a'} | "
                  f"{r.redis_per_s:.0f} | {r.kcp_per_s:.0f} | {r.skr_per_s:.0f} | {r.load} |")
        if rows:
            print("\nper connect (requests by the dev API server's counts; worker CPU and RSS from /proc, the API "
                  "server's process apart):")
            print("| pool | W | processes | connects | failed | KCP reads | KCP writes | SKR reads | SKR writes | "
                  "worker CPU ms | RSS idle | RSS peak | in flight (max) | RSS per connect in flight | "
                  "read budget per connect | load before / end |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for r in rows:
                c = max(1, r.connects)
                kr, kw, sr, sw = (reads(r.kcp_verbs) / c, writes(r.kcp_verbs) / c, reads(r.skr_verbs) / c,
                                  writes(r.skr_verbs) / c)
                print(f"| {r.pool} | {r.workers} | {r.processes} | {r.connects} | {r.failed} | {kr:.2f} | {kw:.2f} | "
                      f"{sr:.2f} | {sw:.3f} | {r.cpu_s * 1000 / c:.2f} | {r.rss_idle / 2**20:.0f} MiB | "
                      f"{r.rss_peak / 2**20:.0f} MiB | {in_flight(r)} ({r.in_flight_max}) | "
                      f"{per_in_flight(r) / 1024:.0f} KiB | {r.budget / 1024:.0f} KiB | {r.load} / {r.load_during} |")
            for r in rows:
                print(f"  apiservers={r.apiservers} {r.pool} W={r.workers}: KCP {dict(sorted(r.kcp_verbs.items()))}, "
                      f"SKR {dict(sorted(r.skr_verbs.items()))}")
            print("\nCPU seconds from the sweep's start to its end (/proc; the machine's 2 cores give "
                  "2 x elapsed), and per connect:")
            print("| API servers | pool | W | elapsed | workers | SKR servers | bench process (KCP server + measuring) "
                  "| Redis | sum | of 2 x elapsed | workers / SKR servers / bench / Redis ms per connect | "
                  "requests/s served (KCP + SKR) | load before / end |")
            print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
            for r in rows:
                c = max(1, r.connects)
                total = r.cpu_s + r.servers_cpu_s + r.bench_cpu_s + r.redis_cpu_s
                print(f"| {r.apiservers} | {r.pool} | {r.workers} | {r.elapsed_s:.1f} s | {r.cpu_s:.1f} s | "
                      f"{r.servers_cpu_s:.1f} s | {r.bench_cpu_s:.1f} s | {r.redis_cpu_s:.1f} s | {total:.1f} s | "
                      f"{total / (2 * r.elapsed_s):.0%} | {r.cpu_s * 1000 / c:.1f} / "
                      f"{r.servers_cpu_s * 1000 / c:.1f} / "
                      f"{r.bench_cpu_s * 1000 / c:.1f} / {r.redis_cpu_s * 1000 / c:.1f} | "
                      f"{r.kcp_per_s + r.skr_per_s:.0f} | {r.load} / {r.load_during} |")
            print("\nconnect time per provider (first SKR request to the SkrStatus write; includes the injected "
                  f"{args.connect * 1000:.0f} ms):")
            print("| W | provider | SKRs | connects | connect p50 | p95 | max |")
            print("|---:|---|---:|---:|---:|---:|---:|")
            for r in rows:
                for provider in providers:
                    d = r.connect_s.get(provider, [])
                    fleet = sum(1 for v in kymas.values() if v == provider)
                    print(f"| {r.workers} | {provider} | {fleet} | {len(d)} | "
                          f"{percentile(d, 0.5):.3f} s | {percentile(d, 0.95):.3f} s | "
                          f"{max(d) if d else float('nan'):.3f} s |")
        if args.kcp_ipranges:
            k = kcp_phase(server, local_redis.url, kymas, args.kcp_ipranges, args.kcp_workers, logdir, args.op_delay,
                          args.time_scale)
            total = sum(len(v) for v in k.ready_s.values())
            print(f"\nKCP phase: {total} IpRanges Ready in {k.wall_s:.1f} s with {k.workers} cloud-kcp worker threads "
                  f"(stand-in operations {args.op_delay} s, waits / {args.time_scale:g})")
            print("| provider | IpRanges | Ready | to Ready p50 | p95 | max | provider requests per IpRange |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for provider in providers:
                d = k.ready_s.get(provider, [])
                n = len(d) + len(k.failed.get(provider, []))
                req = k.provider_requests.get(provider)
                per = f"{req / max(1, n):.0f}" if req is not None else "-"
                print(f"| {provider} | {n} | {len(d)} | {percentile(d, 0.5):.1f} s | {percentile(d, 0.95):.1f} s | "
                      f"{max(d) if d else float('nan'):.1f} s | {per} |")
            for provider, problems in k.failed.items():
                print(f"not Ready ({provider}): {problems[:3]}")
        if rows:
            r = rows[-1]
            kinds = sorted({k for p in providers for k in ["CloudResources", *skr_fleet.kinds_of(templates[p])]})
            c = max(1, r.connects)
            print(json.dumps({
                "sweep_s": round(r.sweep_s, 1), "ideal_s": round(r.ideal_s, 1),
                "ratio": round(r.sweep_s / r.ideal_s, 3) if r.ideal_s else None,
                "worker_cpu_ms_per_connect": round(r.cpu_s * 1000 / c, 2),
                "worker_rss_peak_mib": round(r.rss_peak / 2**20, 1), "in_flight": in_flight(r),
                "in_flight_markers": r.in_flight_max, "kinds": kinds, "skrs": len(kymas), "connect_s": args.connect,
                "pool": r.pool,
                "concurrency": r.workers, "processes": r.processes, "connects": r.connects, "failed": r.failed,
                "worker_rss_idle_mib": round(r.rss_idle / 2**20, 1),
                "worker_rss_per_connect_in_flight_kib": round(per_in_flight(r) / 1024, 1),
                "read_budget_per_connect_kib": round(r.budget / 1024, 1),
                "kcp_reads_per_connect": round(reads(r.kcp_verbs) / c, 2),
                "kcp_writes_per_connect": round(writes(r.kcp_verbs) / c, 3),
                "skr_reads_per_connect": round(reads(r.skr_verbs) / c, 2),
                "skr_writes_per_connect": round(writes(r.skr_verbs) / c, 3),
                "revisit_min_s": None if r.revisit_min != r.revisit_min else round(r.revisit_min, 1),
                "revisit_max_s": None if r.revisit_max != r.revisit_max else round(r.revisit_max, 1),
                "seed_s": round(seed_s, 1), "load_before": float(r.load), "load_end": float(r.load_during),
                "apiservers": r.apiservers, **cpu_per_connect(r),
                "runs": [{"apiservers": x.apiservers, "pool": x.pool, "concurrency": x.workers,
                          "sweep_s": round(x.sweep_s, 1), **cpu_per_connect(x),
                          "ratio": round(x.sweep_s / x.ideal_s, 3) if x.ideal_s else None,
                          "worker_cpu_ms_per_connect": round(x.cpu_s * 1000 / max(1, x.connects), 2),
                          "worker_rss_peak_mib": round(x.rss_peak / 2**20, 1), "in_flight": in_flight(x),
                          "failed": x.failed} for x in rows]}))
    finally:
        for layout in layouts:
            layout.stop()
        from informers import informer

        informer.reset()  # the KCP informers of the templates' connects (tasks.cloud.reads), before their server
        server.stop()
        local_redis.stop()


def reads(verbs: dict[str, int]) -> int:
    """Read requests among ``verbs`` (GET, LIST; watches are not a connect's)."""
    return verbs.get("GET", 0) + verbs.get("LIST", 0)


def writes(verbs: dict[str, int]) -> int:
    """Write requests among ``verbs``."""
    return sum(verbs.get(v, 0) for v in skr_fleet.WRITE_VERBS)


def cpu_per_connect(r: Run) -> dict[str, float]:
    """CPU ms per connect of the SKR server processes, the bench's own process (the KCP's server, and in
    layout 0 the SKRs') and Redis, and the machine's CPU used in all (workers included) per second."""
    c = max(1, r.connects)
    total = r.cpu_s + r.servers_cpu_s + r.bench_cpu_s + r.redis_cpu_s
    return {"skr_servers_cpu_ms_per_connect": round(r.servers_cpu_s * 1000 / c, 2),
            "bench_process_cpu_ms_per_connect": round(r.bench_cpu_s * 1000 / c, 2),
            "redis_cpu_ms_per_connect": round(r.redis_cpu_s * 1000 / c, 2),
            "cpu_cores_used": round(total / r.elapsed_s, 2) if r.elapsed_s else 0.0}


def in_flight(r: Run) -> int:
    """Connects in flight at the peak: the start/end markers' count, at most the concurrency (the markers
    over-count under an overloaded API server: a start is the installer's CRD read, an end the SkrStatus
    write seen by the server)."""
    return min(r.in_flight_max, r.workers)


def per_in_flight(r: Run) -> float:
    """Worker RSS above the idle processes per connect in flight at the peak (bytes)."""
    return (r.rss_peak - r.rss_idle) / max(1, in_flight(r))


if __name__ == "__main__":
    main()
