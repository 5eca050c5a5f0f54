"""Two leader-elected watcher processes: exactly one holds the Lease and enqueues; when it is
SIGKILLed the other takes the Lease over and enqueues."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from kubernetes import client

from tests.fixtures.processes import free_port, wait_for
from tests.fixtures.workers import ROOT, worker_env

pytestmark = pytest.mark.integration


def enqueued(port: int) -> float:
    """The sum of ``reconcilery_watch_enqueued_total`` of the watcher on ``port``."""
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("reconcilery_watch_enqueued_total{"))


def leading(port: int) -> bool:
    try:
        body = requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).json()
    except requests.RequestException:
        return False
    return bool(body["watches"][0]["leader"])


def service(name: str, node_port: int) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "nginx-ingress"},
            "spec": {"type": "NodePort", "ports": [{"name": "nkl-web", "port": 80, "nodePort": node_port}]}}


def test_exactly_one_watcher_leads_and_the_other_takes_over(
        kube_client: client.ApiClient, kubeconfig_path: Path, redis_url: str, tmp_path: Path,
        spawn: Callable[..., subprocess.Popen[bytes]]) -> None:
    core = client.CoreV1Api(kube_client)
    for ns in ("nkl", "nginx-ingress"):
        core.create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    core.create_namespaced_config_map("nkl", {"metadata": {"name": "nkl-config"},  # type: ignore[arg-type]
                                              "data": {"nginx-hosts": "http://127.0.0.1:9/api"}})
    core.create_namespaced_service("nginx-ingress", service("web", 30080))  # type: ignore[arg-type]

    env = worker_env(redis_url, "tasks.nginx.controller", RECONCILERY_KUBECONFIG=str(kubeconfig_path))
    ports = [free_port(), free_port()]
    procs = []
    for i, port in enumerate(ports):
        with open(tmp_path / f"watch-{i}.log", "wb") as log:
            procs.append(spawn([sys.executable, "-m", "reconcilery.cli", "watch", "--controllers", "nginx-upstream",
                                "--health-port", str(port), "--health-host", "127.0.0.1", "--leader-elect",
                                "--lease-namespace", "default", "--lease-duration", "4", "--renew-deadline", "3",
                                "--retry-period", "0.5"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT))

    def logs() -> str:
        return "".join(p.read_text(errors="replace")[-3000:] for p in sorted(tmp_path.glob("watch-*.log")))

    wait_for(lambda: any(leading(p) for p in ports), timeout=60, message="a leader")
    leader = 0 if leading(ports[0]) else 1
    standby = 1 - leader
    wait_for(lambda: enqueued(ports[leader]) > 0, timeout=30, message="the leader enqueues")
    lease = client.CoordinationV1Api(kube_client).read_namespaced_lease("reconcilery-watch", "default")
    assert lease.spec.holder_identity.split("_")[1] == str(procs[leader].pid)
    # the standby is ready (it campaigns) but watches nothing
    wait_for(lambda: requests.get(f"http://127.0.0.1:{ports[standby]}/readyz", timeout=2).status_code == 200,
             timeout=30, message="the standby ready")
    assert enqueued(ports[standby]) == 0 and not leading(ports[standby]), logs()

    procs[leader].send_signal(signal.SIGKILL)
    procs[leader].wait(10)
    wait_for(lambda: leading(ports[standby]), timeout=30, message="the standby takes over")
    core.create_namespaced_service("nginx-ingress", service("shop", 30081))  # type: ignore[arg-type]
    wait_for(lambda: enqueued(ports[standby]) > 0, timeout=30, message="the new leader enqueues")
    lease = client.CoordinationV1Api(kube_client).read_namespaced_lease("reconcilery-watch", "default")
    assert lease.spec.holder_identity.split("_")[1] == str(procs[standby].pid)
    assert lease.spec.lease_transitions == 1, logs()

    # a leader stopped normally releases the Lease (empty holder) instead of letting it expire
    procs[standby].send_signal(signal.SIGTERM)
    assert procs[standby].wait(20) == 0, logs()
    lease = client.CoordinationV1Api(kube_client).read_namespaced_lease("reconcilery-watch", "default")
    assert not lease.spec.holder_identity and lease.spec.lease_duration_seconds == 1
