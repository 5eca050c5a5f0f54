"""The GCP RedisInstance flow: read → the pure plan of :mod:`tasks.cloud.gcp.redisinstance_plan` →
Memorystore calls (:class:`~tasks.cloud.gcp.redis_client.MemorystoreClient`) → Outcome. A 429 or 5xx
comes back after the GCP retry wait without a status change; another refused call is its Error."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.gcp.client import GcpApiError
from tasks.cloud.gcp.redis_client import MemorystoreClient
from tasks.cloud.gcp.redisinstance_plan import Plan, Read, instance_name, plan_create, plan_delete
from tasks.cloud.step import StepBuilder

__all__ = ["apply", "delete", "read", "reconcile"]


def _transient(exc: GcpApiError) -> bool:
    return exc.status in (0, 429) or exc.status >= 500


def read(client: MemorystoreClient, obj: Mapping[str, Any], scope: Mapping[str, Any]) -> Read:
    """The instance and, when AUTH is on, its AUTH string. Raises :class:`GcpApiError`."""
    _, name = instance_name(scope, str(obj["metadata"]["name"]))
    instance = client.get(name)
    auth = client.auth_string(name) if instance and instance.get("authEnabled") and \
        instance.get("state") == "READY" else ""
    return Read(instance, auth)


def apply(client: MemorystoreClient, plan: Plan, retry: float) -> Outcome:
    """Make the plan's calls; the Outcome (the last call's operation in ``opIdentifier``)."""
    operation = ""
    for call in plan.calls:
        try:
            operation = str(getattr(client, call.method)(**call.kwargs) or "")
        except GcpApiError as exc:
            if _transient(exc):
                return plan.run.step(requeue_after=retry)
            return plan.failed(call, exc.message)
    return plan.started(operation) if plan.calls else plan.step


def _turn(obj: Mapping[str, Any], scope: Mapping[str, Any], client: MemorystoreClient, retry: float,
          decide: Callable[[Read], Plan]) -> Outcome:
    try:
        return apply(client, decide(read(client, obj, scope)), retry)
    except GcpApiError as exc:
        if _transient(exc):
            return StepBuilder(obj).step(requeue_after=retry)
        return StepBuilder(obj).fail(names.REASON_CLOUD_PROVIDER_ERROR, "Failed to load RedisInstance",
                                     requeue_after=retry)


def reconcile(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any],
              client: MemorystoreClient, t: Callable[[float], float], retry: float) -> Outcome:
    """One provisioning turn of a KCP RedisInstance on GCP."""
    return _turn(obj, scope, client, retry, lambda found: plan_create(obj, scope, iprange, found, t))


def delete(obj: Mapping[str, Any], scope: Mapping[str, Any], client: MemorystoreClient,
           t: Callable[[float], float], retry: float) -> Outcome:
    """One deletion turn of a KCP RedisInstance on GCP."""
    return _turn(obj, scope, client, retry, lambda found: plan_delete(obj, scope, found, t))
