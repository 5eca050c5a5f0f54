"""APIRule benchmark: the whole pipeline (dev API server → watcher → Redis → 2 workers) under load.

    .venv/bin/python -m bench.apirules [--sizes 1000,10000] [--workers 2] [--concurrency 4]
                                       [--live-changes 20] [--timeout 300] [--skip-resync]
                                       [--baseline] [--no-unchanged-resync]

Per size it starts a fresh dev API server (its own process, with a request counter), a redis-server,
``reconcilery watch --controllers apirule`` and ``--workers`` ``reconcilery worker -Q apigateway``
processes (threads pool, Celery task events off), stops all of them at the end, and prints:

- per phase (create N; an unchanged resync of every APIRule; a full resync with live changes):
  reconciles/s, API requests and writes per reconcile (counted at the dev API server), CPU ms of the
  worker processes per reconcile (``/proc``), the total with the watcher and redis-server (create:
  each apart), split into the reconcile function's own thread CPU (``bench/reconcile_cpu.py``, the
  same function in both peers) and the rest, the framework's cost per key; each worker's RSS at the
  end and its growth over the create phase per APIRule;
- ``--peers kopf`` runs the same sizes with ``bench/kopf_apirules.py`` (a kopf operator calling the
  same reconcile; its resync is a 410 re-list) for a side-by-side comparison in one run;
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
import json
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

from bench import reconcile_cpu  # noqa: E402

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
    apirule_watches: dict[int, web.Request] = {}
    expired: dict[int, web.Request] = {}

    async def dispatch(self: Any, request: web.Request, path: str | None = None) -> web.StreamResponse:
        if request.path == "/bench/requests":
            body = dict(counts)
            if request.method == "DELETE":
                counts.clear()
            return web.json_response(body)
        if request.path == "/bench/expire-apirule-watches":
            # the way a real API server makes a client re-list: its watch breaks, and the resourceVersion
            # it resumes from is too old (410 Gone after etcd's compaction)
            expired.update(apirule_watches)
            for open_watch in list(apirule_watches.values()):
                if open_watch.transport is not None:
                    open_watch.transport.close()
            return web.json_response({"closed": len(expired)})
        watch = request.query.get("watch") in ("true", "1")
        if not request.headers.get(BENCH_HEADER):
            counts[classify(request.method, request.path, watch)] += 1
            if watch and request.path.endswith("/apirules"):
                if request.query.get("resourceVersion") and expired:
                    expired.clear()
                    gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
                            "code": 410, "message": "too old resource version (bench: expired)"}
                    return web.Response(body=json.dumps({"type": "ERROR", "object": gone}) + "\n",
                                        content_type="application/json")
                apirule_watches[id(request)] = request
                try:
                    return await original(self, request, path)
                finally:
                    apirule_watches.pop(id(request), None)
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
    #: name -> (observedGeneration, perf_counter) of its last Ready event
    ready_at: dict[str, tuple[int, float]] = field(default_factory=dict)

    def see(self, event: Any, _stores: Any) -> list[Any]:
        obj = event.object
        name = obj["metadata"]["name"]
        status = obj.get("status") or {}
        now = time.perf_counter()
        with self.lock:
            if event.type != "DELETED" and status.get("state") == "Ready":
                self.ready.add(name)
                observed = int(status.get("observedGeneration") or 0)
                self.ready_at[name] = (observed, now)
                want = self.waiting.get(name)
                if want and observed >= want[0]:
                    self.latencies.append(now - want[1])
                    del self.waiting[name]
            else:
                self.ready.discard(name)
                self.ready_at.pop(name, None)
        return []

    def expect(self, name: str, generation: int, t0: float) -> None:
        """Wait for ``name`` Ready at ``generation`` (changed at ``t0``). Ready already seen (the
        reconcile and its watch event beat the thread that made the change): counted at once."""
        with self.lock:
            seen = self.ready_at.get(name)
            if seen is not None and seen[0] >= generation:
                self.latencies.append(seen[1] - t0)
                return
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


@dataclass(frozen=True)
class Peer:
    """What runs the reconciles: ``reconcilery`` (watcher + ``workers`` x ``concurrency``) or ``kopf``
    (one kopf operator process, ``concurrency`` executor threads; 0 = kopf's default)."""

    kind: str
    workers: int
    concurrency: int

    @classmethod
    def parse(cls, spec: str, workers: int, concurrency: int) -> Peer:
        """``reconcilery``, ``reconcilery:WxT``, ``kopf`` or ``kopf:T``."""
        kind, _, shape = spec.strip().partition(":")
        if kind not in ("reconcilery", "kopf"):
            raise ValueError(f"unknown peer {spec!r} (reconcilery[:WxT] or kopf[:T])")
        if kind == "kopf":
            return cls(kind, 1, int(shape) if shape else 0)
        if shape:
            w, _, t = shape.partition("x")
            return cls(kind, int(w), int(t))
        return cls(kind, workers, concurrency)

    @property
    def label(self) -> str:
        if self.kind == "kopf":
            return f"kopf ({self.concurrency or 'default'} threads)"
        return f"reconcilery {self.workers} workers x {self.concurrency} threads"


def run_size(n: int, args: argparse.Namespace, redis_url: str, tmp: Path, peer: Peer, redis_pid: int,
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
    kopf = peer.kind == "kopf"
    names = ("devapi", "kopf") if kopf else ("devapi", "watcher", *(f"worker{i}" for i in range(peer.workers)))
    logs = [open(tmp / f"{name}-{n}-{peer.kind}.log", "wb") for name in names]  # noqa: SIM115
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": redis_url,
           "RECONCILERY_KUBECONFIG": str(kubeconfig), "RECONCILERY_DOMAINS": "tasks.apigateway.controller",
           "RECONCILERY_TASK_EVENTS": "0", "PYTHONUNBUFFERED": "1", **(extra_env or {})}

    meters: list[Path] = []

    def spawn(argv: list[str], log: Any, metered: bool = False) -> None:
        penv = env
        if metered:  # the reconcile's own thread CPU (bench.reconcile_cpu), to tell the framework's apart
            meters.append(tmp / f"reconcile-cpu-{n}-{peer.kind}-{len(meters)}")
            meters[-1].unlink(missing_ok=True)
            penv = {**env, reconcile_cpu.PATH_ENV: str(meters[-1])}
            if not kopf:
                penv["RECONCILERY_DOMAINS"] = "tasks.apigateway.controller,bench.reconcile_cpu"
        procs.append(subprocess.Popen(argv, env=penv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))

    def reconcile_cpu_s() -> float:
        time.sleep(0.3)  # a meter writes every 0.2 s
        return sum(reconcile_cpu.read(path)[0] for path in meters)

    manager: WatchManager | None = None
    api: client.ApiClient | None = None
    load = [os.getloadavg()[0]]
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

        r = redis.Redis.from_url(redis_url)
        if kopf:
            live = free_port()
            spawn([sys.executable, "-m", "bench.kopf_apirules", "--namespace", NAMESPACE, "--liveness-port",
                   str(live), "--max-workers", str(peer.concurrency)], logs[1], metered=True)
            wait_for(lambda: requests.get(f"http://127.0.0.1:{live}/healthz", timeout=1).ok, timeout=180,
                     message="kopf operator ready")
            worker_pids, framework_pids = [procs[1].pid], []
        else:
            health = free_port()
            spawn([sys.executable, "-m", "reconcilery.cli", "watch", "--controllers", "apirule",
                   "--health-port", str(health), "--health-host", "127.0.0.1"], logs[1])
            for i in range(peer.workers):
                spawn([sys.executable, "-m", "reconcilery.cli", "worker", "-Q", "apigateway", "-c",
                       str(peer.concurrency), "-n", f"bench{i}@%h", "-l", "WARNING"], logs[2 + i],
                      metered=True)
            wait_for(lambda: r.scard(WORKERS_READY) == peer.workers, timeout=180, message="workers ready")
            wait_for(lambda: requests.get(f"http://127.0.0.1:{health}/readyz", timeout=1).ok, timeout=120,
                     message="watcher ready")
            worker_pids, framework_pids = [p.pid for p in procs[2:]], [procs[1].pid, redis_pid]

        tracker = Tracker()
        manager = WatchManager([WatchRegistration("bench-apirules", controller.APIRULE, NAMESPACE, None,
                                                  tracker.see)], enqueue=lambda c, k: None, kube=kube).start()
        manager.wait_ready(30)
        requests.delete(base + "/bench/requests", timeout=10)
        rcpu0 = reconcile_cpu_s()
        cpu0, rss0 = workers_usage(worker_pids)
        fcpu0, _ = workers_usage(framework_pids)
        split0 = [proc_usage(pid)[0] for pid in framework_pids]

        def reconciles_so_far() -> int:
            return int(requests.get(base + "/bench/requests", timeout=10).json().get("GET apirules/{name}", 0))

        # 1. create n APIRules; time until every one is Ready
        t0 = time.perf_counter()
        create_all(kube, controller.APIRULE, n, args.create_threads)
        created = time.perf_counter() - t0
        deadline = t0 + args.timeout
        while len(tracker.ready) < n and time.perf_counter() < deadline:
            if any(proc.poll() is not None for proc in procs):
                print(f"a process exited: {[(a, p.returncode) for a, p in zip(names, procs, strict=True)]}")
                break
            time.sleep(0.2)
        ready_s = time.perf_counter() - t0
        ready_n = len(tracker.ready)
        if kopf:  # kopf has no queue to ask: let the reconciles of the last status events end
            quiet(reconciles_so_far, 1.0, deadline)
        counts = requests.delete(base + "/bench/requests", timeout=10).json()
        rcpu1 = reconcile_cpu_s()
        cpu1, rss1 = workers_usage(worker_pids)
        fcpu1, _ = workers_usage(framework_pids)
        split1 = [proc_usage(pid)[0] for pid in framework_pids]
        load.append(os.getloadavg()[0])
        result: dict[str, Any] = {"n": n, "peer": peer.label, "created_s": created, "ready_s": ready_s,
                                  "ready": ready_n, "counts": counts, "cpu_s": cpu1 - cpu0,
                                  "framework_cpu_s": fcpu1 - fcpu0, "rss0": rss0, "rss": rss1,
                                  "framework_split_s": [b - a for a, b in zip(split0, split1, strict=True)],
                                  "reconcile_cpu_s": rcpu1 - rcpu0,
                                  "rss_created": rss1, "load": load}
        if ready_n < n or args.skip_resync:
            return result

        wq = workqueue()
        keys = [Key("local", NAMESPACE, f"r{i}") for i in range(n)]

        def start_resync() -> None:
            if kopf:
                requests.post(base + "/bench/expire-apirule-watches", timeout=10)
            else:
                wq.add_many(controller.CONTROLLER_NAME, keys, resync=True)

        def idle(extra: int = 0) -> Any:
            if kopf:
                return reconciles_so_far() >= n and not tracker.waiting
            s = wq.status(controller.CONTROLLER_NAME)
            return s.waiting == 0 and s.in_progress == 0 and s.resync == 0 and not tracker.waiting

        # 2. an unchanged resync: every APIRule once more, nothing changed (0 writes expected)
        if args.unchanged_resync:
            t_unchanged = time.perf_counter()
            start_resync()
            wait_for(idle, timeout=args.timeout, interval=0.1, message="unchanged resync drained")
            if kopf:
                quiet(reconciles_so_far, 1.0, time.perf_counter() + args.timeout)
            unchanged_s = time.perf_counter() - t_unchanged
            rcpu2 = reconcile_cpu_s()
            cpu2, rss2 = workers_usage(worker_pids)
            fcpu2, _ = workers_usage(framework_pids)
            load.append(os.getloadavg()[0])
            result.update(unchanged_s=unchanged_s, unchanged_cpu_s=cpu2 - cpu1, unchanged_framework_cpu_s=fcpu2 - fcpu1,
                          rss=rss2, unchanged_counts=requests.delete(base + "/bench/requests", timeout=10).json(),
                          unchanged_reconcile_cpu_s=rcpu2 - rcpu1)
            cpu1, fcpu1, rcpu1 = cpu2, fcpu2, rcpu2

        # 3. live changes while a full resync runs
        requests.delete(base + "/bench/requests", timeout=10)
        t_resync = time.perf_counter()
        start_resync()
        rate = result["reconciles"] = counts.get("GET apirules/{name}", 0)
        per_s = rate / ready_s if ready_s else 1.0
        spacing = min(1.0, max(0.05, (n / per_s) / (args.live_changes + 2)))
        pending_at_change: list[int] = []
        for name in random.Random(1).sample([k.name for k in keys], args.live_changes):
            time.sleep(spacing)
            pending_at_change.append(max(0, n - reconciles_so_far()) if kopf
                                     else wq.status(controller.CONTROLLER_NAME).resync)
            obj = kube.get(controller.APIRULE, name, NAMESPACE)
            assert obj is not None
            obj["spec"]["rules"][0]["methods"] = ["GET", "HEAD"]
            t_change = time.perf_counter()
            updated = kube.replace(controller.APIRULE, obj)
            tracker.expect(name, int(updated["metadata"]["generation"]), t_change)

        if args.drain:
            wait_for(idle, timeout=args.timeout, interval=0.1, message="resync drained")
            if kopf:
                quiet(reconciles_so_far, 1.0, time.perf_counter() + args.timeout)
        else:
            wait_for(lambda: not tracker.waiting, timeout=args.timeout, interval=0.1, message="live changes Ready")
        rcpu3 = reconcile_cpu_s()
        cpu3, rss3 = workers_usage(worker_pids)
        fcpu3, _ = workers_usage(framework_pids)
        load.append(os.getloadavg()[0])
        result.update(resync_s=time.perf_counter() - t_resync, latencies=list(tracker.latencies),
                      pending_at_change=pending_at_change, resync_cpu_s=cpu3 - cpu1,
                      resync_framework_cpu_s=fcpu3 - fcpu1, rss=rss3, drained=args.drain,
                      resync_reconcile_cpu_s=rcpu3 - rcpu1,
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


def create_all(kube: Any, resource: Any, n: int, threads: int) -> None:
    """Create APIRules ``r0`` .. ``r{n-1}`` (``threads`` at a time; 1 = in order)."""
    if threads <= 1:
        for i in range(n):
            kube.create(resource, apirule(i))
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: kube.create(resource, apirule(i)), range(n)))


def quiet(count: Any, seconds: float, deadline: float) -> None:
    """Wait until ``count()`` has not changed for ``seconds`` (or ``deadline``, perf_counter)."""
    last, since = count(), time.perf_counter()
    while time.perf_counter() < deadline:
        time.sleep(0.2)
        now = count()
        if now != last:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= seconds:
            return


WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


def per_reconcile_ms(counts: dict[str, int], cpu_s: float) -> float:
    return cpu_s * 1000 / max(counts.get("GET apirules/{name}", 0), 1)


def phase_line(label: str, counts: dict[str, int], seconds: float, cpu_s: float, framework_cpu_s: float,
               reconcile_cpu_s: float | None = None) -> str:
    """One phase: reconciles, reconciles/s, API requests and writes per reconcile, CPU ms per reconcile
    (the processes that reconcile; then with the watcher and Redis, the whole framework; then the
    reconcile function's own thread CPU and the rest, the framework's own cost)."""
    reconciles = counts.get("GET apirules/{name}", 0) or counts.get("reconciles", 0)
    total = sum(v for k, v in counts.items() if not k.startswith("WATCH"))
    writes = sum(v for k, v in counts.items() if k.split(" ", 1)[0] in WRITE_VERBS)
    per = max(reconciles, 1)
    line = (f"{label:16s} {reconciles:7d} reconciles {reconciles / seconds:7.1f}/s  "
            f"requests/reconcile {total / per:5.2f}  writes/reconcile {writes / per:5.2f}  "
            f"CPU/reconcile worker {cpu_s * 1000 / per:6.2f} ms, "
            f"total {(cpu_s + framework_cpu_s) * 1000 / per:6.2f} ms")
    if reconcile_cpu_s:
        line += (f" = reconcile {reconcile_cpu_s * 1000 / per:5.2f} ms"
                 f" + framework {(cpu_s + framework_cpu_s - reconcile_cpu_s) * 1000 / per:5.2f} ms")
    return line


def kb_per_apirule(res: dict[str, Any]) -> list[float]:
    """Each reconciling process's RSS growth over the create phase, KB per APIRule."""
    return [(b - a) / 1024 / res["n"] for a, b in zip(res["rss0"], res["rss_created"], strict=True)]


def report(res: dict[str, Any]) -> None:
    n, counts = res["n"], res["counts"]
    reconciles = counts.get("GET apirules/{name}", 0)
    requests_total = sum(v for k, v in counts.items() if not k.startswith("WATCH"))
    print(f"\n== {n} APIRules, {res['peer']}: per phase (load average {', '.join(f'{x:.1f}' for x in res['load'])}) ==")
    print(phase_line("create", counts, res["ready_s"], res["cpu_s"], res["framework_cpu_s"],
                     res.get("reconcile_cpu_s")))
    if res.get("framework_split_s"):
        watcher_s, redis_s = res["framework_split_s"]
        print(f"{'':16s} of the total per create: watcher {watcher_s * 1000 / n:.2f} ms, "
              f"redis-server {redis_s * 1000 / n:.2f} ms")
    print(f"{'':16s} requests/create (per APIRule) {requests_total / n:5.2f}")
    if "unchanged_counts" in res:
        print(phase_line("unchanged resync", res["unchanged_counts"], res["unchanged_s"], res["unchanged_cpu_s"],
                         res["unchanged_framework_cpu_s"], res.get("unchanged_reconcile_cpu_s")))
    if "resync_counts" in res:
        print(phase_line("resync + live", res["resync_counts"], res["resync_s"], res["resync_cpu_s"],
                         res["resync_framework_cpu_s"], res.get("resync_reconcile_cpu_s")))
    print("RSS of the reconciling processes: idle " + ", ".join(f"{r / 2**20:.0f} MB" for r in res["rss0"])
          + "; after the creates " + ", ".join(f"{r / 2**20:.0f} MB" for r in res["rss_created"])
          + " (" + ", ".join(f"{k:.2f} KB" for k in kb_per_apirule(res)) + " per APIRule); at the end "
          + ", ".join(f"{r / 2**20:.0f} MB" for r in res["rss"]))
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
        what = "full resync of" if res["drained"] else "resync (not drained: --no-drain) of"
        print(f"{what} {n}:        {res['resync_s']:.1f} s, {rc} reconciles ({rc / res['resync_s']:.1f}/s)")
        print(f"live change → Ready during the resync ({len(lat)} changes, resync keys still waiting at each "
              f"change: min {min(res['pending_at_change'])}, max {max(res['pending_at_change'])}):")
        print(f"    p50 {pct(lat, 0.5) * 1000:.0f} ms, p99 {pct(lat, 0.99) * 1000:.0f} ms, "
              f"mean {statistics.mean(lat) * 1000:.0f} ms")


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one size and peer for the JSON line (times in s, CPU in ms, memory in KB/MiB)."""
    out: dict[str, Any] = {
        "n": res["n"], "peer": res["peer"], "ready": res["ready"], "ready_s": round(res["ready_s"], 2),
        "created_s": round(res["created_s"], 2), "reconciles": res["counts"].get("GET apirules/{name}", 0),
        "create_cpu_ms_per_reconcile": round(per_reconcile_ms(res["counts"], res["cpu_s"]), 3),
        "create_total_cpu_ms_per_reconcile": round(
            per_reconcile_ms(res["counts"], res["cpu_s"] + res["framework_cpu_s"]), 3),
        "create_framework_cpu_ms_per_reconcile": round(per_reconcile_ms(
            res["counts"], res["cpu_s"] + res["framework_cpu_s"] - res.get("reconcile_cpu_s", 0.0)), 3),
        "worker_kb_per_apirule": [round(k, 2) for k in kb_per_apirule(res)],
        "create_watcher_redis_cpu_ms_per_create": [round(c * 1000 / res["n"], 3)
                                                   for c in res.get("framework_split_s", [])],
        "rss_mib": [round(r / 2**20, 1) for r in res["rss"]], "load": [round(x, 2) for x in res["load"]],
    }
    if "unchanged_counts" in res:
        out.update(unchanged_s=round(res["unchanged_s"], 2),
                   unchanged_cpu_ms_per_reconcile=round(
                       per_reconcile_ms(res["unchanged_counts"], res["unchanged_cpu_s"]), 3),
                   unchanged_total_cpu_ms_per_reconcile=round(per_reconcile_ms(
                       res["unchanged_counts"], res["unchanged_cpu_s"] + res["unchanged_framework_cpu_s"]), 3),
                   unchanged_framework_cpu_ms_per_reconcile=round(per_reconcile_ms(
                       res["unchanged_counts"], res["unchanged_cpu_s"] + res["unchanged_framework_cpu_s"]
                       - res.get("unchanged_reconcile_cpu_s", 0.0)), 3))
    if "latencies" in res:
        lat = res["latencies"]
        out.update(resync_s=round(res["resync_s"], 2), resync_drained=res["drained"],
                   live_p50_ms=round(pct(lat, 0.5) * 1000, 1), live_p99_ms=round(pct(lat, 0.99) * 1000, 1),
                   live_changes=len(lat))
    return out


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-devapi":
        sys.exit(serve_devapi(int(sys.argv[2]), sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated APIRule counts")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="threads per worker process")
    parser.add_argument("--peers", "--peer", default="reconcilery",
                        help="comma-separated, each run per size in turn: reconcilery (--workers x --concurrency), "
                             "reconcilery:WxT, kopf (kopf's default executor), kopf:T")
    parser.add_argument("--live-changes", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per phase before giving up")
    parser.add_argument("--create-threads", type=int, default=1, help="threads creating the APIRules (1: in order)")
    parser.add_argument("--log-dir", help="keep the processes' logs here (default: a temporary folder)")
    parser.add_argument("--skip-resync", action="store_true", help="stop once every APIRule is Ready")
    parser.add_argument("--no-drain", dest="drain", action="store_false",
                        help="end the resync phase once the live changes are Ready (the resync still running)")
    parser.add_argument("--baseline", action="store_true",
                        help="run each size first with the old path (RECONCILERY_INFORMERS=0, "
                             "RECONCILERY_KUBE_REFRESH_SECONDS=0) for an in-run comparison")
    parser.add_argument("--no-unchanged-resync", dest="unchanged_resync", action="store_false",
                        help="skip the phase that resyncs every APIRule once with nothing changed")
    args = parser.parse_args()
    peers = [Peer.parse(p, args.workers, args.concurrency) for p in args.peers.split(",") if p.strip()]

    from reconcilery.localredis import LocalRedis
    from tests.fixtures.processes import free_port

    print("command: " + " ".join([Path(sys.executable).name, "bench/apirules.py", *sys.argv[1:]]))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmpdir, LocalRedis(free_port(), workdir=tmpdir) as server:
        os.environ["RECONCILERY_REDIS_URL"] = server.url  # before workers.app is imported
        os.environ["RECONCILERY_TASK_EVENTS"] = "0"
        os.environ["RECONCILERY_DOMAINS"] = "tasks.apigateway.controller"
        redis_pid = server.proc.pid if server.proc is not None else 0
        logdir = Path(args.log_dir or tmpdir)
        logdir.mkdir(parents=True, exist_ok=True)
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            settled = True
            for peer in peers:
                if args.baseline and peer.kind == "reconcilery":
                    base = run_size(size, args, server.url, logdir, peer, redis_pid, BASELINE_ENV)
                    base["peer"] += " BASELINE (direct reads, unthrottled refresh)"
                    report(base)
                    results.append(summary(base))
                res = run_size(size, args, server.url, logdir, peer, redis_pid)
                report(res)
                results.append(summary(res))
                settled = settled and res["ready"] >= size
            if not settled:
                print("(larger sizes skipped)")
                break
    print(json.dumps({"bench": "apirules", "results": results}))


if __name__ == "__main__":
    main()
