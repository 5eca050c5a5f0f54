"""Periodic resync: RedBeat drives it, one scheduler is active, fresh changes overtake its backlog."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from celery.contrib.testing.worker import start_worker

from tests.fixtures.processes import free_port, stop_process, wait_for
from tests.fixtures.scrape import samples
from tests.fixtures.workers import ROOT, WorkerPool, worker_env
from workers.controller import Key

pytestmark = pytest.mark.integration
PROBE = "tests.integration.workqueue.probe"


@pytest.mark.usefixtures("inproc_probe")
def test_resync_task_enqueues_every_key_through_a_real_worker(redis_client: redis.Redis) -> None:
    """The resync task itself, run by an in-process Celery worker (celery.contrib.testing)."""
    from workers import app as celery_module
    from workers.app import resync, workqueue
    redis_client.set("probe:resync_size", 25)
    with start_worker(celery_module.app, pool="solo", perform_ping_check=False, queues=["apigateway"],
                      shutdown_timeout=10):
        resync.apply_async(args=["probe"])
        wait_for(lambda: sum(int(redis_client.get(f"probe:count:r{i}") or 0) for i in range(25)) == 25,
                 timeout=30, message="every key reconciled once")
    assert workqueue().status("probe").waiting == 0


@pytest.mark.usefixtures("inproc_probe")
def test_a_fresh_change_overtakes_a_resync_backlog(redis_client: redis.Redis,
                                                   worker_pool: Callable[[str], WorkerPool]) -> None:
    from workers.app import workqueue

    wq = workqueue()
    backlog = [Key("local", "ns", f"bulk{i}") for i in range(1500)]
    for k in backlog:
        redis_client.set(f"probe:plan:{k.name}", json.dumps({"sleep": 0.002}))
    wq.add_many("probe", backlog, resync=True)
    worker_pool(PROBE).start(1, concurrency=2)
    wait_for(lambda: int(redis_client.get("probe:count:bulk0") or 0) or wq.status("probe").waiting < 1400,
             timeout=30, message="resync under way")
    live = Key("local", "ns", "live")
    wq.add("probe", live)
    wait_for(lambda: redis_client.get("probe:count:live"), timeout=30, message="live change reconciled")
    _, started, _, _ = redis_client.lrange("probe:runs:live", 0, -1)[0].split()
    ran_before = sum(1 for k in backlog for line in redis_client.lrange(f"probe:runs:{k.name}", 0, -1)
                     if float(line.split()[1]) < float(started))
    waiting_after = wq.status("probe").waiting
    assert waiting_after > 500, "the live change did not wait for the backlog"
    # it overtook the backlog: at most the reconciles already handed to the worker ran before it
    assert ran_before < 1500 - waiting_after + 10


def test_redbeat_runs_the_resync_schedule_with_one_active_scheduler(
        redis_url: str, redis_client: redis.Redis, tmp_path: Path, worker_pool: Callable[[str], WorkerPool]) -> None:
    env = worker_env(redis_url, PROBE, PROBE_RESYNC_SECONDS="1", RECONCILERY_REDBEAT_LOCK_TIMEOUT="5")
    redis_client.set("probe:resync_size", 3)
    worker_pool(PROBE).start(1, PROBE_RESYNC_SECONDS="1")
    beats = []
    ports = [free_port(), free_port()]
    try:
        for i in range(2):
            log = open(tmp_path / f"beat-{i}.log", "wb")  # noqa: SIM115 - closed with the process
            beats.append(subprocess.Popen([sys.executable, "-m", "reconcilery.cli", "beat"],
                                          env={**env, "RECONCILERY_METRICS_PORT": str(ports[i]),
                                               "RECONCILERY_METRICS_BIND_ADDRESS": "127.0.0.1"}, cwd=ROOT,
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            time.sleep(1.5)
        wait_for(lambda: int(redis_client.get("probe:count:r0") or 0) >= 3, timeout=30,
                 message="three resyncs of r0")
        logs = [(tmp_path / f"beat-{i}.log").read_text() for i in range(2)]
        active = [i for i, text in enumerate(logs) if "Sending due task resync-probe" in text]
        assert active == [0], logs  # the second beat waits for the lock
        # their metrics say the same: the active one ticks and counts its sends, the standby neither
        first, second = (samples(f"http://127.0.0.1:{port}/metrics") for port in ports)
        sent = ("reconcilery_beat_sent_total", frozenset({("entry", "resync-probe")}))
        assert first[("reconcilery_beat_active", frozenset())] == 1 and first[sent] >= 3, first
        assert second[("reconcilery_beat_active", frozenset())] == 0 and sent not in second, second
        stop_process(beats[0])
        before = int(redis_client.get("probe:count:r0") or 0)
        wait_for(lambda: int(redis_client.get("probe:count:r0") or 0) >= before + 2, timeout=30,
                 message="the standby beat took over")
    finally:
        for b in beats:
            stop_process(b)


def test_beat_reinstalls_its_schedule_after_redis_lost_its_data(
        redis_url: str, redis_client: redis.Redis, tmp_path: Path, worker_pool: Callable[[str], WorkerPool]) -> None:
    env = worker_env(redis_url, PROBE, PROBE_RESYNC_SECONDS="1", RECONCILERY_REDBEAT_LOCK_TIMEOUT="5",
                     RECONCILERY_LEASE_SECONDS="1")
    redis_client.set("probe:resync_size", 2)
    worker_pool(PROBE).start(1, PROBE_RESYNC_SECONDS="1", RECONCILERY_LEASE_SECONDS="1")
    log = open(tmp_path / "beat.log", "wb")  # noqa: SIM115 - closed with the process
    beat = subprocess.Popen([sys.executable, "-m", "reconcilery.cli", "beat"], env=env, cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: int(redis_client.get("probe:count:r0") or 0) >= 2, timeout=30, message="resyncs")
        redis_client.flushall()  # Redis came back empty: the schedule and beat's lock are gone
        redis_client.set("probe:resync_size", 2)
        wait_for(lambda: int(redis_client.get("probe:count:r0") or 0) >= 2, timeout=30,
                 message="resyncs after the loss")
        assert beat.poll() is None, (tmp_path / "beat.log").read_text()
        assert "re-installing the beat schedule" in (tmp_path / "beat.log").read_text()
    finally:
        stop_process(beat)
