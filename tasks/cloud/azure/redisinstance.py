"""The Azure RedisInstance flow: read → the pure plan of :mod:`tasks.cloud.azure.redisinstance_plan` →
ARM calls (:class:`~tasks.cloud.azure.redis_client.AzureRedisClient`) → Outcome. A 429 comes back after
60 s and a 5xx after 10 s, both without a status change; another refused call is its step's Error."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.azure.client import AzureApiError
from tasks.cloud.azure.redis_client import AzureRedisClient
from tasks.cloud.azure.redisinstance_plan import Plan, Read, plan_create, plan_delete, targets
from tasks.cloud.step import StepBuilder

__all__ = ["apply", "delete", "read", "reconcile"]


def _wait(exc: AzureApiError, t: Callable[[float], float]) -> float | None:
    """How long to wait after a transient error (``None``: it is not one)."""
    if exc.too_many_requests:
        return t(60)
    if exc.status == 0 or exc.status >= 500:
        return t(10)
    return None


def read(client: AzureRedisClient, obj: Mapping[str, Any], scope: Mapping[str, Any]) -> Read:
    """The cache, the private endpoint, its DNS zone group and (once provisioned) the primary key."""
    n = targets(scope, str(obj["metadata"]["name"]))
    redis = client.get_redis(n["group"], n["name"])
    endpoint = client.get_private_endpoint(n["group"], n["name"])
    zone_group = client.get_dns_zone_group(n["group"], n["name"], n["name"]) if endpoint is not None else None
    ready = ((redis or {}).get("properties") or {}).get("provisioningState") == "Succeeded"
    return Read(redis, endpoint, zone_group, client.primary_key(n["group"], n["name"]) if ready else "")


def apply(client: AzureRedisClient, plan: Plan) -> Outcome:
    for call in plan.calls:
        try:
            getattr(client, call.method)(**call.kwargs)
        except AzureApiError as exc:
            wait = _wait(exc, plan.t)
            if wait is not None:
                return plan.run.step(requeue_after=wait)
            return plan.failed(call, exc.message)
    return plan.step


def _turn(obj: Mapping[str, Any], scope: Mapping[str, Any], client: AzureRedisClient, t: Callable[[float], float],
          decide: Callable[[Read], Plan]) -> Outcome:
    try:
        return apply(client, decide(read(client, obj, scope)))
    except AzureApiError as exc:
        wait = _wait(exc, t)
        if wait is not None:
            return StepBuilder(obj).step(requeue_after=wait)
        return StepBuilder(obj).fail(names.COND_ERROR, f"Failed loading AzureRedis: {exc.message}",
                                     requeue_after=t(10))


def reconcile(obj: Mapping[str, Any], scope: Mapping[str, Any], client: AzureRedisClient,
              t: Callable[[float], float]) -> Outcome:
    """One provisioning turn of a KCP RedisInstance on Azure."""
    return _turn(obj, scope, client, t, lambda found: plan_create(obj, scope, found, t))


def delete(obj: Mapping[str, Any], scope: Mapping[str, Any], client: AzureRedisClient,
           t: Callable[[float], float]) -> Outcome:
    """One deletion turn of a KCP RedisInstance on Azure."""
    return _turn(obj, scope, client, t, lambda found: plan_delete(obj, scope, found, t))

