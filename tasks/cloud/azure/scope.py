"""The Azure part of a KCP Scope, built from the Garden shoot and its credentials (pure; the original's
``pkg/kcp/scope/scopeCreateAzure.go`` and ``networkReferenceKymaCreate.go``, reference notes §4.2).

Contract::

    section = scope_section(shoot, credentials)   # {"azure": {...}} for Scope spec.scope, or None
    network = kyma_network_reference(scope)       # {"azure": {tenantId, subscriptionId, resourceGroup, networkName}}

``shoot`` is the ``core.gardener.cloud/v1beta1`` Shoot as a dict (its ``spec.provider.infrastructureConfig``
an ``azure.provider.extensions.gardener.cloud/v1alpha1`` InfrastructureConfig); ``credentials`` the
decoded data of the credentials Secret (:func:`tasks.cloud.gcp.scope.secret_values` decodes a Secret).
``None`` means the original's logging-only stop: the error is logged, nothing is built or requeued.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("tasks.cloud.azure.scope")


def vpc_network_name(shoot_namespace: str, shoot_name: str) -> str:
    """``shoot--<project>--<shoot>``, project = namespace without ``garden-`` (``GardenerVpcName``)."""
    return f"shoot--{shoot_namespace.removeprefix('garden-')}--{shoot_name}"


def cm_name(vpc_network: str) -> str:
    """The Cloud Manager resource group and VNet of a shoot VNet: ``<vpcNetwork>--cm``."""
    return f"{vpc_network}--cm"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _zone_name(value: Any) -> str:
    # Gardener's zone name is an integer; rendered as its decimal string ("2"), as the original does.
    return str(int(value)) if isinstance(value, int | float) or str(value).isdigit() else str(value)


def scope_section(shoot: Mapping[str, Any], credentials: Mapping[str, str | bytes]) -> dict[str, Any] | None:
    """``{"azure": {tenantId, subscriptionId, vpcNetwork, network{cidr, zones[{name, cidr}], nodes, pods,
    services}}}``; zones as in the InfrastructureConfig, in order, names as strings. Returns None (after
    logging the original's error) when ``subscriptionID`` or ``tenantID`` is missing."""
    if "subscriptionID" not in credentials:
        log.error("error defining Azure scope: gardener credential for azure missing subscriptionID key")
        return None
    if "tenantID" not in credentials:
        log.error("error defining Azure scope: gardener credential for azure missing tenantID key")
        return None
    meta = shoot.get("metadata") or {}
    spec = shoot.get("spec") or {}
    networking = spec.get("networking") or {}
    infra = ((spec.get("provider") or {}).get("infrastructureConfig") or {}).get("networks") or {}
    network: dict[str, Any] = {}
    cidr = (infra.get("vnet") or {}).get("cidr")
    if cidr:
        network["cidr"] = cidr
    zones = [{"name": _zone_name(z.get("name")), "cidr": z.get("cidr", "")} for z in infra.get("zones") or []]
    if zones:
        network["zones"] = zones
    network.update({k: networking[k] for k in ("nodes", "pods", "services") if networking.get(k)})
    return {"azure": {
        "tenantId": _text(credentials["tenantID"]),
        "subscriptionId": _text(credentials["subscriptionID"]),
        "vpcNetwork": vpc_network_name(str(meta.get("namespace", "")), str(meta.get("name", ""))),
        "network": network,
    }}


def needs_rebuild(scope: Mapping[str, Any]) -> bool:
    """True when an Azure Scope lacks ``network.nodes`` (the original rebuilds it then)."""
    azure = ((scope.get("spec") or {}).get("scope") or {}).get("azure") or {}
    return not (azure.get("network") or {}).get("nodes")


def kyma_network_reference(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The ``<kyma>--kyma`` Network's ``spec.network.reference`` (resource group = VNet = vpcNetwork)."""
    azure = scope["spec"]["scope"]["azure"]
    return {"azure": {"tenantId": azure["tenantId"], "subscriptionId": azure["subscriptionId"],
                      "resourceGroup": azure["vpcNetwork"], "networkName": azure["vpcNetwork"]}}


def cm_network_reference(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The ``<kyma>--cm`` Network's ``status.network`` once Ready (resource group = VNet = ``<vpc>--cm``)."""
    azure = scope["spec"]["scope"]["azure"]
    name = cm_name(azure["vpcNetwork"])
    return {"azure": {"tenantId": azure["tenantId"], "subscriptionId": azure["subscriptionId"],
                      "resourceGroup": name, "networkName": name}}


__all__ = ["cm_name", "cm_network_reference", "kyma_network_reference", "needs_rebuild", "scope_section",
           "vpc_network_name"]
