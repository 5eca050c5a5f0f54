"""Workqueue guarantees with two real worker processes (``reconcilery worker``) on real Redis."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
import redis

from tests.fixtures.processes import wait_for
from tests.fixtures.workers import ROOT, WorkerPool, worker_env
from workers.controller import Key
from workers.workqueue import WorkQueue

pytestmark = pytest.mark.integration
PROBE = "tests.integration.workqueue.probe"


@pytest.fixture
def probe_wq(inproc_probe: None) -> WorkQueue:
    """A producer-side WorkQueue that publishes real Celery messages to the test's Redis."""
    from workers.app import workqueue

    return workqueue()


@pytest.fixture
def pool(worker_pool: Callable[[str], WorkerPool]) -> WorkerPool:
    return worker_pool(PROBE)


def runs(r: redis.Redis, name: str) -> list[tuple[int, float, float, str]]:
    out = []
    for line in r.lrange(f"probe:runs:{name}", 0, -1):
        pid, start, end, outcome = line.split()
        out.append((int(pid), float(start), float(end), outcome))
    return out


def plan(r: redis.Redis, name: str, **p: object) -> Key:
    r.set(f"probe:plan:{name}", json.dumps(p))
    return Key("local", "ns", name)


def test_duplicate_adds_before_a_worker_runs_reconcile_once(probe_wq: WorkQueue, pool: WorkerPool,
                                                            redis_client: redis.Redis) -> None:
    key = plan(redis_client, "dup")
    for _ in range(200):
        probe_wq.add("probe", key)
    pool.start(2)
    wait_for(lambda: runs(redis_client, "dup"), timeout=20, message="first reconcile")
    time.sleep(1.0)
    assert len(runs(redis_client, "dup")) == 1


def test_one_key_is_never_reconciled_by_two_workers_at_once(probe_wq: WorkQueue, pool: WorkerPool,
                                                             redis_client: redis.Redis) -> None:
    pool.start(2, concurrency=4)
    keys = [plan(redis_client, f"ov{i}", sleep=0.15) for i in range(3)]
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # hammer the same three keys while they run
        for k in keys:
            probe_wq.add("probe", k)
        time.sleep(0.01)
    wait_for(lambda: probe_wq.status("probe").waiting == 0 and probe_wq.status("probe").in_progress == 0,
             timeout=20, message="queue drained")
    all_runs = [r for k in keys for r in runs(redis_client, k.name)]
    assert len({pid for pid, *_ in all_runs}) == 2, "both worker processes took part"
    assert redis_client.get("probe:overlaps") is None
    for k in keys:  # and no two runs of one key overlap in time
        spans = sorted((s, e) for _, s, e, _ in runs(redis_client, k.name))
        assert len(spans) >= 5
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_add_during_processing_runs_again(probe_wq: WorkQueue, pool: WorkerPool, redis_client: redis.Redis) -> None:
    pool.start(2)
    key = plan(redis_client, "again", sleep_first=1.0, sleep=0)
    probe_wq.add("probe", key)
    wait_for(lambda: redis_client.get("probe:running:again"), timeout=20, message="reconcile started")
    assert probe_wq.add("probe", key) is True  # marked waiting (dirty): runs again after this one
    assert probe_wq.add("probe", key) is False  # already waiting
    wait_for(lambda: len(runs(redis_client, "again")) == 2, timeout=10, message="second reconcile")
    first, second = runs(redis_client, "again")
    assert second[1] >= first[2]


def test_requeue_after_runs_again_after_the_delay(probe_wq: WorkQueue, pool: WorkerPool,
                                                  redis_client: redis.Redis) -> None:
    pool.start(1)
    key = plan(redis_client, "rq", requeue_times=1, requeue_after=1.0)
    probe_wq.add("probe", key)
    wait_for(lambda: len(runs(redis_client, "rq")) == 2, timeout=15, message="requeued reconcile")
    (_, _, end1, out1), (_, start2, _, out2) = runs(redis_client, "rq")
    assert (out1, out2) == ("requeue", "ok")
    assert 0.9 <= start2 - end1 < 3.0


def test_failures_back_off_exponentially_then_success_resets(probe_wq: WorkQueue, pool: WorkerPool,
                                                             redis_client: redis.Redis) -> None:
    pool.start(2)
    key = plan(redis_client, "fail", fail_times=4)  # probe backoff: base 0.2 s, cap 1.6 s
    probe_wq.add("probe", key)
    wait_for(lambda: len(runs(redis_client, "fail")) == 5, timeout=20, message="five attempts")
    r = runs(redis_client, "fail")
    assert [o for *_, o in r] == ["error"] * 4 + ["ok"]
    gaps = [b[1] - a[2] for a, b in itertools.pairwise(r)]
    for gap, expected in zip(gaps, [0.2, 0.4, 0.8, 1.6], strict=True):
        assert expected - 0.02 <= gap < expected + 0.6, gaps
    assert probe_wq.failures("probe", key) == 0


def test_sigkilled_worker_mid_reconcile_gets_its_key_reconciled_again(
        probe_wq: WorkQueue, pool: WorkerPool, redis_client: redis.Redis) -> None:
    pool.start(2)
    key = plan(redis_client, "kill", sleep_first=30, sleep=0)
    probe_wq.add("probe", key)
    pid = int(wait_for(lambda: redis_client.get("probe:running:kill"), timeout=20, message="reconcile started"))
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    wait_for(lambda: runs(redis_client, "kill"), timeout=20, message="reconcile after the kill")
    recovered_in = time.monotonic() - killed_at
    ((survivor, _, _, outcome),) = runs(redis_client, "kill")
    assert survivor != pid and outcome == "ok"
    assert recovered_in < 10  # lease 2 s / visibility 6 s in the test settings


def test_a_reconcile_three_times_longer_than_its_lease_keeps_its_key(
        probe_wq: WorkQueue, pool: WorkerPool, redis_client: redis.Redis) -> None:
    pool.start(2, concurrency=2)  # lease 2 s
    key = plan(redis_client, "long", sleep_first=6.0, sleep=0, write=True)
    probe_wq.add("probe", key)
    wait_for(lambda: redis_client.get("probe:running:long"), timeout=20, message="reconcile started")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # changes keep coming while it runs: they wait for it
        probe_wq.add("probe", key)
        time.sleep(0.2)
    wait_for(lambda: len(runs(redis_client, "long")) == 2, timeout=20, message="the run after it")
    (_, s1, e1, o1), (_, s2, _, o2) = runs(redis_client, "long")
    assert (o1, o2) == ("ok", "ok") and s2 >= e1 and e1 - s1 >= 6.0
    assert redis_client.get("probe:overlaps") is None
    assert len(redis_client.lrange("probe:writes:long", 0, -1)) == 2


def test_a_worker_frozen_past_its_lease_is_fenced_when_it_resumes(
        probe_wq: WorkQueue, pool: WorkerPool, redis_client: redis.Redis) -> None:
    pool.start(2)
    key = plan(redis_client, "frozen", sleep_first=4.0, sleep=0, write=True)
    probe_wq.add("probe", key)
    pid = int(wait_for(lambda: redis_client.get("probe:running:frozen"), timeout=20, message="reconcile started"))
    os.kill(pid, signal.SIGSTOP)  # a GC pause, a partition: it cannot renew its lease
    try:
        wait_for(lambda: runs(redis_client, "frozen"), timeout=20, message="another worker took the key over")
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: len(runs(redis_client, "frozen")) == 2, timeout=20, message="the frozen run ended")
    by_pid = {p: outcome for p, _, _, outcome in runs(redis_client, "frozen")}
    assert by_pid[pid] == "fenced"  # it woke up without its lease and did not write
    writes = [w.split() for w in redis_client.lrange("probe:writes:frozen", 0, -1)]
    assert [int(p) for p, _ in writes] == [p for p in by_pid if p != pid]


def test_a_reconcile_past_its_deadline_ends_as_an_error_with_backoff(
        probe_wq: WorkQueue, pool: WorkerPool, redis_client: redis.Redis) -> None:
    pool.start(1, RECONCILERY_RECONCILE_TIMEOUT="1.5")
    key = plan(redis_client, "slow", busy_loop=30)
    probe_wq.add("probe", key)
    wait_for(lambda: len(runs(redis_client, "slow")) >= 2, timeout=20, message="a retry after the deadline")
    (_, s1, e1, o1), (_, s2, _, o2) = runs(redis_client, "slow")[:2]
    assert (o1, o2) == ("deadline", "deadline")
    assert 1.4 <= e1 - s1 < 5.0  # ended by the deadline, not by the 30 s loop
    assert s2 - e1 >= 0.15  # after the probe's backoff (base 0.2 s, jitter none)


def test_a_gevent_worker_runs_its_keys_at_once_each_under_its_own_lease(probe_wq: WorkQueue, pool: WorkerPool,
                                                                          redis_client: redis.Redis) -> None:
    """``reconcilery worker -P gevent`` (the cloud-skr pool's model): one process runs its 40 greenlets'
    reconciles at the same time (the standard library is patched, so a sleep yields), and each write is
    fenced by the lease of its own key (the fence is per greenlet, not per thread)."""
    (proc,) = pool.start(1, concurrency=40, pool="gevent")
    keys = [plan(redis_client, f"g{i}", sleep=1.0, write=True) for i in range(40)]
    for key in keys:
        probe_wq.add("probe", key)
    wait_for(lambda: all(runs(redis_client, k.name) for k in keys), timeout=30, message="every key reconciled")
    spans = [r for k in keys for r in runs(redis_client, k.name)]
    assert {pid for pid, *_ in spans} == {proc.pid} and {outcome for *_, outcome in spans} == {"ok"}
    most = max(sum(1 for _, s, e, _ in spans if s <= start < e) for _, start, _, _ in spans)
    assert most >= 30, f"at most {most} of 40 reconciles ran at once"
    tokens = {k.name: redis_client.lrange(f"probe:writes:{k.name}", 0, -1) for k in keys}
    assert all(len(w) == 1 and w[0].split()[1] != "-" for w in tokens.values())
    assert len({w[0].split()[1] for w in tokens.values()}) == 40  # 40 leases, one per key


def test_reconciles_are_celery_task_events_for_flower(probe_wq: WorkQueue, pool: WorkerPool,
                                                      redis_client: redis.Redis) -> None:
    from workers.app import app

    seen: list[dict] = []
    pool.start(1, RECONCILERY_TASK_EVENTS="1")
    key = plan(redis_client, "evented")
    with app.connection_for_read() as conn:
        recv = app.events.Receiver(conn, handlers={"*": seen.append})

        def capture() -> None:
            with contextlib.suppress(Exception):
                recv.capture(limit=None, timeout=15, wakeup=False)

        thread = threading.Thread(target=capture, daemon=True)
        thread.start()
        time.sleep(1.0)  # the receiver's queue is bound before the reconcile
        probe_wq.add("probe", key)
        wait_for(lambda: any(e["type"] == "task-succeeded" for e in seen), timeout=15,
                 message=f"task events (seen {sorted({e['type'] for e in seen})})")
        recv.should_stop = True
    received = [e for e in seen if e["type"] == "task-received" and "evented" in e.get("args", "")]
    # Flower's task list reads "reconcile[probe]" with the key as its arguments (workers/flower.py)
    assert received and received[0]["name"] == "reconcile[probe]" and received[0]["args"] == key.ref
    uuid = received[0]["uuid"]
    assert {e["type"] for e in seen if e.get("uuid") == uuid} >= {"task-received", "task-started", "task-succeeded"}


@pytest.mark.timeout(240)
def test_a_key_that_kills_its_worker_backs_off_is_parked_and_other_keys_keep_flowing(
        probe_wq: WorkQueue, pool: WorkerPool, redis_client: redis.Redis) -> None:
    """A poison key: every reconcile of it SIGKILLs its worker. Each lapse counts as a failure with
    backoff; after 3 lapses in a row (the default) it is parked and named in the worker's log; the
    other keys are reconciled meanwhile; a fresh enqueue un-parks it."""
    pool.start(2)
    poison = plan(redis_client, "poison", kill_times=99)
    probe_wq.add("probe", poison)
    others = [plan(redis_client, f"healthy{i}") for i in range(20)]
    parked_at = None
    deadline = time.monotonic() + 180
    fed = 0
    while time.monotonic() < deadline:
        if fed < len(others):  # healthy changes keep arriving while the poison key crashes workers
            probe_wq.add("probe", others[fed])
            fed += 1
        if probe_wq.status("probe").parked:
            parked_at = time.monotonic()
            break
        alive = [p for p in pool.procs if p.poll() is None]
        if not alive:  # what a Deployment's restart policy does
            pool.start(1)
        time.sleep(0.2)
    assert parked_at is not None, pool.logs()
    assert int(redis_client.get("probe:killed:poison") or 0) == 3
    assert probe_wq.failures("probe", poison) == 3  # each lapse counted, backoff 0.2, 0.4 s
    assert [k for k, _ in probe_wq.parked("probe")] == [poison]
    shown = subprocess.run([sys.executable, "-m", "reconcilery.cli", "queue", "status"], capture_output=True,
                           text=True, env=worker_env(pool.redis_url, PROBE), cwd=ROOT, timeout=60)
    assert "parked: probe local:ns/poison" in shown.stdout, shown.stdout + shown.stderr
    for key in others[fed:]:
        probe_wq.add("probe", key)
    if not [p for p in pool.procs if p.poll() is None]:
        pool.start(1)
    for key in others:
        wait_for(lambda k=key: runs(redis_client, k.name), timeout=60, message=f"{key.name} reconciled")
    assert all(o == "ok" for k in others for _, _, _, o in runs(redis_client, k.name))
    time.sleep(1.0)
    assert int(redis_client.get("probe:killed:poison") or 0) == 3  # parked: no fourth crash
    assert "key parked" in pool.logs() and "poison" in pool.logs()
    plan(redis_client, "poison")  # fixed: a fresh enqueue un-parks it
    probe_wq.add("probe", poison)
    wait_for(lambda: runs(redis_client, "poison"), timeout=30, message="the un-parked key reconciled")
    assert runs(redis_client, "poison")[0][3] == "ok" and probe_wq.status("probe").parked == 0
