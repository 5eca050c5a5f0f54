"""What the Azure RedisInstance and RedisCluster plans share (pure): the pieces of an Azure Cache for Redis
reached privately (cloud-manager's ``pkg/kcp/provider/azure/redisinstance`` and ``.../rediscluster``, whose
``new.go`` run the same private endpoint and DNS zone group actions around a different cache).

The cache is ``<kcpName>`` in the Cloud Manager resource group ``<vpcNetwork>--cm`` (:func:`targets`); a
private endpoint ``<kcpName>`` into the subnet ``<vpcNetwork>--cm`` (group ``redisCache``) and its DNS
zone group ``<kcpName>`` on :data:`DNS_ZONE`, made by :func:`plan_private_access`. What one turn reads:
:class:`Read`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall as Call
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["DNS_ZONE", "REASON_FAILED_CREATING", "Read", "call", "plan_create_cache", "plan_private_access",
           "state", "targets"]

DNS_ZONE = "privatelink.redis.cache.windows.net"
REASON_FAILED_CREATING = "FailedCreatingFileSystem"  # sic: the original's reason for a refused cache


def targets(scope: Mapping[str, Any], kcp_name: str) -> dict[str, str]:
    """Resource group, names and ids of the pieces of the KCP RedisInstance / RedisCluster ``kcp_name``."""
    azure = ((scope.get("spec") or {}).get("scope") or {}).get("azure") or {}
    sub, cm = str(azure.get("subscriptionId") or ""), f"{azure.get('vpcNetwork') or ''}--cm"
    rg = f"/subscriptions/{sub}/resourceGroups/{cm}/providers"
    return {"group": cm, "name": kcp_name, "redis_id": f"{rg}/Microsoft.Cache/redis/{kcp_name}",
            "subnet_id": f"{rg}/Microsoft.Network/virtualNetworks/{cm}/subnets/{cm}", "subnet": cm,
            "zone_id": f"{rg}/Microsoft.Network/privateDnsZones/{DNS_ZONE}",
            "location": str((scope.get("spec") or {}).get("region") or "")}


@dataclass(frozen=True)
class Read:
    """The cache, the private endpoint and its DNS zone group (ARM wire shape; ``None``: missing) and
    the cache's primary key (``""`` until it is provisioned)."""

    redis: Mapping[str, Any] | None = None
    endpoint: Mapping[str, Any] | None = None
    zone_group: Mapping[str, Any] | None = None
    key: str = ""


def call(method: str, kwargs: Mapping[str, Any], reason: str, prefix: str, retry: float = 10) -> Call:
    """``AzureRedisClient.<method>(**kwargs)``; refused: Error ``reason``, ``prefix`` + ARM's message,
    back after ``retry`` seconds."""
    return Call(method, kwargs, prefix, reason, with_cause=True, retry=retry)


def state(resource: Mapping[str, Any] | None) -> str:
    """An ARM resource's ``properties.provisioningState`` (``""``: none)."""
    return str(((resource or {}).get("properties") or {}).get("provisioningState") or "")


def plan_create_cache(run: StepBuilder, n: Mapping[str, str], body: Mapping[str, Any],
                      t: Callable[[float], float]) -> Outcome:
    """Create the cache ``body`` (``CreateParameters``) and come back after 60 s; refused:
    ``FailedCreatingFileSystem`` (sic) ``Failed creating AzureRedis: <error>``, back after 10 s."""
    return with_calls(run, t, run.step(requeue_after=t(60)), (call(
        "create_redis", {"group": n["group"], "name": n["name"], "body": body}, REASON_FAILED_CREATING,
        "Failed creating AzureRedis: "),))


def plan_private_access(run: StepBuilder, n: Mapping[str, str], redis: Mapping[str, Any], found: Read,
                        t: Callable[[float], float], wait: float) -> Outcome | None:
    """The cache ``redis`` waited for until ``Succeeded`` (60 s), then the private endpoint (again when
    ``Failed``; refused: ``Failed creating Azure PrivateEndpoint: <error>``), its wait for ``Succeeded``, the
    DNS zone group (``Failed creating Azure PrivateDnsZone: <error>``); each back after ``wait`` seconds. ``n``:
    :func:`targets`. ``None``: both are there, go on."""
    if state(redis) != "Succeeded":
        return with_calls(run, t, run.step(requeue_after=t(60)))
    endpoint = found.endpoint
    if endpoint is None or state(endpoint) == "Failed":
        body = {"location": n["location"], "properties": {
            "subnet": {"id": n["subnet_id"], "name": n["subnet"]},
            "privateLinkServiceConnections": [{"name": n["name"], "properties": {
                "privateLinkServiceId": str(redis.get("id") or n["redis_id"]), "groupIds": ["redisCache"]}}]}}
        return with_calls(run, t, run.step(requeue_after=t(wait)), (call(
            "create_private_endpoint", {"group": n["group"], "name": n["name"], "body": body}, names.COND_ERROR,
            "Failed creating Azure PrivateEndpoint: "),))
    if state(endpoint) != "Succeeded":
        return with_calls(run, t, run.step(requeue_after=t(wait)))
    if found.zone_group is None:
        body = {"properties": {"privateDnsZoneConfigs": [{"name": DNS_ZONE, "properties": {
            "privateDnsZoneId": n["zone_id"]}}]}}
        return with_calls(run, t, run.step(requeue_after=t(wait)), (call(
            "create_dns_zone_group", {"group": n["group"], "endpoint": n["name"], "name": n["name"], "body": body},
            names.COND_ERROR, "Failed creating Azure PrivateDnsZone: "),))
    return None
