"""The Azure RedisInstance plan (``pkg/kcp/provider/azure/redisinstance``): one turn's ARM calls over
what was read (pure).

The cache is ``<kcpName>`` in the Cloud Manager resource group ``<vpcNetwork>--cm`` (region = the
Scope's, non-SSL port disabled, SKU ``Premium``/``P`` or, for the S tiers, ``Basic``/``C``, optional
version and shard count, the ``redisConfiguration``); a private endpoint ``<kcpName>`` into the subnet
``<vpcNetwork>--cm`` of the VNet ``<vpcNetwork>--cm`` (group ``redisCache``) and its DNS zone group
``<kcpName>`` on the zone ``privatelink.redis.cache.windows.net``. In the original's order: create the
cache (refused: ``FailedCreatingFileSystem`` (sic) ``Failed creating AzureRedis: <error>``, 10 s), wait
for ``Succeeded`` (60 s), the private endpoint (``Failed creating Azure PrivateEndpoint: <error>``) and
its wait, the DNS zone group (``Failed creating Azure PrivateDnsZone: <error>``), a SKU capacity change
(``Failed to modify AzureRedis: <error>``), Ready with ``primaryEndpoint`` ``<host>:<sslPort>`` and the
primary access key as ``authString``. Deletion: the cache, then the DNS zone group, then the private
endpoint (each waited for), then the finalizer. A 429 comes back after 60 s without a status change
(the shell's business).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.azure.redis_common_plan import DNS_ZONE, Read, plan_create_cache, plan_private_access, targets
from tasks.cloud.azure.redis_common_plan import call as _call
from tasks.cloud.azure.redis_common_plan import state as _state
from tasks.cloud.calls import KwCall as Call
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["DNS_ZONE", "Call", "Read", "plan_create", "plan_delete", "read_failed", "sku", "targets"]

Timing = Callable[[float], float]
READY_MESSAGE = "Redis instance is ready"


def sku(family: str, capacity: int) -> dict[str, Any]:
    """The ARM SKU of the KCP ``sku`` (``P`` -> Premium/P, ``S`` -> Basic/C)."""
    return {"name": "Premium", "family": "P", "capacity": capacity} if family == "P" else \
        {"name": "Basic", "family": "C", "capacity": capacity}


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One provisioning turn (see the module doc)."""
    run = StepBuilder(obj, now)
    spec = (run.spec.get("instance") or {}).get("azure") or {}
    n = targets(scope, run.name)
    wanted_sku = sku(str((spec.get("sku") or {}).get("family") or "P"), int((spec.get("sku") or {}).get("capacity")
                                                                              or 1))
    redis = found.redis
    if redis is None:
        props: dict[str, Any] = {"sku": wanted_sku, "enableNonSslPort": False,
                                 "redisConfiguration": {str(k): str(v) for k, v in
                                                        (spec.get("redisConfiguration") or {}).items() if v}}
        if spec.get("shardCount"):
            props["shardCount"] = int(spec["shardCount"])
        if spec.get("redisVersion"):
            props["redisVersion"] = str(spec["redisVersion"])
        return plan_create_cache(run, n, {"location": n["location"], "properties": props}, t)
    run.set(id=str(redis.get("id") or n["redis_id"]))
    waiting = plan_private_access(run, n, redis, found, t, 1)
    if waiting is not None:
        return waiting
    current = (redis.get("properties") or {}).get("sku") or {}
    if int(current.get("capacity") or 0) != wanted_sku["capacity"]:
        run.without(names.COND_READY)
        return with_calls(run, t, run.step(requeue_after=t(1)), (_call(
            "update_redis", {"group": n["group"], "name": n["name"], "body": {"properties": {"sku": wanted_sku}}},
            names.COND_ERROR, "Failed to modify AzureRedis: "),))
    props = redis.get("properties") or {}
    run.set(primaryEndpoint=f"{props.get('hostName') or ''}:{int(props.get('sslPort') or 0)}",
            authString=found.key or None)
    return with_calls(run, t, run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE,
                                      names.STATE_READY).step())


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None) -> Outcome:
    """One deletion turn: the cache, then the DNS zone group, then the private endpoint, each waited for."""
    run = StepBuilder(obj, now).without(names.COND_READY)
    n = targets(scope, run.name)
    for resource, call in ((found.redis, _call("delete_redis", {"group": n["group"], "name": n["name"]},
                                               names.COND_ERROR, "Failed deleting AzureRedis: ")),
                           (found.zone_group, _call("delete_dns_zone_group", {
                               "group": n["group"], "endpoint": n["name"], "name": n["name"]}, names.COND_ERROR,
                               "Failed deleting Azure PrivateDnsZoneGroup: ")),
                           (found.endpoint, _call("delete_private_endpoint", {"group": n["group"], "name": n["name"]},
                                                  names.COND_ERROR, "Failed deleting Azure PrivateEndpoint: "))):
        if resource is not None:
            if _state(resource) == "Deleting":
                return with_calls(run, t, run.step(requeue_after=t(1)))
            return with_calls(run, t, run.step(requeue_after=t(1)), (call,))
    return with_calls(run, t, run.step(remove_finalizer=names.FINALIZER))


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, now: str | None = None) -> Outcome:
    """A refused read: transient (429: 60 s, no answer or 5xx: 10 s) -> back then, the status untouched;
    else an Error ``Failed loading AzureRedis: <message>``, back after 10 s."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(failure.delay if failure.delay is not None else 10))
    return run.fail(names.COND_ERROR, f"Failed loading AzureRedis: {failure.message}", requeue_after=t(10))
