"""The GCP RedisInstance plan (``pkg/kcp/provider/gcp/redisinstance``): one turn's Memorystore calls
over what was read (pure).

The instance is ``projects/<project>/locations/<region>/instances/cm-<kcpName>``: connect mode
``PRIVATE_SERVICE_ACCESS`` on the shoot's VPC with the KCP IpRange's reserved range (its ``status.id``),
transit encryption ``SERVER_AUTHENTICATION``, tier / memory / replicas / version / configs /
maintenance window / auth from ``spec.instance.gcp``. In the original's order:

1. missing -> create (a refused create: Error ``CloudProviderError`` ``Failed to create RedisInstance``,
   60 s), the operation in ``opIdentifier``, back after 60 s;
2. ``UPDATING`` -> condition ``Updating``; not ``READY`` -> back after 60 s;
3. memory, replicas, configs, maintenance policy, auth that differ -> one ``UpdateInstance`` with their
   mask (``Failed to update RedisInstance``), removing Ready; then the version -> ``UpgradeInstance``
   (``Failed to upgrade RedisInstance``);
4. Ready: ``primaryEndpoint`` ``host:port``, ``readEndpoint`` (with read replicas), ``authString``,
   ``caCert`` (the first server CA), ``memorySizeGb``, ``replicaCount``, ``Redis instance is ready``.

Deletion: ``DeleteInstance`` (``Failed to delete RedisInstance``), wait until it is gone, the finalizer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall as Call  # MemorystoreClient.<method>(**kwargs); refused: Error, 60 s
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["Call", "Read", "instance_name", "plan_create", "plan_delete", "read_failed", "wanted_instance"]

Timing = Callable[[float], float]
COND_UPDATING = "Updating"
READY_MESSAGE = "Redis instance is ready"


def instance_name(scope: Mapping[str, Any], kcp_name: str) -> tuple[str, str]:
    """``(parent, full name)`` of the Memorystore instance of the KCP RedisInstance ``kcp_name``."""
    spec = scope.get("spec") or {}
    gcp = (spec.get("scope") or {}).get("gcp") or {}
    parent = f"projects/{gcp.get('project') or ''}/locations/{spec.get('region') or ''}"
    return parent, f"{parent}/instances/cm-{kcp_name}"


def _policy(kcp: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The KCP ``maintenancePolicy`` (``dayOfWeek{day, startTime}``) as Memorystore's (snake_case)."""
    day = (kcp or {}).get("dayOfWeek") or {}
    if not day.get("day"):
        return None
    start = day.get("startTime") or {}
    return {"weekly_maintenance_window": [{"day": str(day["day"]), "start_time": {
        "hours": int(start.get("hours") or 0), "minutes": int(start.get("minutes") or 0)}}]}


def wanted_instance(scope: Mapping[str, Any], iprange: Mapping[str, Any], gcp: Mapping[str, Any],
                    labels: Mapping[str, str]) -> dict[str, Any]:
    """The ``Instance`` to create (snake_case, as ``redis_v1.Instance(mapping=...)`` takes it)."""
    scope_gcp = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
    replicas = int(gcp.get("replicaCount") or 0)
    out: dict[str, Any] = {
        "tier": str(gcp.get("tier") or "BASIC"), "memory_size_gb": int(gcp.get("memorySizeGb") or 0),
        "redis_version": str(gcp.get("redisVersion") or "REDIS_7_0"), "auth_enabled": bool(gcp.get("authEnabled")),
        "redis_configs": {str(k): str(v) for k, v in (gcp.get("redisConfigs") or {}).items()},
        "replica_count": replicas,
        "authorized_network": f"projects/{scope_gcp.get('project') or ''}/global/networks/"
                              f"{scope_gcp.get('vpcNetwork') or ''}",
        "connect_mode": "PRIVATE_SERVICE_ACCESS",
        "reserved_ip_range": str((iprange.get("status") or {}).get("id") or ""),
        "transit_encryption_mode": "SERVER_AUTHENTICATION", "labels": dict(labels)}
    if replicas:
        out["read_replicas_mode"] = "READ_REPLICAS_ENABLED"
    policy = _policy(gcp.get("maintenancePolicy"))
    if policy:
        out["maintenance_policy"] = policy
    return out


def _current_policy(instance: Mapping[str, Any]) -> dict[str, Any] | None:
    windows = (instance.get("maintenancePolicy") or {}).get("weeklyMaintenanceWindow") or []
    if not windows:
        return None
    start = windows[0].get("startTime") or {}
    return {"weekly_maintenance_window": [{"day": str(windows[0].get("day")), "start_time": {
        "hours": int(start.get("hours") or 0), "minutes": int(start.get("minutes") or 0)}}]}


@dataclass(frozen=True)
class Read:
    """The instance (camelCase, enum names; ``None``: missing) and its AUTH string (``""``: none)."""

    instance: Mapping[str, Any] | None = None
    auth_string: str = ""


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any], found: Read,
                t: Timing, now: str | None = None, retry_wait: float = 5.0) -> Outcome:
    """One provisioning turn (see the module doc). A call's operation goes into ``opIdentifier``; a
    refused call is its Error (back after 60 s), a transient one comes back after ``retry_wait`` s."""
    run = StepBuilder(obj, now)

    def Plan(run: StepBuilder, t: Timing, step: Outcome, calls: tuple[Call, ...] = ()) -> Outcome:
        return with_calls(run, t, step, calls, operation=True, transient=retry_wait)

    gcp = (run.spec.get("instance") or {}).get("gcp") or {}
    parent, name = instance_name(scope, run.name)
    instance = found.instance
    if instance is None:
        labels = {"cloud-manager": "kcp", "scope-name": str((run.spec.get("scope") or {}).get("name") or ""),
                  "shoot-name": str((scope.get("spec") or {}).get("shootName") or "")}
        wanted = wanted_instance(scope, iprange, gcp, {k: v.lower()[:63] for k, v in labels.items() if v})
        return Plan(run, t, run.step(requeue_after=t(60)), (Call(
            "create", {"parent": parent, "instance_id": f"cm-{run.name}", "instance": wanted},
            "Failed to create RedisInstance"),))
    run.set(id=name)
    state = str(instance.get("state") or "")
    if state == "UPDATING" and cond.find(run.conditions, COND_UPDATING) is None:
        run.set(conditions=cond.set_condition(run.conditions, cond.condition(
            COND_UPDATING, True, COND_UPDATING, "ElastiCache is updating.", run.now)))  # sic, the original's
    elif state != "UPDATING" and cond.find(run.conditions, COND_UPDATING) is not None:
        run.without(COND_UPDATING)
    if state != "READY":
        return Plan(run, t, run.step(requeue_after=t(60)))
    run.set(opIdentifier=None)
    changes: dict[str, Any] = {}
    if int(instance.get("memorySizeGb") or 0) != int(gcp.get("memorySizeGb") or 0):
        changes["memory_size_gb"] = int(gcp.get("memorySizeGb") or 0)
    if int(instance.get("replicaCount") or 0) != int(gcp.get("replicaCount") or 0):
        changes["replica_count"] = int(gcp.get("replicaCount") or 0)
    configs = {str(k): str(v) for k, v in (gcp.get("redisConfigs") or {}).items()}
    if dict(instance.get("redisConfigs") or {}) != configs:
        changes["redis_configs"] = configs
    policy = _policy(gcp.get("maintenancePolicy"))
    if policy != _current_policy(instance):
        changes["maintenance_policy"] = policy or {}
    if bool(instance.get("authEnabled")) != bool(gcp.get("authEnabled")):
        changes["auth_enabled"] = bool(gcp.get("authEnabled"))
    if changes:
        run.without(names.COND_READY)
        return Plan(run, t, run.step(requeue_after=t(1)), (Call(
            "update", {"name": name, "changes": changes, "paths": sorted(changes)},
            "Failed to update RedisInstance"),))
    version = str(gcp.get("redisVersion") or "")
    if version and instance.get("redisVersion") != version:
        run.without(names.COND_READY)
        return Plan(run, t, run.step(requeue_after=t(1)), (Call(
            "upgrade", {"name": name, "redis_version": version}, "Failed to upgrade RedisInstance"),))
    read = ""
    if instance.get("readEndpoint"):
        read = f"{instance['readEndpoint']}:{int(instance.get('readEndpointPort') or 0)}"
    certs = instance.get("serverCaCerts") or []
    run.set(primaryEndpoint=f"{instance.get('host') or ''}:{int(instance.get('port') or 0)}", readEndpoint=read or None,
            authString=found.auth_string or None, caCert=str(certs[0].get("cert") or "") if certs else None,
            memorySizeGb=int(instance.get("memorySizeGb") or 0), replicaCount=int(instance.get("replicaCount") or 0))
    return Plan(run, t, run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE,
                                      names.STATE_READY).step())


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing,
                now: str | None = None, retry_wait: float = 5.0) -> Outcome:
    """One deletion turn: delete, wait until gone, then the finalizer."""
    run = StepBuilder(obj, now).without(names.COND_READY)

    def Plan(run: StepBuilder, t: Timing, step: Outcome, calls: tuple[Call, ...] = ()) -> Outcome:
        return with_calls(run, t, step, calls, operation=True, transient=retry_wait)

    _, name = instance_name(scope, run.name)
    instance = found.instance
    if instance is None:
        return Plan(run, t, run.step(remove_finalizer=names.FINALIZER))
    if instance.get("state") == "DELETING":
        return Plan(run, t, run.step(requeue_after=t(5)))
    return Plan(run, t, run.step(requeue_after=t(5)), (Call("delete", {"name": name},
                                                            "Failed to delete RedisInstance"),))


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, retry_wait: float = 5.0,
                now: str | None = None) -> Outcome:
    """A refused read: transient -> back after ``retry_wait`` s, the status untouched; else an Error
    ``CloudProviderError`` ``Failed to load RedisInstance``, back after ``retry_wait`` s."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(retry_wait))
    return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, "Failed to load RedisInstance", requeue_after=t(retry_wait))
