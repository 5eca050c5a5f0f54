"""Memorystore for Redis Cluster (``redis.googleapis.com/v1`` clusters) inside the GCP stand-in
(:mod:`standins.gcp`).

The REST surface ``google-cloud-redis-cluster``'s ``CloudRedisClusterClient`` (transport ``rest``) uses,
as documented in the Memorystore for Redis Cluster v1 reference:

- ``POST /v1/projects/{p}/locations/{l}/clusters?clusterId=`` (create), ``GET`` (list),
  ``GET|DELETE /v1/projects/{p}/locations/{l}/clusters/{id}``,
  ``PATCH /v1/projects/{p}/locations/{l}/clusters/{id}?updateMask=`` (one of ``shardCount``,
  ``replicaCount``, ``nodeType``, ``redisConfigs`` per request, as Google takes them; snake_case paths
  are accepted too),
- ``GET /v1/projects/{p}/locations/{l}/clusters/{id}/certificateAuthority`` (``managedServerCa.caCerts
  [].certificates``; only with transit encryption ``SERVER_AUTHENTICATION``, else 400),
- ``GET /v1/projects/{p}/locations/{l}/operations/{id}`` of the clusters' operations.

Every write is a long-running operation that finishes ``op_delay`` seconds after it starts: a cluster is
``CREATING`` -> ``ACTIVE``, ``UPDATING`` -> ``ACTIVE``, ``DELETING`` -> gone. Validation as Google's:
``shardCount`` 1-250, ``replicaCount`` 0-2, a known ``nodeType``, one ``pscConfigs[].network``
(``projects/{p}/global/networks/{n}``); ``deletionProtectionEnabled`` refuses a delete (400). A write
while an operation runs is 400 ``FAILED_PRECONDITION``; a missing cluster 404 ``NOT_FOUND``; a taken id
409 ``ALREADY_EXISTS``. An ``ACTIVE`` cluster has ``discoveryEndpoints`` (``address``, ``port`` 6379,
``pscConfig``), ``pscConnections`` and ``sizeGb`` (shards x (1 + replicas) x the node type's size). The
endpoint's address is allocated, as Memorystore does, from the subnetworks of the service connection policy
(service class ``gcp-memorystore-redis``) of the cluster's network and region (:attr:`ClusterState.psc_ranges`,
wired by :class:`standins.gcp.GcpStandIn` to its policies and subnetworks); without one a create is 400
``FAILED_PRECONDITION`` (the stand-in refuses at once where Google fails the operation).
Enums arrive as numbers (``$alt=json;enum-encoding=int``) and are stored and answered by name.
"""

from __future__ import annotations

import copy
import ipaddress
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from standins.memorystore import Error, enum_names, finish_due, mask_paths

__all__ = ["CA_CERT", "SERVICE_CLASS", "ClusterState", "Error", "route"]

CA_CERT = "-----BEGIN CERTIFICATE-----\nMIIBstandinMemorystoreClusterCA\n-----END CERTIFICATE-----\n"
#: The service class of the service connection policy that lets a cluster into a network.
SERVICE_CLASS = "gcp-memorystore-redis"
#: Node type -> GB of one node (Google's table).
NODE_GB = {"REDIS_SHARED_CORE_NANO": 1.4, "REDIS_STANDARD_SMALL": 6.5, "REDIS_HIGHMEM_MEDIUM": 13.0,
           "REDIS_HIGHMEM_XLARGE": 58.0, "REDIS_HIGHCPU_MEDIUM": 13.0, "REDIS_STANDARD_LARGE": 52.0,
           "REDIS_HIGHMEM_2XLARGE": 116.0}
#: Patchable fields (camelCase) and their snake_case mask spellings.
MUTABLE = {"shardCount": "shardCount", "shard_count": "shardCount", "replicaCount": "replicaCount",
           "replica_count": "replicaCount", "nodeType": "nodeType", "node_type": "nodeType",
           "redisConfigs": "redisConfigs", "redis_configs": "redisConfigs"}
_NETWORK = re.compile(r"^projects/[^/]+/global/networks/[^/]+$")

_ENUMS: dict[str, dict[int, str]] = {
    "state": {1: "CREATING", 2: "ACTIVE", 3: "UPDATING", 4: "DELETING"},
    "nodeType": {1: "REDIS_SHARED_CORE_NANO", 2: "REDIS_HIGHMEM_MEDIUM", 3: "REDIS_HIGHMEM_XLARGE",
                 4: "REDIS_STANDARD_SMALL", 7: "REDIS_HIGHCPU_MEDIUM", 8: "REDIS_STANDARD_LARGE",
                 9: "REDIS_HIGHMEM_2XLARGE"},
    "authorizationMode": {1: "AUTH_MODE_IAM_AUTH", 2: "AUTH_MODE_DISABLED", 3: "AUTH_MODE_TOKEN_AUTH"},
    "transitEncryptionMode": {1: "TRANSIT_ENCRYPTION_MODE_DISABLED",
                              2: "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION"}}
_NESTED_ENUMS: dict[str, dict[int, str]] = {
    "persistenceConfig": {1: "DISABLED", 2: "RDB", 3: "AOF"},
    "zoneDistributionConfig": {1: "MULTI_ZONE", 2: "SINGLE_ZONE"}}


def _names(body: Any) -> Any:
    """``body`` with numeric enums as their names."""
    if not isinstance(body, dict):
        return body
    out = enum_names(body, _ENUMS)
    for key, values in _NESTED_ENUMS.items():
        nested = out.get(key)
        if isinstance(nested, dict) and isinstance(nested.get("mode"), int):
            out[key] = {**nested, "mode": values.get(nested["mode"], str(nested["mode"]))}
    return out


@dataclass
class _Op:
    name: str
    done_at: float
    apply: Any
    target: str
    verb: str
    done: bool = False


@dataclass
class ClusterState:
    """The clusters and their operations (guarded by the GCP stand-in's lock).

    Attributes:
        op_delay: seconds an operation runs.
        clusters: full name -> the cluster (camelCase, enum names).
        ops: operation name -> operation.
    """

    op_delay: float = 0.05
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    ops: dict[str, _Op] = field(default_factory=dict)
    #: ``(project, region, network path) -> the CIDRs of the subnetworks`` the service connection policy of
    #: service class :data:`SERVICE_CLASS` names (``[]``: no policy); the GCP stand-in wires its own.
    psc_ranges: Callable[[str, str, str], list[str]] = lambda project, region, network: []
    #: cluster name -> the PSC address it holds (from create until it is gone).
    addresses: dict[str, str] = field(default_factory=dict)

    def advance(self) -> None:
        """Finish every operation whose time has come."""
        finish_due(self.ops.values())

    def _op(self, target: str, verb: str, apply: Any) -> dict[str, Any]:
        parent = target.split("/clusters/", 1)[0]
        name = f"{parent}/operations/operation-cluster-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        self.ops[name] = _Op(name, time.monotonic() + self.op_delay, apply, target, verb)
        self.advance()
        return self.operation(name)

    def owns_operation(self, name: str) -> bool:
        """Whether the operation ``name`` is a cluster's."""
        return name in self.ops

    def operation(self, name: str) -> dict[str, Any]:
        """The operation ``name`` in the One Platform shape (``metadata`` an ``OperationMetadata``)."""
        self.advance()
        op = self.ops.get(name)
        if op is None:
            raise Error(404, f"Operation {name} not found.", "NOT_FOUND")
        out: dict[str, Any] = {"name": op.name, "done": op.done, "metadata": {
            "@type": "type.googleapis.com/google.cloud.redis.cluster.v1.OperationMetadata",
            "target": op.target, "verb": op.verb}}
        if op.done:  # create / update: the Cluster as it is now; delete: Empty
            found = self.clusters.get(op.target)
            out["response"] = {"@type": "type.googleapis.com/google.protobuf.Empty"} if op.verb == "delete" or \
                found is None else {"@type": "type.googleapis.com/google.cloud.redis.cluster.v1.Cluster",
                                    **copy.deepcopy(found)}
        return out

    # ---- clusters ----------------------------------------------------------------------------------

    def _find(self, name: str) -> dict[str, Any]:
        found = self.clusters.get(name)
        if found is None:
            raise Error(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return found

    def get(self, name: str) -> dict[str, Any]:
        self.advance()
        return copy.deepcopy(self._find(name))

    def list_clusters(self, parent: str) -> dict[str, Any]:
        self.advance()
        return {"clusters": [copy.deepcopy(c) for n, c in sorted(self.clusters.items())
                             if n.startswith(f"{parent}/clusters/")]}

    @staticmethod
    def _check(shards: Any, replicas: Any, node_type: Any) -> list[str]:
        problems = []
        if not isinstance(shards, int) or not 1 <= shards <= 250:
            problems.append("shard_count must be between 1 and 250")
        if not isinstance(replicas, int) or not 0 <= replicas <= 2:
            problems.append("replica_count must be between 0 and 2")
        if node_type not in NODE_GB:
            problems.append(f"Invalid node_type {node_type}")
        return problems

    def _address(self, project: str, region: str, network: str) -> str:
        """The PSC endpoint address of a new cluster on ``network``: the first free address of the subnetworks
        its service connection policy names (:attr:`psc_ranges`), as Memorystore takes it; Google keeps the
        first two and the last two of a subnetwork. Raises :class:`Error` 400 ``FAILED_PRECONDITION`` when
        no policy lets the cluster in, or its subnetworks are full."""
        ranges = self.psc_ranges(project, region, network)
        if not ranges:
            raise Error(400, f"No service connection policy for network {network} in region {region} with "
                             f"service class {SERVICE_CLASS}", "FAILED_PRECONDITION")
        taken = set(self.addresses.values())
        for cidr in ranges:
            net = ipaddress.ip_network(cidr, strict=False)
            first, last = int(net.network_address) + 2, int(net.broadcast_address) - 2
            for value in range(first, last + 1):
                candidate = str(ipaddress.ip_address(value))
                if candidate not in taken:
                    return candidate
        raise Error(400, f"The service connection policy's subnetworks {', '.join(ranges)} have no free address",
                    "FAILED_PRECONDITION")

    def _size(self, cluster: dict[str, Any]) -> None:
        gb = NODE_GB.get(str(cluster.get("nodeType")), 0.0)
        precise = gb * int(cluster["shardCount"]) * (1 + int(cluster["replicaCount"]))
        cluster.update(preciseSizeGb=round(precise, 1), sizeGb=int(precise))

    def create(self, parent: str, cluster_id: str, body: Any) -> dict[str, Any]:
        """``CreateCluster``: the cluster ``CREATING``, ``ACTIVE`` with its endpoints once done."""
        self.advance()
        if not isinstance(body, dict) or not re.fullmatch(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?", cluster_id or ""):
            raise Error(400, "cluster_id must be 1-63 lower case letters, digits or hyphens, starting with a "
                             "letter", "INVALID_ARGUMENT")
        name = f"{parent}/clusters/{cluster_id}"
        if name in self.clusters:
            raise Error(409, f"Resource '{name}' already exists", "ALREADY_EXISTS")
        shards = int(body.get("shardCount") or 0)
        replicas = int(body.get("replicaCount") or 0)
        node_type = body.get("nodeType") or "REDIS_HIGHMEM_MEDIUM"
        problems = self._check(shards, replicas, node_type)
        psc = body.get("pscConfigs") or []
        if len(psc) != 1 or not isinstance(psc[0], dict) or not _NETWORK.match(str(psc[0].get("network") or "")):
            problems.append("psc_configs must name exactly one network projects/{project}/global/networks/{network}")
        configs = body.get("redisConfigs") or {}
        if not isinstance(configs, dict) or not all(isinstance(v, str) for v in configs.values()):
            problems.append("redis_configs must map names to strings")
        if problems:
            raise Error(400, "; ".join(problems), "INVALID_ARGUMENT")
        transit = body.get("transitEncryptionMode") or "TRANSIT_ENCRYPTION_MODE_DISABLED"
        network = str(psc[0]["network"])
        project, region = parent.split("/")[1], parent.split("/")[3]
        address = self._address(project, region, network)
        cluster: dict[str, Any] = {
            "name": name, "uid": str(uuid.uuid4()),
            "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "state": "CREATING",
            "shardCount": shards, "replicaCount": replicas, "nodeType": node_type,
            "authorizationMode": body.get("authorizationMode") or "AUTH_MODE_DISABLED",
            "transitEncryptionMode": transit, "pscConfigs": [{"network": network}],
            "redisConfigs": dict(configs),
            "persistenceConfig": body.get("persistenceConfig") or {"mode": "DISABLED"},
            "zoneDistributionConfig": body.get("zoneDistributionConfig") or {"mode": "MULTI_ZONE"},
            "deletionProtectionEnabled": bool(body.get("deletionProtectionEnabled"))}
        self._size(cluster)
        self.clusters[name] = cluster
        self.addresses[name] = address

        def active() -> None:
            target = self.clusters.get(name)
            if target is None:
                return
            target.update(state="ACTIVE", discoveryEndpoints=[
                {"address": address, "port": 6379, "pscConfig": {"network": network}}],
                pscConnections=[{"pscConnectionId": f"{uuid.uuid4().int % 10**18}", "address": address,
                                 "forwardingRule": f"projects/{project}/regions/{region}/"
                                                   f"forwardingRules/ssc-auto-fr-{uuid.uuid4().hex[:6]}",
                                 "projectId": project, "network": network}])

        return self._op(name, "create", active)

    def patch(self, name: str, mask: str, body: Any) -> dict[str, Any]:
        """``UpdateCluster`` of one field of :data:`MUTABLE` (``updateMask``)."""
        self.advance()
        found = self._find(name)
        paths = mask_paths(mask, body, MUTABLE)
        fields = sorted({MUTABLE[p] for p in paths})
        if len(fields) > 1:
            raise Error(400, "Only one of shard_count, replica_count, node_type, redis_configs can be updated at "
                             "a time", "INVALID_ARGUMENT")
        if found["state"] != "ACTIVE":
            raise Error(400, f"Cluster {name} is in state {found['state']}: an operation is in progress",
                        "FAILED_PRECONDITION")
        key = fields[0]
        value = copy.deepcopy(body.get(key))
        if key == "redisConfigs":
            value = value or {}
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise Error(400, "redis_configs must map names to strings", "INVALID_ARGUMENT")
        else:
            value = value if key == "nodeType" else int(value or 0)
            problems = self._check(*(value if key == k else found[k] for k in ("shardCount", "replicaCount",
                                                                                 "nodeType")))
            if problems:
                raise Error(400, "; ".join(problems), "INVALID_ARGUMENT")
        found["state"] = "UPDATING"

        def apply() -> None:
            target = self.clusters.get(name)
            if target is None:
                return
            target[key] = value
            self._size(target)
            target["state"] = "ACTIVE"

        return self._op(name, "update", apply)

    def delete(self, name: str) -> dict[str, Any]:
        """``DeleteCluster``: ``DELETING``, gone once done."""
        self.advance()
        found = self._find(name)
        if found.get("deletionProtectionEnabled"):
            raise Error(400, f"Cluster {name} has deletion protection enabled", "FAILED_PRECONDITION")
        if found["state"] == "DELETING":
            raise Error(400, f"Cluster {name} is being deleted", "FAILED_PRECONDITION")
        found["state"] = "DELETING"

        def apply() -> None:
            self.clusters.pop(name, None)
            self.addresses.pop(name, None)

        return self._op(name, "delete", apply)

    def certificate_authority(self, name: str) -> dict[str, Any]:
        """``GetClusterCertificateAuthority``: the managed server CA (transit encryption on)."""
        found = self.get(name)
        if found.get("transitEncryptionMode") != "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION":
            raise Error(400, f"Cluster {name} does not have in-transit encryption enabled", "FAILED_PRECONDITION")
        return {"name": f"{name}/certificateAuthority",
                "managedServerCa": {"caCerts": [{"certificates": [CA_CERT]}]}}


def route(state: ClusterState, method: str, parts: list[str], query: dict[str, str],
          body: Any) -> tuple[int, Any] | None:
    """The answer of a clusters request (``parts``: the path's segments), ``None`` for other paths (the
    operations of instances, Filestore's...). Raises :class:`Error`."""
    if len(parts) < 6 or parts[:2] != ["v1", "projects"] or parts[3] != "locations":
        return None
    parent = "/".join(parts[1:5])
    rest = parts[5:]
    if rest[0] == "operations" and len(rest) == 2 and method == "GET":
        name = f"{parent}/operations/{rest[1]}"
        return (200, state.operation(name)) if state.owns_operation(name) else None
    if rest[0] != "clusters":
        return None
    body = _names(body)
    if len(rest) == 1:
        if method == "POST":
            return 200, state.create(parent, query.get("clusterId", ""), body)
        if method == "GET":
            return 200, state.list_clusters(parent)
    elif len(rest) == 2 and ":" not in rest[1]:
        name = f"{parent}/clusters/{rest[1]}"
        if method == "GET":
            return 200, state.get(name)
        if method == "PATCH":
            return 200, state.patch(name, query.get("updateMask", ""), body)
        if method == "DELETE":
            return 200, state.delete(name)
    elif len(rest) == 3 and rest[2] == "certificateAuthority" and method == "GET":
        return 200, state.certificate_authority(f"{parent}/clusters/{rest[1]}")
    raise Error(404, f"The requested URL /{'/'.join(parts)} was not found on this server.", "NOT_FOUND")
