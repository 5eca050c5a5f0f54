"""Request paths -> RBAC attributes, as the API server resolves them."""

from __future__ import annotations

import pytest

from kube.audit import ApiCall, component_of, parse_call


@pytest.mark.parametrize(("method", "path", "query", "call"), [
    ("GET", "/api/v1/nodes", [], ApiCall("list", "", "nodes", "", False, "", "")),
    ("GET", "/api/v1/nodes", [("watch", "true")], ApiCall("watch", "", "nodes", "", False, "", "")),
    ("GET", "/api/v1/namespaces/nkl/configmaps", [("fieldSelector", "metadata.name=nkl-config"), ("watch", "1")],
     ApiCall("watch", "", "configmaps", "", True, "nkl", "nkl-config")),
    ("GET", "/api/v1/namespaces/nkl/configmaps", [("fieldSelector", "metadata.name=nkl-config"), ("limit", 500)],
     ApiCall("list", "", "configmaps", "", True, "nkl", "nkl-config")),
    ("GET", "/api/v1/namespaces/kyma", [], ApiCall("get", "", "namespaces", "", False, "", "kyma")),
    ("GET", "/api/v1/namespaces/nkl/configmaps/nkl-config", [],
     ApiCall("get", "", "configmaps", "", True, "nkl", "nkl-config")),
    ("GET", "/apis/gateway.kyma-project.io/v2/apirules", [("limit", 500)],
     ApiCall("list", "gateway.kyma-project.io", "apirules", "", False, "", "")),
    ("PATCH", "/apis/gateway.kyma-project.io/v2/namespaces/a/apirules/r/status", [],
     ApiCall("patch", "gateway.kyma-project.io", "apirules", "status", True, "a", "r")),
    ("PUT", "/api/v1/namespaces/a/events/e.1", [], ApiCall("update", "", "events", "", True, "a", "e.1")),
    ("POST", "/apis/coordination.k8s.io/v1/namespaces/r/leases", [],
     ApiCall("create", "coordination.k8s.io", "leases", "", True, "r", "")),
    ("DELETE", "/apis/networking.istio.io/v1/namespaces/a/virtualservices/v", [],
     ApiCall("delete", "networking.istio.io", "virtualservices", "", True, "a", "v")),
])
def test_parse_call(method: str, path: str, query: list[tuple[str, object]], call: ApiCall) -> None:
    assert parse_call(method, path, query) == call


@pytest.mark.parametrize("path", ["/api", "/apis", "/apis/gateway.kyma-project.io/v2", "/api/v1", "/version"])
def test_discovery_is_not_a_resource_call(path: str) -> None:
    assert parse_call("GET", path) is None


@pytest.mark.parametrize(("argv", "component"), [
    (["reconcilery", "watch", "--controllers", "x"], "watcher"),
    (["-m", "reconcilery.cli", "worker", "-Q", "nginx", "-c", "2"], "worker-nginx"),
    (["reconcilery", "worker", "--queues", "cloud-skr,cloud-kcp"], "worker-cloud-skr"),
    (["reconcilery", "webhook", "--port", "9443"], "webhook"),
    (["pytest"], "other"),
])
def test_component_of(argv: list[str], component: str) -> None:
    assert component_of(argv, {}) == component
    assert component_of(argv, {"RECONCILERY_COMPONENT": "x"}) == "x"
