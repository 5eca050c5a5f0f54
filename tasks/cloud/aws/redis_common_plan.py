"""What the AWS RedisInstance and RedisCluster plans share (pure): the ElastiCache pieces around the
replication group and the steps over them, ported from cloud-manager's ``pkg/kcp/provider/aws/redisinstance``
and ``pkg/kcp/provider/aws/rediscluster`` (whose ``new.go`` run the same actions around a different
replication group).

Every piece is named ``cm-<kcpName>`` (:func:`resource_names`), tagged as :func:`resource_tags`, read as
:class:`Read`. The steps, each parameterised by a :class:`Flavour` (the kind's words and parameters):

- :func:`plan_pieces`: the subnet group, the parameter groups (main and temp, see
  :mod:`tasks.cloud.aws.redisinstance_plan`), the auth token secret, the transient user group, the
  security group and its ingress (tcp 6379 from the shoot's pods and VPC CIDRs);
- :func:`plan_status`: ``status.id``, the ``Updating`` condition, ``create-failed`` and the wait for
  ``available``;
- :func:`plan_update`: one ``ModifyReplicationGroup`` with what differs (node type, auto minor upgrade,
  maintenance window, auth), the engine upgrade and the switch back to the main parameter group;
- :func:`plan_delete`: the replication group, then the security group, user group, token secret,
  parameter groups and subnet group, then the finalizer.
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

__all__ = ["COND_UPDATING", "PORT", "Flavour", "Pieces", "Read", "family", "ingress_missing", "mismatched",
           "plan_delete", "plan_pieces", "plan_status", "plan_update", "read_failed", "resource_names",
           "resource_tags", "uses_group", "version_up_to_date"]

Timing = Callable[[float], float]
PORT = 6379
COND_UPDATING = "Updating"


def family(engine_version: str) -> str:
    """``GetAwsElastiCacheParameterGroupFamily``: the parameter group family of an engine version."""
    for prefix, name in (("2.6", "redis2.6"), ("2.8", "redis2.8"), ("3.2", "redis3.2"), ("4.0", "redis4.0"),
                         ("5.0", "redis5.0"), ("6.", "redis6.x"), ("7.", "redis7")):
        if engine_version.startswith(prefix):
            return name
    return ""


def resource_names(kcp_name: str) -> dict[str, str]:
    """The names of every AWS piece of the KCP RedisInstance / RedisCluster ``kcp_name``."""
    base = f"cm-{kcp_name}"
    return {"group": base, "subnet_group": base, "parameter_group": base, "temp_parameter_group": f"{base}-temp",
            "user_group": base, "security_group": base, "secret": f"{base}/authToken"}


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
    """Whether a member cluster runs with the parameter group ``group``."""
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
    """The tags of every piece: the KCP object's and its SKR object's ``namespace/name``, the scope, the shoot."""
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


@dataclass(frozen=True)
class Flavour:
    """What the instance and the cluster flows differ in, for the shared steps.

    Attributes:
        kind: ``RedisInstance`` / ``RedisCluster``, in the Error messages (``Failed to create <kind>``).
        desired_parameters: ``GetDesiredParameters`` (the family's defaults, the user's parameters) ->
            the parameter group's wanted values.
        modify_message: the Error message of a refused ``modify_parameter_group``.
        parameters_on_create: a new main parameter group is given its parameters in the turn that
            creates it (the cluster's ``cluster-enabled``), not on the next one.
    """

    kind: str
    desired_parameters: Callable[[Mapping[str, str], Mapping[str, str] | None], dict[str, str]]
    modify_message: str
    parameters_on_create: bool = False


@dataclass(frozen=True)
class Pieces:
    """The pieces around the replication group, as :func:`plan_pieces` found them.

    Attributes:
        calls: the writes they still need (none once ``done``).
        done: every piece is there and the ingress allowed: the replication group can follow.
        main, temp: the parameter groups (``None``: missing or deleted in this turn).
        main_ok, temp_ok: the group's parameters are the desired ones.
        main_family_ok: the main group's family is the engine version's.
        security_group: the security group (``None``: missing).
    """

    calls: list[Call]
    done: bool
    main: Mapping[str, Any] | None
    temp: Mapping[str, Any] | None
    main_ok: bool
    temp_ok: bool
    main_family_ok: bool
    security_group: Mapping[str, Any] | None


def plan_pieces(obj: Mapping[str, Any], scope: Mapping[str, Any], iprange: Mapping[str, Any], found: Read,
                new_token: str, flavour: Flavour) -> Pieces:
    """Step 1 of both plans: the subnet group from the IpRange's subnets; the parameter groups (main: family
    from the engine version; temp while the main one's family is not the wanted one's; an obsolete main or a
    redundant temp group deleted once unused; their parameters :attr:`Flavour.desired_parameters`); the auth
    token secret when ``authEnabled`` (``new_token``); the transient user group when auth goes from on to
    off; the security group, then its ingress. ``obj``: the KCP object (``spec.instance.aws``)."""
    n = resource_names(str(obj["metadata"]["name"]))
    spec = ((obj.get("spec") or {}).get("instance") or {}).get("aws") or {}
    version = str(spec.get("engineVersion") or "7.0")
    want_family = family(version)
    user_params = {str(k): str(v) for k, v in (spec.get("parameters") or {}).items()}
    auth = bool(spec.get("authEnabled"))
    tags = resource_tags(obj, scope)
    group, main, temp, members = found.group, found.main, found.temp, list(found.members)

    def up_to_date(pg: Mapping[str, Any] | None) -> bool:
        return pg is not None and not mismatched(pg.get("params") or {},
                                                 flavour.desired_parameters(pg.get("defaults") or {}, user_params))

    def modify(key: str, pg: Mapping[str, Any]) -> Call:
        return Call("modify_parameter_group", {"name": n[key], "parameters": mismatched(
            pg.get("params") or {}, flavour.desired_parameters(pg.get("defaults") or {}, user_params))},
            flavour.modify_message)

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
    if main is None and version_ok and not deleting_main:
        calls.append(Call("create_parameter_group", {"name": n["parameter_group"], "family": want_family,
                                                     "tags": tags}, "Failed to create parameter group"))
        if flavour.parameters_on_create:  # with its parameters at once (a turn saved)
            calls.append(Call("modify_parameter_group", {"name": n["parameter_group"], "parameters": (
                flavour.desired_parameters({}, user_params))}, flavour.modify_message))
    if group is not None and main is not None and temp is None and not main_family_ok:
        calls.append(Call("create_parameter_group", {"name": n["temp_parameter_group"], "family": want_family,
                                                     "tags": tags}, "Failed to create parameter group"))
    if main is not None and not main_ok:
        calls.append(modify("parameter_group", main))
    if group is not None and main is not None and temp is not None and not temp_ok:
        calls.append(modify("temp_parameter_group", temp))
    if auth and found.token is None:
        calls.append(Call("create_auth_token", {"name": n["secret"], "token": new_token, "tags": tags},
                          "Failed to create authToken secret"))
    if group is not None and found.user_group is None and bool(group.get("AuthTokenEnabled")) and not auth:
        calls.append(Call("create_user_group", {"name": n["user_group"], "tags": tags}, "Failed to create user group"))
    security_group = found.security_group
    if security_group is None:
        vpc_id = str((iprange.get("status") or {}).get("vpcId") or "")
        calls.append(Call("create_security_group", {"vpc_id": vpc_id, "name": n["security_group"],
                                                    "tags": {"Name": n["security_group"], **tags}},
                          "Failed to create security group"))
    done = False
    # the main group is waited for (an upgrade recreates it)
    if not calls and security_group is not None and main is not None:
        missing = ingress_missing(scope, security_group)
        if missing:
            calls.append(Call("authorize_ingress", {"group_id": str(security_group.get("GroupId")), "cidrs": missing,
                                                    "port": PORT}, "Failed to authorize security group ingress"))
        done = not missing
    return Pieces(calls, done, main, temp, main_ok, temp_ok, main_family_ok, security_group)


def plan_status(run: StepBuilder, group: Mapping[str, Any], members: Sequence[Mapping[str, Any]], t: Timing,
                kind: str) -> Outcome | None:
    """Step 3 of both plans, once the replication group exists: ``status.id``; ``modifying`` -> condition
    ``Updating`` ``ElastiCache is updating.`` (removed once it is not); ``create-failed`` -> Error
    ``Failed to provision <kind>`` (forget); not ``available`` or no members yet -> back after 60 s.
    ``None``: available, go on."""
    run.set(id=resource_names(run.name)["group"])
    status = str(group.get("Status") or "")
    if status == "modifying" and cond.find(run.conditions, COND_UPDATING) is None:
        run.set(conditions=cond.set_condition(run.conditions, cond.condition(
            COND_UPDATING, True, COND_UPDATING, "ElastiCache is updating.", run.now)))
    elif status != "modifying" and cond.find(run.conditions, COND_UPDATING) is not None:
        run.without(COND_UPDATING)
    if status == "create-failed":
        run.set(conditions=cond.set_exclusive(run.conditions, cond.condition(
            names.COND_ERROR, True, names.REASON_CLOUD_PROVIDER_ERROR, f"Failed to provision {kind}",
            run.now)), state=names.STATE_ERROR)
        return with_calls(run, t, run.step())
    if status != "available" or not members:
        return with_calls(run, t, run.step(requeue_after=t(60)))
    return None


def plan_update(run: StepBuilder, found: Read, pieces: Pieces, t: Timing, kind: str) -> tuple[Outcome | None,
                                                                                                  list[Call]]:
    """Step 4 of both plans, on an available replication group (``found.group``, ``found.members`` not
    empty): one ``ModifyReplicationGroup`` with what differs (node type, auto minor upgrade, maintenance
    window, auth: set the token, or attach the user group with ``AuthTokenUpdateStrategy=DELETE``, then
    detach it), then the engine upgrade (with the temp group when the family changes) and the switch back
    to the main group, each removing ``Ready`` first; refused: ``Failed to update <kind>``.

    Returns ``(outcome, [])`` when this turn ends here, else ``(None, calls)``: the clean-up calls (the
    token secret, the user group) to make with whatever the plan does next."""
    n = resource_names(run.name)
    spec = (run.spec.get("instance") or {}).get("aws") or {}
    version = str(spec.get("engineVersion") or "7.0")
    auth = bool(spec.get("authEnabled"))
    group, members = found.group or {}, list(found.members)

    def plan(step: Outcome, *calls: Call) -> tuple[Outcome | None, list[Call]]:
        return with_calls(run, t, step, calls), []

    modify: dict[str, Any] = {}
    if spec.get("cacheNodeType") and group.get("CacheNodeType") != spec.get("cacheNodeType"):
        modify["node_type"] = str(spec["cacheNodeType"])
    member = members[0]
    if bool(member.get("AutoMinorVersionUpgrade")) != bool(spec.get("autoMinorVersionUpgrade")):
        modify["auto_minor"] = bool(spec.get("autoMinorVersionUpgrade"))
    window = str(spec.get("preferredMaintenanceWindow") or "")
    if window and window != member.get("PreferredMaintenanceWindow"):
        modify["maintenance_window"] = window
    current_auth = bool(group.get("AuthTokenEnabled"))
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
            "modify_replication_group", {"name": n["group"], **modify}, f"Failed to update {kind}"))
    if found.user_group is not None and n["user_group"] not in attached:
        pre.append(Call("delete_user_group", {"name": n["user_group"]}, "Failed to delete user group"))
    temp, temp_ok, main_family_ok = pieces.temp, pieces.temp_ok, pieces.main_family_ok
    if not version_up_to_date(members, version) and ((temp is not None and temp_ok) or main_family_ok):
        upgrade_group = n["temp_parameter_group"] if not main_family_ok and temp is not None else n["parameter_group"]
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], "engine_version": version,
                                         "parameter_group": upgrade_group}, f"Failed to update {kind}"))
    # the version is up to date here: an outdated one with the main family was upgraded above
    if temp is not None and pieces.main_ok and main_family_ok and not uses_group(members, n["parameter_group"]):
        run.without(names.COND_READY)
        return plan(run.step(requeue_after=t(1)), *pre, Call(
            "modify_replication_group", {"name": n["group"], "parameter_group": n["parameter_group"]},
            f"Failed to update {kind}"))
    return None, pre


def plan_delete(obj: Mapping[str, Any], found: Read, t: Timing, kind: str, now: str | None = None) -> Outcome:
    """One deletion turn of either kind: the replication group (wait until gone; refused: ``Failed to delete
    <kind>``), then the security group, user group, token secret, both parameter groups and the subnet
    group; an Outcome with ``remove_finalizer`` once nothing is left."""
    run = StepBuilder(obj, now).without(names.COND_READY)
    n = resource_names(run.name)

    def plan(step: Outcome, *calls: Call) -> Outcome:
        return with_calls(run, t, step, calls)

    group = found.group
    if group is not None:
        if group.get("Status") == "deleting":
            return plan(run.step(requeue_after=t(60)))
        return plan(run.step(requeue_after=t(60)),
                    Call("delete_replication_group", {"name": n["group"]}, f"Failed to delete {kind}"))
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
