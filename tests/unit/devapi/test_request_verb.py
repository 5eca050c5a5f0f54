"""The dev API server's request counter by verb (``DevAPIServer.request_counts``): how a request is classified."""

from __future__ import annotations

import pytest

from kubedev.server import request_verb


@pytest.mark.parametrize(("method", "path", "watch", "verb"), [
    ("GET", "/api/v1/namespaces/shop/services/httpbin", False, "GET"),
    ("GET", "/api/v1/namespaces/shop/pods", False, "LIST"),
    ("GET", "/api/v1/nodes", False, "LIST"),
    ("GET", "/api/v1/nodes/n1", False, "GET"),
    ("GET", "/apis/networking.istio.io/v1beta1/virtualservices", True, "WATCH"),
    ("GET", "/apis/gateway.kyma-project.io/v2/namespaces/shop/apirules", False, "LIST"),
    ("GET", "/apis/gateway.kyma-project.io/v2/namespaces/shop/apirules/r1", False, "GET"),
    ("GET", "/apis/gateway.kyma-project.io/v2", False, "GET"),  # discovery
    ("PATCH", "/apis/gateway.kyma-project.io/v2/namespaces/shop/apirules/r1/status", False, "PATCH"),
    ("POST", "/api/v1/namespaces/shop/events", False, "POST"),
])
def test_requests_are_counted_by_api_verb(method: str, path: str, watch: bool, verb: str) -> None:
    assert request_verb(method, path, watch) == verb
