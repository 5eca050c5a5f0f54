"""The ``kyma-system/api-gateway-config`` ConfigMap and Istio's ``mesh`` config, parsed.

As api-gateway's ``helpers.GetConfig`` and ext-auth validation: the operator config is YAML under the
key ``api-gateway-config`` with ``jwtHandler: ory|istio``; an absent ConfigMap means ``ory``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from tasks.apigateway.model import CONFIG_MAP_KEY, ISTIO_MESH_KEY

JWT_HANDLER_ORY = "ory"
JWT_HANDLER_ISTIO = "istio"
SUPPORTED_JWT_HANDLERS = (JWT_HANDLER_ORY, JWT_HANDLER_ISTIO)


@dataclass(frozen=True)
class GatewayConfig:
    """The operator config: ``jwt_handler`` as written (``""`` when unreadable or missing)."""

    jwt_handler: str

    @property
    def valid(self) -> bool:
        return self.jwt_handler in SUPPORTED_JWT_HANDLERS


def parse_config(config_map: Mapping[str, Any] | None) -> GatewayConfig:
    """Read the operator ConfigMap; ``None`` (not found) → ``ory``, unreadable YAML → ``""``."""
    if config_map is None:
        return GatewayConfig(JWT_HANDLER_ORY)
    data = config_map.get("data") or {}
    raw = data.get(CONFIG_MAP_KEY, "") if isinstance(data, dict) else ""
    return _parse_config_text(raw) if isinstance(raw, str) else GatewayConfig("")


@functools.lru_cache(maxsize=64)
def _parse_config_text(raw: str) -> GatewayConfig:
    """The config of one ConfigMap text (memoized: every reconcile reads the same ConfigMap)."""
    try:
        parsed = yaml.safe_load(raw)
    except yaml.YAMLError:
        return GatewayConfig("")
    handler = parsed.get("jwtHandler") if isinstance(parsed, dict) else None
    return GatewayConfig(str(handler) if handler is not None else "")


@dataclass(frozen=True)
class MeshConfig:
    """Istio's mesh config as far as extAuth validation needs it.

    ``error`` is the validation message when the mesh cannot be used (missing ConfigMap, key or bad
    YAML); otherwise ``providers`` maps each extension provider name to whether it has
    ``envoyExtAuthzHttp``.
    """

    error: str | None = None
    error_attribute: str = ""
    providers: dict[str, bool] = field(default_factory=dict)


def parse_mesh(config_map: Mapping[str, Any] | None) -> MeshConfig:
    """Read ``istio-system/istio`` (``None`` = not found) the way api-gateway's extAuth check does."""
    if config_map is None:
        return MeshConfig(error="Failed to get Istio ConfigMap", error_attribute=".extAuth")
    data = config_map.get("data") or {}
    if not isinstance(data, dict) or ISTIO_MESH_KEY not in data:
        return MeshConfig(
            error="Istio ConfigMap does not contain mesh key", error_attribute=".extAuth.externalAuthorizers"
        )
    try:
        mesh = yaml.safe_load(str(data[ISTIO_MESH_KEY]))
    except yaml.YAMLError:
        mesh = "invalid"
    if mesh is None:
        mesh = {}
    providers_raw = mesh.get("extensionProviders") if isinstance(mesh, dict) else "invalid"
    if providers_raw is None:
        providers_raw = []
    if not isinstance(providers_raw, list):
        return MeshConfig(error="Failed to unmarshal mesh data", error_attribute=".extAuth.externalAuthorizers")
    providers: dict[str, bool] = {}
    for provider in providers_raw:
        if isinstance(provider, dict) and "name" in provider:
            name = str(provider["name"])
            providers.setdefault(name, provider.get("envoyExtAuthzHttp") is not None)
    return MeshConfig(providers=providers)
