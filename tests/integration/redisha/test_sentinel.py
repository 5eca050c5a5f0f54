"""Redis high availability: a master, a replica and a Sentinel (local processes, password-protected);
the master is SIGKILLed while keys are being added and reconciled; every key is still reconciled.

Only public surfaces are used: ``workqueue().add`` in this process, ``reconcilery worker`` processes,
a probe controller that records reconciles in a separate witness Redis.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from reconcilery.localredis import find_redis_server
from tests.fixtures.processes import free_port, wait_for
from tests.fixtures.workers import ROOT, worker_env
from workers.controller import Key, registry
from workers.epoch import RedisEpoch
from workers.redis_client import redis_client

pytestmark = pytest.mark.integration
PROBE = "tests.integration.redisha.probe"
PASSWORD = "failover-test-password"
KEYS = 240
KILL_AFTER = 80


class Cluster:
    """Master, replica and one Sentinel (quorum 1, down-after 1 s) as child processes."""

    def __init__(self, spawn: Callable[..., subprocess.Popen[bytes]], workdir: Path) -> None:
        self.spawn = spawn
        self.dir = workdir
        self.master_port, self.replica_port, self.sentinel_port = free_port(), free_port(), free_port()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def _redis(self, name: str, port: int, *extra: str) -> None:
        d = self.dir / name
        d.mkdir()
        self.procs[name] = self.spawn([find_redis_server(), "--port", str(port), "--bind", "127.0.0.1",
                                       "--dir", str(d), "--save", "", "--appendonly", "no",
                                       "--requirepass", PASSWORD, "--masterauth", PASSWORD,
                                       "--logfile", str(d / "redis.log"), *extra], stdin=subprocess.DEVNULL)

    def start(self) -> Cluster:
        self._redis("master", self.master_port)
        self._redis("replica", self.replica_port, "--replicaof", "127.0.0.1", str(self.master_port))
        conf = self.dir / "sentinel.conf"  # Sentinel rewrites its config file: it must be writable
        conf.write_text(f"""port {self.sentinel_port}
bind 127.0.0.1
dir {self.dir}
logfile {self.dir / "sentinel.log"}
sentinel monitor mymaster 127.0.0.1 {self.master_port} 1
sentinel auth-pass mymaster {PASSWORD}
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 10000
""")
        self.procs["sentinel"] = self.spawn([find_redis_server(), str(conf), "--sentinel"], stdin=subprocess.DEVNULL)
        replica = redis.Redis(port=self.replica_port, password=PASSWORD)
        wait_for(lambda: replica.info("replication").get("master_link_status") == "up", timeout=30,
                 message="replica in sync")
        sentinel = redis.Redis(port=self.sentinel_port)
        wait_for(lambda: sentinel.execute_command("SENTINEL", "REPLICAS", "mymaster"), timeout=30,
                 message="sentinel knows the replica")
        return self

    def master_port_now(self) -> int:
        host_port = redis.Redis(port=self.sentinel_port).execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                                                                         "mymaster")
        return int(host_port[1])

    @property
    def url(self) -> str:
        return f"sentinel://127.0.0.1:{self.sentinel_port}/0?master_name=mymaster"

    def logs(self) -> str:
        return "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted(self.dir.rglob("*.log")))


@pytest.fixture
def sentinel_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spawn: Callable[..., subprocess.Popen[bytes]],
                 redis_url: str) -> Iterator[tuple[Cluster, str]]:
    """The cluster, and this process's Celery app and workqueue pointed at it through the Sentinel."""
    from workers import app as celery_module
    from workers.settings import load

    cluster = Cluster(spawn, tmp_path).start()
    witness = redis_url.rsplit("/", 1)[0] + "/3"
    env = {"RECONCILERY_REDIS_URL": cluster.url, "RECONCILERY_REDIS_PASSWORD": PASSWORD,
           "PROBE_WITNESS_URL": witness}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = dict(celery_module.app.conf)
    _reset_connections(celery_module.app)
    celery_module.configure(celery_module.app, load())
    celery_module._state.clear()
    importlib.reload(importlib.import_module(PROBE))
    try:
        yield cluster, witness
    finally:
        celery_module._state.clear()
        registry.unregister("failover-probe")
        _reset_connections(celery_module.app)  # the app's pools still point at the Sentinel
        celery_module.app.conf.update(before)
        celery_module.configure(celery_module.app, load({}))


def _reset_connections(app: Any) -> None:
    """Drop the Celery app's cached broker connections and producers (they keep their transport)."""
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None


def test_a_master_failover_mid_run_loses_no_key(sentinel_app: tuple[Cluster, str], tmp_path: Path,
                                                spawn: Callable[..., subprocess.Popen[bytes]]) -> None:
    from workers.app import WORKERS_READY, workqueue

    cluster, witness_url = sentinel_app
    witness = redis.Redis.from_url(witness_url, decode_responses=True)
    client = redis_client(cluster.url)
    env = worker_env(cluster.url, PROBE, RECONCILERY_REDIS_PASSWORD=PASSWORD, PROBE_WITNESS_URL=witness_url)
    def start_worker(i: int) -> subprocess.Popen[bytes]:
        with open(tmp_path / f"worker-{i}.log", "ab") as log:
            return spawn([sys.executable, "-m", "reconcilery.cli", "worker", "-Q", "apigateway", "-c", "2",
                          "-n", f"ha{i}-{os.getpid()}@%h"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)

    workers = [start_worker(i) for i in range(2)]
    restarts = 0

    def restart_dead() -> None:
        # As a Deployment's restartPolicy does: kombu 5.7's Sentinel channel may end a worker with
        # "Unrecoverable error: AttributeError ... 'hostname'" when its broker connection breaks.
        nonlocal restarts
        for i, w in enumerate(workers):
            if w.poll() is not None:
                workers[i] = start_worker(i)
                restarts += 1

    def logs() -> str:
        return cluster.logs() + "".join(p.read_text(errors="replace")[-3000:] for p in tmp_path.glob("worker-*.log"))

    for w in workers:
        wait_for(lambda w=w: client.sismember(WORKERS_READY, str(w.pid)) or w.poll() is not None, timeout=60,
                 message="worker ready")
        assert w.poll() is None, logs()

    wq = workqueue()
    # The producer behaves as a watcher: it remembers what it enqueued (a watcher's cache), retries an
    # enqueue that fails, and enqueues everything again when Redis restarted or failed over (the
    # promoted replica may lack the last writes the old master acknowledged: replication is async).
    epoch = RedisEpoch(wq.redis, quiet_seconds=2.0)
    epoch.check()
    enqueued: list[Key] = []
    failovers_seen = 0

    def enqueue(keys: list[Key]) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                wq.add_many("failover-probe", keys)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def resync_after_failover() -> None:
        nonlocal failovers_seen
        try:
            changed = epoch.check()
        except Exception:  # Sentinel still electing: check again on the next round
            return
        if changed:
            failovers_seen += 1
            enqueue(list(enqueued))

    for i in range(KEYS):
        if i == KILL_AFTER:
            cluster.procs["master"].send_signal(signal.SIGKILL)
        key = Key("local", "ns", f"k{i}")
        enqueue([key])
        enqueued.append(key)
        resync_after_failover()

    assert cluster.master_port_now() == cluster.replica_port, logs()
    expected = {f"k{i}" for i in range(KEYS)}
    try:
        wait_for(lambda: restart_dead() or resync_after_failover() or witness.smembers("reconciled") >= expected,
                 timeout=120, interval=0.5, message="every key reconciled")
    except TimeoutError:
        missing = sorted(expected - witness.smembers("reconciled"))
        pytest.fail(f"{len(missing)} keys never reconciled: {missing[:20]}\n{logs()}")
    assert failovers_seen >= 1, "the producer never saw the failover"
    print(f"worker restarts after the failover: {restarts}")
