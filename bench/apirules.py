"""APIRule benchmark: the whole pipeline (dev API server → watcher → Redis → 2 workers) under load.

    .venv/bin/python -m bench.apirules [--sizes 1000,10000] [--workers 2] [--concurrency 4]
                                       [--live-changes 20] [--timeout 300] [--skip-resync]
                                       [--baseline] [--no-unchanged-resync]

Per size it starts a fresh dev API server (its own process, with a request counter), a redis-server,
``reconcilery watch --controllers apirule`` and ``--workers`` ``reconcilery worker -Q apigateway``
processes (threads pool, Celery task events off), stops all of them at the end, and prints:

- per phase (create N; an unchanged resync of every APIRule; a full resync with live changes):
  reconciles/s, API requests and writes per reconcile (counted at the dev API server), CPU ms of the
  worker processes per reconcile (``/proc``), and each worker's RSS at the end;
  ``--baseline`` first runs the same size on the path before informers, for a comparison in one run;
- time from the first create until every APIRule is ``Ready`` (creates are sequential and part of it);
- reconciles per second (a reconcile starts with one GET of its APIRule: that is what is counted);
- API requests per reconcile at the dev API server, by verb and resource (the watcher's lists
  included, watch streams and the benchmark's own requests excluded);
- the p50/p99 latency of ``--live-changes`` live changes (a rule edit → new generation ``Ready``)
  made while a full resync of every APIRule is running (enqueued with ``WorkQueue.add_many(...,
  resync=True)``, as the beat's resync task does); the resync's own duration (``--skip-resync``:
  only the time until Ready).

Every APIRule gets its own host. Every read but the APIRule's own GET comes from the worker's informers
(``informers.informer``; the occupied-host check through the VirtualService informer's host index), so
a reconcile costs the same at any size; set ``RECONCILERY_APIRULE_VS_CACHE=0`` to measure the old
cluster-wide LIST per reconcile (O(N²) a pass).
A size that does not settle within ``--timeout`` seconds reports how many were Ready by then.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BENCH_HEADER = "X-Reconcilery-Bench"
NAMESPACE = "shop"


# ---- the dev API server process, with a request counter ------------------------------------------


def classify(method: str, path: str, watch: bool) -> str:
    """``VERB resource[/name][/sub]`` of a request path, for the per-reconcile breakdown."""
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return f"{method} discovery"
    label = rest[0] + ("/{name}" if len(rest) > 1 else "") + (f"/{rest[2]}" if len(rest) > 2 else "")
    verb = "WATCH" if watch else ("LIST" if method == "GET" and len(rest) == 1 else method)
    return f"{verb} {label}"


def serve_devapi(port: int, kubeconfig: str) -> int:
    """Run kubedev with ``/bench/requests`` (GET: counts by :func:`classify`; DELETE: reset)."""
    from aiohttp import web

    import kubedev.server as server
    from kubedev.__main__ import main

    counts: collections.Counter[str] = collections.Counter()
    original = server._Handler.dispatch

    async def dispatch(self: Any, request: web.Request, path: str | None = None) -> web.StreamResponse:
        if request.path == "/bench/requests":
            body = dict(counts)
            if request.method == "DELETE":
                counts.clear()
            return web.json_response(body)
        if not request.headers.get(BENCH_HEADER):
            counts[classify(request.method, request.path, request.query.get("watch") in ("true", "1"))] += 1
        return await original(self, request, path)

    server._Handler.dispatch = dispatch  # type: ignore[method-assign]
    return main(["--port", str(port), "--kubeconfig", kubeconfig, "--log-level", "WARNING",
                 "--bookmark-interval", "5"])


# ---- the benchmark ------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def apirule(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.kyma-project.io/v2", "kind": "APIRule",
        "metadata": {"name": f"r{i}", "namespace": NAMESPACE},
        "spec": {"hosts": [f"r{i}.local.kyma.dev"], "gateway": "kyma-system/kyma-gateway",
                 "service": {"name": "httpbin", "port": 8000},
                 "rules": [{"path": "/*", "methods": ["GET"], "noAuth": True}]},
    }


@dataclass
class Tracker:
    """APIRule states as the benchmark's own watch sees them."""

    ready: set[str] = field(default_factory=set)
    waiting: dict[str, tuple[int, float]] = field(default_factory=dict)  # name -> (generation, t0)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def see(self, event: Any, _stores: Any) -> list[Any]:
        obj = event.object
        name = obj["metadata"]["name"]
        status = obj.get("status") or {}
        now = time.perf_counter()
        with self.lock:
            if event.type != "DELETED" and status.get("state") == "Ready":
                self.ready.add(name)
                want = self.waiting.get(name)
                if want and int(status.get("observedGeneration") or 0) >= want[0]:
                    self.latencies.append(now - want[1])
                    del self.waiting[name]
            else:
                self.ready.discard(name)
        return []

    def expect(self, name: str, generation: int, t0: float) -> None:
        with self.lock:
            self.waiting[name] = (generation, t0)


def proc_usage(pid: int) -> tuple[float, int]:
    """``(cpu seconds, RSS bytes)`` of process ``pid`` and its children so far (Linux ``/proc``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0.0, 0
    return cpu, rss


def workers_usage(pids: list[int]) -> tuple[float, list[int]]:
    """Total CPU seconds of the worker processes and each one's RSS (bytes)."""
    usage = [proc_usage(pid) for pid in pids]
    return sum(c for c, _ in usage), [r for _, r in usage]


#: The worker's environment of ``--baseline``: the path before informers (every read from the API
#: server, the official client's credential refresh before every request).
BASELINE_ENV = {"RECONCILERY_INFORMERS": "0", "RECONCILERY_KUBE_REFRESH_SECONDS": "0"}


def run_size(n: int, args: argparse.Namespace, redis_url: str, tmp: Path,
             extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    import redis
    import requests
    import yaml
    from kubernetes import client

    from kube import Kube, resources
    from tasks.apigateway import controller, install
    from tests.fixtures.processes import free_port, stop_process, wait_for
    from watchers.engine import WatchManager, WatchRegistration
    from workers.app import WORKERS_READY, workqueue
    from workers.controller import Key

    redis.Redis.from_url(redis_url).flushall()
    port = free_port()
    kubeconfig = tmp / f"kubeconfig-{n}"
    names = ("devapi", "watcher", *(f"worker{i}" for i in range(args.workers)))
    logs = [open(tmp / f"{name}-{n}.log", "wb") for name in names]  # noqa: SIM115
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": redis_url,
           "RECONCILERY_KUBECONFIG": str(kubeconfig), "RECONCILERY_DOMAINS": "tasks.apigateway.controller",
           "RECONCILERY_TASK_EVENTS": "0", "PYTHONUNBUFFERED": "1", **(extra_env or {})}

    def spawn(argv: list[str], log: Any) -> None:
        procs.append(subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))

    manager: WatchManager | None = None
    api: client.ApiClient | None = None
    try:
        spawn([sys.executable, "-m", "bench.apirules", "--serve-devapi", str(port), str(kubeconfig)], logs[0])
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: requests.get(base + "/readyz", timeout=1).ok, timeout=120, message="dev API server")
        cfg = client.Configuration()
        cfg.host = base
        cfg.api_key = {"authorization": "dev"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        api = client.ApiClient(cfg, header_name=BENCH_HEADER, header_value="1")
        kube = Kube(api, timeout=60)
        install.install_crds(kube)
        kinds = {"Namespace": resources.NAMESPACE, "ConfigMap": resources.CONFIGMAP, "Service": resources.SERVICE,
                 "Gateway": controller.GATEWAY}
        for doc in yaml.safe_load_all((ROOT / "examples/apigateway/00-cluster.yaml").read_text()):
            if doc:
                kube.create(kinds[doc["kind"]], doc)

        health = free_port()
        spawn([sys.executable, "-m", "reconcilery.cli", "watch", "--controllers", "apirule",
               "--health-port", str(health), "--health-host", "127.0.0.1"], logs[1])
        for i in range(args.workers):
            spawn([sys.executable, "-m", "reconcilery.cli", "worker", "-Q", "apigateway", "-c", str(args.concurrency),
                   "-n", f"bench{i}@%h", "-l", "WARNING"], logs[2 + i])
        r = redis.Redis.from_url(redis_url)
        wait_for(lambda: r.scard(WORKERS_READY) == args.workers, timeout=180, message="workers ready")
        wait_for(lambda: requests.get(f"http://127.0.0.1:{health}/readyz", timeout=1).ok, timeout=120,
                 message="watcher ready")

        tracker = Tracker()
        manager = WatchManager([WatchRegistration("bench-apirules", controller.APIRULE, NAMESPACE, None,
                                                  tracker.see)], enqueue=lambda c, k: None, kube=kube).start()
        manager.wait_ready(30)
        requests.delete(base + "/bench/requests", timeout=10)
        worker_pids = [p.pid for p in procs[2:]]
        cpu0, _ = workers_usage(worker_pids)

        # 1. create n APIRules; time until every one is Ready
        t0 = time.perf_counter()
        for i in range(n):
            kube.create(controller.APIRULE, apirule(i))
        created = time.perf_counter() - t0
        deadline = t0 + args.timeout
        while len(tracker.ready) < n and time.perf_counter() < deadline:
            time.sleep(0.2)
        ready_s = time.perf_counter() - t0
        ready_n = len(tracker.ready)
        counts = requests.delete(base + "/bench/requests", timeout=10).json()
        cpu1, rss1 = workers_usage(worker_pids)
        result: dict[str, Any] = {"n": n, "created_s": created, "ready_s": ready_s, "ready": ready_n,
                                  "counts": counts, "cpu_s": cpu1 - cpu0, "rss": rss1}
        if ready_n < n or args.skip_resync:
            return result

        # 2. an unchanged resync: every APIRule once more, nothing changed (0 writes expected)
        if args.unchanged_resync:
            wq = workqueue()
            keys = [Key("local", NAMESPACE, f"r{i}") for i in range(n)]
            t_unchanged = time.perf_counter()
            wq.add_many(controller.CONTROLLER_NAME, keys, resync=True)

            def idle() -> bool:
                s = wq.status(controller.CONTROLLER_NAME)
                return s.waiting == 0 and s.in_progress == 0 and s.resync == 0

            wait_for(idle, timeout=args.timeout, interval=0.1, message="unchanged resync drained")
            unchanged_s = time.perf_counter() - t_unchanged
            cpu2, rss2 = workers_usage(worker_pids)
            result.update(unchanged_s=unchanged_s, unchanged_cpu_s=cpu2 - cpu1, rss=rss2,
                          unchanged_counts=requests.delete(base + "/bench/requests", timeout=10).json())
            cpu1 = cpu2

        # 3. live changes while a full resync runs
        wq = workqueue()
        keys = [Key("local", NAMESPACE, f"r{i}") for i in range(n)]
        t_resync = time.perf_counter()
        wq.add_many(controller.CONTROLLER_NAME, keys, resync=True)
        rate = result["reconciles"] = counts.get("GET apirules/{name}", 0)
        per_s = rate / ready_s if ready_s else 1.0
        spacing = min(1.0, max(0.05, (n / per_s) / (args.live_changes + 2)))
        pending_at_change: list[int] = []
        for name in random.Random(1).sample([k.name for k in keys], args.live_changes):
            time.sleep(spacing)
            pending_at_change.append(wq.status(controller.CONTROLLER_NAME).resync)
            obj = kube.get(controller.APIRULE, name, NAMESPACE)
            assert obj is not None
            obj["spec"]["rules"][0]["methods"] = ["GET", "HEAD"]
            t_change = time.perf_counter()
            updated = kube.replace(controller.APIRULE, obj)
            tracker.expect(name, int(updated["metadata"]["generation"]), t_change)

        def drained() -> bool:
            s = wq.status(controller.CONTROLLER_NAME)
            return s.waiting == 0 and s.in_progress == 0 and not tracker.waiting

        wait_for(drained, timeout=args.timeout, interval=0.1, message="resync drained")
        cpu3, rss3 = workers_usage(worker_pids)
        result.update(resync_s=time.perf_counter() - t_resync, latencies=list(tracker.latencies),
                      pending_at_change=pending_at_change, resync_cpu_s=cpu3 - cpu1, rss=rss3,
                      resync_counts=requests.get(base + "/bench/requests", timeout=10).json())
        return result
    finally:
        if manager is not None:
            manager.stop()
        for proc in reversed(procs):
            stop_process(proc)
        for log in logs:
            log.close()
        if api is not None:
            api.close()


WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


def phase_line(label: str, counts: dict[str, int], seconds: float, cpu_s: float) -> str:
    """One phase: reconciles, reconciles/s, API requests and writes per reconcile, CPU ms per reconcile."""
    reconciles = counts.get("GET apirules/{name}", 0) or counts.get("reconciles", 0)
    total = sum(v for k, v in counts.items() if not k.startswith("WATCH"))
    writes = sum(v for k, v in counts.items() if k.split(" ", 1)[0] in WRITE_VERBS)
    per = max(reconciles, 1)
    return (f"{label:16s} {reconciles:7d} reconciles {reconciles / seconds:7.1f}/s  "
            f"requests/reconcile {total / per:5.2f}  writes/reconcile {writes / per:5.2f}  "
            f"worker CPU/reconcile {cpu_s * 1000 / per:6.2f} ms")


def report(res: dict[str, Any], workers: int, concurrency: int, label: str = "") -> None:
    n, counts = res["n"], res["counts"]
    reconciles = counts.get("GET apirules/{name}", 0)
    requests_total = sum(v for k, v in counts.items() if not k.startswith("WATCH"))
    print(f"\n== {n} APIRules, {workers} workers x {concurrency} threads{label}: per phase ==")
    print(phase_line("create", counts, res["ready_s"], res["cpu_s"]))
    print(f"{'':16s} requests/create (per APIRule) {requests_total / n:5.2f}")
    if "unchanged_counts" in res:
        print(phase_line("unchanged resync", res["unchanged_counts"], res["unchanged_s"], res["unchanged_cpu_s"]))
    if "resync_counts" in res:
        print(phase_line("resync + live", res["resync_counts"], res["resync_s"], res["resync_cpu_s"]))
    print("worker RSS:       " + ", ".join(f"{r / 2**20:.0f} MB" for r in res["rss"]))
    print(f"\n== {n} APIRules, {workers} workers x {concurrency} threads ==")
    if res["ready"] < n:
        print(f"NOT SETTLED: {res['ready']} of {n} Ready after {res['ready_s']:.1f} s "
              f"({res['ready'] / res['ready_s']:.1f} Ready/s; creates took {res['created_s']:.1f} s)")
    else:
        print(f"all Ready after:           {res['ready_s']:.1f} s (the {n} creates took {res['created_s']:.1f} s)")
    print(f"reconciles:                {reconciles} ({reconciles / res['ready_s']:.1f}/s)")
    if reconciles:
        print(f"API requests / reconcile:  {requests_total / reconciles:.1f}")
        for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
            if not k.startswith("WATCH"):
                print(f"    {k:40s} {v / reconciles:6.2f}")
    if "latencies" in res:
        lat = res["latencies"]
        rc = res["resync_counts"].get("GET apirules/{name}", 0)
        print(f"full resync of {n}:        {res['resync_s']:.1f} s, {rc} reconciles ({rc / res['resync_s']:.1f}/s)")
        print(f"live change → Ready during the resync ({len(lat)} changes, resync keys still waiting at each "
              f"change: min {min(res['pending_at_change'])}, max {max(res['pending_at_change'])}):")
        print(f"    p50 {pct(lat, 0.5) * 1000:.0f} ms, p99 {pct(lat, 0.99) * 1000:.0f} ms, "
              f"mean {statistics.mean(lat) * 1000:.0f} ms")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-devapi":
        sys.exit(serve_devapi(int(sys.argv[2]), sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated APIRule counts")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="threads per worker process")
    parser.add_argument("--live-changes", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per size before giving up")
    parser.add_argument("--skip-resync", action="store_true", help="stop once every APIRule is Ready")
    parser.add_argument("--baseline", action="store_true",
                        help="run each size first with the old path (RECONCILERY_INFORMERS=0, "
                             "RECONCILERY_KUBE_REFRESH_SECONDS=0) for an in-run comparison")
    parser.add_argument("--no-unchanged-resync", dest="unchanged_resync", action="store_false",
                        help="skip the phase that resyncs every APIRule once with nothing changed")
    args = parser.parse_args()

    from reconcilery.localredis import LocalRedis
    from tests.fixtures.processes import free_port

    with tempfile.TemporaryDirectory() as tmpdir, LocalRedis(free_port(), workdir=tmpdir) as server:
        os.environ["RECONCILERY_REDIS_URL"] = server.url  # before workers.app is imported
        os.environ["RECONCILERY_TASK_EVENTS"] = "0"
        os.environ["RECONCILERY_DOMAINS"] = "tasks.apigateway.controller"
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            if args.baseline:
                base = run_size(size, args, server.url, Path(tmpdir), BASELINE_ENV)
                report(base, args.workers, args.concurrency, " BASELINE (direct reads, unthrottled refresh)")
            res = run_size(size, args, server.url, Path(tmpdir))
            report(res, args.workers, args.concurrency, " (informers)" if args.baseline else "")
            if res["ready"] < size:
                print("(larger sizes skipped)")
                break


if __name__ == "__main__":
    main()
