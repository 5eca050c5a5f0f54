"""``reconcilery webhook`` as a process: dev certificates, serving, clean stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import requests

from tasks.snatch.mutate import admission_review
from tests.fixtures.processes import free_port, wait_for
from tests.integration.snatch.conftest import add_namespace, add_pool_node

ROOT = Path(__file__).resolve().parents[3]


def test_webhook_process(api, spawn, tmp_path: Path) -> None:
    kube, kubeconfig = api
    add_pool_node(kube)
    add_namespace(kube, "kyma-system", managed=True)
    port, health, metrics_port = free_port(), free_port(), free_port()
    log = (tmp_path / "webhook.log").open("wb")
    proc = spawn([sys.executable, "-m", "reconcilery.cli", "webhook", "--dev-state-dir", str(tmp_path),
                  "--host", "127.0.0.1", "--port", str(port), "--health-port", str(health),
                  "--metrics-port", str(metrics_port), "--kubeconfig", kubeconfig, "--webhook-cfg-name", ""],
                 cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: proc.poll() is not None or requests.get(f"http://127.0.0.1:{health}/readyz",
                                                             timeout=1).status_code == 200,
             timeout=30, message="webhook ready")
    assert proc.poll() is None, (tmp_path / "webhook.log").read_text()
    ca = tmp_path / "snatch" / "certs" / "ca.crt"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kyma-system"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    r = requests.post(f"https://localhost:{port}/mutate--v1-pod", json=admission_review(pod), verify=str(ca),
                      timeout=5)
    assert r.status_code == 200 and "patch" in r.json()["response"]
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(15) == 0
    assert b"webhook stopping" in (tmp_path / "webhook.log").read_bytes()


def test_missing_key_pair_fails_start(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "reconcilery.cli", "webhook", "--cert-dir", str(tmp_path / "none"),
                           "--host", "127.0.0.1", "--port", "0", "--health-port", "0", "--metrics-port", "-1",
                           "--webhook-cfg-name", ""],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=60)
    assert proc.returncode == 1
    assert b"cannot read key pair" in proc.stderr
