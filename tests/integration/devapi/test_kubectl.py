# mypy: disable-error-code="arg-type, union-attr, index, attr-defined, misc"
# (the official client is typed with models; passing plain dicts is supported at runtime)
"""kubectl against the server: apply, get -o json, patch, delete, get -w, api-resources, create ns."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.fixtures.processes import stop_process

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

KUBECTL = shutil.which("kubectl")


@pytest.fixture
def kubectl(kubeconfig_path: Path, kube_client: object, tmp_path: Path):
    """Run kubectl with the session kubeconfig and a private discovery cache; returns CompletedProcess."""
    if KUBECTL is None:
        pytest.skip("no kubectl binary in PATH")

    def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [KUBECTL, "--kubeconfig", str(kubeconfig_path), "--cache-dir", str(tmp_path / "cache"), *args]
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed: {done.stderr}")
        return done

    run.base = [KUBECTL, "--kubeconfig", str(kubeconfig_path), "--cache-dir", str(tmp_path / "cache")]
    return run


def test_api_resources_and_version(kubectl) -> None:
    out = kubectl("api-resources").stdout
    for resource in ("configmaps", "namespaces", "customresourcedefinitions", "leases", "endpointslices"):
        assert resource in out
    assert kubectl("get", "--raw", "/version").stdout.strip().startswith("{")


def test_create_ns_apply_get_patch_delete(kubectl, tmp_path: Path) -> None:
    ns = f"t-{uuid.uuid4().hex[:10]}"
    assert f"namespace/{ns} created" in kubectl("create", "ns", ns).stdout
    try:
        manifest = tmp_path / "cm.yaml"
        manifest.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\n  namespace: {ns}\n"
                            f"  labels: {{app: demo}}\ndata:\n  k: v1\n")
        assert "configmap/c1 created" in kubectl("apply", "-f", str(manifest)).stdout
        assert "configmap/c1 unchanged" in kubectl("apply", "-f", str(manifest)).stdout
        manifest.write_text(manifest.read_text().replace("k: v1", "k: v2"))
        assert "configmap/c1 configured" in kubectl("apply", "-f", str(manifest)).stdout
        got = json.loads(kubectl("get", "configmap", "c1", "-n", ns, "-o", "json").stdout)
        assert got["data"] == {"k": "v2"} and got["metadata"]["labels"] == {"app": "demo"}
        listed = json.loads(kubectl("get", "cm", "-n", ns, "-l", "app=demo", "-o", "json").stdout)
        assert [i["metadata"]["name"] for i in listed["items"]] == ["c1"]
        kubectl("patch", "cm", "c1", "-n", ns, "--type=merge", "-p", '{"data":{"extra":"1"}}')
        kubectl("patch", "cm", "c1", "-n", ns, "--type=json", "-p", '[{"op":"remove","path":"/data/k"}]')
        kubectl("patch", "cm", "c1", "-n", ns, "-p", '{"metadata":{"labels":{"more":"yes"}}}')  # strategic
        got = json.loads(kubectl("get", "cm", "c1", "-n", ns, "-o", "json").stdout)
        assert got["data"] == {"extra": "1"} and got["metadata"]["labels"] == {"app": "demo", "more": "yes"}
        assert "kind: ConfigMap" in kubectl("get", "cm", "c1", "-n", ns, "-o", "yaml").stdout
        assert 'configmap "c1" deleted' in kubectl("delete", "cm", "c1", "-n", ns).stdout
        assert kubectl("get", "cm", "c1", "-n", ns, check=False).returncode != 0
    finally:
        kubectl("delete", "ns", ns, "--wait=false", check=False)


def test_apply_crd_then_custom_resources(kubectl, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    group, plural, kind = f"k{suffix}.kubedev.example.com", f"things{suffix}", f"Thing{suffix}"
    crd = tmp_path / "crd.yaml"
    crd.write_text(f"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: {plural}, singular: thing{suffix}, kind: {kind}}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
""")
    kubectl("apply", "-f", str(crd))
    try:
        kubectl("wait", "--for=condition=Established", f"crd/{plural}.{group}", "--timeout=30s")
        cr = tmp_path / "cr.yaml"
        cr.write_text(f"apiVersion: {group}/v1\nkind: {kind}\nmetadata: {{name: t1, namespace: default}}\n"
                      f"spec: {{size: 1}}\n")
        assert f"thing{suffix}.{group}/t1 created" in kubectl("apply", "-f", str(cr)).stdout
        kubectl("patch", plural, "t1", "--type=merge", "--subresource=status", "-p", '{"status":{"phase":"Ok"}}')
        got = json.loads(kubectl("get", plural, "t1", "-o", "json").stdout)
        assert got["spec"] == {"size": 1} and got["status"] == {"phase": "Ok"}
        kubectl("delete", plural, "t1")
    finally:
        kubectl("delete", "-f", str(crd), "--wait=false", check=False)


def test_get_watch_prints_events(kubectl, kube_client, tmp_path: Path) -> None:
    from kubernetes import client

    core = client.CoreV1Api(kube_client)
    ns = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "watched"}})
        out_path = tmp_path / "watch.out"
        with out_path.open("w") as out:
            proc = subprocess.Popen([*kubectl.base, "get", "cm", "-n", ns, "-w", "--request-timeout=20s",
                                     "--output-watch-events"], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                deadline = time.monotonic() + 20
                while "watched" not in out_path.read_text() and time.monotonic() < deadline:
                    time.sleep(0.1)
                core.patch_namespaced_config_map("watched", ns, {"data": {"a": "1"}})
                while "MODIFIED" not in out_path.read_text() and time.monotonic() < deadline:
                    time.sleep(0.1)
            finally:
                stop_process(proc)
        text = out_path.read_text()
        assert "ADDED" in text and "MODIFIED" in text and "watched" in text, text
    finally:
        core.delete_namespace(ns)
