"""The GCP GcpRedisCluster plan (``pkg/kcp/provider/gcp/rediscluster``): one turn's Memorystore for Redis
Cluster calls over what was read (pure).

The cluster is ``projects/<project>/locations/<region>/clusters/cm-<kcpName>``, made as the original's
``CreateRedisClusterWithOptions``: PSC on the Scope's VPC (``pscConfigs[0].network``
``projects/<project>/global/networks/<vpc>``; the GcpSubnet's service connection policy lets it in),
``nodeType``, ``shardCount``, ``replicaCount`` (``spec.replicasPerShard``), ``redisConfigs``,
persistence off, authorization ``AUTH_MODE_DISABLED``, transit encryption ``SERVER_AUTHENTICATION``,
zones ``MULTI_ZONE``, no deletion protection. In the original's order:

1. missing -> create (refused: Error ``CloudProviderError`` ``Failed to create GcpRedisCluster``, state
   Error, back after 60 s), back after 1 s;
2. ``status.id`` the cluster's name; ``UPDATING`` -> condition ``Updating`` (``ElastiCache is updating.``,
   sic, the original's words), gone once it is not; not ``ACTIVE`` -> back after 60 s;
3. the node type, shard count, replica count, configs that differ -> one ``UpdateCluster`` of the first
   of them only (Google takes one field per update), the Ready condition removed (refused: Error
   ``CloudProviderError`` ``Failed to update GcpRedisCluster``, 60 s), back after 30 s;
4. Ready: ``discoveryEndpoint`` ``address:port`` of the first discovery endpoint, ``caCert`` (the
   certificate authority's first CA's certificates, concatenated), ``nodeType``, ``shardCount``,
   ``replicasPerShard`` as provisioned, the only condition Ready ``Redis instance is ready``.

Deletion: the Ready condition removed (state ``Deleting``), ``DeleteCluster`` (refused: Error ``Failed to
delete GcpRedisCluster``, 60 s) and back after 10 s, ``DELETING`` -> back after 60 s, gone -> the finalizer.

Deliberate differences: ``status.id`` is written with the turn's other status fields (the original
writes it alone and comes back); a refused update also sets the state Error (the original sets only the
condition); the certificate authority is read only once the cluster is ``ACTIVE``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall as Call  # RedisClusterClient.<method>(**kwargs); refused: Error, 60 s
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["COND_UPDATING", "READY_MESSAGE", "TIER_NODE_TYPES", "Call", "Read", "cluster_name", "node_type",
           "plan_create", "plan_delete", "read_failed", "wanted_cluster"]

Timing = Callable[[float], float]
COND_UPDATING = "Updating"
READY_MESSAGE = "Redis instance is ready"
#: SKR ``GcpRedisCluster`` tier -> the KCP ``spec.nodeType`` (``pkg/skr/gcprediscluster/util.go``).
TIER_NODE_TYPES = {"C1": "REDIS_SHARED_CORE_NANO", "C3": "REDIS_STANDARD_SMALL", "C4": "REDIS_HIGHMEM_MEDIUM",
                   "C6": "REDIS_HIGHMEM_XLARGE"}
#: Spec field -> (the cluster's field as read, the update mask path), in the original's order.
_FIELDS = (("nodeType", "nodeType", "node_type"), ("shardCount", "shardCount", "shard_count"),
           ("replicasPerShard", "replicaCount", "replica_count"))


def node_type(tier: str) -> str | None:
    """The node type of the SKR tier ``tier`` (``C1``, ``C3``, ``C4``, ``C6``); ``None`` for another."""
    return TIER_NODE_TYPES.get(tier)


def cluster_name(scope: Mapping[str, Any], kcp_name: str) -> tuple[str, str, str]:
    """``(parent, cluster id, full name)`` of the cluster of the KCP GcpRedisCluster ``kcp_name``."""
    spec = scope.get("spec") or {}
    gcp = (spec.get("scope") or {}).get("gcp") or {}
    parent = f"projects/{gcp.get('project') or ''}/locations/{spec.get('region') or ''}"
    return parent, f"cm-{kcp_name}", f"{parent}/clusters/cm-{kcp_name}"


def _configs(spec: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (spec.get("redisConfigs") or {}).items()}


def wanted_cluster(scope: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Cluster`` to create (snake_case, enum names: ``redis_cluster_v1.Cluster(mapping=...)``)."""
    gcp = ((scope.get("spec") or {}).get("scope") or {}).get("gcp") or {}
    return {
        "replica_count": int(spec.get("replicasPerShard") or 0), "shard_count": int(spec.get("shardCount") or 0),
        "node_type": str(spec.get("nodeType") or ""),
        "psc_configs": [{"network": f"projects/{gcp.get('project') or ''}/global/networks/"
                                    f"{gcp.get('vpcNetwork') or ''}"}],
        "redis_configs": _configs(spec), "persistence_config": {"mode": "DISABLED"},
        "authorization_mode": "AUTH_MODE_DISABLED",
        "transit_encryption_mode": "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION",
        "zone_distribution_config": {"mode": "MULTI_ZONE"}, "deletion_protection_enabled": False}


@dataclass(frozen=True)
class Read:
    """The cluster (camelCase, enum names; ``None``: missing) and, once ``ACTIVE``, its CA certificate
    (``""``: none)."""

    cluster: Mapping[str, Any] | None = None
    ca_cert: str = ""


def _changes(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``[(mask path, value)]`` of what differs, in the original's order (a field the cluster does not
    report is taken as wanted, as the original's ``ptr.Deref``)."""
    out: list[tuple[str, Any]] = []
    for field, current, path in _FIELDS:
        want = str(spec.get(field) or "") if field == "nodeType" else int(spec.get(field) or 0)
        have = cluster.get(current)
        if have is not None and (str(have) if field == "nodeType" else int(have)) != want:
            out.append((path, want))
    if dict(cluster.get("redisConfigs") or {}) != _configs(spec):
        out.append(("redis_configs", _configs(spec)))
    return out


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing, now: str | None = None,
                retry_wait: float = 5.0) -> Outcome:
    """One provisioning turn (see the module doc). A refused call is its Error (back after 60 s), a
    transient one comes back after ``retry_wait`` s."""
    run = StepBuilder(obj, now)

    def Plan(step: Outcome, calls: tuple[Call, ...] = ()) -> Outcome:
        return with_calls(run, t, step, calls, transient=retry_wait)

    parent, cluster_id, name = cluster_name(scope, run.name)
    cluster = found.cluster
    if cluster is None:
        return Plan(run.step(requeue_after=t(1)), (Call(
            "create", {"parent": parent, "cluster_id": cluster_id, "cluster": wanted_cluster(scope, run.spec)},
            "Failed to create GcpRedisCluster"),))
    if not run.current("id"):
        run.set(id=str(cluster.get("name") or name))
    state = str(cluster.get("state") or "")
    updating = cond.find(run.conditions, COND_UPDATING) is not None
    if state == "UPDATING" and not updating:
        run.set(conditions=cond.set_condition(run.conditions, cond.condition(
            COND_UPDATING, True, COND_UPDATING, "ElastiCache is updating.", run.now)))  # sic, the original's
    elif state != "UPDATING" and updating:
        run.without(COND_UPDATING)
    if state != "ACTIVE":
        return run.step(requeue_after=t(60))
    changes = _changes(run.spec, cluster)
    if changes:
        path, value = changes[0]  # one field per update
        run.without(names.COND_READY)
        return Plan(run.step(requeue_after=t(30)), (Call(
            "update", {"name": name, "changes": {path: value}, "paths": [path]}, "Failed to update GcpRedisCluster"),))
    endpoints = cluster.get("discoveryEndpoints") or []
    if endpoints:
        run.set(discoveryEndpoint=f"{endpoints[0].get('address') or ''}:{int(endpoints[0].get('port') or 0)}")
    run.set(caCert=found.ca_cert or None, nodeType=str(cluster.get("nodeType") or "") or None,
            shardCount=int(cluster.get("shardCount") or 0) or None,
            replicasPerShard=int(cluster.get("replicaCount") or 0) or None)
    return run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY).step()


def plan_delete(obj: Mapping[str, Any], scope: Mapping[str, Any], found: Read, t: Timing, now: str | None = None,
                retry_wait: float = 5.0) -> Outcome:
    """One deletion turn: the Ready condition off, delete, wait until gone, then the finalizer."""
    run = StepBuilder(obj, now)
    if cond.find(run.conditions, names.COND_READY) is not None:
        return run.without(names.COND_READY).set(state=names.STATE_DELETING).step(requeue_after=t(1))
    cluster = found.cluster
    if cluster is None:
        return run.step(remove_finalizer=names.FINALIZER)
    if cluster.get("state") == "DELETING":
        return run.step(requeue_after=t(60))
    _, _, name = cluster_name(scope, run.name)
    return with_calls(run, t, run.step(requeue_after=t(10)), (Call(
        "delete", {"name": name}, "Failed to delete GcpRedisCluster"),), transient=retry_wait)


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, retry_wait: float = 5.0,
                now: str | None = None) -> Outcome:
    """A refused read: transient -> back after ``retry_wait`` s, the status untouched; else Error
    ``CloudProviderError`` ``Failed to load GcpRedisCluster``, back after 60 s."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(retry_wait))
    return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, "Failed to load GcpRedisCluster", requeue_after=t(60))
