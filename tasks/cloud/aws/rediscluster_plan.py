"""The AWS RedisCluster plan (``pkg/kcp/provider/aws/rediscluster``): one turn's ElastiCache, Secrets
Manager and EC2 writes over what was read (pure), for an ElastiCache replication group in cluster mode.

The pieces and their names are the RedisInstance's (:func:`~tasks.cloud.aws.redisinstance_plan.resource_names`:
``cm-<kcpName>``, the temp parameter group ``cm-<kcpName>-temp``, the token ``cm-<kcpName>/authToken``),
and so is what one turn reads (:class:`~tasks.cloud.aws.redisinstance_plan.Read`). :func:`plan_create`,
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
one comes back after 10 s. A refused read: :func:`~tasks.cloud.aws.redisinstance_plan.read_failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kube.toolkit.conditions as cond
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws.redisinstance_plan import (
    COND_UPDATING,
    PORT,
    Read,
    family,
    ingress_missing,
    mismatched,
    resource_names,
    resource_tags,
    uses_group,
    version_up_to_date,
)
from tasks.cloud.calls import KwCall as Call  # ElastiCacheCluster.<method>(**kwargs)
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = ["Call", "Read", "desired_parameters", "downgrade", "plan_create", "plan_delete", "replicas_to_change",
           "shards_to_remove", "surplus_replicas"]

Timing = Callable[[float], float]
READY_MESSAGE = "Redis instance is ready"
SCALE_RETRY = 300.0


def desired_parameters(defaults: Mapping[str, str], user: Mapping[str, str] | None) -> dict[str, str]:
    """``GetDesiredParameters``: the family's defaults overlaid by the user's parameters, and
    ``cluster-enabled=yes`` (cluster mode needs it, whatever the user says)."""
    return {**defaults, **(user or {}), "cluster-enabled": "yes"}


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
    want_family = family(version)
    user_params = {str(k): str(v) for k, v in (spec.get("parameters") or {}).items()}
    auth = bool(spec.get("authEnabled"))
    shards, replicas = int(spec.get("shardCount") or 1), int(spec.get("replicasPerShard") or 0)
    tags = resource_tags(obj, scope)
    group, main, temp, members = found.group, found.main, found.temp, list(found.members)

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    def up_to_date(pg: Mapping[str, Any] | None) -> bool:
        return pg is not None and not mismatched(pg.get("params") or {},
                                                 desired_parameters(pg.get("defaults") or {}, user_params))

    def modify_pg(key: str, pg: Mapping[str, Any]) -> Call:
        return Call("modify_parameter_group", {"name": n[key], "parameters": mismatched(
            pg.get("params") or {}, desired_parameters(pg.get("defaults") or {}, user_params))},
            "Failed to modify cache parameters")

    if group is not None and downgrade(members, version):  # an answer, not a refused call every minute
        return run.fail(names.REASON_ERROR, f"engineVersion cannot be downgraded to {version}.")
    calls: list[Call] = []
    if found.subnet_group is None:
        subnets = [str(s.get("id")) for s in (iprange.get("status") or {}).get("subnets") or [] if s.get("id")]
        calls.append(Call("create_subnet_group", {"name": n["subnet_group"], "subnet_ids": subnets, "tags": tags},
                          "Failed to create subnet group"))
    version_ok = group is None or version_up_to_date(members, version)
    main_family_ok = main is not None and main.get("family") == want_family
    main_ok, temp_ok = up_to_date(main), up_to_date(temp)
    deleting_main = False
    if group is not None and main is not None and temp is not None and not main_family_ok and temp_ok \
            and version_ok and not uses_group(members, n["parameter_group"]):
        calls.append(Call("delete_parameter_group", {"name": n["parameter_group"]},
                          "Failed to delete parameter group"))
        main, deleting_main = None, True
    if group is not None and main is not None and temp is not None and main_family_ok \
            and not uses_group(members, n["temp_parameter_group"]):
        calls.append(Call("delete_parameter_group", {"name": n["temp_parameter_group"]},
                          "Failed to delete parameter group"))
        temp = None
    if main is None and version_ok and not deleting_main:  # with its parameters at once (a turn saved)
        calls.append(Call("create_parameter_group", {"name": n["parameter_group"], "family": want_family,
                                                     "tags": tags}, "Failed to create parameter group"))
        calls.append(Call("modify_parameter_group", {"name": n["parameter_group"], "parameters": desired_parameters(
            {}, user_params)}, "Failed to modify cache parameters"))
    if group is not None and main is not None and temp is None and not main_family_ok:
        calls.append(Call("create_parameter_group", {"name": n["temp_parameter_group"], "family": want_family,
                                                     "tags": tags}, "Failed to create parameter group"))
    if main is not None and not main_ok:
        calls.append(modify_pg("parameter_group", main))
    if group is not None and main is not None and temp is not None and not temp_ok:
        calls.append(modify_pg("temp_parameter_group", temp))
    if auth and found.token is None:
        calls.append(Call("create_auth_token", {"name": n["secret"], "token": new_token, "tags": tags},
                          "Failed to create authToken secret"))
    current_auth = bool((group or {}).get("AuthTokenEnabled"))
    if group is not None and found.user_group is None and current_auth and not auth:
        calls.append(Call("create_user_group", {"name": n["user_group"], "tags": tags}, "Failed to create user group"))
    security_group = found.security_group
    if security_group is None:
        vpc_id = str((iprange.get("status") or {}).get("vpcId") or "")
        calls.append(Call("create_security_group", {"vpc_id": vpc_id, "name": n["security_group"],
                                                    "tags": {"Name": n["security_group"], **tags}},
                          "Failed to create security group"))
    if calls:
        return plan(run.step(requeue_after=t(1)), *calls)
    if security_group is None or main is None:
        return plan(run.step(requeue_after=t(1)))
    missing = ingress_missing(scope, security_group)
    if missing:
        return plan(run.step(requeue_after=t(1)), Call(
            "authorize_ingress", {"group_id": str(security_group.get("GroupId")), "cidrs": missing, "port": PORT},
            "Failed to authorize security group ingress"))
    if group is None:  # 2
        if auth and found.token is None:
            return plan(run.step(requeue_after=t(1)))
        return plan(run.step(requeue_after=t(1)), Call("create_cluster_group", {
            "name": n["group"], "subnet_group": n["subnet_group"], "parameter_group": n["parameter_group"],
            "node_type": str(spec.get("cacheNodeType") or ""), "engine_version": version,
            "auto_minor": bool(spec.get("autoMinorVersionUpgrade")), "auth_token": found.token if auth else None,
            "maintenance_window": spec.get("preferredMaintenanceWindow") or None,
            "security_groups": [str(security_group.get("GroupId"))], "shards": shards, "replicas": replicas,
            "tags": tags}, "Failed to create RedisCluster"))

    run.set(id=n["group"])  # 3
    status = str(group.get("Status") or "")
    if status == "modifying" and cond.find(run.conditions, COND_UPDATING) is None:
        run.set(conditions=cond.set_condition(run.conditions, cond.condition(
            COND_UPDATING, True, COND_UPDATING, "ElastiCache is updating.", run.now)))
    elif status != "modifying" and cond.find(run.conditions, COND_UPDATING) is not None:
        run.without(COND_UPDATING)
    if status == "create-failed":
        run.set(conditions=cond.set_exclusive(run.conditions, cond.condition(
            names.COND_ERROR, True, names.REASON_CLOUD_PROVIDER_ERROR, "Failed to provision RedisCluster",
            run.now)), state=names.STATE_ERROR)
        return plan(run.step())
    if status != "available" or not members:
        return plan(run.step(requeue_after=t(60)))

    modify: dict[str, Any] = {}  # 4
    if spec.get("cacheNodeType") and group.get("CacheNodeType") != spec.get("cacheNodeType"):
        modify["node_type"] = str(spec["cacheNodeType"])
    member = members[0]
    if bool(member.get("AutoMinorVersionUpgrade")) != bool(spec.get("autoMinorVersionUpgrade")):
        modify["auto_minor"] = bool(spec.get("autoMinorVersionUpgrade"))
    window = str(spec.get("preferredMaintenanceWindow") or "")
    if window and window != member.get("PreferredMaintenanceWindow"):
        modify["maintenance_window"] = window
    attached = list(group.get("UserGroupIds") or [])
    delete_token = False
    if current_auth != auth or attached:
        if auth and found.token is None:
            return plan(run.step(requeue_after=t(1)))
        if auth:
            if current_auth != auth:
                modify["auth_token"] = found.token
            elif attached:
                modify["user_groups_remove"] = attached
        else:
            delete_token = found.token is not None
            if not attached:
                if found.user_group is None or found.user_group.get("Status") != "active":
                    return plan(run.step(requeue_after=t(1)))
                modify["user_groups_add"] = [n["user_group"]]
            else:
                modify["user_groups_remove"] = attached
    pre: list[Call] = []
    if delete_token:
        pre.append(Call("delete_auth_token", {"name": n["secret"]}, "Failed to delete authToken secret"))
    if modify:
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], **modify}, "Failed to update RedisCluster"))
    if found.user_group is not None and n["user_group"] not in attached:
        pre.append(Call("delete_user_group", {"name": n["user_group"]}, "Failed to delete user group"))
    if not version_up_to_date(members, version) and ((temp is not None and temp_ok) or main_family_ok):
        upgrade_group = n["temp_parameter_group"] if not main_family_ok and temp is not None else n["parameter_group"]
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], "engine_version": version,
                                         "parameter_group": upgrade_group}, "Failed to update RedisCluster"))
    if temp is not None and main_ok and main_family_ok and version_up_to_date(members, version) \
            and not uses_group(members, n["parameter_group"]):
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], "parameter_group": n["parameter_group"]},
            "Failed to update RedisCluster"))

    node_groups = list(group.get("NodeGroups") or [])  # 5
    if len(node_groups) != shards:
        return plan(run.step(requeue_after=t(60)), *pre, Call(
            "modify_shard_configuration", {"name": n["group"], "shards": shards,
                                           "remove": shards_to_remove(node_groups, shards)},
            "Failed to scale RedisCluster shards", retry=SCALE_RETRY))
    change = replicas_to_change(node_groups, replicas)
    if change is not None:
        options: dict[str, Any] = {"name": n["group"], "replicas": replicas}
        short = [ng for ng in node_groups if len(ng.get("NodeGroupMembers") or []) - 1 < replicas]
        if change == "decrease" and short:  # shards on both sides: the surplus by name, the rest next turn
            options = {"name": n["group"], "remove": surplus_replicas(node_groups, replicas)}
        return plan(run.step(requeue_after=t(60)), *pre, Call(
            f"{change}_replica_count", options, "Failed to scale RedisCluster replicas", retry=SCALE_RETRY))
    if pre:
        return plan(run.step(requeue_after=t(1)), *pre)
    run.set(discoveryEndpoint=_endpoint(group), authString=found.token or "",  # 6
            nodeType=str(member.get("CacheNodeType") or ""), shardCount=len(node_groups),
            replicasPerShard=_replicas_per_shard(node_groups))
    return plan(run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY).step())


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One deletion turn (see the module doc): an Outcome with ``remove_finalizer`` once nothing is left."""
    run = StepBuilder(obj, now).without(names.COND_READY)
    n = resource_names(run.name)

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    group = found.group
    if group is not None:
        if group.get("Status") == "deleting":
            return plan(run.step(requeue_after=t(60)))
        return plan(run.step(requeue_after=t(60)),
                    Call("delete_replication_group", {"name": n["group"]}, "Failed to delete RedisCluster"))
    calls: list[Call] = []
    if found.security_group is not None:
        calls.append(Call("delete_security_group", {"group_id": str(found.security_group.get("GroupId"))},
                          "Failed to delete security group"))
    if found.user_group is not None and found.user_group.get("Status") != "deleting":
        calls.append(Call("delete_user_group", {"name": n["user_group"]}, "Failed to delete user group"))
    if found.token is not None:
        calls.append(Call("delete_auth_token", {"name": n["secret"]}, "Failed to delete authToken secret"))
    for key, pg in (("parameter_group", found.main), ("temp_parameter_group", found.temp)):
        if pg is not None:
            calls.append(Call("delete_parameter_group", {"name": n[key]}, "Failed to delete parameter group"))
    if found.subnet_group is not None:
        calls.append(Call("delete_subnet_group", {"name": n["subnet_group"]}, "Failed to delete subnet group"))
    if calls or found.user_group is not None:
        return plan(run.step(requeue_after=t(1)), *calls)
    return plan(run.step(remove_finalizer=names.FINALIZER))
