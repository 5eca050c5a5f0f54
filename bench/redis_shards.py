"""The sharded workqueue (workers/sharded.py) with 1 and 2 Redis shards: keys/s and Redis CPU per shard.

    python bench/redis_shards.py [--clients 3] [--seconds 6] [--batch 100]

Starts two ``redis-server`` processes. For 1 and then 2 shards, ``--clients`` processes each loop, on a
:class:`~workers.sharded.ShardedWorkQueue` over the shards: ``add_batch`` of ``--batch`` keys, then
``fetch`` (limit 1, as a busy worker) and ``done`` per key, for ``--seconds``. Printed per shard count:
keys completed per second, each shard's Redis CPU share (``INFO cpu``), the Redis CPU per key summed over
the shards, the keys per second one core per shard would carry at that cost, and the load average. On a
box whose cores are busy the client processes are the limit, so the rate measured says little; the Redis
CPU per key and per shard is what tells how the load spreads. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.redis_cost import add_fetch_done  # noqa: E402
from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port  # noqa: E402
from workers.controller import Controller, Registry  # noqa: E402
from workers.sharded import ShardedWorkQueue  # noqa: E402


def _loop(urls: list[str], name: str, seconds: float, batch: int, out: Any) -> None:
    reg = Registry()
    reg.register(Controller(name=name, queue=name, reconcile=lambda k: None))
    wq = ShardedWorkQueue([redis.Redis.from_url(u) for u in urls], reg)
    done = add_fetch_done(wq, name, batch, seconds)
    wq.close()
    out.put(done)


def _cpu(r: redis.Redis) -> float:
    info: Any = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def run(urls: list[str], clients: int, seconds: float, batch: int) -> dict[str, Any]:
    admins = [redis.Redis.from_url(u) for u in urls]
    for a in admins:
        a.flushall()
    ctx = multiprocessing.get_context("spawn")
    q: Any = ctx.Queue()
    procs = [ctx.Process(target=_loop, args=(urls, f"c{i}", seconds, batch, q)) for i in range(clients)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # imports and connects; the children's own clocks start their windows
    before = [_cpu(a) for a in admins]
    t0 = time.monotonic()
    total = sum(q.get() for _ in procs)
    wall = time.monotonic() - t0
    shares = [(_cpu(a) - b) / wall for a, b in zip(admins, before, strict=True)]
    for p in procs:
        p.join()
    rate = total / seconds
    cpu_us_per_key = sum(shares) * wall / total * 1e6 if total else 0.0
    return {"shards": len(urls), "keys_per_s": round(rate), "redis_cpu_share": [round(s, 3) for s in shares],
            "redis_cpu_us_per_key": round(cpu_us_per_key, 1),
            "keys_per_s_at_one_core_per_shard": round(len(urls) * 1e6 / cpu_us_per_key) if total else 0,
            "load": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--batch", type=int, default=100)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} at the start; {args.clients} client processes, "
          f"{args.seconds:.0f} s per shard count")
    with LocalRedis(free_port()) as one, LocalRedis(free_port()) as two:
        rows = [run([one.url], args.clients, args.seconds, args.batch),
                run([one.url, two.url], args.clients, args.seconds, args.batch)]
    print(f"{'shards':>6} {'keys/s':>8} {'Redis CPU per shard':>22} {'us/key (all shards)':>20} "
          f"{'keys/s at 1 core/shard':>23} {'load':>5}")
    for r in rows:
        shares = " ".join(f"{s * 100:.0f}%" for s in r["redis_cpu_share"])
        print(f"{r['shards']:>6} {r['keys_per_s']:>8,} {shares:>22} {r['redis_cpu_us_per_key']:>20.1f} "
              f"{r['keys_per_s_at_one_core_per_shard']:>23,} {r['load']:>5.2f}")
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
