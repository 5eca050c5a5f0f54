# mypy: disable-error-code="union-attr, arg-type, method-assign"
"""The SKR sweep at fleet scale: ``python bench/skr_sweep.py [--skrs 1000] [--connect 0.2] [--workers 1,2,4,8,16]``.

One dev API server holds the KCP and ``--skrs`` SKR clusters (each with the CloudResources module CR and a
provisioned IpRange, whose KCP mirror is Ready: the steady state, so every connect does the real reads
of a connect and no cloud work); ``reconcilery worker`` processes consume ``cloud-skr`` with W threads in
total (two processes from W=2 on, so both cores are used) and every connect sleeps ``--connect`` seconds
on top of its real work (the injected connect time: real connects take 10-20 s); ``--mode sleep`` replaces
the connect by the sleep alone (``bench/skr_sleep_domain.py``), to show the scheduling cost. All SKRs are
activated in Redis, the sweep is started, and the run ends when every SKR was connected ``--sweeps`` times.

Measured from outside the engine: a connect's end is its SkrStatus write (a KCP store event), request
counts are the dev API server's (per cluster), Redis load is ``total_commands_processed``. Printed per
W: the first sweep's wall time against the ideal ``SKRs x connect / W``, revisit intervals (min, max,
their ratio), the fewest other SKRs connected between two connects of one SKR (strict rotation: N - 1,
less up to W - 1 in flight), and the request rates.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import yaml  # noqa: E402

from kubedev import DevAPIServer  # noqa: E402
from kubedev.store import Store, StoreEvent  # noqa: E402
from reconcilery.localredis import LocalRedis  # noqa: E402
from tasks.cloud import install, names  # noqa: E402
from tests.fixtures.processes import free_port, stop_process, wait_for  # noqa: E402

READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
          "lastTransitionTime": "2026-01-01T00:00:00Z"}]


def rt(store: Store, res: Any) -> Any:
    found = store.registry.lookup(res.group, res.version, res.plural)
    assert found is not None, res
    return found


def create_with_status(store: Store, res: Any, namespace: str | None, body: dict, status: dict) -> None:
    t = rt(store, res)
    store.create(t, namespace, body)
    store.patch(t, namespace, body["metadata"]["name"], "merge", {"status": status}, "status")


def seed(server: DevAPIServer, skrs: int) -> list[str]:
    """KCP CRDs, and per SKR: its cluster (module CRD + CR, IpRange CRD + a Ready IpRange), its kubeconfig
    Secret, Scope and Ready KCP IpRange mirror. Store calls, no HTTP: setup is not what is measured."""
    kcp = server.store
    ns_rt = kcp.registry.lookup("", "v1", "namespaces")
    secret_rt = kcp.registry.lookup("", "v1", "secrets")
    crd_rt = kcp.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    for crd in install.load_crds("kcp"):
        kcp.create(crd_rt, None, crd)
    kcp.create(ns_rt, None, {"metadata": {"name": names.KCP_NAMESPACE}})
    skr_crds = install.load_crds("module", "skr", provider="aws")
    kymas = []
    for i in range(skrs):
        kyma = f"skr-{i:04d}"
        kymas.append(kyma)
        store = server.clusters.add(kyma)
        for crd in skr_crds:
            store.create(crd_rt, None, crd)
        store.create(ns_rt, None, {"metadata": {"name": names.KYMA_SYSTEM}})
        create_with_status(store, names.CLOUD_RESOURCES, names.KYMA_SYSTEM, {
            "metadata": {"name": "default", "namespace": names.KYMA_SYSTEM, "finalizers": [names.FINALIZER]},
            "spec": {}}, {"state": "Ready", "served": "True", "conditions": READY})
        ident = f"0000{i:04d}-0000-4000-8000-000000000000"
        create_with_status(store, names.SKR_IPRANGE, None, {
            "metadata": {"name": "default", "labels": {names.LABEL_SKR_ID: ident}, "finalizers": [names.FINALIZER]},
            "spec": {}}, {"state": "Ready", "id": ident, "conditions": READY})
        config = yaml.safe_dump(server.kubeconfig(kyma))
        kcp.create(secret_rt, names.KCP_NAMESPACE, {
            "metadata": {"name": names.kubeconfig_secret(kyma), "namespace": names.KCP_NAMESPACE},
            "data": {"config": base64.b64encode(config.encode()).decode()}})
        kcp.create(rt(kcp, names.SCOPE), names.KCP_NAMESPACE, {
            "metadata": {"name": kyma, "namespace": names.KCP_NAMESPACE,
                         "labels": {names.LABEL_KYMA_NAME: kyma, names.LABEL_BROKER_PLAN: "aws"}},
            "spec": {"kymaName": kyma, "shootName": f"c-{i}", "region": "eu-central-1", "provider": "aws",
                     "scope": {"aws": {"accountId": "1", "vpcNetwork": f"shoot--kyma--c-{i}"}}}})
        create_with_status(kcp, names.KCP_IPRANGE, names.KCP_NAMESPACE, {
            "metadata": {"name": ident, "namespace": names.KCP_NAMESPACE},
            "spec": {"scope": {"name": kyma}, "remoteRef": {"namespace": "", "name": "default"}}},
            {"state": "Ready", "cidr": "10.251.0.0/22", "conditions": READY})
    return kymas


def mark_starts(server: DevAPIServer, starts: dict[str, list[float]], lock: threading.Lock) -> None:
    """Record a connect's start in each SKR cluster: the installer's read of the IpRange CRD, which every
    connect makes once, right after its readiness check (bench-side wrapper of the cluster's handler)."""
    marker = "/customresourcedefinitions/ipranges.cloud-resources.kyma-project.io"
    for name in server.clusters.names():
        handler = server.clusters.handler(name)
        original = handler.dispatch

        async def dispatch(request: Any, path: str | None = None, _original: Any = original, _name: str = name) -> Any:
            if request.method == "GET" and (path or "").endswith(marker):
                with lock:
                    starts[_name].append(time.monotonic())
            return await _original(request, path)

        handler.dispatch = dispatch


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


def run(server: DevAPIServer, redis_url: str, kymas: list[str], workers: int, connect: float, sweeps: int,
        logdir: Path, starts: dict[str, list[float]], lock: threading.Lock, mode: str = "real") -> Run:
    from tasks.cloud.settings import CloudSettings
    from tasks.cloud.sweep import Rotation

    client = redis.Redis.from_url(redis_url)
    client.flushall()
    rotation = Rotation(client, CloudSettings())
    for kyma in kymas:
        rotation.activate(kyma)
    processes = 1 if workers == 1 else 2
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": redis_url,
           "RECONCILERY_DOMAINS": "tasks.cloud.controller" if mode == "real" else "bench.skr_sleep_domain",
           "RECONCILERY_KUBECONFIG": str(logdir / "kubeconfig"),
           "RECONCILERY_TASK_EVENTS": "0", "RECONCILERY_CLOUD_CONNECT_DELAY": str(connect),
           "RECONCILERY_CLOUD_CYCLIC_WORKERS": str(workers), "RECONCILERY_CLOUD_SWEEP_TICK": "0.25",
           "RECONCILERY_CLOUD_SKR_REQUEST_TIMEOUT": "30"}
    procs = []
    for p in range(processes):
        threads = workers // processes + (1 if p < workers % processes else 0)
        log = open(logdir / f"worker-{workers}-{p}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(subprocess.Popen([sys.executable, "-m", "reconcilery.cli", "worker", "-Q", "cloud-skr", "-c",
                                       str(threads), "-n", f"bench{p}@%h", "-l", "WARNING"], env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT))
    ends: dict[str, list[float]] = defaultdict(list)
    order: list[tuple[float, str]] = []
    with lock:
        starts.clear()

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
        redis_before = int(client.info("stats")["total_commands_processed"])
        kcp_before, skr_before = server.request_count(), server.request_count("*")
        load_before = os.getloadavg()[0]
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
        unsubscribe()
        redis_ops = int(client.info("stats")["total_commands_processed"]) - redis_before
        kcp_ops, skr_ops = server.request_count() - kcp_before, server.request_count("*") - skr_before
    finally:
        for proc in procs:
            stop_process(proc)
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
    return Run(workers, processes, sweep_s, len(kymas) * connect / workers, connects, elapsed,
               min(intervals) if intervals else float("nan"), max(intervals) if intervals else float("nan"),
               min(between) if between else -1, twice, redis_ops / elapsed, kcp_ops / elapsed, skr_ops / elapsed,
               f"{load_before:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skrs", type=int, default=1000)
    parser.add_argument("--connect", type=float, default=0.2, help="injected seconds per connect")
    parser.add_argument("--workers", default="1,2,4,8,16", help="total worker threads to measure")
    parser.add_argument("--sweeps", type=int, default=2, help="connects per SKR to wait for (>= 2 for revisits)")
    parser.add_argument("--mode", choices=("real", "sleep"), default="real",
                        help="real: connects do their real API work; sleep: connects only sleep (scheduling cost)")
    args = parser.parse_args()
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"skr-sweep-{os.getpid()}"
    logdir.mkdir(parents=True, exist_ok=True)
    local_redis = LocalRedis(free_port(), workdir=str(logdir / "redis")).start()
    server = DevAPIServer(port=0).start()
    try:
        started = time.perf_counter()
        kymas = server.call(lambda: seed(server, args.skrs))
        what = "real reads and writes" if args.mode == "real" else "no API work (sleep mode)"
        print(f"seeded {args.skrs} SKR clusters in one dev API server in {time.perf_counter() - started:.1f} s; "
              f"connect = {what} + {args.connect * 1000:.0f} ms injected; {os.cpu_count()} cores")
        server.write_kubeconfig(logdir / "kubeconfig")
        rows = []
        starts: dict[str, list[float]] = defaultdict(list)
        lock = threading.Lock()
        mark_starts(server, starts, lock)
        for w in (int(x) for x in args.workers.split(",")):
            r = run(server, local_redis.url, kymas, w, args.connect, args.sweeps, logdir, starts, lock, args.mode)
            rows.append(r)
            print(f"  W={w}: sweep {r.sweep_s:.1f} s (ideal {r.ideal_s:.1f} s), {r.connects} connects "
                  f"in {r.elapsed_s:.1f} s", flush=True)
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
            spread = statistics.mean(r.kcp_per_s / max(1e-9, r.connects / r.elapsed_s) for r in rows)
            skr_per = statistics.mean(r.skr_per_s / max(1e-9, r.connects / r.elapsed_s) for r in rows)
            print(f"\nAPI requests per connect: KCP {spread:.1f}, SKR {skr_per:.1f}")
    finally:
        server.stop()
        local_redis.stop()


if __name__ == "__main__":
    main()
