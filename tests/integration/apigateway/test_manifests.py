"""The CRDs, the examples and the rendered Istio objects are accepted by the dev API server (or a cluster
without Istio): what `render` prints is what the worker will create."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import client

from kube import Kube
from kube.manifests import load_objects
from kube.printers import Output, format_listing
from kubedev import DevAPIServer
from tasks.apigateway.cli import render_documents
from tests.fixtures.devapi import real_cluster
from tests.integration.apigateway.conftest import conversion_webhook

ROOT = Path(__file__).resolve().parents[3]
CRDS = [ROOT / "tasks/apigateway/crds/apirules.gateway.kyma-project.io.yaml", ROOT / "tasks/apigateway/crds/istio"]
EXAMPLES = [ROOT / "examples/apigateway/00-cluster.yaml", ROOT / "examples/apigateway/10-apirules.yaml"]

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(real_cluster(), reason="installs Istio stand-in CRDs; dev API server only")
def test_crds_examples_and_rendered_objects_are_accepted(
    devapi_clean: DevAPIServer | None, kubeconfig_path: Path, kube_client: client.ApiClient
) -> None:
    kubectl(kubeconfig_path, "apply", *(a for p in CRDS for a in ("-f", str(p))))
    deadline = time.monotonic() + 10
    while "virtualservices" not in kubectl(kubeconfig_path, "api-resources"):
        assert time.monotonic() < deadline, "CRDs not served"
        time.sleep(0.2)
    # the CRD as shipped converts through api-gateway's webhook Service: run it, as `reconcilery up` does
    with conversion_webhook(Kube(kube_client, timeout=10.0)):
        for path in EXAMPLES:
            kubectl(kubeconfig_path, "apply", "-f", str(path))
        assert (
            len(kubectl(kubeconfig_path, "get", "apirules.gateway.kyma-project.io", "-n", "shop", "-o",
                        "name").split())
            == 4
        )

    custom = client.CustomObjectsApi(kube_client)
    rendered = [d for d in yaml.safe_load_all(format_listing(render_documents(load_objects(EXAMPLES)), Output.YAML))
                if d]
    created = 0
    for obj in rendered:
        if obj["kind"] == "APIRule":
            continue
        group, version = obj["apiVersion"].split("/")
        plural = {
            "VirtualService": "virtualservices",
            "AuthorizationPolicy": "authorizationpolicies",
            "RequestAuthentication": "requestauthentications",
        }[obj["kind"]]
        namespace = obj["metadata"]["namespace"]
        back = cast(dict[str, Any], custom.create_namespaced_custom_object(group, version, namespace, plural, obj))
        assert back["metadata"]["name"].startswith(obj["metadata"]["generateName"])
        assert back["spec"] == obj["spec"]
        created += 1
    assert created == 11
