"""The AWS RedisInstance plan (``pkg/kcp/provider/aws/redisinstance``): one turn's ElastiCache,
Secrets Manager and EC2 writes over what was read (pure).

Every piece is named ``cm-<kcpName>`` (subnet group, parameter group, user group, security group,
replication group); the temporary parameter group of an engine upgrade ``cm-<kcpName>-temp``; the auth
token lives in Secrets Manager as ``cm-<kcpName>/authToken``. :func:`plan_create`, in the original's
order (one turn makes the writes that do not depend on each other, then comes back):

1. the subnet group from the IpRange's subnets; the parameter groups (main: family from the engine
   version, ``7.x`` -> ``redis7``, ``6.x`` -> ``redis6.x``; temp while the main one's family is not the
   wanted one's; desired parameters = the family's defaults overlaid by ``parameters``; an obsolete main
   or a redundant temp group deleted once unused); the auth token secret when ``authEnabled``; the
   transient user group when auth goes from on to off (AWS drops a token only while attaching a user
   group); the security group, then its ingress (tcp 6379 from the shoot's pods and VPC CIDRs);
2. the replication group (one shard, cluster mode off, ``readReplicas`` replicas, automatic failover
   iff replicas > 0, transit and at-rest encryption, the token); a refused create is an Error
   ``CloudProviderError`` ``Failed to create RedisInstance``, back after 60 s;
3. ``modifying`` -> condition ``Updating`` ``ElastiCache is updating.`` (removed once it is not);
   ``create-failed`` -> Error ``Failed to provision RedisInstance`` (forget); not ``available`` -> 60 s;
4. one ``ModifyReplicationGroup`` with what differs (node type, auto minor upgrade, maintenance
   window, auth: set the token, or attach the user group with ``AuthTokenUpdateStrategy=DELETE``, then
   detach it), then the engine upgrade (with the temp group when the family changes) and the switch
   back to the main group, each removing ``Ready`` first; a refused one: ``Failed to update RedisInstance``;
5. Ready: ``primaryEndpoint`` / ``readEndpoint`` (``host:port``), ``authString``, ``nodeType``,
   ``replicaCount``, the single condition Ready ``Redis instance is ready``.

:func:`plan_delete`: the replication group (wait until gone), then the security group, user group,
token secret, both parameter groups and the subnet group; the finalizer once nothing is left.
A refused call is its Error (``CloudProviderError`` with the call's words), back after 60 s; a retryable
one comes back after 10 s. A refused read: :func:`read_failed`.

Steps 1, 3, 4 and the deletion are :mod:`tasks.cloud.aws.redis_common_plan`'s, shared with the RedisCluster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.aws import redis_common_plan as common
from tasks.cloud.aws.redis_common_plan import (
    COND_UPDATING,
    PORT,
    Read,
    family,
    ingress_missing,
    mismatched,
    read_failed,
    resource_names,
    resource_tags,
    uses_group,
    version_up_to_date,
)
from tasks.cloud.calls import KwCall as Call  # ElastiCache.<method>(**kwargs); refused: CloudProviderError, 60 s
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = [
    "COND_UPDATING",
    "PORT",
    "Call",
    "Read",
    "desired_parameters",
    "family",
    "ingress_missing",
    "mismatched",
    "plan_create",
    "plan_delete",
    "read_failed",
    "resource_names",
    "resource_tags",
    "uses_group",
    "version_up_to_date",
]

Timing = Callable[[float], float]
KIND = "RedisInstance"
READY_MESSAGE = "Redis instance is ready"


def desired_parameters(defaults: Mapping[str, str], user: Mapping[str, str] | None) -> dict[str, str]:
    """``GetDesiredParameters``: the family's defaults overlaid by the user's parameters."""
    return {**defaults, **(user or {})}


FLAVOUR = common.Flavour(KIND, desired_parameters, "Failed to modify parameter group")


def _endpoint(node_group: Mapping[str, Any], key: str) -> str:
    found = node_group.get(key) or {}
    return f"{found.get('Address') or ''}:{int(found.get('Port') or 0)}"


def plan_create(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any], found: Read,
                new_token: str, t: Timing, now: str | None = None) -> Outcome:
    """One provisioning turn (see the module doc). ``new_token``: the token to store when a secret is
    created (the shell draws it: the plan stays pure)."""
    run = StepBuilder(obj, now)
    n = resource_names(run.name)
    spec = (run.spec.get("instance") or {}).get("aws") or {}
    version = str(spec.get("engineVersion") or "7.0")
    auth = bool(spec.get("authEnabled"))

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    pieces = common.plan_pieces(obj, scope, iprange, found, new_token, FLAVOUR)  # 1
    if not pieces.done:
        return plan(run.step(requeue_after=t(1)), *pieces.calls)
    group, security_group = found.group, pieces.security_group or {}
    if group is None:  # 2
        replicas = int(spec.get("readReplicas") or 0)
        options: dict[str, Any] = {
            "name": n["group"], "subnet_group": n["subnet_group"], "parameter_group": n["parameter_group"],
            "node_type": str(spec.get("cacheNodeType") or ""), "engine_version": version,
            "auto_minor": bool(spec.get("autoMinorVersionUpgrade")), "auth_token": found.token if auth else None,
            "maintenance_window": spec.get("preferredMaintenanceWindow") or None,
            "security_groups": [str(security_group.get("GroupId"))], "replicas": replicas,
            "failover": replicas > 0, "tags": resource_tags(obj, scope)}
        if auth and found.token is None:
            return plan(run.step(requeue_after=t(1)))
        return plan(run.step(requeue_after=t(1)), Call("create_replication_group", options,
                                                       f"Failed to create {KIND}"))
    waiting = common.plan_status(run, group, found.members, t, KIND)  # 3
    if waiting is not None:
        return waiting
    ended, pre = common.plan_update(run, found, pieces, t, KIND)  # 4
    if ended is not None:
        return ended
    if pre:
        return plan(run.step(requeue_after=t(1)), *pre)
    node_group = (group.get("NodeGroups") or [{}])[0]  # 5
    run.set(primaryEndpoint=_endpoint(node_group, "PrimaryEndpoint"),
            readEndpoint=_endpoint(node_group, "ReaderEndpoint"),
            authString=found.token or "", nodeType=str(found.members[0].get("CacheNodeType") or ""),
            replicaCount=max(0, len(group.get("MemberClusters") or []) - 1))
    return plan(run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY).step())


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One deletion turn (see the module doc): an Outcome with ``remove_finalizer`` once nothing is left."""
    return common.plan_delete(obj, found, t, KIND, now)
