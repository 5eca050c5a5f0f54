"""The Azure RedisCluster plan (``pkg/kcp/provider/azure/rediscluster``): one turn's ARM calls over what
was read (pure).

The cluster is a Premium Azure Cache for Redis ``<kcpName>`` in the Cloud Manager resource group
``<vpcNetwork>--cm`` (region = the Scope's, non-SSL port disabled, SKU ``Premium``/``P`` with the KCP
``spec.instance.azure.sku.capacity`` 1-5 — the SKR tiers C3-C7 —, ``shardCount`` 0-10 and
``replicasPerPrimary`` 0-3 when set, the optional ``redisVersion`` and ``redisConfiguration``), reached
through a private endpoint ``<kcpName>`` into the subnet ``<vpcNetwork>--cm`` (group ``redisCache``) and
its DNS zone group ``<kcpName>`` on ``privatelink.redis.cache.windows.net`` — the pieces and names of the
RedisInstance flow (:mod:`tasks.cloud.azure.redisinstance_plan`, whose :class:`Read` and :func:`targets`
this plan shares).

In the original's order: create the cache (refused: ``FailedCreatingFileSystem`` (sic) ``Failed creating
AzureRedis: <error>``, back after 10 s; else 60 s), record ``status.id`` (the cache's name), wait for
``Succeeded`` (60 s), the private endpoint (again when ``Failed``; ``Failed creating Azure PrivateEndpoint:
<error>``) and its wait (60 s), the DNS zone group (``Failed creating Azure PrivateDnsZone: <error>``);
once Ready, one change a turn: the SKU capacity, the shard count, the Redis version (``Failed to modify
AzureRedis: <error>``, 10 s; else back after 1 s — the cache is ``Scaling`` and waited for); then Ready
(``Redis Cluster is ready``) with ``discoveryEndpoint`` ``<host>:<sslPort>``, the primary access key as
``authString``, ``nodeType`` (the SKU capacity), ``shardCount`` and ``replicasPerShard`` (the cache's
``replicasPerPrimary``, else ``replicasPerMaster``).

Deletion (the original's order): the cache, then the DNS zone group, then the private endpoint, each
deleted and waited for while ``Deleting`` (60 s), then the finalizer.

Deviations, on purpose: the original formats the endpoint as ``Sprintf(hostName, sslPort)`` (a
``%!(EXTRA …)`` string the SKR then splits on ``:``) — here ``<host>:<sslPort>``, what its SKR reads; the
original compares the requested ``redisVersion`` with ARM's full version (``6`` vs ``6.0.20``) and would
patch every turn — here a version that ARM's is already at (``6`` of ``6.0.20``) or none asked is no
change. Out-of-range sizes (untrusted SKR input) make a ``ValidationFailed`` Error and no call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.azure.redis_common_plan import (
    DNS_ZONE,
    REASON_FAILED_CREATING,
    Read,
    plan_create_cache,
    plan_private_access,
    targets,
)
from tasks.cloud.azure.redis_common_plan import call as _call
from tasks.cloud.azure.redis_common_plan import state as _state
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["DNS_ZONE", "READY_MESSAGE", "Read", "invalid", "plan_create", "plan_delete", "read_failed", "sku",
           "targets", "version_matches"]

Timing = Callable[[float], float]
READY_MESSAGE = "Redis Cluster is ready"
REASON_INVALID = "ValidationFailed"
#: Bounds of the KCP spec (Premium capacity P1-P5, Azure's 10 shards and 3 replicas per primary).
CAPACITY, SHARDS, REPLICAS = range(1, 6), range(0, 11), range(0, 4)
#: The Redis settings the original passes on (``RedisInstanceAzureConfigs``); others are dropped.
CONFIG_KEYS = ("maxclients", "maxfragmentationmemory-reserved", "maxmemory-delta", "maxmemory-policy",
               "maxmemory-reserved", "notify-keyspace-events")


def sku(capacity: int) -> dict[str, Any]:
    """The ARM SKU of a KCP ``sku.capacity``: always Premium/P (clustering is Premium only)."""
    return {"name": "Premium", "family": "P", "capacity": capacity}


def _int(value: Any) -> int | None:
    """An integer field of the spec (``None``: not an integer)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return None


def invalid(spec: Mapping[str, Any]) -> str:
    """Why ``spec.instance.azure`` cannot be provisioned (``""``: it can): capacity 1-5, ``shardCount``
    0-10, ``replicasPerPrimary`` 0-3, a short ``redisVersion``."""
    capacity = _int((spec.get("sku") or {}).get("capacity")) if isinstance(spec.get("sku"), Mapping) else None
    if capacity not in CAPACITY:
        return "sku.capacity must be an integer from 1 to 5"
    if _int(spec.get("shardCount") or 0) not in SHARDS:
        return "shardCount must be an integer from 0 to 10"
    if _int(spec.get("replicasPerPrimary") or 0) not in REPLICAS:
        return "replicasPerPrimary must be an integer from 0 to 3"
    if not isinstance(spec.get("redisVersion") or "", str) or len(str(spec.get("redisVersion") or "")) > 16:
        return "redisVersion must be a short string"
    if not isinstance(spec.get("redisConfiguration") or {}, Mapping):
        return "redisConfiguration must be an object"
    return ""


def version_matches(wanted: str, actual: str) -> bool:
    """Whether ARM's ``actual`` version (``6.0.20``) is the requested one (``6``, ``6.0``; ``""``: any)."""
    if not wanted:
        return True
    want, have = wanted.split("."), actual.split(".")
    return have[:len(want)] == want


def _props(resource: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (resource or {}).get("properties") or {}


def _ready(run: StepBuilder) -> bool:
    return any(c.get("type") == names.COND_READY and c.get("status") == "True" for c in run.conditions)


def _create_body(spec: Mapping[str, Any], location: str) -> dict[str, Any]:
    """The ``CreateParameters`` of the cache (``getCreateParams``)."""
    configuration = spec.get("redisConfiguration") or {}
    props: dict[str, Any] = {
        "sku": sku(int(spec["sku"]["capacity"])), "enableNonSslPort": False,
        "redisConfiguration": {k: str(configuration[k]) for k in CONFIG_KEYS if configuration.get(k)}}
    if spec.get("shardCount"):
        props["shardCount"] = int(spec["shardCount"])
    if spec.get("replicasPerPrimary"):
        props["replicasPerPrimary"] = int(spec["replicasPerPrimary"])
    if spec.get("redisVersion"):
        props["redisVersion"] = str(spec["redisVersion"])
    return {"location": location, "properties": props}


def _modification(spec: Mapping[str, Any], props: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first ``UpdateParameters`` the Ready cache needs (capacity, shard count, version), or ``None``."""
    capacity = int(spec["sku"]["capacity"])
    if int((props.get("sku") or {}).get("capacity") or 0) != capacity:
        return {"properties": {"sku": sku(capacity)}}
    shards = int(spec.get("shardCount") or 0)
    if int(props.get("shardCount") or 0) != shards:
        return {"properties": {"shardCount": shards}}
    version = str(spec.get("redisVersion") or "")
    if not version_matches(version, str(props.get("redisVersion") or "")):
        return {"properties": {"redisVersion": version}}
    return None


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One provisioning turn (see the module doc)."""
    run = StepBuilder(obj, now)
    spec = (run.spec.get("instance") or {}).get("azure") or {}
    n = targets(scope, run.name)
    why = invalid(spec) if isinstance(spec, Mapping) else "spec.instance.azure must be an object"
    if why:
        return run.fail(REASON_INVALID, f"Invalid Azure RedisCluster: {why}")
    redis = found.redis
    if redis is None:
        return plan_create_cache(run, n, _create_body(spec, n["location"]), t)
    if not run.current("id"):
        run.set(id=str(redis.get("name") or n["name"]))
    waiting = plan_private_access(run, n, redis, found, t, 60)
    if waiting is not None:
        return waiting
    props = _props(redis)
    change = _modification(spec, props) if _ready(run) else None
    if change is not None:
        return with_calls(run, t, run.step(requeue_after=t(1)), (_call(
            "update_redis", {"group": n["group"], "name": n["name"], "body": change}, names.COND_ERROR,
            "Failed to modify AzureRedis: "),))
    replicas = props.get("replicasPerPrimary")
    if replicas is None:
        replicas = props.get("replicasPerMaster")
    return run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY,
                         discoveryEndpoint=f"{props.get('hostName') or ''}:{int(props.get('sslPort') or 0)}",
                         authString=found.key or None,
                         nodeType=str(int((props.get("sku") or {}).get("capacity") or 0)),
                         shardCount=int(props.get("shardCount") or 0),
                         replicasPerShard=int(replicas or 0)).step()


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One deletion turn: the cache, then the DNS zone group, then the private endpoint, each deleted
    (back after 10 s; refused: an Error, back after 60 s) and waited for while ``Deleting`` (60 s)."""
    run = StepBuilder(obj, now)
    n = targets(scope, run.name)
    for resource, call in ((found.redis, _call("delete_redis", {"group": n["group"], "name": n["name"]},
                                               REASON_FAILED_CREATING, "Failed deleting AzureRedis: ", 60)),
                           (found.zone_group, _call("delete_dns_zone_group", {
                               "group": n["group"], "endpoint": n["name"], "name": n["name"]}, names.COND_ERROR,
                               "Failed deleting Azure PrivateDnsZoneGroup: ", 60)),
                           (found.endpoint, _call("delete_private_endpoint", {"group": n["group"], "name": n["name"]},
                                                  REASON_FAILED_CREATING, "Failed deleting AzureRedis: ", 60))):
        if resource is not None:
            if _state(resource) == "Deleting":
                return run.step(requeue_after=t(60))
            return with_calls(run, t, run.step(requeue_after=t(10)), (call,))
    return run.step(remove_finalizer=names.FINALIZER)


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, now: str | None = None) -> Outcome:
    """A refused read: transient (429: 60 s, no answer or 5xx: 10 s) -> back then, the status untouched;
    else ``FailedCreatingFileSystem`` (sic) ``Failed loading AzureRedis: <message>``, back after 60 s."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(failure.delay if failure.delay is not None else 10))
    return run.fail(REASON_FAILED_CREATING, f"Failed loading AzureRedis: {failure.message}", requeue_after=t(60),
                    exclusive=False)
