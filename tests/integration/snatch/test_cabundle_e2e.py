"""End to end: the webhook process enqueues the caBundle sync after each certificate load; a real
``snatch`` worker writes the CA into the MutatingWebhookConfiguration, also after a CA rotation."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

from kube import resources
from tasks.snatch.certs import ensure_dev_certs, generate_ca, rotate_serving_cert
from tasks.snatch.controller import WEBHOOK_CONFIG_NAME
from tasks.snatch.webhook import dev_webhook_configuration
from tests.fixtures.processes import free_port, wait_for

ROOT = Path(__file__).resolve().parents[3]


def test_ca_bundle_follows_rotation(api, redis_url: str, worker_pool, spawn, tmp_path: Path) -> None:
    kube, kubeconfig = api
    dev = ensure_dev_certs(tmp_path)
    port = free_port()
    kube.create(resources.MUTATING_WEBHOOK_CONFIGURATION,
                dev_webhook_configuration(f"https://127.0.0.1:{port}/mutate--v1-pod"))
    worker_pool("tasks.snatch.controller").start(
        1, queues="snatch", RECONCILERY_KUBECONFIG=kubeconfig, RECONCILERY_SNATCH_CERT_DIR=str(dev.cert_dir))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": redis_url,
           "RECONCILERY_DOMAINS": "tasks.snatch.controller"}
    log = (tmp_path / "webhook.log").open("wb")
    proc = spawn([sys.executable, "-m", "reconcilery.cli", "webhook", "--cert-dir", str(dev.cert_dir),
                  "--host", "127.0.0.1", "--port", str(port), "--health-port", str(free_port()),
                  "--metrics-port", "-1", "--kubeconfig", kubeconfig,
                  "--webhook-cfg-name", WEBHOOK_CONFIG_NAME],
                 cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)

    def bundle() -> bytes:
        obj = kube.get(resources.MUTATING_WEBHOOK_CONFIGURATION, WEBHOOK_CONFIG_NAME) or {}
        return base64.b64decode(obj["webhooks"][0]["clientConfig"].get("caBundle", ""))

    try:
        wait_for(lambda: bundle() == dev.ca_path.read_bytes(), timeout=20, message="caBundle = dev CA")
        new_ca = generate_ca()
        rotate_serving_cert(dev.cert_dir, new_ca)
        wait_for(lambda: bundle() == new_ca.cert_pem, timeout=20, message="caBundle = rotated CA")
    finally:
        assert proc.poll() is None, (tmp_path / "webhook.log").read_text()
