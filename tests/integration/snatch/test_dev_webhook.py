"""``start_dev_webhook`` (what ``reconcilery up`` calls) and the dev webhook configuration's caBundle."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import requests

from kube import clusters, resources
from kube.kubeconfig import from_kubeconfig
from tasks.snatch import controller
from tasks.snatch.mutate import admission_review
from tasks.snatch.webhook import dev_webhook_configuration, start_dev_webhook
from tests.integration.snatch.conftest import add_namespace, add_pool_node


def test_start_dev_webhook(api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kube, kubeconfig = api
    add_pool_node(kube)
    add_namespace(kube, "kyma-system", managed=True)
    url, ca_path, stop = start_dev_webhook(tmp_path, kubeconfig, "cpu-worker-0")
    try:
        assert url.startswith("https://127.0.0.1:") and url.endswith("/mutate--v1-pod")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kyma-system"},
               "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        r = requests.post(url, json=admission_review(pod), verify=ca_path, timeout=5)
        assert r.status_code == 200 and "patch" in r.json()["response"]

        # the dev configuration gets the dev CA from the caBundle sync
        kube.create(resources.MUTATING_WEBHOOK_CONFIGURATION, dev_webhook_configuration(url))
        monkeypatch.setenv(controller.ENV_CERT_DIR, str(Path(ca_path).parent))
        clusters.register("local", from_kubeconfig(kubeconfig))
        try:
            controller.reconcile(controller.webhook_config_key())
        finally:
            clusters.unregister("local")
        obj = kube.get(resources.MUTATING_WEBHOOK_CONFIGURATION, controller.WEBHOOK_CONFIG_NAME)
        assert base64.b64decode(obj["webhooks"][0]["clientConfig"]["caBundle"]) == Path(ca_path).read_bytes()
    finally:
        stop()
    with pytest.raises(requests.ConnectionError):
        requests.post(url, json={}, verify=ca_path, timeout=2)
