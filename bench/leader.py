"""Watcher leader election: how long the cluster has no leading watcher when the leader dies or stops.

Two ``reconcilery watch --leader-elect`` processes (controller-runtime's timings: 15 s lease, 10 s
renew deadline, 2 s retry) against the dev API server and a local Redis. The leader is SIGKILLed
(the standby must wait for the lease to expire) or SIGTERMed (it releases the Lease), ``--rounds``
times each; prints the gap until the other one leads.

    .venv/bin/python bench/leader.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from kubedev import DevAPIServer
from reconcilery.localredis import LocalRedis
from tests.fixtures.processes import free_port, stop_process

ROOT = Path(__file__).resolve().parents[1]


def leading(port: int) -> bool:
    try:
        return bool(requests.get(f"http://127.0.0.1:{port}/readyz", timeout=1).json()["watches"][0]["leader"])
    except (requests.RequestException, ValueError, KeyError, IndexError):
        return False


def ready(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def start(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "reconcilery.cli", "watch", "--controllers", "nginx-upstream",
                                 "--health-port", str(port), "--health-host", "127.0.0.1", "--leader-elect",
                                 "--lease-namespace", "default"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                cwd=ROOT, start_new_session=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalRedis(free_port(), workdir=tmp) as redis_server:
        api = DevAPIServer(port=0).start()
        kubeconfig = api.write_kubeconfig(Path(tmp) / "kubeconfig")
        env = {**os.environ, "RECONCILERY_REDIS_URL": redis_server.url, "RECONCILERY_KUBECONFIG": str(kubeconfig),
               "RECONCILERY_DOMAINS": "tasks.nginx.controller", "PYTHONPATH": str(ROOT)}
        ports = [free_port(), free_port()]
        procs = [start(env, p, Path(tmp) / f"w{i}.log") for i, p in enumerate(ports)]
        gaps: dict[str, list[float]] = {"SIGKILL": [], "SIGTERM": []}
        try:
            deadline = time.monotonic() + 60
            while not any(leading(p) for p in ports):
                if time.monotonic() > deadline:
                    raise SystemExit("no leader within 60 s")
                time.sleep(0.1)
            for sig in [signal.SIGKILL, signal.SIGTERM] * args.rounds:
                leader = 0 if leading(ports[0]) else 1
                other = 1 - leader
                t0 = time.monotonic()
                procs[leader].send_signal(sig)
                procs[leader].wait(30)
                while not leading(ports[other]):
                    time.sleep(0.05)
                gaps[sig.name].append(time.monotonic() - t0)
                procs[leader] = start(env, ports[leader], Path(tmp) / f"w{leader}.log")
                while not ready(ports[leader]):
                    time.sleep(0.1)
        finally:
            for p in procs:
                stop_process(p)
            api.stop()
    for name, values in gaps.items():
        print(f"leader {name}: standby leads after {statistics.mean(values):.1f} s on average "
              f"(min {min(values):.1f}, max {max(values):.1f}, {len(values)} rounds; lease 15 s, retry 2 s)")


if __name__ == "__main__":
    main()
