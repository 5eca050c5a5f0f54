"""Every Kubernetes API call the code makes is allowed by deploy/'s RBAC for the component making it.

The calls are collected by :mod:`kube.audit` while the end-to-end tests run their real processes
(watchers, a worker per queue, the webhook) in a child pytest, plus a repeated Event recorded as the
apigateway worker (the 403 that issue 12 found). Each call is checked against the rules bound to the
ServiceAccount of that component's Deployment in the rendered ``deploy/base``.

Cloud Resources' KCP loop (Scope, Network, IpRange on AWS, GCP and Azure, Nuke) and SKR loop
(connects) run too. Their calls to other clusters (the SKRs, with the kubeconfig of Secret
``kubeconfig-<kyma>``; the Garden, with ``gardener-credentials``) are recorded with that cluster's
name (:class:`kube.clusters.RemoteKube`) and left out: the SKR's or the Garden's RBAC governs them,
not deploy/. Only the calls to the KCP (the cluster the workers are deployed to) are checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client

from kube import Kube
from kube.audit import ENV_COMPONENT, ENV_DIR, read_calls
from tests.fixtures.deploy import Rbac, components, render
from tests.fixtures.workers import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

#: End-to-end tests whose processes make the calls of each component.
SCENARIOS = [
    "tests/integration/apigateway/test_e2e.py",
    "tests/integration/apigateway/test_operator_e2e.py",
    "tests/integration/apigateway/test_certificate_controller.py",
    "tests/integration/nginx/test_e2e.py",
    "tests/integration/snatch/test_cabundle_e2e.py",
    "tests/integration/snatch/test_cli_process.py",
    "tests/integration/watchers/test_leader.py",
    "tests/integration/cloud/test_kcp.py",
    "tests/integration/cloud/test_skr.py",
    "tests/integration/cloud/test_providers.py",
]


def test_every_recorded_call_is_allowed(tmp_path: Path, kube_client: client.ApiClient,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    audit = tmp_path / "audit"
    env = {**os.environ, ENV_DIR: str(audit)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SCENARIOS],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    # A failing scenario is reported by its own test; here only the calls it made count.
    assert "passed" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]

    # A repeated Event (create -> 409 -> get -> update), as the apigateway worker records it.
    monkeypatch.setenv(ENV_DIR, str(audit))
    monkeypatch.setenv(ENV_COMPONENT, "worker-apigateway")
    kube = Kube(kube_client)
    core = client.CoreV1Api(kube_client)
    core.create_namespace({"metadata": {"name": "rbac-events"}})  # type: ignore[arg-type]
    involved = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "rbac-events", "uid": "u-1"}}
    kube.emit_event(involved, "Checked", "same message")
    kube.emit_event(involved, "Checked", "same message")
    monkeypatch.delenv(ENV_DIR)

    calls = read_calls(audit)
    objects = render("base")
    accounts = components(objects)
    rbac = Rbac(objects)
    seen = {c["component"] for c in calls if not c.get("cluster")}
    assert {"watcher", "webhook", "worker-apigateway", "worker-nginx", "worker-snatch", "worker-cloud-kcp",
            "worker-cloud-skr"} <= seen, seen
    # the SKR loop ran against SKR clusters, and the Scope controller read the Garden: those are not KCP calls
    remote = [c for c in calls if c.get("cluster")]
    assert any(c["component"] == "worker-cloud-skr" and c["group"] == "cloud-resources.kyma-project.io"
               for c in remote), "no SKR call recorded"
    assert any(c["component"] == "worker-cloud-kcp" and c["resource"] == "shoots" for c in remote)
    # the KCP side of both loops: the SKR kubeconfig Secret, SkrStatus, the KCP IpRanges' status
    assert any(c["component"] == "worker-cloud-skr" and c["resource"] == "secrets" and not c.get("cluster")
               for c in calls)
    assert any(c["component"] == "worker-cloud-kcp" and c["resource"] == "ipranges" and c["subresource"] == "status"
               and not c.get("cluster") for c in calls)
    # the operator ran (the scenarios exercise every apigateway controller)
    assert any(c["group"] == "operator.kyma-project.io" and c["component"] == "worker-apigateway" for c in calls)
    assert any(c["resource"] == "events" and c["verb"] == "update" for c in calls)  # the repeat was counted
    denied = sorted({(c["component"], c["verb"], c["group"], c["resource"] + (f"/{c['subresource']}" if
                                                                              c["subresource"] else ""),
                      "namespaced" if c["namespaced"] else "cluster-wide", c["name"])
                     for c in calls if c["component"] in accounts and not c.get("cluster")
                     and not rbac.allows(accounts[c["component"]], c)})
    assert not denied, "calls the deployment's RBAC forbids:\n" + "\n".join(map(str, denied))
