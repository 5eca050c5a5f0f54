"""Workqueue benchmark: enqueue rates, the watch engine's initial list, end-to-end reconciles against
bare Celery on the same Redis and workers, and an idle worker's Redis traffic.

    python bench/workqueue.py [--keys 5000] [--shapes 1x2,2x4] [--burst 20000] [--list 50000] [--idle 15]

Starts its own redis-server, dev API server and worker processes (threads pool, task events off) and
stops them. Each shape is ``processes x threads``; the ratio of the two end-to-end rates (same run,
same workers) is the cost of the workqueue's guarantees.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port, stop_process, wait_for  # noqa: E402


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>9,.0f}/s ({n:,} in {seconds:.2f} s)"


def enqueue_rates(wq: Any, r: redis.Redis, n: int, burst: int) -> list[str]:
    from workers.controller import Key

    keys = [Key("local", "bench", f"k{i}") for i in range(n)]
    t0 = time.perf_counter()
    for k in keys:
        wq.add("bench-noop", k)
    new_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(n):
        wq.add("bench-noop", keys[0])
    dup_s = time.perf_counter() - t0
    r.flushall()
    items = [("bench-noop", Key("local", "bench", f"b{i % (burst // 2)}")) for i in range(burst)]
    t0 = time.perf_counter()
    added = wq.add_batch(items)
    burst_s = time.perf_counter() - t0
    assert added == burst // 2, added
    r.flushall()
    return [
        f"enqueue one by one, new keys:           {rate(n, new_s)}",
        f"enqueue one by one, duplicate keys:     {rate(n, dup_s)}",
        f"burst of {burst:,} enqueues, 50% duplicates (batched, one process): {rate(burst, burst_s)}",
    ]


_LOADED_SERVER = """
import sys, time
from kubedev import DevAPIServer
server = DevAPIServer(port={port}).start()
store = server.store
store.create(store.registry.lookup("", "v1", "namespaces"), None, {{"metadata": {{"name": "bench"}}}})
rt = store.registry.lookup("", "v1", "configmaps")
t0 = time.perf_counter()
for i in range({n}):
    store.create(rt, "bench", {{"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {{"name": f"cm{{i}}", "namespace": "bench"}}, "data": {{"k": "v" * 64}}}})
print(f"ready {{time.perf_counter() - t0:.1f}}", flush=True)
time.sleep(3600)
"""


def initial_list(wq: Any, r: redis.Redis, n: int) -> list[str]:
    """The watch engine's initial list of ``n`` ConfigMaps from a dev API server in its own process,
    mapped to keys and enqueued in batches; timed from the engine's start until every key waits in Redis."""
    from kube import Kube, resources
    from kube.kubeconfig import from_kubeconfig_dict
    from kubedev import kubeconfig_dict
    from watchers.engine import WatchManager, WatchRegistration
    from workers.controller import Key

    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", _LOADED_SERVER.format(port=port, n=n)], cwd=ROOT,
                              stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert server.stdout is not None
        load_s = float(server.stdout.readline().decode().split()[1])
        kube = Kube(from_kubeconfig_dict(kubeconfig_dict(f"http://127.0.0.1:{port}")))
        reg = WatchRegistration(
            name="configmaps", resource=resources.CONFIGMAP, namespace=None, label_selector=None,
            map_event=lambda ev, _: [("bench-noop", Key(ev.cluster, ev.object["metadata"]["namespace"],
                                                        ev.object["metadata"]["name"]))],
            controllers=("bench-noop",))
        manager = WatchManager([reg], wq.add, kube=kube, enqueue_many=wq.add_batch)
        t0 = time.perf_counter()
        manager.start()
        wait_for(lambda: wq.status("bench-noop").waiting >= n, timeout=300, interval=0.01,
                 message="every listed object enqueued")
        list_s = time.perf_counter() - t0
        manager.stop()
        kube.close()
    finally:
        stop_process(server)
    r.flushall()
    return [f"initial list of {n:,} objects enqueued (list + map + batched enqueue): {list_s:.2f} s "
            f"({n / list_s:,.0f} objects/s; loading them into the dev API server took {load_s:.1f} s)"]


def start_workers(env: dict[str, str], tmp: str, procs: int, threads: int, r: redis.Redis,
                  wait: bool = True) -> list[Any]:
    from workers.app import WORKERS_READY

    r.delete(WORKERS_READY)
    out = []
    for i in range(procs):
        out.append(subprocess.Popen(
            [sys.executable, "-m", "reconcilery.cli", "worker", "-Q", "apigateway", "-c", str(threads),
             "-n", f"bench{i}-{threads}@%h", "-l", "WARNING"], env=env, cwd=ROOT, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=open(Path(tmp) / f"w{procs}x{threads}-{i}.log", "wb")))  # noqa: SIM115
    if wait:
        wait_for(lambda: r.scard(WORKERS_READY) == procs, timeout=60, message="workers ready")
        time.sleep(1.0)
    return out


def timed_drain(r: redis.Redis, counter: str, n: int) -> tuple[float, float]:
    """Seconds from now until ``counter`` reaches ``n``, and from its first to its last increment."""
    t0 = time.perf_counter()
    first = None
    while True:
        done = int(r.get(counter) or 0)
        now = time.perf_counter()
        if first is None and done:
            first = now
        if done >= n:
            return now - t0, now - (first or t0)
        if now - t0 > 600:
            raise TimeoutError(f"{counter}: {done}/{n}")
        time.sleep(0.005)


def end_to_end(env: dict[str, str], tmp: str, wq: Any, r: redis.Redis, n: int, procs: int, threads: int) -> list[str]:
    """Two measures per side: end to end (workers running, enqueue/publish n, wait for all) and drain
    (n queued before the workers start; from the first to the last completion)."""
    from bench import noop_domain
    from workers.controller import Key

    def ours_enqueue(tag: str) -> float:
        t0 = time.perf_counter()
        wq.add_batch([("bench-noop", Key("local", "bench", f"{tag}{i}")) for i in range(n)])
        return time.perf_counter() - t0

    def bare_publish() -> float:
        t0 = time.perf_counter()
        with noop_domain.app.producer_or_acquire() as producer:
            for _ in range(n):
                noop_domain.noop.apply_async(queue="apigateway", producer=producer)
        return time.perf_counter() - t0

    r.delete("bench:reconciled", "bench:bare")
    workers = start_workers(env, tmp, procs, threads, r)
    try:
        enq_s = ours_enqueue("e")
        ours, _ = timed_drain(r, "bench:reconciled", n)
        ours += enq_s
        pub_s = bare_publish()
        bare, _ = timed_drain(r, "bench:bare", n)
        bare += pub_s
    finally:
        for w in workers:
            stop_process(w)
    def drain_backlog(counter: str) -> float:
        """Seconds the workers (started after the backlog was queued) take to drain it."""
        workers = start_workers(env, tmp, procs, threads, r, wait=False)
        try:
            return timed_drain(r, counter, n)[1]
        finally:
            for w in workers:
                stop_process(w)

    r.delete("bench:reconciled", "bench:bare")
    ours_enqueue("d")
    ours_drain = drain_backlog("bench:reconciled")
    bare_publish()
    bare_drain = drain_backlog("bench:bare")
    return [
        f"[{procs} x {threads}] workqueue no-op reconciles: end to end {rate(n, ours)}; "
        f"drain of a backlog {n / ours_drain:,.0f}/s",
        f"[{procs} x {threads}] bare Celery no-op tasks:    end to end {rate(n, bare)}; "
        f"drain of a backlog {n / bare_drain:,.0f}/s (publishing alone {n / pub_s:,.0f}/s)",
        f"[{procs} x {threads}] ratio workqueue / bare Celery: {bare / ours:.2f}x end to end, "
        f"{bare_drain / ours_drain:.2f}x drain",
    ]


def idle_traffic(env: dict[str, str], tmp: str, r: redis.Redis, url: str, seconds: float) -> list[str]:
    """Commands an idle worker process sends to Redis (MONITOR; script-internal commands apart)."""
    workers = start_workers(env, tmp, 1, 4, r)
    try:
        time.sleep(3.0)  # past start-up
        mon = redis.Redis.from_url(url)
        counts = {"client": 0, "lua": 0}
        by_cmd: dict[str, int] = {}
        stop = threading.Event()

        def listen() -> None:
            with mon.monitor() as m:
                for cmd in m.listen():
                    if stop.is_set():
                        return
                    kind = "lua" if cmd.get("client_type") == "lua" else "client"
                    counts[kind] += 1
                    if kind == "client":
                        name = str(cmd.get("command", "")).split(" ")[0].upper()
                        by_cmd[name] = by_cmd.get(name, 0) + 1

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        time.sleep(seconds)
        stop.set()
        r.ping()  # lets the monitor loop see one more line and end
        thread.join(5)
    finally:
        for w in workers:
            stop_process(w)
    top = ", ".join(f"{k} {v / seconds:.2f}/s" for k, v in sorted(by_cmd.items(), key=lambda kv: -kv[1]))
    return [f"idle worker process (1 x 4 threads) over {seconds:.0f} s: {counts['client'] / seconds:.2f} Redis "
            f"commands/s sent ({top}); {counts['lua'] / seconds:.2f}/s more run inside its scripts"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=5000, help="keys per end-to-end run")
    parser.add_argument("--shapes", default="1x2,2x4", help="worker shapes: processes x threads")
    parser.add_argument("--burst", type=int, default=20000)
    parser.add_argument("--list", type=int, default=50000, help="objects in the initial-list run (0: skip)")
    parser.add_argument("--idle", type=float, default=15.0, help="seconds of idle traffic measured (0: skip)")
    args = parser.parse_args()

    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, LocalRedis(free_port(), workdir=tmp) as server:
        env = {**os.environ, "RECONCILERY_REDIS_URL": server.url, "RECONCILERY_DOMAINS": "bench.noop_domain",
               "RECONCILERY_TASK_EVENTS": "0", "PYTHONPATH": str(ROOT),
               "RECONCILERY_HEARTBEAT_FILE": str(Path(tmp) / "heartbeat")}
        for name in ("RECONCILERY_REDIS_URL", "RECONCILERY_DOMAINS", "RECONCILERY_TASK_EVENTS"):
            os.environ[name] = env[name]
        import bench.noop_domain  # noqa: F401  registers the controller
        from workers.app import workqueue

        r = redis.Redis.from_url(server.url)
        wq = workqueue()
        lines += enqueue_rates(wq, r, args.keys, args.burst)
        if args.list:
            lines += initial_list(wq, r, args.list)
        for shape in args.shapes.split(","):
            procs, threads = (int(x) for x in shape.lower().split("x"))
            lines += end_to_end(env, tmp, wq, r, args.keys, procs, threads)
        if args.idle:
            lines += idle_traffic(env, tmp, r, server.url, args.idle)
    print(f"Redis {server.url}; load average {os.getloadavg()[0]:.1f} at the end")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
