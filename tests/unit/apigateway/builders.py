"""Small builders for APIRule tests: a base cluster and APIRules in the shape users write."""

from __future__ import annotations

import copy
from typing import Any

from tasks.apigateway.state import ClusterState

ISSUER = "https://auth.example.com"
JWKS = "https://auth.example.com/.well-known/jwks.json"


def gateway(name: str = "kyma-gateway", namespace: str = "kyma-system", hosts: list[str] | None = None) -> dict:
    hosts = hosts or ["*.local.kyma.dev"]
    return {
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "servers": [
                {"port": {"number": 443, "name": "https", "protocol": "HTTPS"}, "hosts": list(hosts)},
                {"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": list(hosts)},
            ]
        },
    }


def service(name: str, namespace: str = "shop", selector: dict[str, str] | None = None) -> dict:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector != {}:
        spec["selector"] = selector or {"app": name}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def namespace(name: str, allow_apirules_from: str | None = None, **annotations: str) -> dict:
    """Namespace ``name``; ``allow_apirules_from`` is its ``gateway.kyma-project.io/allow-apirules-from``."""
    if allow_apirules_from is not None:
        annotations["gateway.kyma-project.io/allow-apirules-from"] = allow_apirules_from
    meta: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def config_map(name: str, namespace: str, data: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


MESH = """
extensionProviders:
- name: oauth2-proxy
  envoyExtAuthzHttp: {service: oauth2-proxy.svc, port: 80}
- name: grpc-only
  envoyExtAuthzGrpc: {service: authz.svc, port: 9000}
"""


def cluster(*extra: dict) -> list[dict]:
    """Gateway, operator config (istio handler), Istio mesh config and Services httpbin/orders in ``shop``."""
    return [
        gateway(),
        config_map("api-gateway-config", "kyma-system", {"api-gateway-config": "jwtHandler: istio\n"}),
        config_map("istio", "istio-system", {"mesh": MESH}),
        service("httpbin"),
        service("orders", selector={"app": "orders", "tier": "backend"}),
        *extra,
    ]


def state(*extra: dict) -> ClusterState:
    return ClusterState.from_manifests(cluster(*extra))


def jwt(scopes: list[str] | None = None, audiences: list[str] | None = None, **auth: Any) -> dict:
    authentication = {"issuer": ISSUER, "jwksUri": JWKS, **auth}
    config: dict[str, Any] = {"authentications": [authentication]}
    if scopes is not None or audiences is not None:
        authorization: dict[str, Any] = {}
        if scopes is not None:
            authorization["requiredScopes"] = scopes
        if audiences is not None:
            authorization["audiences"] = audiences
        config["authorizations"] = [authorization]
    return config


def rule(path: str = "/*", methods: list[str] | None = None, **fields: Any) -> dict:
    body: dict[str, Any] = {"path": path, "methods": methods or ["GET"]}
    if not any(k in fields for k in ("jwt", "extAuth", "noAuth")):
        body["noAuth"] = True
    body.update(fields)
    return body


def apirule(
    *rules: dict,
    name: str = "orders",
    namespace: str = "shop",
    hosts: list[str] | None = None,
    service: dict | None = None,
    finalizers: bool = True,
    annotations: dict[str, str] | None = None,
    version: str = "v2",
    **spec: Any,
) -> dict:
    body: dict[str, Any] = {
        "hosts": hosts or ["orders.local.kyma.dev"],
        "gateway": "kyma-system/kyma-gateway",
        "service": service if service is not None else {"name": "orders", "port": 8080},
        "rules": [copy.deepcopy(r) for r in rules] or [rule()],
    }
    if service == {}:
        del body["service"]
    body.update(spec)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "generation": 1}
    if finalizers:
        meta["finalizers"] = ["gateway.kyma-project.io/subresources"]
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": f"gateway.kyma-project.io/{version}", "kind": "APIRule", "metadata": meta, "spec": body}
