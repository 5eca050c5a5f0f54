"""Redis cost of one workqueue key and of one SKR connect, and one Redis server's throughput for them.

    python bench/redis_cost.py [--keys 20000] [--skrs 5000] [--threads 8] [--clients 3] [--seconds 8]

Starts its own ``redis-server`` (so ``INFO commandstats`` counts only this run) and drives
:class:`workers.workqueue.WorkQueue` and :class:`tasks.cloud.sweep.Rotation` in this process, exactly as
the dispatcher and the connect reconcile call them (no worker processes, no API server):

- **per key**: ``add_batch`` (the watch engine: 1,000 keys per call) -> ``fetch`` -> ``done``; ``fetch``
  once with the dispatcher's free threads as its limit (a backlog drains ``--threads`` at a time) and once
  with limit 1 (a busy worker: every finished reconcile frees one thread and triggers one fetch), and a
  lease renewal of ``--threads`` held keys (one ``renew.lua`` call per process every third of a lease);
- **per SKR connect**, the steady state of a fleet of ``--skrs`` (the second full rotation, after every
  SKR's health entry exists): the sweep's ``dispatch.lua`` and its batched ``add_many`` at resync
  priority, the dispatcher's ``fetch`` (limit 1), the connect reconcile's Redis calls
  (``is_active``, ``finish.lua``, ``objects.lua`` of the SKR's object states, the health entry) and
  ``done``; the Kubernetes work of the connect is not run (it does not touch Redis);
- **throughput**: ``--clients`` processes each loop ``add_batch(100)`` then, per key, ``fetch(limit 1)``
  + ``done`` on their own controller, for ``--seconds``; keys completed per second, the Redis process's
  CPU share (``INFO cpu``), and the rate at 100 % of one core that share implies. On a box whose cores
  are shared the clients are the limit; the Redis CPU per key (measured) is the honest saturation figure.
  ``redis-benchmark`` (SET/GET, pipelined 16 and not) calibrates this machine.

Each phase prints round trips (requests sent by the client; a pipeline is one), scripts run (``EVALSHA``),
Redis commands in all (``INFO commandstats``, commands run inside the scripts included), the scripts'
execution time (commandstats ``usec``) and the Redis process's CPU (``INFO cpu``), per key. Ends with one
JSON line.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port  # noqa: E402
from workers.controller import Controller, Key, Registry, Result  # noqa: E402
from workers.workqueue import WorkQueue  # noqa: E402


class CountingConnection(redis.Connection):
    """A connection that counts the requests it sends (one per command, one per pipeline)."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


def counting_client(port: int) -> redis.Redis:
    pool = redis.ConnectionPool(host="127.0.0.1", port=port, connection_class=CountingConnection)
    return redis.Redis(connection_pool=pool)


@dataclass
class Snapshot:
    """Counters of the server and the client at one moment."""

    sent: int
    calls: dict[str, int]
    usec: dict[str, int]
    cpu: float

    @classmethod
    def take(cls, admin: redis.Redis) -> Snapshot:
        before = CountingConnection.sent
        stats: Any = admin.info("commandstats")
        cpu: Any = admin.info("cpu")
        calls = {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}
        usec = {k.removeprefix("cmdstat_"): int(v["usec"]) for k, v in stats.items()}
        CountingConnection.sent = before  # the admin client is not a counting one; keep it exact anyway
        return cls(before, calls, usec, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]))


@dataclass(frozen=True)
class Cost:
    """Per-unit cost of one phase: round trips, scripts, commands in all (incl. inside scripts), the
    scripts' execution time in us, the Redis process's CPU in us, and the commands by name."""

    name: str
    units: int
    round_trips: float
    scripts: float
    commands: float
    script_us: float
    cpu_us: float
    by_command: dict[str, float]

    def row(self) -> str:
        top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(self.by_command.items(), key=lambda kv: -kv[1])[:6])
        return (f"{self.name:<44} {self.round_trips:>6.2f} {self.scripts:>7.2f} {self.commands:>8.2f} "
                f"{self.script_us:>9.1f} {self.cpu_us:>8.1f}   {top}")

    def as_json(self) -> dict[str, Any]:
        return {"round_trips": round(self.round_trips, 3), "scripts": round(self.scripts, 3),
                "commands": round(self.commands, 2), "script_us": round(self.script_us, 2),
                "cpu_us": round(self.cpu_us, 2)}


#: Renewal calls measured per fetch limit.
RENEWALS = 200

_META = {"info", "ping", "config|resetstat", "config"}


def measure(name: str, admin: redis.Redis, units: int, run: Callable[[], object]) -> Cost:
    """Run ``run`` (which does ``units`` of work) between two snapshots and answer the cost per unit."""
    a = Snapshot.take(admin)
    run()
    b = Snapshot.take(admin)
    delta = {k: b.calls.get(k, 0) - a.calls.get(k, 0) for k in b.calls if k not in _META}
    delta = {k: v for k, v in delta.items() if v > 0}
    scripts = delta.get("evalsha", 0) + delta.get("eval", 0)
    script_us = sum(b.usec.get(k, 0) - a.usec.get(k, 0) for k in ("evalsha", "eval"))
    return Cost(name, units, (b.sent - a.sent) / units, scripts / units,
                sum(v for k, v in delta.items() if k not in ("evalsha", "eval")) / units + scripts / units,
                script_us / units, (b.cpu - a.cpu) * 1e6 / units, {k: v / units for k, v in delta.items()})


def registry(*names: tuple[str, str]) -> Registry:
    reg = Registry()
    for name, queue in names:
        reg.register(Controller(name=name, queue=queue, reconcile=lambda k: None))
    return reg


def workqueue_costs(port: int, admin: redis.Redis, n: int, threads: int, held_keys: int) -> list[Cost]:
    """add -> fetch -> done of ``n`` keys, fetch limit ``threads`` and 1, a renewal round, and the audit
    of a fetch while ``held_keys`` keys are held (connects in flight)."""
    wq = WorkQueue(counting_client(port), registry(("bench", "bench")))
    wq.check_epoch("", 0)  # the epoch exists before anything is measured
    keys = [Key("local", "ns", f"obj-{i}") for i in range(n)]
    out = []
    out.append(measure("add (watch engine, 1,000 per call)", admin, n, lambda: wq.add_batch(
        ("bench", k) for k in keys)))

    def drain(limit: int) -> None:
        while True:
            got = wq.fetch(["bench"], limit, 30.0)
            if not got.taken:
                return
            for t in got.taken:
                wq.done(t, Result.done())

    def fetch_only(limit: int, held: list[Any]) -> None:
        while True:
            got = wq.fetch(["bench"], limit, 30.0)
            if not got.taken:
                return
            held.extend(got.taken)

    def renew_many(batch: list[tuple[str, Key, str]]) -> None:
        for _ in range(RENEWALS):
            wq.renew(batch, 30.0)

    def done_all(held: list[Any]) -> None:
        for t in held:
            wq.done(t, Result.done())

    for limit in (threads, 1):
        held: list[Any] = []
        out.append(measure(f"fetch, limit {limit}", admin, n, partial(fetch_only, limit, held)))
        batch = [(t.controller, t.key, t.token) for t in held[:threads]]
        out.append(measure(f"renew of {len(batch)} held keys (one call)", admin, RENEWALS * len(batch),
                           partial(renew_many, batch)))
        out.append(measure("done (success)", admin, n, partial(done_all, held)))
        wq.add_batch(("bench", k) for k in keys)
    drain(threads)
    # the dispatcher's audit (every 2 s per process) walks every held key of the queue's controllers
    many = [Key("local", "ns", f"held-{i}") for i in range(held_keys)]
    wq.add_batch(("bench", k) for k in many)
    fetch_only(1000, [])
    out.append(measure(f"audit with {held_keys:,} keys held (per audit)", admin, 20,
                       lambda: [wq.fetch(["bench"], 0, 30.0, audit=True) for _ in range(20)]))
    admin.delete(*admin.keys("rq:ctl:bench:*"), *admin.keys("rq:bench:*"))
    # a key whose reconcile asks to come back later: done records it in the delayed set
    wq.add_batch(("bench", k) for k in keys)
    held = []
    fetch_only(threads, held)
    out.append(measure("done (requeue_after 300 s)", admin, n,
                       lambda: [wq.done(t, Result.requeue(300.0)) for t in held]))
    return out


def connect_costs(port: int, admin: redis.Redis, skrs: int) -> tuple[Cost, list[Cost]]:
    """The steady state of the SKR rotation: one full rotation of ``skrs`` connects, per connect."""
    os.environ["RECONCILERY_REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    from tasks.cloud import kind_metrics
    from tasks.cloud.settings import load as cloud_settings
    from tasks.cloud.sweep import CONNECT, Rotation, connect_keys

    client = counting_client(port)
    s = cloud_settings({})
    rot = Rotation(client, s)
    wq = WorkQueue(client, registry((CONNECT, "cloud-skr")))
    wq.check_epoch("", 0)
    kymas = [f"kyma-{i:06d}" for i in range(skrs)]
    for k in kymas:
        rot.activate(k)
    # the objects gauge's script on the counting client (it builds its own client on first use otherwise)
    kind_metrics.OBJECTS._client = client
    kind_metrics.OBJECTS._script = client.register_script(
        (ROOT / "tasks" / "cloud" / "lua" / "objects.lua").read_text())
    states = {("iprange.cloud-resources.kyma-project.io", "Ready"): 1,
              ("nfsvolume.cloud-resources.kyma-project.io", "Ready"): 1}

    def rotation_once() -> None:
        due = rot.dispatch()
        for start in range(0, len(due), 1000):  # the sweep: one tick's due SKRs, one add per 1,000
            wq.add_many(CONNECT, connect_keys(due[start:start + 1000], s.kcp_namespace), resync=True)
        while True:
            got = wq.fetch(["cloud-skr"], 1, 30.0)  # a busy pool: one fetch per finished connect
            if not got.taken:
                return
            t = got.taken[0]
            kyma = t.key.name
            rot.is_active(kyma)
            rot.finish(kyma, True, "ok")  # the health entry in the same call, as a connect's end
            kind_metrics.record_skr(kyma, states)
            wq.done(t, Result.done())

    rotation_once()  # the first rotation writes every health entry
    steady = measure("SKR connect (steady rotation), in all", admin, skrs, rotation_once)
    # the parts, on the next rotation: each call of the reconcile on its own
    due = rot.dispatch()
    parts_out = [measure("  sweep: dispatch.lua + add_many, per SKR", admin, skrs, lambda: [
        wq.add_many(CONNECT, connect_keys(due[i:i + 1000], s.kcp_namespace), resync=True)
        for i in range(0, len(due), 1000)])]
    taken: list[Any] = []

    def take_all() -> None:
        while got := wq.fetch(["cloud-skr"], 1, 30.0).taken:
            taken.extend(got)

    parts_out.append(measure("  fetch (limit 1)", admin, skrs, take_all))
    parts_out.append(measure("  is_active (one pipeline)", admin, skrs, lambda: [rot.is_active(t.key.name)
                                                                                 for t in taken]))
    parts_out.append(measure("  finish.lua (with the health entry)", admin, skrs,
                             lambda: [rot.finish(t.key.name, True, "ok") for t in taken]))

    def objects() -> None:
        for t in taken:
            kind_metrics.record_skr(t.key.name, states)

    parts_out.append(measure("  objects.lua (record_skr)", admin, skrs, objects))
    parts_out.append(measure("  done", admin, skrs, lambda: [wq.done(t, Result.done()) for t in taken]))
    return steady, parts_out


def add_fetch_done(wq: Any, name: str, batch: int, seconds: float) -> int:
    """Loop for ``seconds``: add ``batch`` keys of queue ``name`` to ``wq`` (a ``WorkQueue`` or a sharded
    one), then fetch and finish them one by one; the keys done."""
    keys = [Key("local", name, f"k{i}") for i in range(batch)]
    done = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        wq.add_batch((name, k) for k in keys)
        while got := wq.fetch([name], 1, 30.0).taken:
            wq.done(got[0], Result.done())
            done += 1
    return done


def _client_loop(port: int, name: str, seconds: float, out: Any) -> None:
    out.put(add_fetch_done(WorkQueue(redis.Redis(port=port), registry((name, name))), name, 100, seconds))


def throughput(port: int, admin: redis.Redis, clients: int, seconds: float) -> dict[str, float]:
    """``clients`` processes of add/fetch/done loops for ``seconds``: keys/s and the Redis CPU share."""
    ctx = multiprocessing.get_context("spawn")
    q: Any = ctx.Queue()
    procs = [ctx.Process(target=_client_loop, args=(port, f"tp{i}", seconds, q)) for i in range(clients)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # the children import and connect; the window below starts once they run
    a = Snapshot.take(admin)
    t0 = time.monotonic()
    total = sum(q.get() for _ in procs)
    wall = time.monotonic() - t0
    b = Snapshot.take(admin)
    for p in procs:
        p.join()
    share = (b.cpu - a.cpu) / wall
    rate = total / (seconds)
    cmds = sum(b.calls.get(k, 0) - a.calls.get(k, 0) for k in b.calls if k not in _META)
    return {"keys_per_s": rate, "redis_cpu_share": share, "keys_per_s_at_one_core": rate / share if share else 0.0,
            "redis_cmds_per_s": cmds / wall, "clients": clients}


def redis_benchmark(port: int) -> dict[str, float]:
    """SET/GET requests per second of ``redis-benchmark`` against the server, pipelined 16 and not."""
    out: dict[str, float] = {}
    for pipe in (1, 16):
        try:
            text = subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", "100000", "-c", "20",
                                   "-P", str(pipe), "-t", "set,get"], capture_output=True, text=True,
                                  timeout=120, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            return out
        for line in text.replace("\r", "\n").splitlines():
            m = re.match(r"(SET|GET): ([\d.]+) requests per second", line.strip())
            if m:
                out[f"{m.group(1).lower()}_p{pipe}"] = float(m.group(2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=20000)
    ap.add_argument("--skrs", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=8, help="a dispatcher's free threads (fetch limit)")
    ap.add_argument("--held", type=int, default=3400, help="keys held during the audit (connects in flight)")
    ap.add_argument("--clients", type=int, default=3, help="driver processes of the throughput phase")
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    load_before = os.getloadavg()
    with LocalRedis(free_port()) as server:
        admin = redis.Redis(port=server.port)
        print(f"redis-server {admin.info('server')['redis_version']} on port {server.port}; "
              f"load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} at the start")
        header = (f"{'per unit':<44} {'trips':>6} {'scripts':>7} {'commands':>8} {'script us':>9} "
                  f"{'CPU us':>8}   commands by name")
        print(f"\nWorkqueue, {args.keys:,} keys (per key):\n{header}")
        wq = workqueue_costs(server.port, admin, args.keys, args.threads, args.held)
        for c in wq:
            print(c.row())
        admin.flushall()
        print(f"\nSKR connect, {args.skrs:,} active SKRs (per connect):\n{header}")
        steady, parts = connect_costs(server.port, admin, args.skrs)
        print(steady.row())
        for c in parts:
            print(c.row())
        admin.flushall()
        tp = throughput(server.port, admin, args.clients, args.seconds)
        print(f"\nThroughput, {args.clients} client processes x {args.seconds:.0f} s of add(100) + fetch(1) + "
              f"done per key: {tp['keys_per_s']:,.0f} keys/s, {tp['redis_cmds_per_s']:,.0f} Redis commands/s "
              f"(incl. inside scripts), Redis CPU {tp['redis_cpu_share'] * 100:.0f} % of one core "
              f"-> {tp['keys_per_s_at_one_core']:,.0f} keys/s at 100 %")
        admin.flushall()
        bench = redis_benchmark(server.port)
        if bench:
            print("redis-benchmark (20 clients): " + ", ".join(f"{k} {v:,.0f}/s" for k, v in bench.items()))
    load_after = os.getloadavg()
    print(f"load average {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} at the end (2 cores)")
    key = {c.name: c for c in wq}
    per_key = {"add": key["add (watch engine, 1,000 per call)"].as_json(),
               "fetch_limit_1": key["fetch, limit 1"].as_json(),
               f"fetch_limit_{args.threads}": key[f"fetch, limit {args.threads}"].as_json(),
               "done": key["done (success)"].as_json(),
               "audit_call": key[f"audit with {args.held:,} keys held (per audit)"].as_json(),
               "renew": key[f"renew of {args.threads} held keys (one call)"].as_json()}
    busy = [per_key["add"], per_key["fetch_limit_1"], per_key["done"]]
    print(json.dumps({
        "load_before": round(load_before[0], 2), "load_after": round(load_after[0], 2),
        "per_key": per_key,
        "key_add_fetch1_done": {f: round(sum(c[f] for c in busy), 2) for f in busy[0]},
        "per_connect": steady.as_json(),
        "throughput": {k: round(v, 3) for k, v in tp.items()},
        "redis_benchmark": bench,
    }))


if __name__ == "__main__":
    main()
