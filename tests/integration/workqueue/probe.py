"""A probe controller for the workqueue tests, loaded by worker processes via RECONCILERY_DOMAINS.

Its reconcile is steered through Redis (``probe:plan:<name>``, a JSON object) and records every run:
``probe:runs:<name>`` gets ``"<pid> <start> <end> <outcome>"`` lines (Redis server time), and
``probe:overlaps`` counts runs that found another run of the same key active.

Plans: ``sleep`` / ``sleep_first`` (seconds), ``fail_times``, ``terminal_times``, ``requeue_times`` +
``requeue_after``, ``write`` (after sleeping, write through the fence: ``fencing.check()`` then
``probe:writes:<name>`` gets ``"<pid> <token>"``; a fenced run records the outcome ``fenced``) and
``busy_loop`` (seconds spent calling ``fencing.check()`` every 20 ms, as a reconcile making many
requests would: the deadline ends it) and ``kill_times`` (the first runs SIGKILL their own worker
process, as a reconcile that exhausts its memory would: ``probe:killed:<name>`` counts them).
"""

from __future__ import annotations

import json
import os
import signal
import time

import redis

import fencing
from workers.controller import Backoff, Controller, Key, Result, registry

_redis = redis.Redis.from_url(os.environ.get("RECONCILERY_REDIS_URL", "redis://127.0.0.1:6379/0"),
                              decode_responses=True)


def _now() -> float:
    secs, micros = _redis.time()
    return secs + micros / 1e6


def reconcile(key: Key) -> Result:
    plan = json.loads(_redis.get(f"probe:plan:{key.name}") or "{}")
    run = _redis.incr(f"probe:count:{key.name}")
    if _redis.incr(f"probe:active:{key.name}") > 1:
        _redis.incr("probe:overlaps")
    start = _now()
    _redis.set(f"probe:running:{key.name}", os.getpid())
    if run <= plan.get("kill_times", 0):
        _redis.decr(f"probe:active:{key.name}")
        _redis.incr(f"probe:killed:{key.name}")
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        sleep = plan.get("sleep_first", plan.get("sleep", 0)) if run == 1 else plan.get("sleep", 0)
        time.sleep(sleep)
        outcome = "deadline"
        until = time.monotonic() + plan.get("busy_loop", 0)
        while time.monotonic() < until:
            fencing.check()
            time.sleep(0.02)
        if plan.get("write"):
            outcome = "fenced"
            fencing.check()
            fence = fencing.current()
            _redis.rpush(f"probe:writes:{key.name}", f"{os.getpid()} {fence.token if fence else '-'}")
        if run <= plan.get("fail_times", 0):
            outcome = "error"
            raise RuntimeError(f"planned failure {run}")
        if run <= plan.get("terminal_times", 0):
            outcome = "terminal"
            return Result.terminal("planned terminal failure")
        if run <= plan.get("requeue_times", 0):
            outcome = "requeue"
            return Result.requeue(plan["requeue_after"])
        outcome = "ok"
        return Result.done()
    finally:
        _redis.decr(f"probe:active:{key.name}")
        _redis.rpush(f"probe:runs:{key.name}", f"{os.getpid()} {start} {_now()} {outcome}")


def list_keys() -> list[Key]:
    return [Key("local", "ns", f"r{i}") for i in range(int(_redis.get("probe:resync_size") or 0))]


PROBE = registry.register(Controller(
    name="probe", queue="apigateway", reconcile=reconcile, backoff=Backoff(base=0.2, cap=1.6),
    resync_interval=float(os.environ.get("PROBE_RESYNC_SECONDS", "3600")), list_keys=list_keys,
))
