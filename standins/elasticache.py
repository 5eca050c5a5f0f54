"""ElastiCache as the Redis flows use it, inside moto's server: boto3 reaches it unchanged.

moto (5.2) serves EC2, Secrets Manager and part of ElastiCache, but answers ``CreateCacheParameterGroup``,
``ModifyCacheParameterGroup``, ``DeleteCacheParameterGroup``, ``DescribeCacheParameters``,
``DescribeEngineDefaultParameters`` and ``DeleteCacheSubnetGroup`` "not implemented", does not
describe a replication group's member clusters, has no ``ReaderEndpoint``, ignores most of
``ModifyReplicationGroup`` (engine version, parameter group, auth token, user groups, maintenance
window) and leaves a deleted replication group ``deleting`` for ever. :func:`install` gives moto's
ElastiCache responder (its extension point: one method per action, answers serialized by moto from
the botocore model) these actions over a small model of ours, without forking moto:

- subnet groups: create / describe / delete (``CacheSubnetGroupNotFoundFault``, in use:
  ``CacheSubnetGroupInUse``);
- parameter groups: create / describe / delete (``CacheParameterGroupNotFound``, in use:
  ``InvalidCacheParameterGroupState``) / modify / describe parameters (the family's defaults overlaid by
  the modifications) / engine defaults per family (:data:`ENGINE_DEFAULTS`);
- replication groups, cluster mode disabled (one node group): create (``available`` at once, member
  clusters ``<id>-00<n>``, primary and reader endpoints), describe (``ReplicationGroupNotFoundFault``),
  modify (node type, engine version, parameter group, auth token rotate/set, user groups with
  ``AuthTokenUpdateStrategy=DELETE``, maintenance window, auto minor upgrade: the group answers
  ``modifying`` once, then ``available``), delete (``deleting`` once, then gone);
- replication groups in cluster mode (``ClusterMode=enabled``, ``NumNodeGroups`` > 1 or a parameter group
  with ``cluster-enabled=yes``; moto has none of it): ``NumNodeGroups`` shards (1-500) of
  ``ReplicasPerNodeGroup`` replicas (0-5) each, node groups ``0001``..., members ``<id>-<shard>-00<n>``, the
  ``ConfigurationEndpoint`` (``clustercfg.<id>...``), automatic failover required, a parameter group
  with ``cluster-enabled=no`` refused; online resharding ``ModifyReplicationGroupShardConfiguration``
  (``ApplyImmediately`` true, a decrease names ``NodeGroupsToRemove`` or ``NodeGroupsToRetain``),
  ``IncreaseReplicaCount`` / ``DecreaseReplicaCount`` (``NewReplicaCount`` or ``ReplicasToRemove``; the
  same count: ``NoOperationFault``), each ``modifying`` once, then ``available``;
- cache clusters: describe a member (engine version, node type, parameter group), or list every member a
  page at a time;
- user groups: create (``active``), describe, delete.

Behaviour follows the ElastiCache API reference (error codes, 404/400 statuses, field names), pinned by
``tests/integration/cloud/aws/test_elasticache_conformance.py`` against botocore's model. Errors
can be injected per action (:func:`inject`: the next ``n`` calls of an action answer an error).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from standins.moto_faults import fault as _error

__all__ = ["ENGINE_DEFAULTS", "inject", "install", "reset"]

#: Engine default parameters per family (a subset of AWS's, enough for the flows: user parameters
#: are overlaid on these).
ENGINE_DEFAULTS: Mapping[str, Mapping[str, str]] = {
    "redis7": {"maxmemory-policy": "volatile-lru", "timeout": "0", "tcp-keepalive": "300", "cluster-enabled": "no",
               "notify-keyspace-events": ""},
    "redis6.x": {"maxmemory-policy": "volatile-lru", "timeout": "0", "tcp-keepalive": "300",
                 "cluster-enabled": "no", "notify-keyspace-events": ""},
    "redis5.0": {"maxmemory-policy": "volatile-lru", "timeout": "0", "tcp-keepalive": "300"},
}
PORT = 6379


MAX_SHARDS = 500
MAX_REPLICAS = 5


@dataclass
class _NodeGroup:
    """One shard: its id (``0001``...) and member cluster ids, the primary first."""

    ident: str
    members: list[str] = field(default_factory=list)
    next_member: int = 1


@dataclass
class _Group:
    ident: str
    node_type: str
    engine_version: str
    parameter_group: str
    subnet_group: str
    security_groups: list[str]
    cluster: bool = False
    node_groups: list[_NodeGroup] = field(default_factory=list)
    next_shard: int = 1
    auth_token: str = ""
    user_groups: list[str] = field(default_factory=list)
    maintenance_window: str = "sun:05:00-sun:06:00"
    auto_minor: bool = True
    failover: bool = False
    status: str = "available"
    next_status: str = ""
    gone_next: bool = False

    @property
    def members(self) -> list[str]:
        return [m for ng in self.node_groups for m in ng.members]

    def add_shard(self, replicas: int) -> None:
        """A new node group of a primary and ``replicas`` replicas."""
        ng = _NodeGroup(f"{self.next_shard:04d}")
        self.next_shard += 1
        self.node_groups.append(ng)
        self.add_members(ng, replicas + 1)

    def add_members(self, ng: _NodeGroup, count: int) -> None:
        """``count`` new members of ``ng`` (``<id>-<shard>-00<n>`` in cluster mode, ``<id>-00<n>`` else)."""
        for _ in range(count):
            prefix = f"{self.ident}-{ng.ident}" if self.cluster else self.ident
            ng.members.append(f"{prefix}-{ng.next_member:03d}")
            ng.next_member += 1


@dataclass
class _Region:
    subnet_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    parameter_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, _Group] = field(default_factory=dict)
    user_groups: dict[str, dict[str, Any]] = field(default_factory=dict)


_lock = threading.RLock()
_regions: dict[tuple[str, str], _Region] = {}
_injected: dict[str, list[tuple[str, str, int]]] = {}
_installed = False


def reset() -> None:
    """Forget every object and injected error (tests)."""
    with _lock:
        _regions.clear()
        _injected.clear()


def inject(action: str, code: str, message: str = "injected", status: int = 400, times: int = 1) -> None:
    """Make the next ``times`` calls of ``action`` (e.g. ``CreateReplicationGroup``) answer ``code``."""
    with _lock:
        _injected.setdefault(action, []).extend([(code, message, status)] * times)


_V = TypeVar("_V")


def _region(resp: Any) -> _Region:
    key = (str(resp.current_account), str(resp.region))
    with _lock:
        return _regions.setdefault(key, _Region())


def _take_injected(action: str) -> None:
    with _lock:
        queue = _injected.get(action)
        if queue:
            code, message, status = queue.pop(0)
            raise _error(code, message, status)


def _arn(resp: Any, kind: str, name: str) -> str:
    return f"arn:aws:elasticache:{resp.region}:{resp.current_account}:{kind}:{name}"


def _family(engine_version: str) -> str:
    for prefix, family in (("7.", "redis7"), ("6.", "redis6.x"), ("5.0", "redis5.0")):
        if engine_version.startswith(prefix):
            return family
    return "redis7"


def _full_version(version: str) -> str:
    return {"7.0": "7.0.7", "7.1": "7.1.0", "6.x": "6.2.6"}.get(version, version)


def _group_view(resp: Any, g: _Group) -> dict[str, Any]:
    domain = f"{g.ident}.abc123.{resp.region}.cache.amazonaws.com"
    node_groups = []
    for index, ng in enumerate(g.node_groups):
        members: list[dict[str, Any]] = [{"CacheClusterId": m, "CacheNodeId": "0001",
                    "PreferredAvailabilityZone": f"{resp.region}a"} for m in ng.members]
        view: dict[str, Any] = {"NodeGroupId": ng.ident, "Status": g.status, "NodeGroupMembers": members}
        if g.cluster:  # the configuration endpoint is the cluster's way in; slots split evenly
            view["Slots"] = _slots(index, len(g.node_groups))
        else:
            for i, member in enumerate(members):
                member["CurrentRole"] = "primary" if i == 0 else "replica"
                member["ReadEndpoint"] = {"Address": f"{member['CacheClusterId']}.{domain}", "Port": PORT}
            view["PrimaryEndpoint"] = {"Address": f"master.{domain}", "Port": PORT}
            view["ReaderEndpoint"] = {"Address": f"replica.{domain}", "Port": PORT}
        node_groups.append(view)
    out: dict[str, Any] = {
        "ReplicationGroupId": g.ident, "Description": "ElastiCache managed by Kyma Cloud Manager",
        "Status": g.status, "MemberClusters": g.members, "CacheNodeType": g.node_type, "NodeGroups": node_groups,
        "AutomaticFailover": "enabled" if g.failover else "disabled", "ClusterEnabled": g.cluster,
        "ClusterMode": "enabled" if g.cluster else "disabled",
        "AuthTokenEnabled": bool(g.auth_token), "TransitEncryptionEnabled": True, "AtRestEncryptionEnabled": True,
        "UserGroupIds": list(g.user_groups), "ARN": _arn(resp, "replicationgroup", g.ident),
        "AutoMinorVersionUpgrade": g.auto_minor,
    }
    if g.cluster:
        out["ConfigurationEndpoint"] = {"Address": f"clustercfg.{domain}", "Port": PORT}
    return out


def _slots(index: int, count: int) -> str:
    """The hash slots (0-16383) of the ``index``-th of ``count`` shards, as ``first-last``."""
    first, last = 16384 * index // count, 16384 * (index + 1) // count - 1
    return f"{first}-{last}"


def _observe(region: _Region, g: _Group) -> None:
    """A describe sees the group; a pending transition happens after it (``modifying`` once, ``deleting`` once)."""
    if g.gone_next:
        region.groups.pop(g.ident, None)
    elif g.next_status:
        g.status, g.next_status = g.next_status, ""


# ---- the actions (methods of moto's ElastiCacheResponse) --------------------------------------


def create_cache_subnet_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _action_target(self, "CreateCacheSubnetGroup", "CacheSubnetGroupName")
    with _lock:
        _check_new(region.subnet_groups, name, "CacheSubnetGroupAlreadyExists", "Cache subnet group")
        subnets = self._get_param("SubnetIds", [])
        region.subnet_groups[name] = {
            "CacheSubnetGroupName": name, "CacheSubnetGroupDescription": self._get_param("CacheSubnetGroupDescription"),
            "VpcId": "", "Subnets": [{"SubnetIdentifier": s} for s in subnets],
            "ARN": _arn(self, "subnetgroup", name)}
        return ActionResult({"CacheSubnetGroup": region.subnet_groups[name]})


def _action_target(resp: Any, action: str, param: str) -> tuple[_Region, Any]:
    """The region and the request's ``param`` (the object's name) of an ``action`` that may answer an
    injected failure (:func:`_take_injected`, raised first)."""
    _take_injected(action)
    return _region(resp), resp._get_param(param)


def _check_new(store: Mapping[str, Any], ident: str, fault: str, what: str) -> None:
    """Raise ``fault`` (``<what> <ident> already exists.``) when ``ident`` is in ``store``."""
    if ident in store:
        raise _error(fault, f"{what} {ident} already exists.")


def _get(store: Mapping[str, _V], ident: str, fault: str, what: str) -> _V:
    """``store[ident]``; ``fault`` (404, ``<what> <ident> not found.``) when absent."""
    if ident not in store:
        raise _error(fault, f"{what} {ident} not found.", 404)
    return store[ident]


def _one_or_all(store: Mapping[str, _V], ident: str | None, fault: str, what: str) -> list[_V]:
    """What a Describe lists: ``[store[ident]]`` (see :func:`_get`), or every entry when no ``ident`` is
    asked."""
    return [_get(store, ident, fault, what)] if ident else list(store.values())


def _check_deletable(store: Mapping[str, Any], ident: str, fault: str, what: str, in_use: bool,
                     in_use_fault: str) -> None:
    """Raise ``fault`` (404) when ``ident`` is not in ``store``, ``in_use_fault`` when it is ``in_use``."""
    _get(store, ident, fault, what)
    if in_use:
        raise _error(in_use_fault, f"{what} {ident} is in use.")


def describe_cache_subnet_groups(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _region(self), self._get_param("CacheSubnetGroupName")
    with _lock:
        return ActionResult({"CacheSubnetGroups": _one_or_all(region.subnet_groups, name,
                                                              "CacheSubnetGroupNotFoundFault", "Cache subnet group")})


def delete_cache_subnet_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _action_target(self, "DeleteCacheSubnetGroup", "CacheSubnetGroupName")
    with _lock:
        _check_deletable(region.subnet_groups, name, "CacheSubnetGroupNotFoundFault", "Cache subnet group",
                         any(g.subnet_group == name for g in region.groups.values()), "CacheSubnetGroupInUse")
        del region.subnet_groups[name]
        return ActionResult({})


def create_cache_parameter_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _action_target(self, "CreateCacheParameterGroup", "CacheParameterGroupName")
    family = self._get_param("CacheParameterGroupFamily")
    with _lock:
        _check_new(region.parameter_groups, name, "CacheParameterGroupAlreadyExists", "Parameter group")
        if family not in ENGINE_DEFAULTS:
            raise _error("InvalidParameterValue", f"The parameter CacheParameterGroupFamily {family} is not valid.")
        region.parameter_groups[name] = {"name": name, "family": family, "params": {},
                                         "description": self._get_param("Description") or ""}
        return ActionResult({"CacheParameterGroup": _pg_view(self, region.parameter_groups[name])})


def _pg_view(resp: Any, pg: Mapping[str, Any]) -> dict[str, Any]:
    return {"CacheParameterGroupName": pg["name"], "CacheParameterGroupFamily": pg["family"],
            "Description": pg["description"], "IsGlobal": False, "ARN": _arn(resp, "parametergroup", pg["name"])}


def _pg(region: _Region, name: str) -> dict[str, Any]:
    return _get(region.parameter_groups, name, "CacheParameterGroupNotFound", "CacheParameterGroup")


def describe_cache_parameter_groups(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _region(self), self._get_param("CacheParameterGroupName")
    with _lock:
        found = _one_or_all(region.parameter_groups, name, "CacheParameterGroupNotFound", "CacheParameterGroup")
        return ActionResult({"CacheParameterGroups": [_pg_view(self, pg) for pg in found]})


def delete_cache_parameter_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _action_target(self, "DeleteCacheParameterGroup", "CacheParameterGroupName")
    with _lock:
        _pg(region, name)
        if any(g.parameter_group == name for g in region.groups.values()):
            raise _error("InvalidCacheParameterGroupState", f"Parameter group {name} is in use.")
        del region.parameter_groups[name]
        return ActionResult({})


def _params(values: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"ParameterName": k, "ParameterValue": v, "Source": "user", "DataType": "string", "IsModifiable": True}
            for k, v in sorted(values.items())]


def describe_cache_parameters(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region = _region(self)
    with _lock:
        pg = _pg(region, self._get_param("CacheParameterGroupName"))
        return ActionResult({"Parameters": _params({**ENGINE_DEFAULTS[pg["family"]], **pg["params"]})})


def modify_cache_parameter_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, name = _action_target(self, "ModifyCacheParameterGroup", "CacheParameterGroupName")
    changes = self._get_param("ParameterNameValues", [])
    with _lock:
        pg = _pg(region, name)
        for item in changes:
            key, value = str(item.get("ParameterName") or ""), str(item.get("ParameterValue") or "")
            if key not in ENGINE_DEFAULTS[pg["family"]]:
                raise _error("InvalidParameterValue", f"Unknown parameter: {key}")
            pg["params"][key] = value
        return ActionResult({"CacheParameterGroupName": name})


def describe_engine_default_parameters(self: Any) -> Any:
    from moto.core.responses import ActionResult

    family = self._get_param("CacheParameterGroupFamily")
    if family not in ENGINE_DEFAULTS:
        raise _error("InvalidParameterValue", f"The parameter CacheParameterGroupFamily {family} is not valid.")
    return ActionResult({"EngineDefaults": {"CacheParameterGroupFamily": family,
                                            "Parameters": _params(ENGINE_DEFAULTS[family])}})


def create_replication_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, ident = _action_target(self, "CreateReplicationGroup", "ReplicationGroupId")
    with _lock:
        _check_new(region.groups, ident, "ReplicationGroupAlreadyExists", "Replication group")
        parameter_group = self._get_param("CacheParameterGroupName") or ""
        if parameter_group:
            _pg(region, parameter_group)
        subnet_group = self._get_param("CacheSubnetGroupName") or ""
        if subnet_group and subnet_group not in region.subnet_groups:
            raise _error("CacheSubnetGroupNotFoundFault", f"Cache subnet group {subnet_group} not found.", 404)
        token = self._get_param("AuthToken") or ""
        if token and not 16 <= len(token) <= 128:
            raise _error("InvalidParameterValue", "The AUTH token must be between 16 and 128 characters.")
        replicas = int(self._get_param("ReplicasPerNodeGroup") or 0)
        shards = int(self._get_param("NumNodeGroups") or 1)
        failover = str(self._get_param("AutomaticFailoverEnabled") or "").lower() == "true"
        cluster = _cluster_mode(region, str(self._get_param("ClusterMode") or ""), shards, parameter_group)
        _check_counts(shards, replicas)
        if cluster and not failover:
            raise _error("InvalidParameterCombination",
                         "Redis with cluster mode enabled cannot be created with automatic failover disabled.")
        if failover and replicas < 1 and not cluster:
            raise _error("InvalidParameterCombination",
                         "Automatic failover requires at least one read replica.")
        group = _Group(ident=ident, node_type=self._get_param("CacheNodeType") or "cache.t4g.micro",
                       engine_version=_full_version(self._get_param("EngineVersion") or "7.1"),
                       parameter_group=parameter_group, subnet_group=subnet_group,
                       security_groups=list(self._get_param("SecurityGroupIds", []) or []), cluster=cluster,
                       auth_token=token, failover=failover,
                       auto_minor=str(_given(self._get_param("AutoMinorVersionUpgrade"), True)).lower() == "true")
        for _ in range(shards):
            group.add_shard(replicas)
        if self._get_param("PreferredMaintenanceWindow"):
            group.maintenance_window = self._get_param("PreferredMaintenanceWindow")
        region.groups[ident] = group
        return ActionResult({"ReplicationGroup": _group_view(self, group)})


def _cluster_mode(region: _Region, mode: str, shards: int, parameter_group: str) -> bool:
    """Whether a new group is in cluster mode: asked (``ClusterMode=enabled``, more than one shard) or
    implied by its parameter group's ``cluster-enabled=yes``; a contradiction is refused
    (``InvalidParameterCombination``)."""
    pg_value = ""
    if parameter_group:
        pg = region.parameter_groups[parameter_group]
        pg_value = {**ENGINE_DEFAULTS[pg["family"]], **pg["params"]}.get("cluster-enabled", "")
    asked = mode.lower() == "enabled" or shards > 1
    if mode.lower() == "disabled" and shards > 1:
        raise _error("InvalidParameterCombination", "NumNodeGroups greater than 1 requires cluster mode enabled.")
    if asked and pg_value == "no":
        raise _error("InvalidParameterCombination",
                     f"Cluster mode requires a parameter group with cluster-enabled yes; {parameter_group} has no.")
    if mode.lower() == "disabled" and pg_value == "yes":
        raise _error("InvalidParameterCombination",
                     f"Parameter group {parameter_group} has cluster-enabled yes: cluster mode cannot be disabled.")
    return asked or pg_value == "yes"


def _check_counts(shards: int, replicas: int) -> None:
    """``InvalidParameterValue`` for a shard count outside 1-500 or a replica count outside 0-5."""
    if not 1 <= shards <= MAX_SHARDS:
        raise _error("InvalidParameterValue", f"NumNodeGroups must be between 1 and {MAX_SHARDS}.")
    if not 0 <= replicas <= MAX_REPLICAS:
        raise _error("InvalidParameterValue", f"ReplicasPerNodeGroup must be between 0 and {MAX_REPLICAS}.")


def _given(value: Any, default: Any) -> Any:
    """A request parameter's value, ``default`` when it is absent (``False`` is a value)."""
    return default if value is None or value == "" else value


def _group(region: _Region, ident: str) -> _Group:
    return _get(region.groups, ident, "ReplicationGroupNotFoundFault", "Replication group")


def describe_replication_groups(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, ident = _region(self), self._get_param("ReplicationGroupId")
    with _lock:
        found = _one_or_all(region.groups, ident, "ReplicationGroupNotFoundFault", "Replication group")
        views = [_group_view(self, g) for g in found]
        for g in found:
            _observe(region, g)
        return ActionResult({"ReplicationGroups": views})


def modify_replication_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    _take_injected("ModifyReplicationGroup")
    region = _region(self)
    with _lock:
        g = _group(region, self._get_param("ReplicationGroupId"))
        if g.status != "available":
            raise _error("InvalidReplicationGroupState", f"Replication group {g.ident} is not available.")
        if self._get_param("CacheNodeType"):
            g.node_type = self._get_param("CacheNodeType")
        if self._get_param("EngineVersion"):
            g.engine_version = _full_version(self._get_param("EngineVersion"))
        if self._get_param("CacheParameterGroupName"):
            g.parameter_group = _pg(region, self._get_param("CacheParameterGroupName"))["name"]
        if self._get_param("PreferredMaintenanceWindow"):
            g.maintenance_window = self._get_param("PreferredMaintenanceWindow")
        if self._get_param("AutoMinorVersionUpgrade") is not None:
            g.auto_minor = str(self._get_param("AutoMinorVersionUpgrade")).lower() == "true"
        to_add = list(self._get_param("UserGroupIdsToAdd", []) or [])
        to_remove = list(self._get_param("UserGroupIdsToRemove", []) or [])
        token = self._get_param("AuthToken")
        strategy = self._get_param("AuthTokenUpdateStrategy") or ("ROTATE" if token else "")
        for ug in to_add:
            if ug not in region.user_groups:
                raise _error("UserGroupNotFound", f"User group {ug} not found.", 404)
        if strategy == "DELETE":
            if not to_add and not g.user_groups:
                raise _error("InvalidParameterCombination",
                             "AuthTokenUpdateStrategy DELETE is allowed only when adding a user group.")
            g.auth_token = ""
        elif token:
            if to_add:
                raise _error("InvalidParameterCombination", "AuthToken and user groups are exclusive.")
            g.auth_token, g.user_groups = token, []
        g.user_groups = [u for u in g.user_groups if u not in to_remove] + [u for u in to_add if u not in g.user_groups]
        g.status, g.next_status = "modifying", "available"
        return ActionResult({"ReplicationGroup": _group_view(self, g)})


def delete_replication_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    _take_injected("DeleteReplicationGroup")
    region = _region(self)
    with _lock:
        g = _group(region, self._get_param("ReplicationGroupId"))
        g.status, g.gone_next = "deleting", True
        return ActionResult({"ReplicationGroup": _group_view(self, g)})


def _available_group(resp: Any, action: str) -> tuple[_Region, _Group]:
    """The region and the ``available`` group a resize ``action`` names (``ReplicationGroupNotFoundFault``,
    ``InvalidReplicationGroupState``; ``ApplyImmediately`` must be true: ``InvalidParameterValue``)."""
    _take_injected(action)
    region = _region(resp)
    g = _group(region, resp._get_param("ReplicationGroupId"))
    if str(resp._get_param("ApplyImmediately")).lower() != "true":
        raise _error("InvalidParameterValue", "ApplyImmediately must be true.")
    if g.status != "available":
        raise _error("InvalidReplicationGroupState", f"Replication group {g.ident} is not available.")
    return region, g


def modify_replication_group_shard_configuration(self: Any) -> Any:
    """Online resharding: add shards (as many replicas as the first one) or remove the named ones."""
    from moto.core.responses import ActionResult

    with _lock:
        _, g = _available_group(self, "ModifyReplicationGroupShardConfiguration")
        if not g.cluster:
            raise _error("InvalidParameterCombination",
                         f"Replication group {g.ident} is not in cluster mode: it cannot be resharded.")
        count = int(self._get_param("NodeGroupCount") or 0)
        if count > MAX_SHARDS:
            raise _error("NodeGroupsPerReplicationGroupQuotaExceeded",
                         f"A replication group has at most {MAX_SHARDS} node groups.")
        if count < 1:
            raise _error("InvalidParameterValue", "NodeGroupCount must be at least 1.")
        current = len(g.node_groups)
        if count == current:
            raise _error("InvalidParameterValue", f"Replication group {g.ident} already has {count} node groups.")
        ids = [ng.ident for ng in g.node_groups]
        remove = [str(i) for i in self._get_param("NodeGroupsToRemove", []) or []]
        retain = [str(i) for i in self._get_param("NodeGroupsToRetain", []) or []]
        if count < current:
            if bool(remove) == bool(retain):
                raise _error("InvalidParameterCombination",
                             "Reducing node groups needs either NodeGroupsToRemove or NodeGroupsToRetain.")
            gone = remove or [i for i in ids if i not in retain]
            if any(i not in ids for i in remove + retain) or len(set(gone)) != current - count:
                raise _error("InvalidParameterValue",
                             f"The node groups to remove must be {current - count} of {', '.join(ids)}.")
            g.node_groups = [ng for ng in g.node_groups if ng.ident not in gone]
        else:
            for _ in range(count - current):
                g.add_shard(len(g.node_groups[0].members) - 1)
        g.status, g.next_status = "modifying", "available"
        return ActionResult({"ReplicationGroup": _group_view(self, g)})


def _new_replica_count(resp: Any, g: _Group) -> int:
    if resp._get_param("ReplicaConfiguration"):
        raise _error("InvalidParameterValue", "ReplicaConfiguration is not supported here: use NewReplicaCount.")
    value = resp._get_param("NewReplicaCount")
    if value is None:
        raise _error("InvalidParameterCombination", "Either NewReplicaCount or ReplicaConfiguration is required.")
    count = int(value)
    if not 0 <= count <= MAX_REPLICAS:
        raise _error("InvalidParameterValue", f"NewReplicaCount must be between 0 and {MAX_REPLICAS}.")
    return count


def _replica_counts(g: _Group) -> list[int]:
    return [len(ng.members) - 1 for ng in g.node_groups]


def increase_replica_count(self: Any) -> Any:
    """Add replicas to every shard up to ``NewReplicaCount``."""
    from moto.core.responses import ActionResult

    with _lock:
        _, g = _available_group(self, "IncreaseReplicaCount")
        count = _new_replica_count(self, g)
        if all(c == count for c in _replica_counts(g)):
            raise _error("NoOperationFault", f"Replication group {g.ident} already has {count} replicas per shard.")
        if any(c > count for c in _replica_counts(g)):
            raise _error("InvalidParameterValue", "NewReplicaCount must not be lower than the current replica count.")
        for ng in g.node_groups:
            g.add_members(ng, count + 1 - len(ng.members))
        g.status, g.next_status = "modifying", "available"
        return ActionResult({"ReplicationGroup": _group_view(self, g)})


def decrease_replica_count(self: Any) -> Any:
    """Remove replicas: the named ``ReplicasToRemove``, or every shard's last ones down to ``NewReplicaCount``."""
    from moto.core.responses import ActionResult

    with _lock:
        _, g = _available_group(self, "DecreaseReplicaCount")
        named = [str(m) for m in self._get_param("ReplicasToRemove", []) or []]
        if named:
            replicas = {m for ng in g.node_groups for m in ng.members[1:]}
            if any(m not in replicas for m in named):
                raise _error("InvalidParameterValue", "ReplicasToRemove names a primary or an unknown member.")
            for ng in g.node_groups:
                ng.members = [m for m in ng.members if m not in named]
        else:
            count = _new_replica_count(self, g)
            if all(c == count for c in _replica_counts(g)):
                raise _error("NoOperationFault",
                             f"Replication group {g.ident} already has {count} replicas per shard.")
            if any(c < count for c in _replica_counts(g)):
                raise _error("InvalidParameterValue",
                             "NewReplicaCount must not be higher than the current replica count.")
            if count < 1 and g.failover and not g.cluster:
                raise _error("InvalidParameterCombination",
                             "Automatic failover requires at least one read replica.")
            for ng in g.node_groups:
                ng.members = ng.members[:count + 1]
        g.status, g.next_status = "modifying", "available"
        return ActionResult({"ReplicationGroup": _group_view(self, g)})


def _cluster_view(g: _Group, ident: str) -> dict[str, Any]:
    return {"CacheClusterId": ident, "ReplicationGroupId": g.ident, "CacheNodeType": g.node_type,
            "Engine": "redis", "EngineVersion": g.engine_version, "CacheClusterStatus": g.status,
            "NumCacheNodes": 1, "CacheSubnetGroupName": g.subnet_group,
            "CacheParameterGroup": {"CacheParameterGroupName": g.parameter_group, "ParameterApplyStatus": "in-sync"},
            "AutoMinorVersionUpgrade": g.auto_minor, "PreferredMaintenanceWindow": g.maintenance_window}


def describe_cache_clusters(self: Any) -> Any:
    """One member cluster (``CacheClusterNotFound``), or every member of the region a page at a time
    (``MaxRecords`` 20-100, default 100; ``Marker``)."""
    from moto.core.responses import ActionResult

    region, ident = _region(self), self._get_param("CacheClusterId")
    with _lock:
        if not ident:
            every = [_cluster_view(g, m) for g in region.groups.values() for m in g.members]
            size = int(self._get_param("MaxRecords") or 100)
            if not 20 <= size <= 100:
                raise _error("InvalidParameterValue", "MaxRecords must be between 20 and 100.")
            start = int(self._get_param("Marker") or 0)
            page: dict[str, Any] = {"CacheClusters": every[start:start + size]}
            if start + size < len(every):
                page["Marker"] = str(start + size)
            return ActionResult(page)
        for g in region.groups.values():
            if ident in g.members:
                return ActionResult({"CacheClusters": [_cluster_view(g, ident)]})
        raise _error("CacheClusterNotFound", f"Cache cluster {ident} not found.", 404)


def create_user_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, ident = _action_target(self, "CreateUserGroup", "UserGroupId")
    with _lock:
        _check_new(region.user_groups, ident, "UserGroupAlreadyExists", "User group")
        region.user_groups[ident] = {"UserGroupId": ident, "Status": "active", "Engine": "redis",
                                     "UserIds": list(self._get_param("UserIds", []) or []),
                                     "ARN": _arn(self, "usergroup", ident)}
        return ActionResult(region.user_groups[ident])


def describe_user_groups(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, ident = _region(self), self._get_param("UserGroupId")
    with _lock:
        return ActionResult({"UserGroups": _one_or_all(region.user_groups, ident, "UserGroupNotFound", "User group")})


def delete_user_group(self: Any) -> Any:
    from moto.core.responses import ActionResult

    region, ident = _action_target(self, "DeleteUserGroup", "UserGroupId")
    with _lock:
        _check_deletable(region.user_groups, ident, "UserGroupNotFound", "User group",
                         any(ident in g.user_groups for g in region.groups.values()), "InvalidUserGroupState")
        return ActionResult(region.user_groups.pop(ident))


_ACTIONS = (create_cache_subnet_group, describe_cache_subnet_groups, delete_cache_subnet_group,
            create_cache_parameter_group, describe_cache_parameter_groups, delete_cache_parameter_group,
            describe_cache_parameters, modify_cache_parameter_group, describe_engine_default_parameters,
            create_replication_group, describe_replication_groups, modify_replication_group,
            delete_replication_group, modify_replication_group_shard_configuration, increase_replica_count,
            decrease_replica_count, describe_cache_clusters, create_user_group, describe_user_groups,
            delete_user_group)


def install() -> None:
    """Give moto's ElastiCache responder the actions of this module (idempotent; every moto server or
    ``mock_aws`` of this process answers them)."""
    global _installed
    from moto.elasticache.responses import ElastiCacheResponse

    with _lock:
        if _installed:
            return
        for action in _ACTIONS:
            setattr(ElastiCacheResponse, action.__name__, action)
        _installed = True
