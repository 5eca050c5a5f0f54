"""Every Kubernetes API call the code makes is allowed by deploy/'s RBAC for the component making it.

The calls are collected by :mod:`kube.audit` over the whole test run (``tests/fixtures/audit.py``):
the end-to-end tests' real processes (watchers, a worker per queue, the webhook) record into the run's
audit directory, and this module runs last. Run alone (without the end-to-end tests in the same
session) it replays them in a child pytest, as the check was first written. A repeated Event recorded
as the apigateway worker (the 403 that issue 12 found) is added here. Each call is checked against the
rules bound to the ServiceAccount of that component's Deployment in the rendered ``deploy/base``.

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
from typing import Any

import pytest
from kubernetes import client

from kube import Kube, audit
from kube.audit import ENV_COMPONENT, ENV_DIR, read_calls
from tests.fixtures.audit import SCENARIOS, audit_dir
from tests.fixtures.deploy import Rbac, components, denied, render, render_with
from tests.fixtures.workers import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]


def _recorded_calls(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The audit directory holding the scenarios' calls: this run's when the scenarios ran in it
    (they run before this module), else a replay's."""
    ran = {item.nodeid.split("::")[0] for item in request.session.items}
    if set(SCENARIOS) <= ran:
        return audit_dir(request.config)
    replay = tmp_path / "audit"
    env = {**os.environ, ENV_DIR: str(replay)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SCENARIOS],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    # A failing scenario is reported by its own test; here only the calls it made count.
    assert "passed" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]
    return replay


def test_every_recorded_call_is_allowed(request: pytest.FixtureRequest, tmp_path: Path,
                                        kube_client: client.ApiClient, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = _recorded_calls(request, tmp_path)

    # A repeated Event (create -> 409 -> get -> update), as the apigateway worker records it.
    monkeypatch.setenv(ENV_DIR, str(recorded))
    monkeypatch.setenv(ENV_COMPONENT, "worker-apigateway")
    monkeypatch.setattr(audit, "_recorder", audit._Recorder())  # a file of its own in ``recorded``
    kube = Kube(kube_client)
    core = client.CoreV1Api(kube_client)
    core.create_namespace({"metadata": {"name": "rbac-events"}})  # type: ignore[arg-type]
    involved = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "rbac-events", "uid": "u-1"}}
    kube.emit_event(involved, "Checked", "same message")
    kube.emit_event(involved, "Checked", "same message")
    monkeypatch.delenv(ENV_COMPONENT)

    calls = read_calls(recorded)
    objects = render("base")
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
    # what the cloud workers' any-name Secret rule cannot say (RBAC has no name prefixes), the code keeps to:
    # in the KCP they read only the Garden's kubeconfig and SKR kubeconfigs (deploy/base/rbac.yaml)
    cloud_secrets = {c["name"] for c in calls if c["component"] in ("worker-cloud-kcp", "worker-cloud-skr")
                     and c["resource"] == "secrets" and not c.get("cluster")}
    assert cloud_secrets and all(n == "gardener-credentials" or n.startswith("kubeconfig-") for n in cloud_secrets), \
        cloud_secrets
    # the operator ran (the scenarios exercise every apigateway controller)
    assert any(c["group"] == "operator.kyma-project.io" and c["component"] == "worker-apigateway" for c in calls)
    assert any(c["resource"] == "events" and c["verb"] == "update" for c in calls)  # the repeat was counted
    # a process configured as an opt-in component (RECONCILERY_KUBE_AUDIT_COMPONENTS, e.g. the NGINX edge's
    # nlk mode) is held to base with that component; every other call to base alone
    by_deploy: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for c in calls:
        by_deploy.setdefault(tuple(sorted(c.get("deploy_components") or ())), []).append(c)
    assert ("nginx-nlk",) in by_deploy, sorted(by_deploy)  # the nlk mode ran through real processes
    report = []
    for names, group in sorted(by_deploy.items()):
        deployed = render_with(*names) if names else objects
        for f in denied(group, deployed):
            where = sorted({c["namespace"] for c in group if f in denied([c], deployed)})
            report.append(f"{f} {where} (deploy/base{''.join(' + ' + n for n in names)})")
    assert not report, "calls the deployment's RBAC forbids (in namespaces):\n" + "\n".join(report)


def test_a_call_the_rbac_forbids_is_reported() -> None:
    """The check above fails on a call no rule allows, and passes one a rule allows."""
    objects = render("base")
    sa = components(objects)["watcher"]
    _, rule = next((ns, r) for ns, r in Rbac(objects).rules(sa) if ns is None and "*" not in r["resources"])
    resource, _, subresource = rule["resources"][0].partition("/")
    allowed = {"component": "watcher", "cluster": "", "verb": rule["verbs"][0], "group": rule["apiGroups"][0],
               "resource": resource, "subresource": subresource, "namespaced": False, "namespace": "", "name": ""}
    forbidden = {**allowed, "verb": "delete", "group": "", "resource": "secrets", "subresource": "",
                 "name": "kubeconfig-x"}
    on_an_skr = {**forbidden, "cluster": "skr-1"}  # another cluster's RBAC governs it
    by_a_test = {**forbidden, "component": "other"}  # the tests' own calls have no Deployment
    assert denied([allowed, on_an_skr, by_a_test], objects) == []
    assert denied([allowed, forbidden], objects) == [
        ("watcher", "delete", "", "secrets", "cluster-wide", "kubeconfig-x")]
