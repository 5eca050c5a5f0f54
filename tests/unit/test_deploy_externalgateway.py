"""deploy/components/externalgateway: with base it grants the apigateway worker every call the
externalgateway controller makes (and base alone does not: the widening stays opt-in)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.deploy import DEPLOY, Rbac, admission_create, apigateway_creates, kubectl, load_all, render

#: The mesh CA's Secrets in istio-system (as tests/unit/test_deploy.py).
MESH_CA_SECRETS = ("istio-ca-secret", "cacerts", "istio-ca-root-cert")

pytestmark = pytest.mark.kubectl

SA = "reconcilery-apigateway"


def call(verb: str, group: str, resource: str, namespace: str = "", subresource: str = "") -> dict[str, Any]:
    return {"verb": verb, "group": group, "resource": resource, "subresource": subresource,
            "namespaced": bool(namespace), "namespace": namespace, "name": "partner-x"}


#: Every call of tasks/apigateway/externalgateway/controller.py (an ExternalGateway in ``shop``).
CALLS = [
    call("get", "gateway.kyma-project.io", "externalgateways", "shop"),
    call("list", "gateway.kyma-project.io", "externalgateways"),
    call("patch", "gateway.kyma-project.io", "externalgateways", "shop"),
    call("patch", "gateway.kyma-project.io", "externalgateways", "shop", "status"),
    call("get", "apiextensions.k8s.io", "customresourcedefinitions"),
    call("get", "", "configmaps", "kube-system") | {"name": "shoot-info"},
    call("get", "", "configmaps", "shop"),
    call("get", "", "secrets", "certs"),
    call("get", "", "services", "istio-system"),
    *(call(v, "networking.istio.io", "gateways", "shop") for v in ("get", "create", "update", "delete")),
    *(call(v, "networking.istio.io", "envoyfilters", "istio-system") for v in ("get", "create", "update", "delete")),
    *(call(v, "", "secrets", "istio-system") for v in ("get", "create", "update", "delete")),
    *(call(v, "cert.gardener.cloud", "certificates", "istio-system") for v in ("get", "create", "update", "delete")),
    *(call(v, "dns.gardener.cloud", "dnsentries", "istio-system") for v in ("get", "create", "update", "delete")),
    call("create", "", "events", "shop"),
]


def _with_component(tmp_path: Path) -> tuple[dict[str, Any], ...]:
    """base + the component, rendered."""
    deploy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, deploy)  # kustomize loads only below the overlay's root
    overlay = deploy / "overlays" / "with-externalgateway"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["../../base"], "components": ["../../components/externalgateway"]}))
    return load_all(subprocess.run([kubectl(), "kustomize", str(overlay)], capture_output=True, text=True,
                                   timeout=120, check=True).stdout)


def test_the_component_grants_every_call_and_base_alone_does_not(tmp_path: Path) -> None:
    with_component = Rbac(_with_component(tmp_path))
    missing = [c for c in CALLS if not with_component.allows(SA, c, exact_namespace=True)]
    assert missing == []
    base = Rbac(render("base"))
    assert not all(base.allows(SA, c, exact_namespace=True) for c in CALLS)


def test_its_admission_policy_admits_the_ca_secrets_and_still_not_the_mesh_ca(tmp_path: Path) -> None:
    from tasks.apigateway.externalgateway.model import ISTIO_SYSTEM, Names

    objs = _with_component(tmp_path)
    ca_secret = Names.of("eu-mtls").ca_secret
    assert admission_create(render("base"), "Secret", ISTIO_SYSTEM, ca_secret)  # base alone: not a name it manages
    assert admission_create(objs, "Secret", ISTIO_SYSTEM, ca_secret) == []
    for kind, namespace, name in apigateway_creates():
        assert admission_create(objs, kind, namespace, name) == [], (kind, namespace, name)
    for name in MESH_CA_SECRETS:
        assert admission_create(objs, "Secret", ISTIO_SYSTEM, name), name
    assert admission_create(objs, "Secret", "kyma-system", ca_secret)
