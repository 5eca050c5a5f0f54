"""The RedisInstance flow's AWS calls: ElastiCache (replication group, subnet and parameter groups, the
user group's auth token), Secrets Manager and the EC2 security group, as cloud-manager's
``pkg/kcp/provider/aws/client/elastiCacheClient.go``; clients, credentials, timeouts and errors are
:mod:`tasks.cloud.aws.client`'s (every failure an ``AwsError``, ``fencing.check`` before a write)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import botocore.exceptions

import fencing
from tasks.cloud.aws import client as layer
from tasks.cloud.settings import CloudSettings

__all__ = ["ElastiCache", "elasticache_for", "layer_for"]

E = TypeVar("E", bound="ElastiCache")


@layer._guarded
def elasticache_for(settings: CloudSettings, account: str, region: str) -> ElastiCache:
    """The ElastiCache layer (with Secrets Manager and EC2) for ``account`` in ``region``."""
    return layer_for(ElastiCache, settings, account, region)


def layer_for(cls: type[E], settings: CloudSettings, account: str, region: str) -> E:
    """A ``cls`` (:class:`ElastiCache` or a subclass) over the ElastiCache, Secrets Manager and EC2 clients
    of ``account`` in ``region`` (credentials as :mod:`tasks.cloud.aws.client`'s; unguarded: the caller is)."""
    key, secret, token = layer._credentials(settings, account, region)

    def clients(service: str) -> Callable[[float], Any]:
        return lambda timeout: layer._client(service, region, key, secret, token, settings.aws_endpoint_url, timeout)

    return cls(clients("elasticache"), clients("secretsmanager"), clients("ec2"))


def _ec_tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _params(found: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {str(p.get("ParameterName")): str(p.get("ParameterValue") or "") for p in found}


@layer._guard_methods
class ElastiCache(layer._SecurityGroups):
    """ElastiCache, Secrets Manager and EC2 calls of the RedisInstance flow (as cloud-manager's
    ``pkg/kcp/provider/aws/client/elastiCacheClient.go``). Reads answer ``None`` for a missing object;
    writes call :func:`fencing.check` first. Raises :class:`AwsError` (and :class:`fencing.FenceError`).

    Args:
        elasticache, secrets, ec2: the boto3 clients for a per-attempt timeout in seconds.
    """

    def __init__(self, elasticache: Callable[[float], Any], secrets: Callable[[float], Any],
                 ec2: Callable[[float], Any]) -> None:
        self._clients = {"elasticache": elasticache, "secretsmanager": secrets, "ec2": ec2}

    def _c(self, service: str, write: bool = False) -> Any:
        if write:
            fencing.check()
        return self._clients[service](layer.attempt_timeout(write))

    def _ec2(self, write: bool = False) -> Any:
        return self._c("ec2", write)

    def _maybe(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except botocore.exceptions.ClientError as exc:
            if layer.is_not_found(exc) or layer.error_code(exc).endswith(("NotFound", "NotFoundFault")):
                return None
            raise

    # ---- reads ---------------------------------------------------------------------------------

    def subnet_group(self, name: str) -> dict[str, Any] | None:
        found = self._maybe(lambda: self._c("elasticache").describe_cache_subnet_groups(CacheSubnetGroupName=name))
        return dict(found["CacheSubnetGroups"][0]) if found and found.get("CacheSubnetGroups") else None

    def parameter_group(self, name: str) -> dict[str, Any] | None:
        """``{"name", "family", "params", "defaults"}`` of a parameter group, or ``None``."""
        found = self._maybe(lambda: self._c("elasticache").describe_cache_parameter_groups(
            CacheParameterGroupName=name))
        if not found or not found.get("CacheParameterGroups"):
            return None
        fam = str(found["CacheParameterGroups"][0].get("CacheParameterGroupFamily") or "")
        pages = self._c("elasticache").get_paginator("describe_cache_parameters").paginate(
            CacheParameterGroupName=name)
        params = _params([p for page in pages for p in page.get("Parameters") or []])
        defaults_pages = self._c("elasticache").get_paginator("describe_engine_default_parameters").paginate(
            CacheParameterGroupFamily=fam)
        defaults = _params([p for page in defaults_pages for p in (page.get("EngineDefaults") or {}).get(
            "Parameters") or []])
        return {"name": name, "family": fam, "params": params, "defaults": defaults}

    def auth_token(self, name: str) -> str | None:
        found = self._maybe(lambda: self._c("secretsmanager").get_secret_value(SecretId=name))
        return str(found.get("SecretString") or "") if found else None

    def user_group(self, name: str) -> dict[str, Any] | None:
        found = self._maybe(lambda: self._c("elasticache").describe_user_groups(UserGroupId=name))
        return dict(found["UserGroups"][0]) if found and found.get("UserGroups") else None

    def replication_group(self, name: str) -> dict[str, Any] | None:
        found = self._maybe(lambda: self._c("elasticache").describe_replication_groups(ReplicationGroupId=name))
        return dict(found["ReplicationGroups"][0]) if found and found.get("ReplicationGroups") else None

    def members(self, ids: Sequence[str], group: str = "") -> list[dict[str, Any]]:
        """The member clusters ``ids`` (``CacheClusters``), each described (``group``: the replication
        group's name, for the cluster layer's listing)."""
        out: list[dict[str, Any]] = []
        client = self._c("elasticache")
        for ident in ids:
            found = self._maybe(partial(client.describe_cache_clusters, CacheClusterId=ident))
            out += [dict(c) for c in (found or {}).get("CacheClusters") or []]
        return out

    # ---- writes --------------------------------------------------------------------------------

    def create_subnet_group(self, name: str, subnet_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        self._c("elasticache", True).create_cache_subnet_group(
            CacheSubnetGroupName=name, CacheSubnetGroupDescription="ElastiCache managed by Kyma Cloud Manager",
            SubnetIds=list(subnet_ids), Tags=_ec_tags(tags))

    def delete_subnet_group(self, name: str) -> None:
        self._maybe(lambda: self._c("elasticache", True).delete_cache_subnet_group(CacheSubnetGroupName=name))

    def create_parameter_group(self, name: str, family: str, tags: Mapping[str, str]) -> None:
        self._c("elasticache", True).create_cache_parameter_group(
            CacheParameterGroupName=name, CacheParameterGroupFamily=family,
            Description="Parameter group managed by Kyma Cloud Manager", Tags=_ec_tags(tags))

    def modify_parameter_group(self, name: str, parameters: Mapping[str, str]) -> None:
        items = [{"ParameterName": k, "ParameterValue": v} for k, v in sorted(parameters.items())]
        client = self._c("elasticache", True)
        for start in range(0, len(items), 20):  # ModifyCacheParameterGroup takes at most 20 at a time
            client.modify_cache_parameter_group(CacheParameterGroupName=name,
                                                ParameterNameValues=items[start:start + 20])

    def delete_parameter_group(self, name: str) -> None:
        self._maybe(lambda: self._c("elasticache", True).delete_cache_parameter_group(CacheParameterGroupName=name))

    def create_auth_token(self, name: str, token: str, tags: Mapping[str, str]) -> None:
        self._c("secretsmanager", True).create_secret(Name=name, SecretString=token, Tags=_ec_tags(tags))

    def delete_auth_token(self, name: str) -> None:
        self._maybe(lambda: self._c("secretsmanager", True).delete_secret(SecretId=name,
                                                                          ForceDeleteWithoutRecovery=True))

    def create_user_group(self, name: str, tags: Mapping[str, str]) -> None:
        self._c("elasticache", True).create_user_group(UserGroupId=name, Engine="redis", UserIds=["default"],
                                                       Tags=_ec_tags(tags))

    def delete_user_group(self, name: str) -> None:
        self._maybe(lambda: self._c("elasticache", True).delete_user_group(UserGroupId=name))

    def create_replication_group(self, name: str, subnet_group: str, parameter_group: str, node_type: str,
                                 engine_version: str, auto_minor: bool, auth_token: str | None,
                                 maintenance_window: str | None, security_groups: Sequence[str], replicas: int,
                                 failover: bool, tags: Mapping[str, str]) -> None:
        """``CreateReplicationGroup``: one shard, cluster mode off, encrypted in transit and at rest."""
        self._create_group(name, subnet_group, parameter_group, node_type, engine_version, auto_minor, auth_token,
                           maintenance_window, security_groups, 1, replicas, "disabled", failover, tags)

    def _create_group(self, name: str, subnet_group: str, parameter_group: str, node_type: str, engine_version: str,
                      auto_minor: bool, auth_token: str | None, maintenance_window: str | None,
                      security_groups: Sequence[str], shards: int, replicas: int, cluster_mode: str, failover: bool,
                      tags: Mapping[str, str]) -> None:
        """``CreateReplicationGroup`` of ``shards`` node groups of ``replicas`` replicas, ``ClusterMode``
        ``cluster_mode`` (``enabled`` / ``disabled``), encrypted in transit and at rest."""
        options: dict[str, Any] = {
            "ReplicationGroupId": name, "ReplicationGroupDescription": "ElastiCache managed by Kyma Cloud Manager",
            "CacheSubnetGroupName": subnet_group, "CacheParameterGroupName": parameter_group,
            "CacheNodeType": node_type, "NumNodeGroups": shards, "ClusterMode": cluster_mode, "Engine": "redis",
            "EngineVersion": engine_version, "AutoMinorVersionUpgrade": auto_minor, "TransitEncryptionEnabled": True,
            "AtRestEncryptionEnabled": True, "SecurityGroupIds": list(security_groups),
            "AutomaticFailoverEnabled": failover, "ReplicasPerNodeGroup": replicas, "Tags": _ec_tags(tags)}
        if auth_token:
            options["AuthToken"] = auth_token
        if maintenance_window:
            options["PreferredMaintenanceWindow"] = maintenance_window
        self._c("elasticache", True).create_replication_group(**options)

    def modify_replication_group(self, name: str, node_type: str | None = None, engine_version: str | None = None,
                                 maintenance_window: str | None = None, auto_minor: bool | None = None,
                                 auth_token: str | None = None, user_groups_add: Sequence[str] = (),
                                 user_groups_remove: Sequence[str] = (), parameter_group: str | None = None) -> None:
        """``ModifyReplicationGroup`` applied immediately with the given changes (attaching user groups
        drops the token: ``AuthTokenUpdateStrategy=DELETE``)."""
        options: dict[str, Any] = {"ReplicationGroupId": name, "ApplyImmediately": True}
        for key, value in (("CacheNodeType", node_type), ("EngineVersion", engine_version),
                           ("PreferredMaintenanceWindow", maintenance_window),
                           ("AutoMinorVersionUpgrade", auto_minor), ("AuthToken", auth_token),
                           ("CacheParameterGroupName", parameter_group)):
            if value is not None:
                options[key] = value
        if user_groups_add:
            options["UserGroupIdsToAdd"] = list(user_groups_add)
            options["AuthTokenUpdateStrategy"] = "DELETE"
        if user_groups_remove:
            options["UserGroupIdsToRemove"] = list(user_groups_remove)
        self._c("elasticache", True).modify_replication_group(**options)

    def delete_replication_group(self, name: str) -> None:
        self._maybe(lambda: self._c("elasticache", True).delete_replication_group(
            ReplicationGroupId=name, RetainPrimaryCluster=False))
