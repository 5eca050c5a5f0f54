"""The RBAC audit tells the KCP's calls from those to other clusters (SKRs, the Garden): a client of a
kubeconfig Secret (:func:`kube.clusters.client_from_secret`) records its calls with that cluster's name."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from kube import ApiError, Kube, audit, clusters
from tests.fixtures.processes import free_port


def _unreachable() -> k8s.ApiClient:
    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{free_port()}"
    return k8s.ApiClient(cfg)


def test_remote_calls_are_marked_with_their_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(audit.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(audit.ENV_COMPONENT, "worker-cloud-skr")
    monkeypatch.setattr(audit, "_recorder", audit._Recorder())
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
                  "users": [{"name": "u", "user": {"token": "t"}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}

    class Local(Kube):  # the KCP: answers the kubeconfig Secret without a server
        def get(self, res, name, namespace=None):  # type: ignore[no-untyped-def, override]
            audit.record("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
            return {"metadata": {"name": name}, "data": {"config": base64.b64encode(
                yaml.safe_dump(kubeconfig).encode()).decode()}}

    kcp = Local(_unreachable())
    with clusters.remote(kcp, "kcp-system", "kubeconfig-skr-1", cluster="skr-1", timeout=1) as skr:
        assert isinstance(skr, clusters.RemoteKube)
        with pytest.raises(ApiError):
            skr.open("GET", "/apis/cloud-resources.kyma-project.io/v1beta1/ipranges")
    with pytest.raises(ApiError):
        Kube(_unreachable(), timeout=1).open("GET", "/api/v1/namespaces/kcp-system/configmaps/x")
    calls = [(c["cluster"], c["resource"]) for c in audit.read_calls(tmp_path)]
    assert calls == [("", "secrets"), ("skr-1", "ipranges"), ("", "configmaps")]
