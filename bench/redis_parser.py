"""Client CPU per workqueue key with redis-py's pure-Python reply parser and with hiredis.

    python bench/redis_parser.py [--keys 5000] [--rounds 3]

Starts its own ``redis-server`` and drives :class:`workers.workqueue.WorkQueue` in this process as the
watcher and a busy dispatcher call it: ``add_batch`` (1,000 keys per call), then per key ``fetch``
(limit 1) and ``done``. Prints this process's CPU (``time.process_time``) per key for each parser,
alternating parsers ``--rounds`` times (the box is shared: compare rows of one run). hiredis (a
dependency: ``redis[hiredis]``) is what redis-py picks by default; the pure-Python rows force the parser
redis-py would use without it for the client's protocol (RESP3, redis-py's default, as the workers').
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import redis
from redis._parsers import _RESP2Parser, _RESP3Parser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from reconcilery.localredis import LocalRedis
from tests.fixtures.processes import free_port
from workers.controller import Controller, Key, Registry, Result
from workers.workqueue import WorkQueue


def per_key_cpu(port: int, keys: int, parser: type | None) -> float:
    """Client CPU microseconds per key of add_batch + fetch(limit 1) + done, with ``parser``
    (``None``: redis-py's default)."""
    pool = redis.ConnectionPool(port=port) if parser is None else redis.ConnectionPool(port=port, parser_class=parser)
    client = redis.Redis(connection_pool=pool)
    client.flushall()
    reg = Registry()
    reg.register(Controller(name="bench", queue="q", reconcile=lambda k: None))
    wq = WorkQueue(client, reg)
    names = [("bench", Key("c", "ns", f"k{i}")) for i in range(keys)]
    start = time.process_time()
    for i in range(0, keys, 1000):
        wq.add_batch(names[i:i + 1000])
    done = 0
    while done < keys:
        for taken in wq.fetch(["q"], 1, 30.0).taken:
            wq.done(taken, Result.done())
            done += 1
    return (time.process_time() - start) / keys * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    # the pure-Python parser of the protocol the workers' clients speak (redis-py's default)
    protocol = redis.ConnectionPool().make_connection().protocol  # not connected: its settings only
    python = _RESP3Parser if str(protocol) == "3" else _RESP2Parser
    try:
        import hiredis  # noqa: F401
        parsers: dict[str, type | None] = {"python": python, "hiredis": None}
    except ImportError:
        parsers = {"python": python}
    print(f"load average {os.getloadavg()[0]:.2f} at the start; {args.keys:,} keys per row")
    with LocalRedis(free_port()) as server:
        for r in range(args.rounds):
            for name, parser in parsers.items():
                print(f"round {r + 1} {name:<8} {per_key_cpu(server.port, args.keys, parser):8.1f} us CPU per key")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
