"""GCP stand-in: Compute global addresses, networks, regional subnetworks and their operations, Service
Networking connections and operations, Network Connectivity service connection policies and Cloud
Resource Manager ``projects.get``, on aiohttp, speaking the REST wire protocol the unmodified
``google-cloud-compute`` (transport ``rest``) and ``google-api-python-client`` clients use.

Served paths (one port for all three APIs; their paths do not collide):

- Compute v1 (``compute.googleapis.com``):
  ``POST|GET /compute/v1/projects/{p}/global/addresses`` (insert / list with ``filter``,
  ``maxResults``, ``pageToken``), ``GET|DELETE /compute/v1/projects/{p}/global/addresses/{name}``,
  ``GET|DELETE /compute/v1/projects/{p}/global/operations/{op}``,
  ``POST /compute/v1/projects/{p}/global/operations/{op}/wait``.
  Inserts and deletes answer a ``compute#operation`` whose ``id`` is a numeric string (the SDK parses
  ``id`` as uint64 and fails on anything else, as with ``gcplocal``). The address appears (or goes)
  when its operation is ``DONE``. Errors answer the JSON-API shape
  ``{"error": {"code", "message", "errors": [{"message", "domain", "reason"}]}}`` with the real
  reasons (``notFound``, ``alreadyExists``, ``invalid``, ``resourceInUseByAnotherResource``,
  ``rateLimitExceeded``, ``backendError``).
- Service Networking v1 (``servicenetworking.googleapis.com``):
  ``POST|GET /v1/services/{service}/connections`` (create / list, ``network`` query required),
  ``PATCH /v1/services/{service}/connections/{name}`` (``force``, ``updateMask``),
  ``POST /v1/services/{service}/connections/{name}`` (``deleteConnection``: ``consumerNetwork`` must
  name the project by *number*, as documented), ``GET /v1/operations/{id}``.
  Writes answer a long-running ``Operation`` (``{"name": "operations/...", "done": false}``), done
  after the operation delay with ``response`` or ``error`` (a ``google.rpc.Status``). Errors answer
  ``{"error": {"code", "message", "status"}}``.
- Compute v1 networks: ``POST|GET /compute/v1/projects/{p}/global/networks`` (insert / list),
  ``GET|DELETE .../networks/{name}``, ``POST .../networks/{name}/addPeering`` (``networkPeering{name,
  network, importCustomRoutes, exportCustomRoutes, exchangeSubnetRoutes}``) and ``.../removePeering``
  (``name``), each answering a ``compute#operation`` (``addPeering``/``removePeering``) after which the
  peering is there (gone). A peering is ``ACTIVE`` while the peer network has a peering back to this
  one, else ``INACTIVE`` (also when the peer network does not exist), as documented; a second add/remove
  while one of either network is running answers ``400`` ``There is a peering operation in progress on
  the local or peer network. Try again later.``, a duplicate name or peer network ``400 invalid``.
- Compute v1 regional subnetworks: ``POST|GET /compute/v1/projects/{p}/regions/{r}/subnetworks`` (insert /
  list), ``GET|DELETE .../subnetworks/{name}``, ``GET|DELETE /compute/v1/projects/{p}/regions/{r}/operations/{op}``
  and ``POST .../operations/{op}/wait``. An insert answers a region ``compute#operation`` and the
  subnetwork (``ipCidrRange``, ``gatewayAddress``, ``purpose``, ``privateIpGoogleAccess``, ``network`` and
  ``region`` as full URLs) exists once it is ``DONE``; its network must exist (404) and its range must not
  overlap another subnetwork's or a reserved (``VPC_PEERING``) address range of the network (400
  ``invalid``); a name taken in the region is 409. A delete is refused (400
  ``resourceInUseByAnotherResource``) while a service connection policy names the subnetwork; a network
  with subnetworks cannot be deleted.
- Compute v1 Cloud Routers and regional addresses, read only: ``GET /compute/v1/projects/{p}/regions/{r}/routers``
  and ``.../addresses`` (list with ``filter``, ``maxResults``, ``pageToken``; ``eq``/``ne`` take a regular
  expression matching the whole field, ``=``/``!=`` a literal) and ``GET .../routers/{name}``,
  ``.../addresses/{name}``. Routers and their Cloud NAT's auto-allocated IPs (regional ``EXTERNAL``
  addresses, purpose ``NAT_AUTO``, ``users`` the router) are seeded with :meth:`GcpState.put_router`.
- Network Connectivity v1 service connection policies (:mod:`standins.networkconnectivity`,
  ``GcpStandIn.connectivity``): ``/v1/projects/{p}/locations/{l}/serviceConnectionPolicies[/{id}]`` and
  their operations.
- Cloud Resource Manager v1: ``GET /v1/projects/{projectId}`` (``projectNumber`` of a known project).
- Cloud Resource Manager v3 tags: ``POST /v3/tagKeys`` (parent ``projects/{id or number}``; namespaced
  name ``{projectId}/{shortName}``), ``POST /v3/tagValues``, ``POST /v3/tagBindings`` (parent a network's
  full resource name ``//compute.googleapis.com/projects/{p}/global/networks/{id or name}``), each a
  long-running ``Operation`` whose ``response`` is the created resource; ``GET /v3/operations/{id}``;
  ``GET /v3/tagKeys/namespaced`` and ``/v3/tagValues/namespaced`` (``name``; unknown ``403``);
  ``GET /v3/effectiveTags?parent=...`` (the network's bound tags; unknown resources ``403``).
- Memorystore for Redis Cluster v1 (``redis.googleapis.com`` clusters, :mod:`standins.memorystore_cluster`,
  ``GcpStandIn.memorystore_cluster``): ``/v1/projects/{p}/locations/{l}/clusters[/{id}]``, its
  ``certificateAuthority`` and the clusters' operations.
- Filestore v1 (``file.googleapis.com``, :class:`FilestoreState`, ``GcpStandIn.filestore``; its paths are
  Memorystore's too, so a request is Filestore's by its body or the resource it names,
  :meth:`FilestoreState.owns`):
  ``POST /v1/projects/{p}/locations/{l}/instances?instanceId=`` (create),
  ``GET|PATCH|DELETE /v1/projects/{p}/locations/{l}/instances/{id}`` (``updateMask=fileShares``),
  ``POST /v1/projects/{p}/locations/{l}/instances/{id}:restore`` (``fileShare``, ``sourceBackup``; the
  instance ``RESTORING`` -> ``READY``, one operation per instance),
  ``POST|GET /v1/projects/{p}/locations/{region}/backups`` (create ``?backupId=``; list with ``filter``
  (AIP-160, :func:`parse_filter`), ``orderBy``, ``pageSize``, ``pageToken``; location ``-`` lists every
  location), ``GET|PATCH|DELETE /v1/projects/{p}/locations/{region}/backups/{id}`` (``updateMask=labels``),
  ``GET /v1/projects/{p}/locations/{l}/operations[/{op}]`` (the list with ``filter``, e.g.
  ``metadata.target`` and ``metadata.verb``): long-running operations in the One Platform shape
  (``done``, ``response`` the Instance or Backup, ``error`` a ``google.rpc.Status``); instance states
  ``CREATING`` -> ``READY``, ``RESTORING``, ``DELETING``, ``ERROR`` (injected,
  :meth:`FilestoreState.set_error`); backup states ``CREATING`` -> ``READY``, ``DELETING``. Errors answer
  400 ``INVALID_ARGUMENT`` / ``FAILED_PRECONDITION``, 404 ``NOT_FOUND``, 409 ``ALREADY_EXISTS``
  (:class:`FilestoreState` lists which when).

Operations complete ``op_delay`` seconds after they start (time-based, so a client that only reads the
resource sees it change too). Failures are injectable: :meth:`GcpState.fail_operation` makes the next
matching operation end with an error (the resource is not changed), :meth:`GcpState.inject` answers
the next matching requests with an HTTP error (429, 5xx, ...).

Use in-process::

    gcp = GcpStandIn(op_delay=0.1).start()
    gcp.url                            # "http://127.0.0.1:PORT", the api_endpoint of every client
    gcp.state.addresses("my-project")  # what was created
    gcp.stop()

or as a process: ``python -m standins.gcp --port 9101 --op-delay 0.5``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import datetime
import ipaddress
import itertools
import json
import logging
import re
import ssl
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from aiohttp import web

from standins import memorystore, memorystore_cluster
from standins.memorystore import MemorystoreState
from standins.memorystore_cluster import ClusterState
from standins.networkconnectivity import ConnectivityState
from standins.networkconnectivity import Error as ConnectivityError
from standins.server import StandInServer

log = logging.getLogger("standins.gcp")

COMPUTE_BASE = "https://www.googleapis.com/compute/v1"
PSA_SERVICE = "servicenetworking.googleapis.com"
PSA_PEERING = "servicenetworking-googleapis-com"
_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def _resource_name(body: Any) -> str:
    """The ``name`` of a Compute insert's ``body``, as Compute checks it: 400 ``parseError`` for a body that
    is not an object, 400 ``invalid`` for a name that is no RFC 1035 label."""
    if not isinstance(body, dict):
        raise ApiError(400, "Invalid JSON payload received.", "parseError")
    name = body.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ApiError(400, f"Invalid value for field 'resource.name': '{name}'. Must be a match of regex "
                            "'(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", "invalid")
    return name
_NETWORK_RE = re.compile(r"^(?:https://www\.googleapis\.com/compute/v1/)?projects/([^/]+)/global/networks/([^/]+)$")
_RPC_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
               409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_RPC_CODE = {"INVALID_ARGUMENT": 3, "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7,
             "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9, "INTERNAL": 13, "UNAVAILABLE": 14}
_COMPUTE_REASON = {400: "invalid", 403: "forbidden", 404: "notFound", 409: "alreadyExists",
                   429: "rateLimitExceeded", 500: "backendError", 503: "backendError"}

_T = TypeVar("_T")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


class ApiError(Exception):
    """An HTTP error answer; ``reason`` is the Compute reason or the rpc status name."""

    def __init__(self, status: int, message: str, reason: str = "", retry_after: str | None = None) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.reason = reason
        self.retry_after = retry_after


def compute_error_body(status: int, message: str, reason: str = "") -> dict[str, Any]:
    """The Compute (JSON API) error body."""
    reason = reason or _COMPUTE_REASON.get(status, "backendError")
    return {"error": {"code": status, "message": message,
                      "errors": [{"message": message, "domain": "global", "reason": reason}]}}


def rpc_error_body(status: int, message: str, rpc_status: str = "") -> dict[str, Any]:
    """The One Platform (Service Networking, Resource Manager) error body."""
    return {"error": {"code": status, "message": message, "status": rpc_status or _RPC_STATUS.get(status, "UNKNOWN")}}



def _global(store: Mapping[tuple[str, str], _T], project: str, collection: str, name: str) -> _T:
    """``store[(project, name)]``, a global Compute resource of ``collection``; its 404 when absent."""
    found = store.get((project, name))
    if found is None:
        raise ApiError(404, f"The resource 'projects/{project}/global/{collection}/{name}' was not found",
                       "notFound")
    return found

@dataclass
class Fault:
    """An injected HTTP error for the next ``times`` requests whose ``METHOD path`` matches ``pattern``."""

    pattern: re.Pattern[str]
    status: int
    message: str
    times: int
    retry_after: str | None = None


@dataclass
class OpFailure:
    """Make the next operation of ``api`` (``compute``/``servicenetworking``) whose kind
    (``insert``/``delete``/``create``/``patch``/``deleteConnection``) and target name match end in error."""

    api: str
    kind: str
    target: str
    code: str
    message: str
    times: int = 1


@dataclass
class Operation:
    """A long-running operation: its wire body and what happens when it completes."""

    api: str
    kind: str
    target: str
    body: dict[str, Any]
    done_at: float
    apply: Any = None  # callable run under the lock when the operation completes successfully
    error: tuple[str, str] | None = None  # (code, message) when it is to fail
    finished: bool = False
    peer: str = ""  # addPeering/removePeering: the peer network's "project/name"
    region: str = ""  # a regional Compute operation's region ("": a global one)
    resource: Any = None  # an insert's resource while it runs (a subnetwork's range is taken meanwhile)
    response_type: str = ""  # a One Platform operation's ``response`` ``@type`` (Filestore: Instance or Backup)


@dataclass
class GcpState:
    """All resources of the stand-in; thread-safe (tests read it from their own thread)."""

    op_delay: float = 0.05
    lock: threading.RLock = field(default_factory=threading.RLock)
    projects: dict[str, int] = field(default_factory=dict)
    _addresses: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _connections: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    _compute_ops: dict[tuple[str, str], Operation] = field(default_factory=dict)
    _sn_ops: dict[str, Operation] = field(default_factory=dict)
    _networks: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _subnetworks: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    #: Cloud Routers and regional addresses (Cloud NAT's ``NAT_AUTO`` IPs), keyed ``(project, region, name)``.
    _routers: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    _regional_addresses: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    #: Who else refuses a subnetwork's deletion: ``(full name) -> the user's name or None`` (service
    #: connection policies, :mod:`standins.networkconnectivity`).
    subnetwork_users: list[Callable[[str], str | None]] = field(default_factory=list)
    _tag_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    _tag_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    _tag_bindings: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    op_failures: list[OpFailure] = field(default_factory=list)
    request_log: list[tuple[str, str]] = field(default_factory=list)
    memorystore: MemorystoreState = field(default_factory=MemorystoreState)  # Memorystore for Redis
    memorystore_cluster: ClusterState = field(default_factory=ClusterState)  # Memorystore for Redis Cluster
    _ids: itertools.count = field(default_factory=lambda: itertools.count(4_100_000_000_000_000_001))

    # -- test helpers --------------------------------------------------------------------------------

    def project_number(self, project: str) -> int:
        """The project's number (stable: derived from its id), registering the project if new."""
        with self.lock:
            if project not in self.projects:
                self.projects[project] = 100_000_000_000 + zlib.crc32(project.encode()) % 900_000_000_000
            return self.projects[project]

    def addresses(self, project: str) -> dict[str, dict[str, Any]]:
        """Name -> global address resource (a copy) of ``project``."""
        with self.lock:
            self._advance()
            return {n: copy.deepcopy(a) for (p, n), a in sorted(self._addresses.items()) if p == project}

    def connections(self, project: str | None = None) -> list[dict[str, Any]]:
        """The service networking connections (copies), optionally of one project's networks."""
        with self.lock:
            self._advance()
            return [copy.deepcopy(c) for (_, p, _n), c in sorted(self._connections.items())
                    if project is None or p == project]

    def put_address(self, project: str, name: str, cidr: str, network: str, purpose: str = "VPC_PEERING",
                    address_type: str = "INTERNAL") -> dict[str, Any]:
        """Create an address directly (a fixture: an address made outside Reconcilery)."""
        net = ipaddress.ip_network(cidr)
        with self.lock:
            self.project_number(project)
            body = {"name": name, "address": str(net.network_address), "prefixLength": net.prefixlen,
                    "network": _network_url(network, project), "purpose": purpose, "addressType": address_type}
            resource = self._address_resource(project, body)
            self._addresses[(project, name)] = resource
            return copy.deepcopy(resource)

    def inject(self, method: str, path_regex: str, status: int, message: str = "", times: int = 1,
               retry_after: str | None = None) -> None:
        """Answer the next ``times`` requests matching ``METHOD`` and ``path_regex`` with ``status``."""
        pattern = re.compile(rf"^{method.upper()} .*{path_regex}")
        with self.lock:
            self.faults.append(Fault(pattern, status, message or f"injected HTTP {status}", times, retry_after))

    def fail_operation(self, api: str, kind: str, target: str = "", code: str = "QUOTA_EXCEEDED",
                       message: str = "injected operation failure", times: int = 1) -> None:
        """Make the next ``times`` operations of ``api``/``kind`` on ``target`` (empty: any) fail."""
        with self.lock:
            self.op_failures.append(OpFailure(api, kind, target, code, message, times))

    # -- operations ----------------------------------------------------------------------------------

    def _take_failure(self, api: str, kind: str, target: str) -> tuple[str, str] | None:
        for failure in self.op_failures:
            if failure.api == api and failure.kind == kind and failure.target in ("", target):
                failure.times -= 1
                if failure.times <= 0:
                    self.op_failures.remove(failure)
                return failure.code, failure.message
        return None

    def _advance(self) -> None:
        """Complete every operation whose time has come (called under the lock by every request)."""
        now = time.monotonic()
        for op in itertools.chain(self._compute_ops.values(), self._sn_ops.values()):
            if op.finished or op.done_at > now:
                continue
            op.finished = True
            if op.api == "compute":
                op.body.update(status="DONE", progress=100, endTime=_now())
                if op.error is not None:
                    code, message = op.error
                    op.body["error"] = {"errors": [{"code": code, "message": message}]}
                    op.body["httpErrorStatusCode"] = 400
                    op.body["httpErrorMessage"] = "BAD REQUEST"
                elif op.apply is not None:
                    op.apply()
            else:
                op.body["done"] = True
                if op.error is not None:
                    code, message = op.error
                    op.body["error"] = {"code": _RPC_CODE.get(code, 9), "message": message}
                else:
                    result = op.apply() if op.apply is not None else None
                    op.body["response"] = result or {"@type": "type.googleapis.com/google.protobuf.Empty"}

    def _compute_op(self, project: str, kind: str, target: str, target_link: str, apply: Any,
                    target_id: str = "", region: str = "") -> dict[str, Any]:
        """Start a Compute operation (global, or of ``region``: ``regions/{r}/operations``)."""
        op_id = str(next(self._ids))
        name = f"operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:13]}-{uuid.uuid4().hex[:8]}"
        scope = f"regions/{region}" if region else "global"
        body: dict[str, Any] = {
            "kind": "compute#operation", "id": op_id, "name": name, "operationType": kind,
            "targetLink": target_link, "status": "RUNNING", "user": "cloud-manager@example.iam.gserviceaccount.com",
            "progress": 0, "insertTime": _now(), "startTime": _now(),
            "selfLink": f"{COMPUTE_BASE}/projects/{project}/{scope}/operations/{name}",
        }
        if region:
            body["region"] = f"{COMPUTE_BASE}/projects/{project}/regions/{region}"
        if target_id:
            body["targetId"] = target_id
        op = Operation("compute", kind, target, body, time.monotonic() + self.op_delay, apply,
                       self._take_failure("compute", kind, target), region=region)
        self._compute_ops[(project, name)] = op
        self._advance()
        return copy.deepcopy(op.body)

    def _named_op(self, service: str, kind: str, target: str, body: dict[str, Any], apply: Any) -> dict[str, Any]:
        """Start a long-running operation of ``service`` named ``body["name"]`` (Service Networking's and
        Resource Manager's ``operations/...``); its view, ``done`` false until it completes."""
        op = Operation(service, kind, target, body, time.monotonic() + self.op_delay, apply,
                       self._take_failure(service, kind, target))
        self._sn_ops[body["name"]] = op
        self._advance()
        out = copy.deepcopy(op.body)
        out.setdefault("done", False)
        return out

    def _sn_op(self, kind: str, target: str, apply: Any) -> dict[str, Any]:
        name = f"operations/pssn.p24-{self.project_number(target.split('/')[1]) if '/' in target else 0}-" \
               f"{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:4]}"
        body: dict[str, Any] = {"name": name, "metadata": {"@type": "type.googleapis.com/google.protobuf.Empty"}}
        return self._named_op("servicenetworking", kind, target, body, apply)

    # -- compute global addresses --------------------------------------------------------------------

    def _check_insert(self, project: str, body: Any, collection: str, existing: Mapping[tuple[str, str], Any],
                      pending_prefix: str) -> str:
        """The name of a global ``collection`` resource ``body`` to insert, as Compute checks it: 400 for a
        body that is not an object or a bad name, 404 for an unknown project, 409 when it exists or its insert
        is pending."""
        name = _resource_name(body)
        self.project_number(project)
        if (project, name) in existing or self._pending(project, "insert", pending_prefix + name):
            raise ApiError(409, f"The resource 'projects/{project}/global/{collection}/{name}' already exists",
                           "alreadyExists")
        return name

    def _address_resource(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["name"]
        resource = {
            "kind": "compute#address", "id": str(next(self._ids)), "creationTimestamp": _now(), "name": name,
            "address": body["address"], "status": "RESERVED",
            "selfLink": f"{COMPUTE_BASE}/projects/{project}/global/addresses/{name}",
            "labelFingerprint": "42WmSpB8rSM=", "ipVersion": "IPV4",
        }
        for key in ("description", "prefixLength", "network", "purpose", "addressType"):
            if body.get(key) not in (None, ""):
                resource[key] = body[key]
        return resource

    def insert_address(self, project: str, body: Any) -> dict[str, Any]:
        name = self._check_insert(project, body, "addresses", self._addresses, "")
        address_type = body.get("addressType", "EXTERNAL")
        purpose = body.get("purpose", "")
        resource_body = dict(body)
        if address_type == "INTERNAL":
            if purpose not in ("VPC_PEERING", "PRIVATE_SERVICE_CONNECT"):
                raise ApiError(400, f"Invalid value for field 'resource.purpose': '{purpose}'. "
                                    "Global internal addresses need purpose VPC_PEERING or PRIVATE_SERVICE_CONNECT.")
            network = body.get("network")
            match = _NETWORK_RE.match(network or "")
            if not match:
                raise ApiError(400, f"Invalid value for field 'resource.network': '{network}'.")
            resource_body["network"] = _network_url(network or "", project)
            if purpose == "VPC_PEERING":
                prefix = body.get("prefixLength")
                if not isinstance(prefix, int) or not 8 <= prefix <= 29:
                    raise ApiError(400, f"Invalid value for field 'resource.prefixLength': '{prefix}'. "
                                        "Must be between 8 and 29.")
                try:
                    net = ipaddress.ip_network(f"{body.get('address')}/{prefix}", strict=True)
                except ValueError:
                    raise ApiError(400, f"Invalid value for field 'resource.address': '{body.get('address')}'. "
                                        "The address must be the first address of a range of the given "
                                        "prefix length.") from None
                for (p, other), existing in self._addresses.items():
                    if p != project or existing.get("network") != resource_body["network"] \
                            or "prefixLength" not in existing:
                        continue
                    if net.overlaps(ipaddress.ip_network(f"{existing['address']}/{existing['prefixLength']}")):
                        raise ApiError(400, f"Invalid IPCidrRange: {net} conflicts with existing range "
                                            f"{existing['address']}/{existing['prefixLength']} of address "
                                            f"'{other}'.", "invalid")
        resource = self._address_resource(project, resource_body)

        def apply() -> None:
            self._addresses[(project, name)] = resource

        return self._compute_op(project, "insert", name, resource["selfLink"], apply, resource["id"])

    def _pending(self, project: str, kind: str, name: str) -> bool:
        return any(op.kind == kind and op.target == name and not op.finished and p == project
                   for (p, _), op in self._compute_ops.items())

    def get_address(self, project: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(_global(self._addresses, project, "addresses", name))

    def delete_address(self, project: str, name: str) -> dict[str, Any]:
        found = self.get_address(project, name)
        for (_, _p, _n), conn in self._connections.items():
            if name in conn.get("reservedPeeringRanges", []) and _p == project:
                raise ApiError(400, f"The address resource 'projects/{project}/global/addresses/{name}' is already "
                                    f"being used by 'projects/{project}/global/networks/{_n}' "
                                    f"(service networking connection {conn['peering']})",
                               "resourceInUseByAnotherResource")

        def apply() -> None:
            self._addresses.pop((project, name), None)

        return self._compute_op(project, "delete", name, found["selfLink"], apply, found["id"])

    def list_addresses(self, project: str, query: dict[str, str]) -> dict[str, Any]:
        try:
            matches = _parse_filter(query.get("filter", ""))
        except ValueError as err:
            raise ApiError(400, f"Invalid value for field 'filter': '{query.get('filter')}'. {err}") from None
        items = [copy.deepcopy(a) for (p, _), a in sorted(self._addresses.items())
                 if p == project and all(_filter_match(a, f, op, v) for f, op, v in matches)]
        page_size = min(int(query.get("maxResults") or 500), 500)
        start = int(query.get("pageToken") or 0)
        page = items[start:start + page_size]
        out: dict[str, Any] = {"kind": "compute#addressList", "id": f"projects/{project}/global/addresses",
                               "selfLink": f"{COMPUTE_BASE}/projects/{project}/global/addresses"}
        if page:
            out["items"] = page
        if start + page_size < len(items):
            out["nextPageToken"] = str(start + page_size)
        return out

    def get_compute_op(self, project: str, name: str, region: str = "") -> dict[str, Any]:
        """A global operation, or one of ``region``; 404 for one of elsewhere."""
        op = self._compute_ops.get((project, name))
        if op is None or op.region != region:
            where = f"regions/{region}" if region else "global"
            raise ApiError(404, f"The resource 'projects/{project}/{where}/operations/{name}' was not found",
                           "notFound")
        return copy.deepcopy(op.body)

    # -- service networking --------------------------------------------------------------------------

    def _network_key(self, service: str, network: str, *, by_number: bool = False) -> tuple[str, str, str]:
        match = _NETWORK_RE.match(network or "")
        if not match:
            raise ApiError(400, f"Invalid network name '{network}': must be of the form "
                                "projects/{project}/global/networks/{network}")
        project, vpc = match.groups()
        if project.isdigit():
            numbers = {n: p for p, n in self.projects.items()}
            if int(project) not in numbers:
                raise ApiError(404, f"Project {project} not found")
            project = numbers[int(project)]
        elif by_number:
            raise ApiError(400, f"Invalid consumer network '{network}': "
                                "must be projects/{project number}/global/networks/{network}")
        self.project_number(project)
        return service, project, vpc

    def _check_ranges(self, project: str, vpc: str, ranges: Any) -> str | None:
        """Why ``ranges`` cannot be reserved for the network (None: they can)."""
        if not isinstance(ranges, list) or not ranges:
            return "At least one allocated range must be specified in reservedPeeringRanges."
        for name in ranges:
            found = self._addresses.get((project, name))
            if found is None:
                return f"Allocated IP range '{name}' not found in network."
            if found.get("purpose") != "VPC_PEERING" or found.get("network") != _network_url(
                    f"projects/{project}/global/networks/{vpc}", project):
                return f"Allocated IP range '{name}' is not a VPC_PEERING range of network '{vpc}'."
        return None

    def create_connection(self, service: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        key = self._network_key(service, body.get("network", ""))
        _, project, vpc = key
        ranges = body.get("reservedPeeringRanges")
        target = f"projects/{project}/global/networks/{vpc}"
        problem = self._check_ranges(project, vpc, ranges)
        exists = key in self._connections
        number = self.project_number(project)

        def apply() -> None:
            self._connections[key] = {
                "network": f"projects/{number}/global/networks/{vpc}", "reservedPeeringRanges": list(ranges or []),
                "peering": PSA_PEERING, "service": f"services/{service}",
            }

        op = self._sn_op("create", target, apply)
        if problem or exists:
            stored = self._sn_ops[op["name"]]
            stored.apply = None
            stored.error = stored.error or ("FAILED_PRECONDITION", problem or (
                "Cannot modify allocated ranges in CreateConnection. Please use UpdateConnection."))
        return op

    def list_connections(self, service: str, query: dict[str, str]) -> dict[str, Any]:
        if not query.get("network"):
            raise ApiError(400, "Request contains an invalid argument: network is required.")
        key = self._network_key(service, query["network"])
        found = self._connections.get(key)
        return {"connections": [copy.deepcopy(found)]} if found else {}

    def patch_connection(self, service: str, name: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        key = self._network_key(service, body.get("network", ""))
        _, project, vpc = key
        if name != PSA_PEERING or key not in self._connections:
            raise ApiError(404, f"Connection {name} for network projects/{project}/global/networks/{vpc} "
                                "not found.")
        ranges = body.get("reservedPeeringRanges")
        problem = self._check_ranges(project, vpc, ranges)

        def apply() -> None:
            self._connections[key]["reservedPeeringRanges"] = list(ranges or [])

        op = self._sn_op("patch", f"projects/{project}/global/networks/{vpc}", apply)
        if problem:
            stored = self._sn_ops[op["name"]]
            stored.apply = None
            stored.error = stored.error or ("FAILED_PRECONDITION", problem)
        return op

    def delete_connection(self, service: str, name: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        key = self._network_key(service, body.get("consumerNetwork", ""), by_number=True)
        _, project, vpc = key
        if name != PSA_PEERING or key not in self._connections:
            raise ApiError(404, f"Connection {name} for network projects/{project}/global/networks/{vpc} "
                                "not found.")

        def apply() -> None:
            self._connections.pop(key, None)

        return self._sn_op("deleteConnection", f"projects/{project}/global/networks/{vpc}", apply)

    def get_sn_op(self, name: str) -> dict[str, Any]:
        op = self._sn_ops.get(name)
        if op is None:
            raise ApiError(404, f"Operation {name} not found.")
        out = copy.deepcopy(op.body)
        out.setdefault("done", False)
        return out

    # -- compute networks and their peerings ---------------------------------------------------------

    def networks(self, project: str) -> dict[str, dict[str, Any]]:
        """Name -> network (a copy, as GET returns it, peerings with their state) of ``project``."""
        with self.lock:
            self._advance()
            return {n: self._network_view(p, n) for (p, n) in sorted(self._networks) if p == project}

    def peering(self, project: str, network: str, name: str) -> dict[str, Any] | None:
        """One peering of a network as GET shows it (``state`` ``ACTIVE``/``INACTIVE``), or None."""
        with self.lock:
            self._advance()
            if (project, network) not in self._networks:
                return None
            peerings = self._network_view(project, network).get("peerings") or []
            return next((p for p in peerings if p["name"] == name), None)

    def put_network(self, project: str, name: str) -> dict[str, Any]:
        """Create a network directly (a fixture: a VPC made outside Reconcilery, e.g. the shoot's)."""
        with self.lock:
            self.project_number(project)
            if (project, name) not in self._networks:
                self._networks[(project, name)] = self._network_resource(project, {"name": name})
            return self._network_view(project, name)

    def _network_resource(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["name"]
        net_id = str(next(self._ids))
        resource: dict[str, Any] = {
            "kind": "compute#network", "id": net_id, "creationTimestamp": _now(), "name": name,
            "selfLink": f"{COMPUTE_BASE}/projects/{project}/global/networks/{name}",
            "selfLinkWithId": f"{COMPUTE_BASE}/projects/{project}/global/networks/{net_id}",
            "autoCreateSubnetworks": bool(body.get("autoCreateSubnetworks", False)),
            "routingConfig": {"routingMode": (body.get("routingConfig") or {}).get("routingMode") or "REGIONAL"},
            "mtu": int(body.get("mtu") or 1460), "networkFirewallPolicyEnforcementOrder": "AFTER_CLASSIC_FIREWALL",
            "_peerings": [],
        }
        if body.get("description"):
            resource["description"] = body["description"]
        return resource

    def _network_view(self, project: str, name: str) -> dict[str, Any]:
        """A stored network as GET returns it: each peering ``ACTIVE`` when the peer network has a
        peering back to this one, else ``INACTIVE`` (also when the peer network does not exist)."""
        stored = self._networks[(project, name)]
        view = {k: copy.deepcopy(v) for k, v in stored.items() if not k.startswith("_")}
        own_url = f"{COMPUTE_BASE}/projects/{project}/global/networks/{name}"
        peerings = []
        for peering in stored["_peerings"]:
            match = _NETWORK_RE.match(peering["network"])
            peer = self._networks.get((match.group(1), match.group(2))) if match else None
            back = peer is not None and any(p["network"] == own_url for p in peer["_peerings"])
            out = copy.deepcopy(peering)
            out["state"] = "ACTIVE" if back else "INACTIVE"
            out["stateDetails"] = f"[{peering['_since']}]: Connected." if back else \
                "Waiting for peer network to connect."
            out.pop("_since", None)
            peerings.append(out)
        if peerings:
            view["peerings"] = peerings
        subnetworks = sorted(sub["selfLink"] for sub in self._subnetworks.values() if sub["network"] == own_url)
        if subnetworks:
            view["subnetworks"] = subnetworks
        return view

    def _get_network(self, project: str, name: str) -> dict[str, Any]:
        return _global(self._networks, project, "networks", name)

    def insert_network(self, project: str, body: Any) -> dict[str, Any]:
        name = self._check_insert(project, body, "networks", self._networks, "networks/")
        resource = self._network_resource(project, body)

        def apply() -> None:
            self._networks[(project, name)] = resource

        return self._compute_op(project, "insert", f"networks/{name}", resource["selfLink"], apply, resource["id"])

    def get_network(self, project: str, name: str) -> dict[str, Any]:
        self._get_network(project, name)
        return self._network_view(project, name)

    def list_networks(self, project: str) -> dict[str, Any]:
        items = [self._network_view(p, n) for (p, n) in sorted(self._networks) if p == project]
        out: dict[str, Any] = {"kind": "compute#networkList", "id": f"projects/{project}/global/networks",
                               "selfLink": f"{COMPUTE_BASE}/projects/{project}/global/networks"}
        if items:
            out["items"] = items
        return out

    def delete_network(self, project: str, name: str) -> dict[str, Any]:
        found = self._get_network(project, name)
        if found["_peerings"]:
            raise ApiError(400, f"The network resource 'projects/{project}/global/networks/{name}' is already being "
                                f"used by peering '{found['_peerings'][0]['name']}'", "resourceInUseByAnotherResource")

        subnetwork = next((sub for sub in self._subnetworks.values() if sub["network"] == found["selfLink"]), None)
        if subnetwork is not None:
            raise ApiError(400, f"The network resource 'projects/{project}/global/networks/{name}' is already being "
                                f"used by '{_path_of(subnetwork['selfLink'])}'", "resourceInUseByAnotherResource")

        def apply() -> None:
            self._networks.pop((project, name), None)

        return self._compute_op(project, "delete", f"networks/{name}", found["selfLink"], apply, found["id"])

    def _peering_in_progress(self, *networks: str) -> bool:
        """Whether an addPeering/removePeering of one of ``networks`` (``project/name``) is still running."""
        return any(not op.finished and op.kind in ("addPeering", "removePeering")
                   and ({op.target, op.peer} & set(networks)) for op in self._compute_ops.values())

    def add_peering(self, project: str, name: str, body: Any) -> dict[str, Any]:
        """``networks.addPeering`` (the peering is ``INACTIVE`` until the peer network peers back)."""
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.", "parseError")
        network = self._get_network(project, name)
        spec = dict(body.get("networkPeering") or {})
        if not spec:  # the deprecated top-level form
            spec = {"name": body.get("name"), "network": body.get("peerNetwork"),
                    "exchangeSubnetRoutes": body.get("autoCreateRoutes", True)}
        peering_name = spec.get("name")
        if not isinstance(peering_name, str) or not _NAME_RE.match(peering_name):
            raise ApiError(400, f"Invalid value for field 'networkPeering.name': '{peering_name}'. Must be a match "
                                "of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", "invalid")
        match = _NETWORK_RE.match(str(spec.get("network") or ""))
        if not match:
            raise ApiError(400, f"Invalid value for field 'networkPeering.network': '{spec.get('network')}'.",
                           "invalid")
        peer_url = _network_url(str(spec["network"]), project)
        if any(p["name"] == peering_name for p in network["_peerings"]):
            raise ApiError(400, f"There is already a peering '{peering_name}' on network "
                                f"'projects/{project}/global/networks/{name}'.", "invalid")
        if any(p["network"] == peer_url for p in network["_peerings"]):
            raise ApiError(400, f"There is already a peering between network 'projects/{project}/global/networks/"
                                f"{name}' and network '{peer_url}'.", "invalid")
        me, peer = f"{project}/{name}", f"{match.group(1)}/{match.group(2)}"
        if self._peering_in_progress(me, peer):
            raise ApiError(400, "There is a peering operation in progress on the local or peer network. "
                                "Try again later.", "invalid")
        peering = {"name": peering_name, "network": peer_url, "autoCreateRoutes": True,
                   "exportCustomRoutes": bool(spec.get("exportCustomRoutes", False)),
                   "importCustomRoutes": bool(spec.get("importCustomRoutes", False)),
                   "exchangeSubnetRoutes": bool(spec.get("exchangeSubnetRoutes", True)),
                   "exportSubnetRoutesWithPublicIp": bool(spec.get("exportSubnetRoutesWithPublicIp", True)),
                   "importSubnetRoutesWithPublicIp": bool(spec.get("importSubnetRoutesWithPublicIp", False)),
                   "stackType": str(spec.get("stackType") or "IPV4_ONLY"), "peerMtu": 1460}

        def apply() -> None:
            peering["_since"] = _now()
            network["_peerings"].append(peering)

        op = self._compute_op(project, "addPeering", me, network["selfLink"], apply, network["id"])
        self._compute_ops[(project, op["name"])].peer = peer
        return op

    def remove_peering(self, project: str, name: str, body: Any) -> dict[str, Any]:
        """``networks.removePeering``; the peer's side turns ``INACTIVE`` once it is gone."""
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.", "parseError")
        network = self._get_network(project, name)
        peering_name = body.get("name")
        found = next((p for p in network["_peerings"] if p["name"] == peering_name), None)
        if found is None:
            raise ApiError(400, f"Invalid value for field 'name': '{peering_name}'. Peering does not exist on network "
                                f"'projects/{project}/global/networks/{name}'.", "invalid")
        match = _NETWORK_RE.match(found["network"])
        me, peer = f"{project}/{name}", (f"{match.group(1)}/{match.group(2)}" if match else "")
        if self._peering_in_progress(me, peer):
            raise ApiError(400, "There is a peering operation in progress on the local or peer network. "
                                "Try again later.", "invalid")

        def apply() -> None:
            if found in network["_peerings"]:
                network["_peerings"].remove(found)

        op = self._compute_op(project, "removePeering", me, network["selfLink"], apply, network["id"])
        self._compute_ops[(project, op["name"])].peer = peer
        return op

    # -- compute regional subnetworks ----------------------------------------------------------------

    def subnetworks(self, project: str, region: str | None = None) -> dict[str, dict[str, Any]]:
        """``regions/{r}/subnetworks/{name}`` -> subnetwork (a copy, as GET returns it) of ``project``."""
        with self.lock:
            self._advance()
            return {f"regions/{r}/subnetworks/{n}": copy.deepcopy(sub)
                    for (p, r, n), sub in sorted(self._subnetworks.items())
                    if p == project and region in (None, r)}

    def has_network(self, project: str, name: str) -> bool:
        """Whether the network ``projects/{project}/global/networks/{name}`` exists."""
        return (project, name) in self._networks

    def has_subnetwork(self, project: str, region: str, name: str) -> bool:
        """Whether the subnetwork ``projects/{project}/regions/{region}/subnetworks/{name}`` exists."""
        return (project, region, name) in self._subnetworks

    def _get_subnetwork(self, project: str, region: str, name: str) -> dict[str, Any]:
        found = self._subnetworks.get((project, region, name))
        if found is None:
            raise ApiError(404, f"The resource 'projects/{project}/regions/{region}/subnetworks/{name}' was not "
                                "found", "notFound")
        return found

    def _ranges_in(self, network_url: str) -> list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]]:
        """The ranges in use on a network: its subnetworks' (also pending inserts) and its reserved
        (``VPC_PEERING``) global addresses, each with what holds it, in Compute's words."""
        used = [(ipaddress.ip_network(sub["ipCidrRange"]), f"existing subnetwork '{sub['name']}' in region "
                                                            f"'{sub['region'].rsplit('/', 1)[-1]}'")
                for sub in [*self._subnetworks.values(), *self._pending_subnetworks()]
                if sub["network"] == network_url]
        used += [(ipaddress.ip_network(f"{a['address']}/{a['prefixLength']}"), f"reserved range '{a['name']}'")
                 for a in self._addresses.values() if a.get("network") == network_url and "prefixLength" in a]
        return used

    def _pending_subnetworks(self) -> list[dict[str, Any]]:
        return [op.resource for op in self._compute_ops.values()
                if op.kind == "insert" and not op.finished and op.resource is not None]

    def insert_subnetwork(self, project: str, region: str, body: Any) -> dict[str, Any]:
        """``subnetworks.insert``: the subnetwork exists once its region operation is ``DONE``. Checked as
        Compute does: the name, an existing network (404), a valid CIDR not overlapping another range of
        the network (400 ``invalid``), a unique name in the region (409)."""
        name = _resource_name(body)
        self.project_number(project)
        target = f"regions/{region}/subnetworks/{name}"
        if (project, region, name) in self._subnetworks or self._pending(project, "insert", target):
            raise ApiError(409, f"The resource 'projects/{project}/{target}' already exists", "alreadyExists")
        match = _NETWORK_RE.match(str(body.get("network") or ""))
        if not match:
            raise ApiError(400, f"Invalid value for field 'resource.network': '{body.get('network')}'.", "invalid")
        network_url = _network_url(str(body["network"]), project)
        _global(self._networks, match.group(1), "networks", match.group(2))
        try:
            cidr = ipaddress.ip_network(str(body.get("ipCidrRange") or ""), strict=True)
        except ValueError:
            raise ApiError(400, f"Invalid value for field 'resource.ipCidrRange': '{body.get('ipCidrRange')}'. "
                                "Invalid IPv4 CIDR range.", "invalid") from None
        if cidr.version != 4 or not 8 <= cidr.prefixlen <= 29:
            raise ApiError(400, f"Invalid value for field 'resource.ipCidrRange': '{cidr}'. The prefix length "
                                "must be between 8 and 29.", "invalid")
        for used, holder in self._ranges_in(network_url):
            if cidr.overlaps(used):
                raise ApiError(400, f"Invalid IPCidrRange: {cidr} conflicts with {holder}.", "invalid")
        purpose = str(body.get("purpose") or "PRIVATE")
        resource: dict[str, Any] = {
            "kind": "compute#subnetwork", "id": str(next(self._ids)), "creationTimestamp": _now(), "name": name,
            "network": network_url, "ipCidrRange": str(cidr), "gatewayAddress": str(cidr.network_address + 1),
            "region": f"{COMPUTE_BASE}/projects/{project}/regions/{region}",
            "selfLink": f"{COMPUTE_BASE}/projects/{project}/{target}",
            "privateIpGoogleAccess": bool(body.get("privateIpGoogleAccess", False)), "purpose": purpose,
            "stackType": "IPV4_ONLY", "privateIpv6GoogleAccess": "DISABLE_GOOGLE_ACCESS",
            "fingerprint": "Z1234gLxMMQ=",
        }
        if body.get("description"):
            resource["description"] = str(body["description"])

        def apply() -> None:
            self._subnetworks[(project, region, name)] = resource

        op = self._compute_op(project, "insert", target, resource["selfLink"], apply, resource["id"], region)
        self._compute_ops[(project, op["name"])].resource = resource
        return op

    def get_subnetwork(self, project: str, region: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self._get_subnetwork(project, region, name))

    def list_subnetworks(self, project: str, region: str) -> dict[str, Any]:
        items = list(self.subnetworks(project, region).values())
        where = f"projects/{project}/regions/{region}/subnetworks"
        out: dict[str, Any] = {"kind": "compute#subnetworkList", "id": where, "selfLink": f"{COMPUTE_BASE}/{where}"}
        if items:
            out["items"] = items
        return out

    def delete_subnetwork(self, project: str, region: str, name: str) -> dict[str, Any]:
        """``subnetworks.delete``: gone once its operation is ``DONE``; refused (400) while a service
        connection policy names it or a delete of it runs."""
        found = self._get_subnetwork(project, region, name)
        target = f"regions/{region}/subnetworks/{name}"
        full = f"projects/{project}/{target}"
        for user in self.subnetwork_users:
            holder = user(full)
            if holder:
                raise ApiError(400, f"The subnetwork resource '{full}' is already being used by '{holder}'",
                               "resourceInUseByAnotherResource")
        if self._pending(project, "delete", target):
            raise ApiError(400, f"The resource '{full}' is not ready", "resourceNotReady")

        def apply() -> None:
            self._subnetworks.pop((project, region, name), None)

        return self._compute_op(project, "delete", target, found["selfLink"], apply, found["id"], region)

    # -- compute routers (Cloud NAT) and regional addresses -------------------------------------------

    def put_router(self, project: str, region: str, name: str, network: str, nat: str = "",
                   nat_ips: tuple[str, ...] = ()) -> dict[str, Any]:
        """Create a Cloud Router directly (a fixture: what Gardener makes for a GCP shoot, router
        ``<vpc>-cloud-router`` with the Cloud NAT ``<vpc>-cloud-nat``). With ``nat``: one NAT config of
        that name, ``natIpAllocateOption`` ``AUTO_ONLY``, and for each of ``nat_ips`` the regional
        ``EXTERNAL`` address Compute allocates for it (purpose ``NAT_AUTO``, status ``IN_USE``, ``users``
        the router's selfLink), as the API documents auto-allocated NAT IPs. Idempotent by name."""
        with self.lock:
            self.project_number(project)
            key = (project, region, name)
            region_url = f"{COMPUTE_BASE}/projects/{project}/regions/{region}"
            if key not in self._routers:
                self._routers[key] = {
                    "kind": "compute#router", "id": str(next(self._ids)), "creationTimestamp": _now(),
                    "name": name, "region": region_url, "network": _network_url(network, project),
                    "selfLink": f"{region_url}/routers/{name}",
                    "bgp": {"asn": 64512, "advertiseMode": "DEFAULT", "keepaliveInterval": 20},
                    "encryptedInterconnectRouter": False,
                    "nats": [{"name": nat, "natIpAllocateOption": "AUTO_ONLY",
                              "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
                              "enableEndpointIndependentMapping": False, "minPortsPerVm": 64,
                              "udpIdleTimeoutSec": 30, "icmpIdleTimeoutSec": 30, "tcpEstablishedIdleTimeoutSec": 1200,
                              "tcpTransitoryIdleTimeoutSec": 30, "tcpTimeWaitTimeoutSec": 120,
                              "logConfig": {"enable": False, "filter": "ALL"}, "endpointTypes": ["ENDPOINT_TYPE_VM"],
                              "type": "PUBLIC", "autoNetworkTier": "PREMIUM"}] if nat else [],
                }
                router_link = self._routers[key]["selfLink"]
                for i, ip in enumerate(nat_ips):
                    address_name = f"nat-auto-ip-{zlib.crc32(router_link.encode()) % 10_000_000}-{i}-1700000000000"
                    self._regional_addresses[(project, region, address_name)] = {
                        "kind": "compute#address", "id": str(next(self._ids)), "creationTimestamp": _now(),
                        "name": address_name, "address": str(ipaddress.ip_address(ip)), "status": "IN_USE",
                        "region": region_url, "selfLink": f"{region_url}/addresses/{address_name}",
                        "users": [router_link], "networkTier": "PREMIUM", "labelFingerprint": "42WmSpB8rSM=",
                        "addressType": "EXTERNAL", "purpose": "NAT_AUTO", "ipVersion": "IPV4"}
            return copy.deepcopy(self._routers[key])

    def _regional_get(self, store: Mapping[tuple[str, str, str], dict[str, Any]], project: str, region: str,
                      collection: str, name: str) -> dict[str, Any]:
        found = store.get((project, region, name))
        if found is None:
            raise ApiError(404, f"The resource 'projects/{project}/regions/{region}/{collection}/{name}' was not "
                                "found", "notFound")
        return copy.deepcopy(found)

    def _regional_list(self, store: Mapping[tuple[str, str, str], dict[str, Any]], project: str, region: str,
                       collection: str, kind: str, query: Mapping[str, str]) -> dict[str, Any]:
        """``regions/{r}/{collection}`` list: Compute's ``filter`` (``=``/``!=`` exact, ``eq``/``ne`` a
        regular expression matching the whole value), ``maxResults`` (at most 500) and ``pageToken``."""
        try:
            terms = _parse_filter(query.get("filter", ""))
        except ValueError as err:
            raise ApiError(400, f"Invalid value for field 'filter': '{query.get('filter')}'. {err}", "invalid") \
                from None
        items = [copy.deepcopy(r) for (p, rg, _), r in sorted(store.items())
                 if p == project and rg == region and all(_filter_match(r, f, op, v) for f, op, v in terms)]
        size = min(int(query.get("maxResults") or 500), 500)
        start = int(query.get("pageToken") or 0)
        where = f"projects/{project}/regions/{region}/{collection}"
        out: dict[str, Any] = {"kind": kind, "id": where, "selfLink": f"{COMPUTE_BASE}/{where}"}
        if items[start:start + size]:
            out["items"] = items[start:start + size]
        if start + size < len(items):
            out["nextPageToken"] = str(start + size)
        return out

    def list_routers(self, project: str, region: str, query: Mapping[str, str]) -> dict[str, Any]:
        """``routers.list`` of a region (``compute#routerList``)."""
        return self._regional_list(self._routers, project, region, "routers", "compute#routerList", query)

    def get_router(self, project: str, region: str, name: str) -> dict[str, Any]:
        return self._regional_get(self._routers, project, region, "routers", name)

    def list_regional_addresses(self, project: str, region: str, query: Mapping[str, str]) -> dict[str, Any]:
        """``addresses.list`` of a region (``compute#addressList``)."""
        return self._regional_list(self._regional_addresses, project, region, "addresses", "compute#addressList",
                                   query)

    def get_regional_address(self, project: str, region: str, name: str) -> dict[str, Any]:
        return self._regional_get(self._regional_addresses, project, region, "addresses", name)

    # -- Resource Manager v3 tags --------------------------------------------------------------------

    def _rm_op(self, kind: str, target: str, apply: Any) -> dict[str, Any]:
        """A Resource Manager long-running operation (``operations/...``); ``apply`` answers its response."""
        name = f"operations/rm.{kind}.{uuid.uuid4().hex[:16]}"
        body: dict[str, Any] = {"name": name, "metadata": {
            "@type": f"type.googleapis.com/google.cloud.resourcemanager.v3.{kind[0].upper()}{kind[1:]}Metadata"}}
        return self._named_op("resourcemanager", kind, target, body, apply)

    def create_tag_key(self, body: Any) -> dict[str, Any]:
        """``tagKeys.create`` under ``projects/<id or number>`` (the namespaced name uses the project id)."""
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        parent, short = str(body.get("parent") or ""), body.get("shortName")
        if not parent.startswith("projects/") or not isinstance(short, str) or not 1 <= len(short) <= 256:
            raise ApiError(400, "Request contains an invalid argument: parent must be projects/{project} and "
                                "short_name 1-256 characters.")
        project = self._project_of(parent.split("/", 1)[1])
        if project is None:
            raise ApiError(403, f"Permission denied on resource '{parent}' (or it may not exist).")
        namespaced = f"{project}/{short}"
        if any(k["namespacedName"] == namespaced for k in self._tag_keys.values()):
            raise ApiError(409, f"A TagKey with short name '{short}' already exists under '{parent}'.")
        key = {"name": f"tagKeys/{next(self._ids) % 10**15}", "parent": f"projects/{self.projects[project]}",
               "shortName": short, "namespacedName": namespaced, "createTime": _now(), "updateTime": _now(),
               "etag": uuid.uuid4().hex[:16], "purpose": "PURPOSE_UNSPECIFIED"}
        if body.get("description"):
            key["description"] = body["description"]

        def apply() -> dict[str, Any]:
            self._tag_keys[key["name"]] = key
            return {"@type": "type.googleapis.com/google.cloud.resourcemanager.v3.TagKey", **key}

        return self._rm_op("createTagKey", key["name"], apply)

    def create_tag_value(self, body: Any) -> dict[str, Any]:
        """``tagValues.create`` under ``tagKeys/<id>``."""
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        parent, short = str(body.get("parent") or ""), body.get("shortName")
        key = self._tag_keys.get(parent)
        if key is None:
            raise ApiError(403, f"Permission denied on resource '{parent}' (or it may not exist).")
        if not isinstance(short, str) or not 1 <= len(short) <= 256:
            raise ApiError(400, "Request contains an invalid argument: short_name must be 1-256 characters.")
        namespaced = f"{key['namespacedName']}/{short}"
        if any(v["namespacedName"] == namespaced for v in self._tag_values.values()):
            raise ApiError(409, f"A TagValue with short name '{short}' already exists under '{parent}'.")
        value = {"name": f"tagValues/{next(self._ids) % 10**15}", "parent": parent, "shortName": short,
                 "namespacedName": namespaced, "createTime": _now(), "updateTime": _now(),
                 "etag": uuid.uuid4().hex[:16]}

        def apply() -> dict[str, Any]:
            self._tag_values[value["name"]] = value
            return {"@type": "type.googleapis.com/google.cloud.resourcemanager.v3.TagValue", **value}

        return self._rm_op("createTagValue", value["name"], apply)

    def _compute_resource(self, full_name: str) -> tuple[str, str] | None:
        """``(project, network)`` of ``//compute.googleapis.com/projects/<p>/global/networks/<id or name>``."""
        match = re.match(r"^//compute\.googleapis\.com/projects/([^/]+)/global/networks/([^/]+)$", full_name)
        if not match:
            return None
        project = self._project_of(match.group(1))
        if project is None:
            return None
        for (p, n), net in self._networks.items():
            if p == project and match.group(2) in (n, net["id"]):
                return p, n
        return None

    def _project_of(self, ref: str) -> str | None:
        """The project id of a known project's id or number (None: unknown)."""
        if ref.isdigit():
            return next((p for p, n in self.projects.items() if n == int(ref)), None)
        return ref if ref in self.projects else None

    def create_tag_binding(self, body: Any) -> dict[str, Any]:
        """``tagBindings.create``: bind a tag value to a resource named by its full resource name."""
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        parent, value_name = str(body.get("parent") or ""), str(body.get("tagValue") or "")
        value = self._tag_values.get(value_name)
        if value is None:
            raise ApiError(403, f"Permission denied on resource '{value_name}' (or it may not exist).")
        if self._compute_resource(parent) is None:
            raise ApiError(400, f"Request contains an invalid argument: resource '{parent}' is not a known "
                                "resource.")
        binding = {"name": f"tagBindings/{quote(parent, safe='')}/{value_name}", "parent": parent,
                   "tagValue": value_name, "tagValueNamespacedName": value["namespacedName"]}
        if binding["name"] in self._tag_bindings:
            raise ApiError(409, f"A TagBinding for '{value_name}' already exists on '{parent}'.")

        def apply() -> dict[str, Any]:
            self._tag_bindings[binding["name"]] = binding
            return {"@type": "type.googleapis.com/google.cloud.resourcemanager.v3.TagBinding", **binding}

        return self._rm_op("createTagBinding", binding["name"], apply)

    def get_namespaced(self, collection: str, name: str) -> dict[str, Any]:
        """``tagKeys.getNamespaced`` / ``tagValues.getNamespaced`` (unknown: 403, as Resource Manager)."""
        store = self._tag_keys if collection == "tagKeys" else self._tag_values
        found = next((item for item in store.values() if item["namespacedName"] == name), None)
        if found is None:
            raise ApiError(403, f"Permission denied on resource '{name}' (or it may not exist).")
        return copy.deepcopy(found)

    def list_effective_tags(self, query: dict[str, str]) -> dict[str, Any]:
        """``effectiveTags.list`` of a compute network (direct bindings; nothing inherited here)."""
        parent = query.get("parent") or ""
        found = self._compute_resource(parent)
        if found is None:
            raise ApiError(403, f"Permission denied on resource '{parent}' (or it may not exist).")
        project, network = found
        net_id = self._networks[found]["id"]
        names = {f"//compute.googleapis.com/projects/{p}/global/networks/{n}"
                 for p in (project, str(self.projects[project])) for n in (network, net_id)}
        tags = []
        for binding in sorted(self._tag_bindings.values(), key=lambda b: b["name"]):
            if binding["parent"] not in names:
                continue
            value = self._tag_values[binding["tagValue"]]
            key = self._tag_keys[value["parent"]]
            tags.append({"tagValue": value["name"], "namespacedTagValue": value["namespacedName"],
                         "tagKey": key["name"], "namespacedTagKey": key["namespacedName"],
                         "tagKeyParentName": key["parent"], "inherited": False})
        return {"effectiveTags": tags} if tags else {}


    def get_project(self, project: str) -> dict[str, Any]:
        if project not in self.projects:
            raise ApiError(403, f"The caller does not have permission (project {project} unknown)")
        return {"projectNumber": str(self.projects[project]), "projectId": project, "lifecycleState": "ACTIVE",
                "name": project, "createTime": "2024-01-01T00:00:00.000Z"}


def _network_url(network: str, project: str) -> str:
    """A network reference as Compute stores it: the full ``https://www.googleapis.com/...`` URL."""
    match = _NETWORK_RE.match(network)
    if not match:
        return network
    return f"{COMPUTE_BASE}/projects/{match.group(1)}/global/networks/{match.group(2)}"


def _path_of(self_link: str) -> str:
    """A Compute selfLink as a resource path (``projects/...``)."""
    return self_link.removeprefix(f"{COMPUTE_BASE}/")


_FILTER_RE = re.compile(r'\(?\s*([A-Za-z_.]+)\s*(=|!=|\beq\b|\bne\b)\s*("(?:[^"\\]|\\.)*"|[^\s()]+)\s*\)?')


def _parse_filter(expr: str) -> list[tuple[str, str, str]]:
    """``field = "value"`` terms joined by ``AND``/whitespace, as Compute's list filter accepts them.

    Raises ``ValueError`` for anything else (OR, functions).
    """
    terms: list[tuple[str, str, str]] = []
    rest = expr.strip()
    while rest:
        if rest.upper().startswith("AND "):
            rest = rest[4:].lstrip()
            continue
        match = _FILTER_RE.match(rest)
        if not match:
            raise ValueError(f"unsupported filter expression near {rest[:30]!r}")
        name, op, value = match.groups()
        if value.startswith('"'):
            value = json.loads(value)
        if op in ("eq", "ne"):  # a regular expression (RE2 in Compute): an invalid one is a 400
            try:
                re.compile(value)
            except re.error as err:
                raise ValueError(f"invalid regular expression {value!r}: {err}") from None
        terms.append((name, op, value))
        rest = rest[match.end():].lstrip()
    return terms


def _filter_match(resource: dict[str, Any], name: str, op: str, value: str) -> bool:
    """``=``/``!=``: the literal value; ``eq``/``ne``: a regular expression matching the whole value (as
    Compute documents its list ``filter``; the original's routers filter is ``network eq .*<vpc>``)."""
    actual = resource.get(name)
    if op in ("eq", "ne"):
        equal = re.fullmatch(value, str(actual) if actual is not None else "") is not None
        return equal if op == "eq" else not equal
    equal = str(actual) == value if actual is not None else value == ""
    return equal if op == "=" else not equal


class GcpStandIn(StandInServer):
    """A running GCP stand-in: an aiohttp server on its own event loop thread.

    Args:
        port: TCP port (0 = any free port, fixed after the first :meth:`start`).
        op_delay: seconds until an operation is ``DONE``.
        ssl_context: serve HTTPS with this context.
        state: share a :class:`GcpState`.
        projects: project ids known to Resource Manager from the start.
    """

    thread_name = "gcp-standin"

    def __init__(self, port: int = 0, host: str = "127.0.0.1", op_delay: float = 0.05,
                 ssl_context: ssl.SSLContext | None = None, state: GcpState | None = None,
                 projects: tuple[str, ...] = ()) -> None:
        super().__init__(port, host, ssl_context)
        self.state = state or GcpState(op_delay=op_delay)
        #: Filestore, on the same lock and operation delay.
        self.filestore = FilestoreState(self.state)
        #: Network Connectivity's service connection policies, naming this state's networks and subnetworks.
        self.connectivity = ConnectivityState(self.state, self.state._take_failure)
        self.state.subnetwork_users.append(self.connectivity.using)
        self.state.memorystore_cluster.psc_ranges = self._psc_ranges  # PSC addresses from the policy's subnets
        for project in projects:
            self.state.project_number(project)

    def _psc_ranges(self, project: str, region: str, network: str) -> list[str]:
        """The CIDRs of the subnetworks named by the Memorystore Cluster service connection policy of
        ``network`` (``projects/{p}/global/networks/{n}``) in ``region`` (``[]``: none). Under the lock."""
        parent = f"projects/{project}/locations/{region}/"
        for name, policy in sorted(self.connectivity.policies.items()):
            if name.startswith(parent) and policy.get("network") == network \
                    and policy.get("serviceClass") == memorystore_cluster.SERVICE_CLASS:
                paths = [str(p).split("/") for p in (policy.get("pscConfig") or {}).get("subnetworks") or []]
                found = [self.state._subnetworks.get((p[1], p[3], p[5])) for p in paths if len(p) == 6]
                return [str(sub["ipCidrRange"]) for sub in found if sub is not None]
        return []

    # -- the aiohttp application --------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        compute = path.startswith("/compute/")
        body: Any = None
        try:
            if request.method in ("POST", "PATCH", "PUT"):
                raw = await request.read()
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    raise ApiError(400, "Invalid JSON payload received.", "parseError") from None
            wait_until = 0.0
            with self.state.lock:
                self.state.request_log.append((request.method, path))
                self._inject(request.method, path)
                self.state._advance()
                self.filestore.advance()
                status, payload, wait_until = self._route(request.method, path, dict(request.query), body)
            if wait_until:
                # operations.wait: hold the answer until the operation is done (at most 2 minutes, as GCP)
                await asyncio.sleep(max(0.0, min(wait_until - time.monotonic(), 120.0)))
                with self.state.lock:
                    self.state._advance()
                    status, payload, _ = self._route("GET", path[: -len("/wait")], {}, None)
        except ApiError as err:
            body_out = compute_error_body(err.status, err.message, err.reason) if compute else \
                rpc_error_body(err.status, err.message, err.reason if err.reason.isupper() else "")
            headers = {"Retry-After": err.retry_after} if err.retry_after else None
            return web.json_response(body_out, status=err.status, headers=headers)
        return web.json_response(payload, status=status)

    def _regional(self, method: str, path: str, project: str, region: str, collection: str, rest: list[str],
                  body: Any, query: Mapping[str, str]) -> tuple[int, Any, float]:
        """``/compute/v1/projects/{p}/regions/{r}/(subnetworks|operations)[/{name}[/wait]]``, and the reads of
        ``routers`` and ``addresses`` (list and get)."""
        s = self.state
        if collection in ("routers", "addresses") and method == "GET" and len(rest) <= 1:
            if collection == "routers":
                return 200, (s.get_router(project, region, rest[0]) if rest else
                             s.list_routers(project, region, query)), 0.0
            return 200, (s.get_regional_address(project, region, rest[0]) if rest else
                         s.list_regional_addresses(project, region, query)), 0.0
        if collection == "subnetworks":
            if not rest and method == "POST":
                return 200, s.insert_subnetwork(project, region, body), 0.0
            if not rest and method == "GET":
                return 200, s.list_subnetworks(project, region), 0.0
            if len(rest) == 1 and method == "GET":
                return 200, s.get_subnetwork(project, region, rest[0]), 0.0
            if len(rest) == 1 and method == "DELETE":
                return 200, s.delete_subnetwork(project, region, rest[0]), 0.0
        elif collection == "operations" and rest:
            if len(rest) == 1 and method == "GET":
                return 200, s.get_compute_op(project, rest[0], region), 0.0
            if len(rest) == 1 and method == "DELETE":
                s.get_compute_op(project, rest[0], region)
                s._compute_ops.pop((project, rest[0]), None)
                return 204, None, 0.0
            if len(rest) == 2 and rest[1] == "wait" and method == "POST":
                s.get_compute_op(project, rest[0], region)
                op = s._compute_ops[(project, rest[0])]
                return 200, s.get_compute_op(project, rest[0], region), (0.0 if op.finished else op.done_at)
        raise ApiError(404, f"The requested URL {path} was not found on this server.", "notFound")

    def _inject(self, method: str, path: str) -> None:
        for fault in self.state.faults:
            if fault.pattern.match(f"{method} {path}"):
                fault.times -= 1
                if fault.times <= 0:
                    self.state.faults.remove(fault)
                raise ApiError(fault.status, fault.message, retry_after=fault.retry_after)

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any, float]:
        s = self.state
        parts = [p for p in path.split("/") if p]
        s.memorystore.op_delay = s.memorystore_cluster.op_delay = s.op_delay
        if self.connectivity.owns(parts):  # networkconnectivity.googleapis.com: its own paths and operations
            try:
                return (*self.connectivity.route(method, parts, query, body), 0.0)
            except ConnectivityError as err:
                raise ApiError(err.status, err.message, err.reason) from None
        try:  # Memorystore for Redis Cluster: its clusters and their operations
            cluster = memorystore_cluster.route(s.memorystore_cluster, method, parts, query, body)
        except memorystore_cluster.Error as err:
            raise ApiError(err.status, err.message, err.reason) from None
        if cluster is not None:
            return cluster[0], cluster[1], 0.0
        if self.filestore.owns(method, parts, body):  # same paths as Memorystore's, another API host
            return self.filestore.route(method, parts[1:], query, body)
        try:
            redis = memorystore.route(s.memorystore, method, parts, query, body)
        except memorystore.Error as err:
            raise ApiError(err.status, err.message, err.reason) from None
        if redis is not None:
            return redis[0], redis[1], 0.0
        if len(parts) >= 7 and parts[:3] == ["compute", "v1", "projects"] and parts[4] == "regions":
            return self._regional(method, path, parts[3], parts[5], parts[6], parts[7:], body, query)
        if len(parts) >= 6 and parts[:3] == ["compute", "v1", "projects"] and parts[4] == "global":
            project, collection, rest = parts[3], parts[5], parts[6:]
            # insert, list, get and delete of each global collection
            crud: dict[str, tuple[Callable[..., Any], ...]] = {
                "addresses": (s.insert_address, lambda p: s.list_addresses(p, query), s.get_address,
                              s.delete_address),
                "networks": (s.insert_network, s.list_networks, s.get_network, s.delete_network)}
            if collection in crud:
                insert, listing, get, delete = crud[collection]
                if not rest and method in ("POST", "GET"):
                    return 200, (insert(project, body) if method == "POST" else listing(project)), 0.0
                if len(rest) == 1 and method in ("GET", "DELETE"):
                    return 200, (get if method == "GET" else delete)(project, rest[0]), 0.0
                if collection == "networks" and len(rest) == 2 and method == "POST" and rest[1] == "addPeering":
                    return 200, s.add_peering(project, rest[0], body), 0.0
                if collection == "networks" and len(rest) == 2 and method == "POST" and rest[1] == "removePeering":
                    return 200, s.remove_peering(project, rest[0], body), 0.0
            elif collection == "operations" and rest:
                if len(rest) == 1 and method == "GET":
                    return 200, s.get_compute_op(project, rest[0]), 0.0
                if len(rest) == 1 and method == "DELETE":
                    s.get_compute_op(project, rest[0])
                    s._compute_ops.pop((project, rest[0]), None)
                    return 204, None, 0.0
                if len(rest) == 2 and rest[1] == "wait" and method == "POST":
                    op = s._compute_ops.get((project, rest[0]))
                    if op is None:
                        s.get_compute_op(project, rest[0])
                    assert op is not None
                    return 200, s.get_compute_op(project, rest[0]), (0.0 if op.finished else op.done_at)
            raise ApiError(404, f"The requested URL {path} was not found on this server.", "notFound")
        if parts[:2] == ["v1", "services"] and len(parts) >= 4 and parts[3] == "connections":
            service = parts[2]
            if len(parts) == 4:
                if method == "POST":
                    return 200, s.create_connection(service, body), 0.0
                if method == "GET":
                    return 200, s.list_connections(service, query), 0.0
            elif len(parts) == 5:
                if method == "PATCH":
                    return 200, s.patch_connection(service, parts[4], body), 0.0
                if method == "POST":
                    return 200, s.delete_connection(service, parts[4], body), 0.0
        if parts[:2] == ["v1", "operations"] and len(parts) == 3 and method == "GET":
            return 200, s.get_sn_op(f"operations/{parts[2]}"), 0.0
        if parts[:1] == ["v3"] and len(parts) == 2 and method == "POST" and parts[1] in (
                "tagKeys", "tagValues", "tagBindings"):
            create = {"tagKeys": s.create_tag_key, "tagValues": s.create_tag_value,
                      "tagBindings": s.create_tag_binding}[parts[1]]
            return 200, create(body), 0.0
        if len(parts) == 3 and parts[0] == "v3" and parts[1] in ("tagKeys", "tagValues") \
                and parts[2] == "namespaced" and method == "GET":
            return 200, s.get_namespaced(parts[1], query.get("name", "")), 0.0
        if parts == ["v3", "effectiveTags"] and method == "GET":
            return 200, s.list_effective_tags(query), 0.0
        if parts[:2] == ["v3", "operations"] and len(parts) == 3 and method == "GET":
            return 200, s.get_sn_op(f"operations/{parts[2]}"), 0.0
        if parts[:2] == ["v1", "projects"] and len(parts) == 3 and method == "GET":
            return 200, s.get_project(parts[2]), 0.0
        raise ApiError(404, f"Method not found: {method} {path}", "NOT_FOUND")


# -- Filestore (file.googleapis.com v1) ------------------------------------------------------------------

_FILESTORE_TIERS = {"BASIC_HDD": (1024, 65433), "BASIC_SSD": (2560, 65433), "ZONAL": (1024, 102400),
                    "REGIONAL": (1024, 102400), "ENTERPRISE": (1024, 10240), "STANDARD": (1024, 65433),
                    "PREMIUM": (2560, 65433), "HIGH_SCALE_SSD": (10240, 102400)}
_INSTANCE_ID_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: A Filestore resource name: ``projects/{p}/locations/{l}/(instances|backups)/{id}``.
_FILESTORE_NAME_RE = re.compile(r"^projects/([^/]+)/locations/([^/]+)/(instances|backups)/([^/]+)$")
#: A zone (``us-east4-a``); backups live in regions (``us-east4``), as the API's ``parent`` documents.
_ZONE_RE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
#: Resource labels as Google Cloud checks them: at most 64, keys start with a lowercase letter, keys and
#: values at most 63 lowercase letters, digits, ``_`` and ``-``.
_LABEL_KEY_RE = re.compile(r"^[a-z][-_a-z0-9]{0,62}$")
_LABEL_VALUE_RE = re.compile(r"^[-_a-z0-9]{0,63}$")
_BACKUP_DESCRIPTION_MAX = 2048
_LIST_PAGE_MAX = 1000
_FILTER_MAX = 4096
_FILTER_DEPTH = 32
#: Enum numbers of the v1 API (clients may send ``$alt=json;enum-encoding=int``, as the GAPIC REST ones do).
_TIER_NUMBERS = {1: "STANDARD", 2: "PREMIUM", 3: "BASIC_HDD", 4: "BASIC_SSD", 5: "HIGH_SCALE_SSD", 6: "ENTERPRISE",
                 7: "ZONAL", 8: "REGIONAL"}
_CONNECT_MODE_NUMBERS = {1: "DIRECT_PEERING", 2: "PRIVATE_SERVICE_ACCESS", 3: "PRIVATE_SERVICE_CONNECT"}
_ADDRESS_MODE_NUMBERS = {1: "MODE_IPV4"}
_PROTOCOL_NUMBERS = {1: "NFS_V3", 2: "NFS_V4_1"}
_INSTANCE_TYPE = "type.googleapis.com/google.cloud.filestore.v1.Instance"
_BACKUP_TYPE = "type.googleapis.com/google.cloud.filestore.v1.Backup"


def _enum(value: Any, numbers: dict[int, str]) -> str:
    """An enum field as its name, whether sent as a name or a number."""
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return numbers.get(int(value), str(value))
    return str(value or "")


def _invalid(message: str) -> ApiError:
    return ApiError(400, message, "INVALID_ARGUMENT")


def _precondition(message: str) -> ApiError:
    return ApiError(400, message, "FAILED_PRECONDITION")


def _check_labels(labels: Any) -> dict[str, str]:
    """``labels`` as Google Cloud accepts them (400 ``INVALID_ARGUMENT`` otherwise)."""
    if labels is None:
        return {}
    if not isinstance(labels, dict) or len(labels) > 64:
        raise _invalid("labels must be a map of at most 64 entries")
    for key, value in labels.items():
        if not _LABEL_KEY_RE.match(str(key)) or not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
            raise _invalid(f"Invalid label {key!r}: {value!r}: keys must start with a lowercase letter; keys "
                           "and values may hold at most 63 lowercase letters, digits, '_' and '-'")
    return {str(k): str(v) for k, v in labels.items()}


# -- list filters (AIP-160, the subset Filestore's callers use) --

_FILTER_TOKEN_RE = re.compile(r'\s+|(?P<tok>\(|\)|"(?:[^"\\]|\\.)*"|!=|<=|>=|=|<|>|:|[^\s()=!<>:"]+)')
_FilterNode = tuple[Any, ...]


def _filter_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        match = _FILTER_TOKEN_RE.match(text, pos)
        if match is None:
            raise _invalid(f"Invalid filter {text!r}: unexpected {text[pos]!r} at {pos}")
        if match.group("tok"):
            tokens.append(match.group("tok"))
        pos = match.end()
    return tokens


def parse_filter(text: str) -> _FilterNode | None:
    """The list filter ``text`` (AIP-160: restrictions ``field.path OP value`` with ``=``, ``!=``, ``<``,
    ``<=``, ``>``, ``>=`` and ``:`` (has; ``:*`` present), ``AND`` / juxtaposition, ``OR`` (which binds
    tighter than ``AND``, as AIP-160 defines), ``NOT`` / ``-``, parentheses; values quoted or bare) as a
    tree; ``None`` for an empty filter. Linear in the length (at most 4,096 characters, parentheses nested at
    most 32 deep); 400 ``INVALID_ARGUMENT`` when malformed."""
    if len(text) > _FILTER_MAX:
        raise _invalid(f"filter longer than {_FILTER_MAX} characters")
    tokens = _filter_tokens(text)
    if not tokens:
        return None
    pos = depth = 0

    def peek() -> str:
        return tokens[pos] if pos < len(tokens) else ""

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise _invalid(f"Invalid filter {text!r}: unexpected end")
        pos += 1
        return tokens[pos - 1]

    def expression() -> _FilterNode:
        parts = [factor()]
        while peek() and peek() != ")":
            if peek() == "AND":
                take()
            parts.append(factor())
        return ("and", parts)

    def factor() -> _FilterNode:
        parts = [term()]
        while peek() == "OR":
            take()
            parts.append(term())
        return ("or", parts)

    def term() -> _FilterNode:
        if peek() in ("NOT", "-"):
            take()
            return ("not", simple())
        if peek().startswith("-") and len(peek()) > 1:  # -field=value
            tokens[pos] = tokens[pos][1:]
            return ("not", simple())
        return simple()

    def simple() -> _FilterNode:
        nonlocal depth
        token = take()
        if token == "(":
            depth += 1
            if depth > _FILTER_DEPTH:
                raise _invalid(f"Invalid filter: parentheses nested deeper than {_FILTER_DEPTH}")
            inner = expression()
            depth -= 1
            if take() != ")":
                raise _invalid(f"Invalid filter {text!r}: unbalanced parentheses")
            return inner
        if token in (")", "AND", "OR", "NOT") or token.startswith('"') or token in _FILTER_OPS:
            raise _invalid(f"Invalid filter {text!r}: unexpected {token!r}")
        op = take()
        if op not in _FILTER_OPS:
            raise _invalid(f"Invalid filter {text!r}: {token!r} needs a comparator (=, !=, <, <=, >, >=, :)")
        value = take()
        if value in ("(", ")") or value in _FILTER_OPS:
            raise _invalid(f"Invalid filter {text!r}: {token}{op} needs a value")
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        return ("cmp", token.split("."), op, value)

    tree = expression()
    if pos != len(tokens):
        raise _invalid(f"Invalid filter {text!r}: unexpected {tokens[pos]!r}")
    return tree


_FILTER_OPS = ("=", "!=", "<", "<=", ">", ">=", ":")


def _filter_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def matches(tree: _FilterNode | None, resource: Mapping[str, Any]) -> bool:
    """Whether ``resource`` (its JSON body) passes the filter ``tree`` of :func:`parse_filter`. A path that
    is not there compares unequal (``!=`` true), as Google's list filters do."""
    if tree is None:
        return True
    kind = tree[0]
    if kind == "and":
        return all(matches(part, resource) for part in tree[1])
    if kind == "or":
        return any(matches(part, resource) for part in tree[1])
    if kind == "not":
        return not matches(tree[1], resource)
    _, path, op, want = tree
    found: Any = resource
    for step in path:
        found = found.get(step) if isinstance(found, Mapping) else None
    if found is None or (isinstance(found, (dict, list)) and op != ":"):
        return op == "!="
    if op == ":":
        if want == "*":
            return True
        items = found if isinstance(found, (list, dict)) else [found]
        return any(_filter_value(item) == want for item in items)
    have = _filter_value(found)
    if op in ("=", "!="):
        return (have == want) == (op == "=")
    try:
        left, right = float(have), float(want)
    except ValueError:
        left, right = have, want  # type: ignore[assignment]
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def _page(items: list[dict[str, Any]], query: Mapping[str, str], key: str) -> dict[str, Any]:
    """One page of ``items`` per ``pageSize`` (at most 1,000; unset: 1,000) and ``pageToken`` (the offset the
    previous page named)."""
    try:
        size = int(query.get("pageSize") or _LIST_PAGE_MAX)
        start = int(query.get("pageToken") or 0)
    except ValueError:
        raise _invalid("Invalid pageSize or pageToken") from None
    if size < 0 or start < 0 or start > len(items):
        raise _invalid("Invalid pageSize or pageToken")
    size = min(size or _LIST_PAGE_MAX, _LIST_PAGE_MAX)
    out: dict[str, Any] = {key: [copy.deepcopy(i) for i in items[start:start + size]]}
    if start + size < len(items):
        out["nextPageToken"] = str(start + size)
    return out


@dataclass
class FilestoreState:
    """Filestore instances, backups and their long-running operations (``file.googleapis.com/v1``), on the
    stand-in's lock and clock.

    Instances: a create answers an operation and the instance in state ``CREATING``, ``READY`` when the
    operation is done (its ``ipAddresses`` from the PSA range ``reservedIpRange`` names, which must exist
    among the project's global addresses); ``fileShares[0].sourceBackup`` must name a ``READY`` backup (404
    ``NOT_FOUND`` / 400 ``FAILED_PRECONDITION``) no larger than the share and is kept on the share; a
    ``fileShares`` update changes the capacity when done (no shrink on BASIC tiers); a delete sets
    ``DELETING`` and removes it when done. :meth:`set_error` puts an instance into state ``ERROR``.

    Backups (regional: ``projects/{p}/locations/{region}/backups/{id}``): a create (``backupId``;
    ``sourceInstance`` a ``READY`` instance of the project, ``sourceFileShare`` its share) answers an
    operation and the backup ``CREATING``, ``READY`` when done, with ``capacityGb`` and
    ``sourceInstanceTier`` of the source and ``storageBytes`` / ``downloadBytes`` the instance's used bytes
    (:meth:`set_used_bytes`; by default a tenth of the share's capacity); list (location ``-``: every
    location of the project; ``filter``, :func:`parse_filter`; ``orderBy`` ``name`` / ``name desc``; pages),
    patch (``updateMask`` of ``labels``, ``description``; applied when the operation is done), delete
    (``DELETING``, gone when done). Backups
    outlive their source instance. The documented concurrency limits of a backup chain (the backups of one
    source instance in one region) hold: see :meth:`delete_backup` and :meth:`create_backup`. Not modelled: the steady
    state rate limit of one backup create or restore per instance every 10 minutes.

    Restore (``POST .../instances/{id}:restore``, ``fileShare``, ``sourceBackup``): the instance is
    ``RESTORING`` until the operation is done, then ``READY`` with ``fileShares[0].sourceBackup`` the
    backup. One operation per instance: a restore, update or backup of an instance that is not ``READY``
    answers 400 ``FAILED_PRECONDITION``.

    Operations (``GET .../operations/{id}``, ``GET .../operations`` with ``filter`` such as
    ``metadata.target="..." AND metadata.verb="restore"``) carry ``metadata.verb`` ``create`` / ``update``
    / ``delete`` / ``restore``. Injected failures (:meth:`GcpState.fail_operation` with api
    ``filestore``) are matched by kind ``create`` / ``update`` / ``delete`` (instances),
    ``createBackup`` / ``updateBackup`` / ``deleteBackup`` (target: the backup id) and ``restore`` (target:
    the instance id); a failed create leaves nothing behind, a failed delete or restore leaves the resource
    ``READY``."""

    parent: GcpState
    _instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    _backups: dict[str, dict[str, Any]] = field(default_factory=dict)
    _used_bytes: dict[str, int] = field(default_factory=dict)
    _ops: dict[str, Operation] = field(default_factory=dict)

    # -- test helpers --

    def instances(self, project: str | None = None) -> dict[str, dict[str, Any]]:
        """Full name -> instance (copies), optionally of one project."""
        with self.parent.lock:
            self.advance()
            return {n: copy.deepcopy(i) for n, i in sorted(self._instances.items())
                    if project is None or n.startswith(f"projects/{project}/")}

    def backups(self, project: str | None = None) -> dict[str, dict[str, Any]]:
        """Full name -> backup (copies), optionally of one project."""
        with self.parent.lock:
            self.advance()
            return {n: copy.deepcopy(b) for n, b in sorted(self._backups.items())
                    if project is None or n.startswith(f"projects/{project}/")}

    def put_backup(self, name: str, source_instance: str = "", labels: Mapping[str, str] | None = None,
                   capacity_gb: int = 1024, tier: str = "BASIC_HDD", state: str = "READY",
                   file_share: str = "vol1") -> dict[str, Any]:
        """Create a backup directly (a fixture: a backup made outside Reconcilery, or one another shoot
        shared); ``name`` is its full name."""
        with self.parent.lock:
            self._backups[name] = {
                "name": name, "state": state, "createTime": _now(), "labels": dict(labels or {}),
                "capacityGb": str(capacity_gb), "storageBytes": "0", "downloadBytes": "0",
                "sourceInstance": source_instance, "sourceFileShare": file_share, "sourceInstanceTier": tier,
                "fileSystemProtocol": "NFS_V3"}
            return copy.deepcopy(self._backups[name])

    def set_used_bytes(self, instance: str, used: int | None) -> None:
        """The bytes the share of ``instance`` (full name) holds: a new backup's ``storageBytes`` and
        ``downloadBytes`` (unset: a tenth of the share's capacity)."""
        with self.parent.lock:
            if used is None:
                self._used_bytes.pop(instance, None)
            else:
                self._used_bytes[instance] = used

    def set_error(self, name: str, message: str = "injected instance failure") -> None:
        """Put the instance ``name`` (full name) into state ``ERROR`` with ``statusMessage``."""
        with self.parent.lock:
            self.advance()
            self._instances[name].update(state="ERROR", statusMessage=message)

    def finish(self) -> None:
        """Complete every running operation now (a test that held them with a long ``op_delay``)."""
        with self.parent.lock:
            for op in self._ops.values():
                op.done_at = min(op.done_at, time.monotonic())
            self.advance()

    # -- operations --

    def advance(self) -> None:
        now = time.monotonic()
        for op in self._ops.values():
            if op.finished or op.done_at > now:
                continue
            op.finished = True
            op.body["done"] = True
            op.body["metadata"]["endTime"] = _now()
            if op.error is not None:
                code, message = op.error
                op.body["error"] = {"code": _RPC_CODE.get(code, 9), "message": message}
                if op.resource is not None:
                    op.resource()  # undo what the operation started
                continue
            result = op.apply() if op.apply is not None else None
            op.body["response"] = {"@type": op.response_type or _INSTANCE_TYPE, **copy.deepcopy(result)} \
                if result else {"@type": "type.googleapis.com/google.protobuf.Empty"}

    def _op(self, location: str, verb: str, target: str, apply: Any, kind: str = "",
            undo: Callable[[], None] | None = None, response_type: str = _INSTANCE_TYPE) -> dict[str, Any]:
        """Start an operation ``verb`` on ``target`` (a full name); ``kind`` (default: ``verb``) is what an
        injected failure matches; ``undo`` runs when it fails."""
        name = f"{location}/operations/operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        body = {"name": name, "done": False, "metadata": {
            "@type": "type.googleapis.com/google.cloud.common.OperationMetadata", "createTime": _now(),
            "target": target, "verb": verb, "apiVersion": "v1"}}
        op = Operation("filestore", kind or verb, target, body, time.monotonic() + self.parent.op_delay, apply,
                       self.parent._take_failure("filestore", kind or verb, target.rsplit("/", 1)[-1]),
                       resource=undo, response_type=response_type)
        self._ops[name] = op
        self.advance()
        return copy.deepcopy(op.body)

    def get_op(self, name: str) -> dict[str, Any]:
        op = self._ops.get(name)
        if op is None:
            raise ApiError(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return copy.deepcopy(op.body)

    def list_ops(self, location: str, query: Mapping[str, str]) -> dict[str, Any]:
        """``GET {location}/operations`` (``-``: every location of the project), ``filter`` on the
        operation's body (``metadata.target``, ``metadata.verb``, ``done``)."""
        tree = parse_filter(query.get("filter", ""))
        found = [op.body for name, op in sorted(self._ops.items())
                 if self._in_location(name, location) and matches(tree, op.body)]
        return _page(found, query, "operations")

    @staticmethod
    def _in_location(name: str, location: str) -> bool:
        project, region = location.split("/")[1], location.split("/")[3]
        parts = name.split("/")
        return parts[1] == project and (region == "-" or parts[3] == region)

    # -- instances --

    def _get(self, name: str) -> dict[str, Any]:
        found = self._instances.get(name)
        if found is None:
            raise ApiError(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return found

    def get_instance(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(self._get(name))

    @staticmethod
    def _check_capacity(tier: str, capacity: int) -> None:
        low, high = _FILESTORE_TIERS[tier]
        if not low <= capacity <= high:
            raise ApiError(400, f"Invalid value for capacity_gb: {capacity}; the {tier} tier needs between "
                                f"{low} and {high} GB", "INVALID_ARGUMENT")

    def _source_backup(self, name: Any, capacity: int, project: str) -> dict[str, Any]:
        """The backup ``name`` an instance of ``project`` is created or restored from: 400 for a malformed name
        or one of another project, 404 when absent, 400 ``FAILED_PRECONDITION`` when not ``READY``, 400 when
        larger than the share ``capacity``."""
        match = _FILESTORE_NAME_RE.match(str(name or ""))
        if match is None or match.group(3) != "backups":
            raise _invalid(f"Invalid source backup '{name}': must be projects/{{project}}/locations/{{location}}/"
                           "backups/{backup}")
        if project and match.group(1) != project:
            raise _invalid(f"source backup '{name}' is not of project '{project}': backups cannot be shared "
                           "across projects")
        backup = self._backups.get(str(name))
        if backup is None:
            raise ApiError(404, f"Resource '{name}' was not found", "NOT_FOUND")
        if backup["state"] != "READY":
            raise _precondition(f"backup '{name}' is {backup['state']}, not READY")
        if capacity < int(backup["capacityGb"]):
            raise _invalid(f"the file share's capacity {capacity} GB is less than the backup's source capacity "
                           f"{backup['capacityGb']} GB")
        return backup

    def create_instance(self, location: str, instance_id: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
        if not _INSTANCE_ID_RE.match(instance_id or ""):
            raise ApiError(400, f"instance_id '{instance_id}' must match [a-z]([-a-z0-9]*[a-z0-9])?",
                           "INVALID_ARGUMENT")
        name = f"{location}/instances/{instance_id}"
        if name in self._instances:
            raise ApiError(409, f"Resource '{name}' already exists", "ALREADY_EXISTS")
        tier = _enum(body.get("tier"), _TIER_NUMBERS)
        if tier not in _FILESTORE_TIERS:
            raise ApiError(400, f"Invalid value for tier: '{tier}'", "INVALID_ARGUMENT")
        shares = body.get("fileShares") or []
        if len(shares) != 1 or not shares[0].get("name"):
            raise ApiError(400, "exactly one file share with a name is required", "INVALID_ARGUMENT")
        capacity = int(shares[0].get("capacityGb") or 0)
        self._check_capacity(tier, capacity)
        source = shares[0].get("sourceBackup")
        if source:
            self._source_backup(source, capacity, location.split("/")[1])
        networks = body.get("networks") or []
        if len(networks) != 1 or not networks[0].get("network"):
            raise ApiError(400, "exactly one network is required", "INVALID_ARGUMENT")
        network = dict(networks[0])
        if "connectMode" in network:
            network["connectMode"] = _enum(network["connectMode"], _CONNECT_MODE_NUMBERS)
        network["modes"] = [_enum(m, _ADDRESS_MODE_NUMBERS) for m in network.get("modes") or []] or ["MODE_IPV4"]
        project = location.split("/")[1]
        ip = ""
        reserved = str(network.get("reservedIpRange") or "")
        if network.get("connectMode") == "PRIVATE_SERVICE_ACCESS":
            address = self.parent._addresses.get((project, reserved))
            if address is None:
                raise ApiError(400, f"reserved IP range '{reserved}' is not an allocated range of the network",
                               "INVALID_ARGUMENT")
            ip = str(ipaddress.ip_address(address["address"]) + 2)
        elif reserved:
            ip = str(ipaddress.ip_network(reserved, strict=False).network_address + 2)
        instance = {"name": name, "tier": tier, "state": "CREATING", "createTime": _now(),
                    "fileShares": [{"name": str(shares[0]["name"]), "capacityGb": str(capacity),
                                    **({"sourceBackup": str(source)} if source else {})}],
                    "networks": [{**network, "ipAddresses": [ip] if ip else []}],
                    "protocol": _enum(body.get("protocol"), _PROTOCOL_NUMBERS) or "NFS_V3",
                    "labels": dict(body.get("labels") or {})}
        self._instances[name] = instance

        def apply() -> dict[str, Any] | None:
            found = self._instances.get(name)
            if found is not None and found["state"] == "CREATING":
                found["state"] = "READY"
            return found

        def fail() -> None:
            self._instances.pop(name, None)

        out = self._op(location, "create", name, apply)
        if self._ops[out["name"]].error is not None:
            self._ops[out["name"]].apply = None
            fail()
        return out

    def update_instance(self, name: str, mask: str, body: Any) -> dict[str, Any]:
        instance = self._get(name)
        if instance["state"] != "READY":
            raise ApiError(400, f"instance is {instance['state']}, not READY", "FAILED_PRECONDITION")
        fields = {f.strip() for f in mask.split(",") if f.strip()}
        if not fields or not fields <= {"fileShares", "description", "labels"}:
            raise ApiError(400, f"update_mask '{mask}' is not supported", "INVALID_ARGUMENT")
        change: dict[str, Any] = {}
        if "fileShares" in fields:
            shares = (body or {}).get("fileShares") or []
            capacity = int((shares[0] if shares else {}).get("capacityGb") or 0)
            self._check_capacity(instance["tier"], capacity)
            if instance["tier"].startswith("BASIC") and capacity < int(instance["fileShares"][0]["capacityGb"]):
                raise ApiError(400, "shrinking a BASIC tier file share is not supported", "INVALID_ARGUMENT")
            change["capacityGb"] = str(capacity)

        def apply() -> dict[str, Any] | None:
            found = self._instances.get(name)
            if found is not None and change:
                found["fileShares"][0].update(change)
            return found

        return self._op(name.rsplit("/instances/", 1)[0], "update", name, apply)

    def delete_instance(self, name: str) -> dict[str, Any]:
        instance = self._get(name)
        instance["state"] = "DELETING"

        def apply() -> None:
            self._instances.pop(name, None)

        return self._op(name.rsplit("/instances/", 1)[0], "delete", name, apply)

    def restore_instance(self, name: str, body: Any) -> dict[str, Any]:
        """``POST {name}:restore`` (``fileShare``, ``sourceBackup``): 404 for an unknown instance or
        backup, 400 for another share or a malformed / too large backup, 400 ``FAILED_PRECONDITION`` while
        the instance is not ``READY`` (one operation per instance) or the backup is not ``READY``."""
        instance = self._get(name)
        if not isinstance(body, dict):
            raise _invalid("Invalid JSON payload received.")
        share = instance["fileShares"][0]
        if body.get("fileShare") != share["name"]:
            raise _invalid(f"file share '{body.get('fileShare')}' is not a file share of instance '{name}'")
        if instance["state"] != "READY":
            raise _precondition(f"instance '{name}' is {instance['state']}: another operation is in progress")
        backup = self._source_backup(body.get("sourceBackup"), int(share["capacityGb"]), name.split("/")[1])
        instance["state"] = "RESTORING"

        def apply() -> dict[str, Any] | None:
            found = self._instances.get(name)
            if found is not None and found["state"] == "RESTORING":
                found["state"] = "READY"
                found["fileShares"][0]["sourceBackup"] = backup["name"]
            return found

        def undo() -> None:
            found = self._instances.get(name)
            if found is not None and found["state"] == "RESTORING":
                found["state"] = "READY"

        return self._op(name.rsplit("/instances/", 1)[0], "restore", name, apply, undo=undo)

    # -- backups --

    def _get_backup(self, name: str) -> dict[str, Any]:
        found = self._backups.get(name)
        if found is None:
            raise ApiError(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return found

    def get_backup(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(self._get_backup(name))

    def create_backup(self, location: str, backup_id: str, body: Any) -> dict[str, Any]:
        """``POST {location}/backups?backupId=`` (body a Backup): 400 for a bad id, a zone or ``-`` as
        location, bad labels, a malformed or unknown source instance or another share, 409 for a taken
        name, 400 ``FAILED_PRECONDITION`` when the source instance is not ``READY`` or its most recent
        backup is being deleted (documented, "Operations concurrency")."""
        if not isinstance(body, dict):
            raise _invalid("Invalid JSON payload received.")
        if not _INSTANCE_ID_RE.match(backup_id or ""):
            raise _invalid(f"backup_id '{backup_id}' must start with a lowercase letter followed by up to 62 "
                           "lowercase letters, numbers, or hyphens, and cannot end with a hyphen")
        region = location.split("/")[3]
        if region == "-" or _ZONE_RE.match(region):
            raise _invalid(f"Invalid location '{region}': backups are regional (for example us-east4)")
        name = f"{location}/backups/{backup_id}"
        if name in self._backups:
            raise ApiError(409, f"Resource '{name}' already exists", "ALREADY_EXISTS")
        description = str(body.get("description") or "")
        if len(description) > _BACKUP_DESCRIPTION_MAX:
            raise _invalid(f"description longer than {_BACKUP_DESCRIPTION_MAX} characters")
        labels = _check_labels(body.get("labels"))
        source_name = str(body.get("sourceInstance") or "")
        match = _FILESTORE_NAME_RE.match(source_name)
        if match is None or match.group(3) != "instances" or match.group(1) != location.split("/")[1]:
            raise _invalid(f"Invalid source instance '{source_name}': must be projects/{{project}}/locations/"
                           "{zone}/instances/{instance} of the backup's project")
        source = self._instances.get(source_name)
        if source is None:
            raise _invalid(f"source instance '{source_name}' does not exist")
        share = source["fileShares"][0]
        if body.get("sourceFileShare") != share["name"]:
            raise _invalid(f"source file share '{body.get('sourceFileShare')}' is not a file share of instance "
                           f"'{source_name}'")
        if source["state"] != "READY":
            raise _precondition(f"source instance '{source_name}' is {source['state']}, not READY")
        latest = self._latest(source_name, location)
        if latest is not None and latest["state"] == "DELETING":
            raise _precondition(f"the most recent backup of instance '{source_name}' is being deleted")
        used = str(self._used_bytes.get(source_name, int(share["capacityGb"]) * 2**30 // 10))
        backup = {"name": name, "state": "CREATING", "createTime": _now(), "labels": labels,
                  "capacityGb": share["capacityGb"], "storageBytes": used, "downloadBytes": used,
                  "sourceInstance": source_name, "sourceFileShare": share["name"],
                  "sourceInstanceTier": source["tier"], "fileSystemProtocol": source.get("protocol", "NFS_V3"),
                  **({"description": description} if description else {})}
        self._backups[name] = backup

        def apply() -> dict[str, Any] | None:
            found = self._backups.get(name)
            if found is not None and found["state"] == "CREATING":
                found["state"] = "READY"
            return found

        def undo() -> None:
            self._backups.pop(name, None)

        out = self._op(location, "create", name, apply, kind="createBackup", undo=undo, response_type=_BACKUP_TYPE)
        if self._ops[out["name"]].error is not None:
            undo()
        return out

    def list_backups(self, location: str, query: Mapping[str, str]) -> dict[str, Any]:
        """``GET {location}/backups`` (``-``: every location of the project) with ``filter``, ``orderBy``
        (``name``, ``name desc`` or unset), ``pageSize`` and ``pageToken``."""
        tree = parse_filter(query.get("filter", ""))
        order = " ".join(query.get("orderBy", "").split())
        if order not in ("", "name", "name asc", "name desc"):
            raise _invalid(f"Invalid orderBy '{order}': supported are \"name\", \"name desc\" or \"\"")
        found = [b for name, b in sorted(self._backups.items(), reverse=order == "name desc")
                 if self._in_location(name, location) and matches(tree, b)]
        return _page(found, query, "backups")

    def update_backup(self, name: str, mask: str, body: Any) -> dict[str, Any]:
        """``PATCH {name}?updateMask=labels[,description]``: the change applies when the operation is done;
        400 for another field, 400 ``FAILED_PRECONDITION`` while the backup is not ``READY``."""
        backup = self._get_backup(name)
        fields = {f.strip() for f in mask.split(",") if f.strip()}
        if not fields or not fields <= {"description", "labels"}:
            raise _invalid(f"update_mask '{mask}' is not supported: updatable are description and labels")
        if backup["state"] != "READY":
            raise _precondition(f"backup '{name}' is {backup['state']}, not READY")
        body = body if isinstance(body, dict) else {}
        change: dict[str, Any] = {}
        if "labels" in fields:
            change["labels"] = _check_labels(body.get("labels"))
        if "description" in fields:
            description = str(body.get("description") or "")
            if len(description) > _BACKUP_DESCRIPTION_MAX:
                raise _invalid(f"description longer than {_BACKUP_DESCRIPTION_MAX} characters")
            change["description"] = description

        def apply() -> dict[str, Any] | None:
            found = self._backups.get(name)
            if found is not None:
                found.update(change)
                if not found.get("description"):
                    found.pop("description", None)
            return found

        return self._op(name.rsplit("/backups/", 1)[0], "update", name, apply, kind="updateBackup",
                        response_type=_BACKUP_TYPE)

    def _chain(self, source: str, location: str) -> list[dict[str, Any]]:
        """The backups of the source instance ``source`` in ``location`` (a backup chain: one instance, one
        region), oldest first."""
        return [b for n, b in self._backups.items()
                if source and b.get("sourceInstance") == source and n.startswith(f"{location}/backups/")]

    def _latest(self, source: str, location: str) -> dict[str, Any] | None:
        """The most recent backup of the chain that is no longer being created."""
        done = [b for b in self._chain(source, location) if b["state"] != "CREATING"]
        return done[-1] if done else None

    def delete_backup(self, name: str) -> dict[str, Any]:
        """``DELETE {name}``: ``DELETING`` until the operation is done, then gone; 404 when absent, 400
        ``FAILED_PRECONDITION`` while it is already being deleted. The documented concurrency limits
        (Filestore "Operations concurrency"): outside the BASIC tiers, one delete at a time per backup chain
        (the backups of one instance in one region; a second one answers 429 ``RESOURCE_EXHAUSTED``, 400
        ``FAILED_PRECONDITION`` once the source instance is gone); the most recent backup of a chain cannot
        be deleted while a backup of the chain is being created (400 ``FAILED_PRECONDITION``)."""
        backup = self._get_backup(name)
        if backup["state"] == "DELETING":
            raise _precondition(f"backup '{name}' is already being deleted")
        source, location = str(backup.get("sourceInstance") or ""), name.rsplit("/backups/", 1)[0]
        chain = self._chain(source, location)
        if not str(backup.get("sourceInstanceTier") or "").startswith("BASIC") and any(
                b is not backup and b["state"] == "DELETING" for b in chain):
            if source in self._instances:
                raise ApiError(429, f"another backup of instance '{source}' is being deleted: backups of one "
                                    "source instance are deleted one at a time", "RESOURCE_EXHAUSTED")
            raise _precondition(f"another backup of the deleted instance '{source}' is being deleted")
        if backup is self._latest(source, location) and any(b["state"] == "CREATING" for b in chain):
            raise _precondition(f"backup '{name}' is the most recent backup of instance '{source}', which is "
                                "being backed up: delete it when the backup create operation completes")
        before = backup["state"]
        backup["state"] = "DELETING"

        def apply() -> None:
            self._backups.pop(name, None)

        def undo() -> None:
            found = self._backups.get(name)
            if found is not None:
                found["state"] = before

        return self._op(name.rsplit("/backups/", 1)[0], "delete", name, apply, kind="deleteBackup", undo=undo)

    # -- routing --

    def owns(self, method: str, parts: list[str], body: Any) -> bool:
        """Whether a ``/v1/projects/{p}/locations/{l}/...`` request is Filestore's: on Google the path is
        the same for Memorystore (``redis.googleapis.com``) and Filestore (``file.googleapis.com``); the
        stand-in serves both on one port, so a create is Filestore's by its body (``fileShares``), backups
        and the operations list are Filestore's alone, any other request is Filestore's by the instance
        or operation it names."""
        if len(parts) < 6 or parts[:2] != ["v1", "projects"] or parts[3] != "locations":
            return False
        location, rest = "/".join(parts[1:5]), parts[5:]
        if rest == ["instances"]:
            return method == "POST" and isinstance(body, dict) and "fileShares" in body
        if rest[0] == "backups" or (rest == ["operations"] and method == "GET"):
            return True
        name = f"{location}/{rest[0]}/{rest[1].split(':', 1)[0]}" if len(rest) == 2 else ""
        return name in self._instances or name in self._ops

    def route(self, method: str, parts: list[str], query: dict[str, str], body: Any) -> tuple[int, Any, float]:
        """``/v1/projects/{p}/locations/{l}/(instances|backups|operations)[/{id}[:restore]]``."""
        location = "/".join(parts[:4])
        collection, rest = parts[4], parts[5:]
        if collection == "instances":
            if not rest and method == "POST":
                return 200, self.create_instance(location, query.get("instanceId", ""), body), 0.0
            if len(rest) == 1 and rest[0].endswith(":restore") and method == "POST":
                return 200, self.restore_instance(f"{location}/instances/{rest[0][:-len(':restore')]}", body), 0.0
            if len(rest) == 1:
                name = f"{location}/instances/{rest[0]}"
                if method == "GET":
                    return 200, self.get_instance(name), 0.0
                if method == "PATCH":
                    return 200, self.update_instance(name, query.get("updateMask", ""), body), 0.0
                if method == "DELETE":
                    return 200, self.delete_instance(name), 0.0
        if collection == "backups":
            if not rest and method == "POST":
                return 200, self.create_backup(location, query.get("backupId", ""), body), 0.0
            if not rest and method == "GET":
                return 200, self.list_backups(location, query), 0.0
            if len(rest) == 1:
                name = f"{location}/backups/{rest[0]}"
                if method == "GET":
                    return 200, self.get_backup(name), 0.0
                if method == "PATCH":
                    return 200, self.update_backup(name, query.get("updateMask", ""), body), 0.0
                if method == "DELETE":
                    return 200, self.delete_backup(name), 0.0
        if collection == "operations" and not rest and method == "GET":
            return 200, self.list_ops(location, query), 0.0
        if collection == "operations" and len(rest) == 1 and method == "GET":
            return 200, self.get_op(f"{location}/operations/{rest[0]}"), 0.0
        raise ApiError(404, f"Method not found: {method} /{'/'.join(parts)}", "NOT_FOUND")


def main(argv: list[str] | None = None) -> int:
    """``python -m standins.gcp --port N [--op-delay S] [--project ID ...]``; runs until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m standins.gcp", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9101)
    parser.add_argument("--op-delay", type=float, default=0.5, help="seconds until an operation is DONE")
    parser.add_argument("--project", action="append", default=[], help="a project id known from the start")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    standin = GcpStandIn(port=args.port, host=args.host, op_delay=args.op_delay, projects=tuple(args.project))
    return standin.serve_forever("gcp stand-in: {url}")


if __name__ == "__main__":
    raise SystemExit(main())
