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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kube.toolkit.conditions as cond
from kube.refusal import Failure
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.calls import KwCall as Call  # ElastiCache.<method>(**kwargs); refused: CloudProviderError, 60 s
from tasks.cloud.calls import with_calls
from tasks.cloud.step import StepBuilder

__all__ = [
    "Call",
    "Read",
    "desired_parameters",
    "family",
    "ingress_missing",
    "plan_create",
    "plan_delete",
    "read_failed",
    "resource_names",
    "resource_tags",
    "uses_group",
    "version_up_to_date",
]

Timing = Callable[[float], float]
PORT = 6379
COND_UPDATING = "Updating"
READY_MESSAGE = "Redis instance is ready"


def family(engine_version: str) -> str:
    """``GetAwsElastiCacheParameterGroupFamily``: the parameter group family of an engine version."""
    for prefix, name in (("2.6", "redis2.6"), ("2.8", "redis2.8"), ("3.2", "redis3.2"), ("4.0", "redis4.0"),
                         ("5.0", "redis5.0"), ("6.", "redis6.x"), ("7.", "redis7")):
        if engine_version.startswith(prefix):
            return name
    return ""


def resource_names(kcp_name: str) -> dict[str, str]:
    """The names of every AWS piece of the KCP RedisInstance ``kcp_name``."""
    base = f"cm-{kcp_name}"
    return {"group": base, "subnet_group": base, "parameter_group": base, "temp_parameter_group": f"{base}-temp",
            "user_group": base, "security_group": base, "secret": f"{base}/authToken"}


def desired_parameters(defaults: Mapping[str, str], user: Mapping[str, str] | None) -> dict[str, str]:
    """``GetDesiredParameters``: the family's defaults overlaid by the user's parameters."""
    return {**defaults, **(user or {})}


def mismatched(current: Mapping[str, str], desired: Mapping[str, str]) -> dict[str, str]:
    """``GetMissmatchedParameters``: the desired parameters whose current value differs."""
    return {k: v for k, v in desired.items() if current.get(k) != v}


def version_up_to_date(members: Sequence[Mapping[str, Any]], desired: str) -> bool:
    """``IsRedisVersionUpToDate``: every member runs ``desired`` (``6.x`` matches any 6)."""
    for member in members:
        if not member.get("CacheParameterGroup"):
            return True
        current = str(member.get("EngineVersion") or "")
        if current.startswith("6") and desired.lower().startswith("6.x"):
            return True
        if desired not in current:
            return False
    return True


def uses_group(members: Sequence[Mapping[str, Any]], group: str) -> bool:
    return any(((m.get("CacheParameterGroup") or {}).get("CacheParameterGroupName")) == group for m in members)


@dataclass(frozen=True)
class Read:
    """What one turn read (plain data; ``None``: missing).

    Attributes:
        subnet_group, security_group, user_group, group: the AWS objects as the SDK answers them.
        main, temp: the parameter groups ``{"name", "family"}``, with their ``params`` (current values)
            and ``defaults`` (the family's engine defaults).
        token: the auth token (Secrets Manager ``SecretString``), ``None`` without a secret.
        members: the replication group's member clusters.
    """

    subnet_group: Mapping[str, Any] | None = None
    main: Mapping[str, Any] | None = None
    temp: Mapping[str, Any] | None = None
    token: str | None = None
    user_group: Mapping[str, Any] | None = None
    security_group: Mapping[str, Any] | None = None
    group: Mapping[str, Any] | None = None
    members: Sequence[Mapping[str, Any]] = field(default_factory=list)


def resource_tags(obj: Mapping[str, Any], scope: Mapping[str, Any]) -> dict[str, str]:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    remote = spec.get("remoteRef") or {}
    return {names.TAG_NAME: f"{meta.get('namespace', '')}/{meta.get('name', '')}",
            names.TAG_REMOTE_NAME: f"{remote.get('namespace', '')}/{remote.get('name', '')}",
            names.TAG_SCOPE: str((spec.get("scope") or {}).get("name") or ""),
            names.TAG_SHOOT: str((scope.get("spec") or {}).get("shootName") or "")}


def ingress_missing(scope: Mapping[str, Any], group: Mapping[str, Any]) -> list[str]:
    """CIDRs (pods, VPC) not yet allowed on tcp 6379 (``authorizeSecurityGroupIngress``; an unknown one
    counts as allowed, as the original's)."""
    network = (((scope.get("spec") or {}).get("scope") or {}).get("aws") or {}).get("network") or {}
    wanted = [c for c in (str(network.get("pods") or ""), str((network.get("vpc") or {}).get("cidr") or "")) if c]
    have = {str(r.get("CidrIp")) for p in group.get("IpPermissions") or []
            if p.get("IpProtocol") == "tcp" and int(p.get("ToPort") or 0) == PORT for r in p.get("IpRanges") or []}
    return [c for c in dict.fromkeys(wanted) if c not in have]


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
    want_family = family(version)
    user_params = {str(k): str(v) for k, v in (spec.get("parameters") or {}).items()}
    auth = bool(spec.get("authEnabled"))
    tags = resource_tags(obj, scope)
    group, main, temp, members = found.group, found.main, found.temp, list(found.members)

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    calls: list[Call] = []
    if found.subnet_group is None:
        subnets = [str(s.get("id")) for s in (iprange.get("status") or {}).get("subnets") or [] if s.get("id")]
        calls.append(Call("create_subnet_group", {"name": n["subnet_group"], "subnet_ids": subnets, "tags": tags},
                          "Failed to create subnet group"))
    version_ok = group is None or version_up_to_date(members, version)
    main_family_ok = main is not None and main.get("family") == want_family
    main_ok = main is not None and not mismatched(main.get("params") or {},
                                                  desired_parameters(main.get("defaults") or {}, user_params))
    temp_ok = temp is not None and not mismatched(temp.get("params") or {},
                                                  desired_parameters(temp.get("defaults") or {}, user_params))
    if group is not None and main is not None and temp is not None and not main_family_ok and temp_ok \
            and version_ok and not uses_group(members, n["parameter_group"]):
        calls.append(Call("delete_parameter_group", {"name": n["parameter_group"]},
                          "Failed to delete parameter group"))
        main = None
    if group is not None and main is not None and temp is not None and main_family_ok \
            and not uses_group(members, n["temp_parameter_group"]):
        calls.append(Call("delete_parameter_group", {"name": n["temp_parameter_group"]},
                          "Failed to delete parameter group"))
        temp = None
    if main is None and version_ok and not any(c.kwargs.get("name") == n["parameter_group"]
                                               and c.method == "delete_parameter_group" for c in calls):
        calls.append(Call("create_parameter_group", {"name": n["parameter_group"], "family": want_family,
                                                     "tags": tags}, "Failed to create parameter group"))
    if group is not None and main is not None and temp is None and not main_family_ok:
        calls.append(Call("create_parameter_group", {"name": n["temp_parameter_group"], "family": want_family,
                                                     "tags": tags}, "Failed to create parameter group"))
    if main is not None and not main_ok:
        calls.append(Call("modify_parameter_group", {"name": n["parameter_group"], "parameters": mismatched(
            main.get("params") or {}, desired_parameters(main.get("defaults") or {}, user_params))},
            "Failed to modify parameter group"))
    if group is not None and main is not None and temp is not None and not temp_ok:
        calls.append(Call("modify_parameter_group", {"name": n["temp_parameter_group"], "parameters": mismatched(
            temp.get("params") or {}, desired_parameters(temp.get("defaults") or {}, user_params))},
            "Failed to modify parameter group"))
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
    if security_group is None or main is None:  # the main group is waited for (an upgrade recreates it)
        return plan(run.step(requeue_after=t(1)))
    missing = ingress_missing(scope, security_group)
    if missing:
        return plan(run.step(requeue_after=t(1)), Call(
            "authorize_ingress", {"group_id": str(security_group.get("GroupId")), "cidrs": missing, "port": PORT},
            "Failed to authorize security group ingress"))
    if group is None:
        replicas = int(spec.get("readReplicas") or 0)
        options: dict[str, Any] = {
            "name": n["group"], "subnet_group": n["subnet_group"], "parameter_group": n["parameter_group"],
            "node_type": str(spec.get("cacheNodeType") or ""), "engine_version": version,
            "auto_minor": bool(spec.get("autoMinorVersionUpgrade")), "auth_token": found.token if auth else None,
            "maintenance_window": spec.get("preferredMaintenanceWindow") or None,
            "security_groups": [str(security_group.get("GroupId"))], "replicas": replicas,
            "failover": replicas > 0, "tags": tags}
        if auth and found.token is None:
            return plan(run.step(requeue_after=t(1)))
        return plan(run.step(requeue_after=t(1)), Call("create_replication_group", options,
                                                       "Failed to create RedisInstance"))
    run.set(id=n["group"])
    status = str(group.get("Status") or "")
    if status == "modifying" and cond.find(run.conditions, COND_UPDATING) is None:
        run.set(conditions=cond.set_condition(run.conditions, cond.condition(
            COND_UPDATING, True, COND_UPDATING, "ElastiCache is updating.", run.now)))
    elif status != "modifying" and cond.find(run.conditions, COND_UPDATING) is not None:
        run.without(COND_UPDATING)
    if status == "create-failed":
        run.set(conditions=cond.set_exclusive(run.conditions, cond.condition(
            names.COND_ERROR, True, names.REASON_CLOUD_PROVIDER_ERROR, "Failed to provision RedisInstance",
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
            "modify_replication_group", {"name": n["group"], **modify}, "Failed to update RedisInstance"))
    if found.user_group is not None and n["user_group"] not in attached:
        pre.append(Call("delete_user_group", {"name": n["user_group"]}, "Failed to delete user group"))
    if not version_up_to_date(members, version) and ((temp is not None and temp_ok) or main_family_ok):
        upgrade_group = n["temp_parameter_group"] if not main_family_ok and temp is not None else n["parameter_group"]
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], "engine_version": version,
                                         "parameter_group": upgrade_group}, "Failed to update RedisInstance"))
    if temp is not None and main_ok and main_family_ok and not uses_group(members, n["parameter_group"]):
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], "parameter_group": n["parameter_group"]},
            "Failed to update RedisInstance"))
    if pre:
        return plan(run.step(requeue_after=t(1)), *pre)
    node_group = (group.get("NodeGroups") or [{}])[0]
    run.set(primaryEndpoint=_endpoint(node_group, "PrimaryEndpoint"),
            readEndpoint=_endpoint(node_group, "ReaderEndpoint"),
            authString=found.token or "", nodeType=str(member.get("CacheNodeType") or ""),
            replicaCount=max(0, len(group.get("MemberClusters") or []) - 1))
    return plan(run.exclusive(names.COND_READY, True, names.REASON_READY, READY_MESSAGE, names.STATE_READY).step())


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, now: str | None = None) -> Outcome:
    """One deletion turn (see the module doc): a Outcome with ``remove_finalizer`` once nothing is left."""
    run = StepBuilder(obj, now).without(names.COND_READY)
    n = resource_names(run.name)

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    group = found.group
    if group is not None:
        if group.get("Status") == "deleting":
            return plan(run.step(requeue_after=t(60)))
        return plan(run.step(requeue_after=t(60)),
                    Call("delete_replication_group", {"name": n["group"]}, "Failed to delete RedisInstance"))
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


def read_failed(obj: Mapping[str, Any], failure: Failure, t: Timing, now: str | None = None) -> Outcome:
    """A refused read: retryable -> back after 10 s, the status untouched; else an Error
    ``CloudProviderError`` with the user's words, back after 60 s."""
    run = StepBuilder(obj, now)
    if failure.retryable:
        return run.step(requeue_after=t(10))
    return run.fail(names.REASON_CLOUD_PROVIDER_ERROR, failure.message, requeue_after=t(60))
