"""Fixtures of the Snatch integration tests: a dev API server, dev certificates, a running webhook."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kube import Kube, resources
from kube.kubeconfig import from_kubeconfig
from kubedev import DevAPIServer
from tasks.snatch.certs import DevCertificates, ensure_dev_certs
from tasks.snatch.clusterview import KubeClusterView
from tasks.snatch.mutate import MANAGED_BY_LABEL, POOL_LABEL
from tasks.snatch.webhook import SnatchWebhook
from webhooks.serving import RunningWebhook

POOL = "cpu-worker-0"


@pytest.fixture
def api(devapi_clean: DevAPIServer | None, kubeconfig_path: Path) -> Iterator[tuple[Kube, str]]:
    """``(kube, kubeconfig)`` on the emptied session dev API server. Skipped on a real cluster: the
    tests create Nodes and relabel ``kube-system``."""
    if devapi_clean is None:
        pytest.skip("snatch integration tests create Nodes; they run on the dev API server only")
    kube = Kube(from_kubeconfig(str(kubeconfig_path)), timeout=5)
    try:
        yield kube, str(kubeconfig_path)
    finally:
        kube.close()


@pytest.fixture
def dev_certs(tmp_path: Path) -> DevCertificates:
    return ensure_dev_certs(tmp_path)


def add_pool_node(kube: Kube, name: str = "kyma-node-0", pool: str = POOL) -> dict[str, Any]:
    return kube.create(resources.NODE, {"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": name, "labels": {POOL_LABEL: pool}}})


def add_namespace(kube: Kube, name: str, managed: bool) -> dict[str, Any]:
    """Create namespace ``name`` (or relabel it: the dev server has ``default`` and ``kube-system``)."""
    labels = {MANAGED_BY_LABEL: "kyma"} if managed else {}
    if kube.get(resources.NAMESPACE, name) is not None:
        return kube.patch(resources.NAMESPACE, name, {"metadata": {"labels": labels}})
    return kube.create(resources.NAMESPACE, {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": name, "labels": labels}})


@pytest.fixture
def start_webhook(dev_certs: DevCertificates) -> Iterator[Callable[..., RunningWebhook]]:
    """Factory: a webhook over a kubeconfig (in a thread, free ports); every one stopped at teardown."""
    running: list[RunningWebhook] = []

    def start(kubeconfig: str, node_interval: float = 0.2, namespace_interval: float = 0.5,
              cert_poll_interval: float = 10.0) -> RunningWebhook:
        view = KubeClusterView(lambda: Kube(from_kubeconfig(kubeconfig), timeout=5), POOL,
                               node_interval=node_interval, namespace_interval=namespace_interval)
        server = SnatchWebhook(dev_certs.cert_dir, POOL, view, host="127.0.0.1", port=0, health_port=0,
                               metrics_port=0, cert_poll_interval=cert_poll_interval)
        hook = RunningWebhook(server)
        running.append(hook)
        return hook.start()

    yield start
    for hook in running:
        hook.stop()
