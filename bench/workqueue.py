"""Workqueue benchmark: prints enqueue rates, end-to-end reconcile rate, and bare Celery's rate.

    python bench/workqueue.py [--keys 5000] [--workers 2] [--concurrency 2]

Starts its own redis-server and worker processes (threads pool, task events off) and stops them.
The ratio of the two end-to-end rates is the cost of the workqueue's guarantees.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port, stop_process, wait_for  # noqa: E402


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s ({n} in {seconds:.2f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, LocalRedis(free_port(), workdir=tmp) as server:
        env = {**os.environ, "RECONCILERY_REDIS_URL": server.url, "RECONCILERY_DOMAINS": "bench.noop_domain",
               "RECONCILERY_TASK_EVENTS": "0", "PYTHONPATH": str(ROOT)}
        for name in ("RECONCILERY_REDIS_URL", "RECONCILERY_DOMAINS", "RECONCILERY_TASK_EVENTS"):
            os.environ[name] = env[name]
        from bench import noop_domain
        from workers.app import WORKERS_READY, workqueue
        from workers.controller import Key

        r = redis.Redis.from_url(server.url)
        wq = workqueue()
        n = args.keys

        # 1. enqueue of new keys (script + Celery publish) and of duplicates (script only), no worker
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

        procs = []
        try:
            for i in range(args.workers):
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "reconcilery.cli", "worker", "-Q", "apigateway", "-c", str(args.concurrency),
                     "-n", f"bench{i}@%h", "-l", "WARNING"], env=env, cwd=ROOT, start_new_session=True,
                    stdout=subprocess.DEVNULL, stderr=open(Path(tmp) / f"w{i}.log", "wb")))  # noqa: SIM115
            wait_for(lambda: r.scard(WORKERS_READY) == args.workers, timeout=60, message="workers ready")

            # 2. end to end: enqueue n fresh keys, time until all reconciled
            t0 = time.perf_counter()
            wq.add_many("bench-noop", [Key("local", "bench", f"e{i}") for i in range(n)])
            wait_for(lambda: int(r.get("bench:reconciled") or 0) >= n, timeout=600, interval=0.01, message="reconciles")
            e2e_s = time.perf_counter() - t0

            # 3. bare Celery no-op tasks, same Redis, same workers
            t0 = time.perf_counter()
            with noop_domain.app.producer_or_acquire() as producer:
                for _ in range(n):
                    noop_domain.noop.apply_async(queue="apigateway", producer=producer)
            wait_for(lambda: int(r.get("bench:bare") or 0) >= n, timeout=600, interval=0.01, message="bare tasks")
            bare_s = time.perf_counter() - t0
        finally:
            for p in procs:
                stop_process(p)

    print(f"workers: {args.workers} processes x {args.concurrency} threads, {n} keys, Redis {server.url}")
    print(f"enqueue, new keys (script + publish):   {rate(n, new_s)}")
    print(f"enqueue, duplicate keys (one script):   {rate(n, dup_s)}")
    print(f"end-to-end no-op reconciles:            {rate(n, e2e_s)}")
    print(f"bare Celery no-op tasks:                {rate(n, bare_s)}")
    print(f"workqueue cost: reconcile rate is {e2e_s and bare_s / e2e_s:.2f} x the bare task rate")


if __name__ == "__main__":
    main()
