"""The AWS RedisCluster plan (``pkg/kcp/provider/aws/rediscluster``): one turn's ElastiCache, Secrets
Manager and EC2 writes over what was read (pure), for an ElastiCache replication group in cluster mode.

The pieces and their names are the RedisInstance's (:func:`~tasks.cloud.aws.redis_common_plan.resource_names`:
``cm-<kcpName>``, the temp parameter group ``cm-<kcpName>-temp``, the token ``cm-<kcpName>/authToken``),
and so is what one turn reads (:class:`~tasks.cloud.aws.redis_common_plan.Read`); steps 1, 3, 4 and the
deletion are :mod:`tasks.cloud.aws.redis_common_plan`'s, shared with the RedisInstance. :func:`plan_create`,
in the original's order (``new.go``; one turn makes the writes that do not depend on each other, then
comes back):

1. the subnet group from the IpRange's subnets; the parameter groups as the instance's (family from the
   engine version, the temp one while the family changes, obsolete or redundant ones deleted once
   unused), whose desired parameters are the family's defaults overlaid by ``parameters`` *and*
   ``cluster-enabled=yes`` (``GetDesiredParameters``: cluster mode needs it; a new main group gets
   ``parameters`` and ``cluster-enabled`` in the turn that creates it, where the original comes back
   for them); the auth token secret when
   ``authEnabled``; the transient user group when auth goes from on to off; the security group and its
   ingress (tcp 6379 from the shoot's pods and VPC CIDRs);
2. the replication group in cluster mode: ``shardCount`` node groups of ``replicasPerShard`` replicas,
   automatic failover on, encrypted in transit and at rest, the token; refused: an Error
   ``CloudProviderError`` ``Failed to create RedisCluster``, back after 60 s;
3. ``status.id``; ``modifying`` -> condition ``Updating`` (removed once it is not); ``create-failed`` ->
   Error ``Failed to provision RedisCluster`` (forget); not ``available`` or no members yet -> 60 s;
4. one ``ModifyReplicationGroup`` with what differs (node type, auto minor upgrade, maintenance window,
   auth), then the engine upgrade (``engineVersion`` only goes up: the CRD refuses a downgrade, and a
   downgrade that reaches the plan is an Error ``engineVersion cannot be downgraded to <v>.`` with no
   call; with the temp group when the family changes) and the switch back to the main group, each removing ``Ready``
   first; refused: ``Failed to update RedisCluster``;
5. the shard count (``ModifyReplicationGroupShardConfiguration``, online resharding; fewer shards remove
   the last node groups), then, on a later turn, the replicas per shard (``IncreaseReplicaCount`` /
   ``DecreaseReplicaCount``): one change at a time, only while the group is ``available`` (the change makes
   it ``modifying``: step 3 waits), back after 60 s (shards both above and below the count: the surplus
   replicas removed by name first, where the original asks a count AWS refuses); refused: ``Failed to
   scale RedisCluster shards`` / ``... replicas``, back after 300 s;
6. Ready: ``discoveryEndpoint`` (the configuration endpoint, ``host:port``), ``authString`` (the token),
   ``nodeType``, ``shardCount``, ``replicasPerShard`` (as provisioned), the single condition Ready
   ``Redis instance is ready`` (the original's words).

:func:`plan_delete`: the replication group (wait until gone), then the security group, user group,
token secret, both parameter groups and the subnet group; the finalizer once nothing is left. A
refused call is its Error (``CloudProviderError`` with the call's words), back after 60 s; a retryable
one comes back after 10 s. A refused read: :func:`~tasks.cloud.aws.redis_common_plan.read_failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws import redis_common_plan as common
from tasks.cloud.aws.redis_common_plan import Read, resource_names, resource_tags
from tasks.cloud.calls import KwCall as Call  # ElastiCacheCluster.<method>(**kwargs)
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["Call", "Read", "desired_parameters", "downgrade", "plan_create", "plan_delete", "replicas_to_change",
           "shards_to_remove", "surplus_replicas"]

Timing = Callable[[float], float]
KIND = "RedisCluster"
READY_MESSAGE = "Redis instance is ready"
SCALE_RETRY = 300.0


def desired_parameters(defaults: Mapping[str, str], user: Mapping[str, str] | None) -> dict[str, str]:
    """``GetDesiredParameters``: the family's defaults overlaid by the user's parameters, and
    ``cluster-enabled=yes`` (cluster mode needs it, whatever the user says)."""
    return {**defaults, **(user or {}), "cluster-enabled": "yes"}


FLAVOUR = common.Flavour(KIND, desired_parameters, "Failed to modify cache parameters", parameters_on_create=True)


def shards_to_remove(node_groups: Sequence[Mapping[str, Any]], desired: int) -> list[str]:
    """``GetShardsForRemoval``: the ids of the last node groups beyond ``desired`` (none when growing)."""
    extra = len(node_groups) - desired
    return [str(ng.get("NodeGroupId") or "") for ng in node_groups[len(node_groups) - extra:]] if extra > 0 else []


def replicas_to_change(node_groups: Sequence[Mapping[str, Any]], desired: int) -> str | None:
    """``IsReplicaCountUpToDate`` / ``GetReplicasForRemoval``: ``"decrease"`` when a shard has more than
    ``desired`` replicas, ``"increase"`` when one has fewer, ``None`` when every shard has ``desired`` (a
    node group without members counts as out of date, as the original's)."""
    counts = [len(ng.get("NodeGroupMembers") or []) - 1 for ng in node_groups]
    if any(c > desired for c in counts):
        return "decrease"
    if not node_groups or any(c != desired for c in counts):
        return "increase"
    return None


def _version_key(version: str) -> tuple[int, int]:
    """``(major, minor)`` of an engine version (``6.x``: any 6, the highest minor)."""
    parts = [*version.split("."), "0"][:2]
    try:
        return int(parts[0]), (99 if parts[1].lower() == "x" else int(parts[1]))
    except ValueError:
        return 0, 0


def downgrade(members: Sequence[Mapping[str, Any]], desired: str) -> bool:
    """Whether ``desired`` is older than a member's engine version (``engineVersion`` only goes up: the
    CRD's rule, kept here for objects that did not pass it)."""
    want = _version_key(desired)
    return any(_version_key(str(m.get("EngineVersion") or "")) > want for m in members
               if m.get("EngineVersion"))


def surplus_replicas(node_groups: Sequence[Mapping[str, Any]], desired: int) -> list[str]:
    """``GetReplicasForRemoval``: each shard's last members beyond a primary and ``desired`` replicas."""
    return [str(m.get("CacheClusterId") or "") for ng in node_groups
            for m in (ng.get("NodeGroupMembers") or [])[desired + 1:]]


def _endpoint(group: Mapping[str, Any]) -> str:
    found = group.get("ConfigurationEndpoint") or {}
    return f"{found.get('Address') or ''}:{int(found.get('Port') or 0)}"


def _replicas_per_shard(node_groups: Sequence[Mapping[str, Any]]) -> int:
    """``GetProvisionedReplicasPerShard``: the first shard's members but its primary."""
    return max(0, len((node_groups[0] if node_groups else {}).get("NodeGroupMembers") or []) - 1)


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any], found: Read,
                new_token: str, t: Timing, now: str | None = None) -> Outcome:
    """One provisioning turn (see the module doc). ``new_token``: the token to store when a secret is
    created (the shell draws it: the plan stays pure)."""
    run = StepBuilder(obj, now)
    n = resource_names(run.name)
    spec = (run.spec.get("instance") or {}).get("aws") or {}
    version = str(spec.get("engineVersion") or "7.0")
    auth = bool(spec.get("authEnabled"))
    shards, replicas = int(spec.get("shardCount") or 1), int(spec.get("replicasPerShard") or 0)
    group, members = found.group, list(found.members)

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    if group is not None and downgrade(members, version):  # an answer, not a refused call every minute
        return run.fail(names.REASON_ERROR, f"engineVersion cannot be downgraded to {version}.")
    pieces = common.plan_pieces(obj, scope, iprange, found, new_token, FLAVOUR)  # 1
    if not pieces.done:
        return plan(run.step(requeue_after=t(1)), *pieces.calls)
    if group is None:  # 2
        if auth and found.token is None:
            return plan(run.step(requeue_after=t(1)))
        return plan(run.step(requeue_after=t(1)), Call("create_cluster_group", {
            "name": n["group"], "subnet_group": n["subnet_group"], "parameter_group": n["parameter_group"],
            "node_type": str(spec.get("cacheNodeType") or ""), "engine_version": version,
            "auto_minor": bool(spec.get("autoMinorVersionUpgrade")), "auth_token": found.token if auth else None,
            "maintenance_window": spec.get("preferredMaintenanceWindow") or None,
            "security_groups": [str((pieces.security_group or {}).get("GroupId"))], "shards": shards,
            "replicas": replicas, "tags": resource_tags(obj, scope)}, f"Failed to create {KIND}"))
    waiting = common.plan_status(run, group, members, t, KIND)  # 3
    if waiting is not None:
        return waiting
    ended, pre = common.plan_update(run, found, pieces, t, KIND)  # 4
    if ended is not None:
        return ended

    node_groups = list(group.get("NodeGroups") or [])  # 5
    if len(node_groups) != shards:
        return plan(run.step(requeue_after=t(60)), *pre, Call(
            "modify_shard_configuration", {"name": n["group"], "shards": shards,
                                           "remove": shards_to_remove(node_groups, shards)},
            f"Failed to scale {KIND} shards", retry=SCALE_RETRY))
    change = replicas_to_change(node_groups, replicas)
    if change is not None:
        options: dict[str, Any] = {"name": n["group"], "replicas": replicas}
        short = [ng for ng in node_groups if len(ng.get("NodeGroupMembers") or []) - 1 < replicas]
        if change == "decrease" and short:  # shards on both sides: the surplus by name, the rest next turn
            options = {"name": n["group"], "remove": surplus_replicas(node_groups, replicas)}
        return plan(run.step(requeue_after=t(60)), *pre, Call(
            f"{change}_replica_count", options, f"Failed to scale {KIND} replicas", retry=SCALE_RETRY))
    if pre:
        return plan(run.step(requeue_after=t(1)), *pre)
    run.set(discoveryEndpoint=_endpoint(group), authString=found.token or "",  # 6
            nodeType=str(members[0].get("CacheNodeType") or ""), shardCount=len(node_groups),
            replicasPerShard=_replicas_per_shard(node_groups))
    return plan(run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY).step())


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One deletion turn (see the module doc): an Outcome with ``remove_finalizer`` once nothing is left."""
    return common.plan_delete(obj, found, t, KIND, now)
