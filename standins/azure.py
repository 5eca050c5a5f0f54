"""Azure Resource Manager stand-in: resource groups, virtual networks, subnets, VNet peerings, network
security groups, private DNS zones and their virtual network links, on aiohttp, speaking the ARM wire
protocol the unmodified ``azure-mgmt-network``, ``azure-mgmt-privatedns`` and ``azure-mgmt-resource``
clients use.

What is faithful to ARM (and pinned by the conformance test):

- every request needs ``api-version`` (``400 MissingApiVersionParameter``) and a bearer token
  (``401 AuthenticationFailed``); paths are matched case-insensitively, as ARM does;
- ``PUT`` of a network or private DNS resource answers ``201`` (new) or ``200`` (update) with the
  resource in ``provisioningState`` ``Updating`` and an ``Azure-AsyncOperation`` header (plus
  ``Location`` and ``Retry-After``); the operation answers ``{"status": "InProgress"}`` until it ends
  ``Succeeded`` (the resource too) or ``Failed`` with ``{"error": {"code", "message"}}`` (the resource
  is then ``Failed``);
- ``DELETE`` answers ``202`` with ``Azure-AsyncOperation`` and ``Location`` (the resource is
  ``Deleting`` and goes when the operation ends; the ``Location`` URL answers ``202`` then ``204``),
  or ``204`` when there is nothing to delete; resource groups delete through ``Location`` only and take
  everything in them along;
- errors answer ``{"error": {"code", "message"}}`` with ARM's codes: ``ResourceGroupNotFound``,
  ``ResourceNotFound`` / ``NotFound`` (a missing parent is ``ParentResourceNotFound``),
  ``InvalidResourceReference``, ``NetcfgSubnetRangeOutsideVnet``, ``NetcfgSubnetRangesOverlap``,
  ``InUseNetworkSecurityGroup``, ``InUseSubnetCannotBeDeleted``, ``VnetAddressSpacesOverlap``,
  ``CannotDeleteResource`` (409, a private DNS zone with links), ``TooManyRequests`` (429, with
  ``Retry-After``); for peerings ``VnetAddressSpacesOverlap`` (with ``Overlapping address prefixes: ...``),
  ``AnotherPeeringAlreadyReferencesRemoteVnet`` (a second peering of one VNet to the same remote VNet)
  and ``RemotePeeringIsDisconnected`` (the remote VNet's peering back is ``Disconnected``);
- NAT gateways and public IP addresses are read-only (``GET`` of one, list of a resource group), seeded
  with :meth:`AzureState.put_nat_gateway` as Gardener makes them for a shoot: a subnet's
  ``properties.natGateway.id``, the gateway's ``properties.publicIpAddresses[].id`` and ``subnets[].id``,
  an address's ``properties.ipAddress`` and ``natGateway.id``;
- VNet peerings are ``Initiated`` until the remote VNet peers back, then ``Connected`` on both sides
  (``peeringSyncLevel`` ``FullyInSync``); deleting one side makes the other ``Disconnected``.

Operations end ``op_delay`` seconds after they start (time-based: a client that only re-reads the
resource sees it change too). Injectable: :meth:`AzureState.inject` (HTTP errors such as 429/5xx for the
next matching requests) and :meth:`AzureState.fail_provisioning` (the next operation on a resource ends
``Failed``).

Use in-process::

    azure = AzureStandIn(op_delay=0.1).start()               # plain HTTP; tls=True for HTTPS
    azure.url                                                # the clients' base_url
    azure.state.resource(f"/subscriptions/{sub}/resourceGroups/rg")
    azure.stop()

or as a process: ``python -m standins.azure --port 9102 [--tls-dir DIR]`` (with ``--tls-dir`` it serves
HTTPS with a fresh CA written to ``DIR/ca.crt``, for clients that keep the SDK's bearer policy).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import ipaddress
import json
import logging
import os
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from standins import azure_redis
from standins.arm import ArmError, AsyncOp
from standins.server import StandInServer

log = logging.getLogger("standins.azure")

NETWORK_PROVIDER = "microsoft.network"
_TYPES = {
    "virtualnetworks": "Microsoft.Network/virtualNetworks",
    "virtualnetworks/subnets": "Microsoft.Network/virtualNetworks/subnets",
    "virtualnetworks/virtualnetworkpeerings": "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
    "networksecuritygroups": "Microsoft.Network/networkSecurityGroups",
    "privatednszones": "Microsoft.Network/privateDnsZones",
    "privatednszones/virtualnetworklinks": "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
    "natgateways": "Microsoft.Network/natGateways",
    "publicipaddresses": "Microsoft.Network/publicIPAddresses",
}
#: Collections served read-only (GET, list), their resources seeded by :meth:`AzureState.put_nat_gateway`.
_READ_ONLY = ("natgateways", "publicipaddresses")
#: Canonical spelling of collection segments (ARM answers ids in this casing).
_SEGMENTS = {"virtualnetworks": "virtualNetworks", "subnets": "subnets",
             "virtualnetworkpeerings": "virtualNetworkPeerings", "networksecuritygroups": "networkSecurityGroups",
             "privatednszones": "privateDnsZones", "virtualnetworklinks": "virtualNetworkLinks",
             "natgateways": "natGateways", "publicipaddresses": "publicIPAddresses"}
_DEFAULT_RULES = [
    ("AllowVnetInBound", 65000, "Inbound", "Allow", "VirtualNetwork", "VirtualNetwork"),
    ("AllowAzureLoadBalancerInBound", 65001, "Inbound", "Allow", "AzureLoadBalancer", "*"),
    ("DenyAllInBound", 65500, "Inbound", "Deny", "*", "*"),
    ("AllowVnetOutBound", 65000, "Outbound", "Allow", "VirtualNetwork", "VirtualNetwork"),
    ("AllowInternetOutBound", 65001, "Outbound", "Allow", "*", "Internet"),
    ("DenyAllOutBound", 65500, "Outbound", "Deny", "*", "*"),
]


def _etag() -> str:
    return f'W/"{uuid.uuid4()}"'


@dataclass
class Fault:
    """An injected error for the next ``times`` requests whose ``METHOD path`` matches ``pattern``."""

    pattern: re.Pattern[str]
    status: int
    code: str
    message: str
    times: int
    retry_after: str | None


@dataclass
class AzureState:
    """All resources of the stand-in, keyed by lower-cased resource id; thread-safe."""

    op_delay: float = 0.05
    retry_after: str = "0"
    lock: threading.RLock = field(default_factory=threading.RLock)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    ops: dict[str, AsyncOp] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    provisioning_failures: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    request_log: list[tuple[str, str]] = field(default_factory=list)
    #: ``(kind, id)`` of every write that changed state, in order (``put``/``delete``), for tests
    #: that check the order in which resources were created and deleted.
    history: list[tuple[str, str]] = field(default_factory=list)

    # -- test helpers --------------------------------------------------------------------------------

    def resource(self, resource_id: str) -> dict[str, Any] | None:
        """The resource (or resource group) with this id as a GET would return it, or None."""
        with self.lock:
            self._advance()
            key = resource_id.lower().rstrip("/")
            if key in self.groups:
                return copy.deepcopy(self.groups[key])
            found = self.resources.get(key)
            return self._view(key) if found is not None else None

    def ids(self, type_suffix: str = "") -> list[str]:
        """Ids of the resources (not groups) whose type ends with ``type_suffix``, sorted."""
        with self.lock:
            self._advance()
            return sorted(r["id"] for r in self.resources.values()
                          if r["type"].lower().endswith(type_suffix.lower()))

    def inject(self, method: str, path_regex: str, status: int = 429, code: str = "", message: str = "",
               times: int = 1, retry_after: str | None = None) -> None:
        """Answer the next ``times`` requests matching ``METHOD`` and ``path_regex`` (case-insensitive)
        with an ARM error (429 gets ``TooManyRequests`` and ``Retry-After: 0`` unless told otherwise)."""
        code = code or {429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable",
                        409: "Conflict"}.get(status, "BadRequest")
        if status == 429 and retry_after is None:
            retry_after = "0"
        with self.lock:
            self.faults.append(Fault(re.compile(rf"^{method.upper()} .*{path_regex}", re.IGNORECASE), status, code,
                                     message or f"injected HTTP {status}", times, retry_after))

    def fail_provisioning(self, resource_name: str, code: str = "InternalServerError",
                          message: str = "An error occurred.", times: int = 1) -> None:
        """The next ``times`` PUT operations on a resource named ``resource_name`` end ``Failed``."""
        with self.lock:
            self.provisioning_failures[resource_name.lower()] = (code, message, times)

    def put_nat_gateway(self, vnet_id: str, subnet: str, cidr: str, name: str, ips: tuple[str, ...],
                        zone: str = "") -> dict[str, Any]:
        """Seed a NAT gateway as Gardener makes one for an Azure shoot (a fixture; these collections are
        read-only here): in the VNet ``vnet_id``'s resource group and location, the subnet ``subnet``
        (``cidr``, created when missing) referencing the Standard NAT gateway ``name``, which references one
        Standard static public IP address per ``ips`` (``<name>-ip``, then ``<name>-ip-2``, ...), each
        referencing it back, in ``zone`` when given. Idempotent. Returns the NAT gateway as GET answers it."""
        with self.lock:
            vnet = self.resources.get(vnet_id.lower())
            if vnet is None or vnet["type"] != _TYPES["virtualnetworks"]:
                raise KeyError(f"no virtual network {vnet_id}")
            prefix = vnet["id"].split("/providers/", 1)[0] + "/providers/Microsoft.Network"
            location = vnet["location"]
            gateway_id = f"{prefix}/natGateways/{name}"
            subnet_id = f"{vnet['id']}/subnets/{subnet}"
            zones = {"zones": [zone]} if zone else {}
            ip_ids = []
            for i, ip in enumerate(ips):
                ip_name = f"{name}-ip" + (f"-{i + 1}" if i else "")
                ip_id = f"{prefix}/publicIPAddresses/{ip_name}"
                ip_ids.append({"id": ip_id})
                self.resources[ip_id.lower()] = {
                    "id": ip_id, "name": ip_name, "type": _TYPES["publicipaddresses"], "location": location,
                    "etag": _etag(), **zones, "sku": {"name": "Standard", "tier": "Regional"},
                    "properties": {"provisioningState": "Succeeded", "resourceGuid": str(uuid.uuid4()),
                                   "ipAddress": str(ipaddress.ip_address(ip)), "publicIPAddressVersion": "IPv4",
                                   "publicIPAllocationMethod": "Static", "idleTimeoutInMinutes": 4, "ipTags": [],
                                   "natGateway": {"id": gateway_id}}}
            self.resources[gateway_id.lower()] = {
                "id": gateway_id, "name": name, "type": _TYPES["natgateways"], "location": location,
                "etag": _etag(), **zones, "sku": {"name": "Standard"},
                "properties": {"provisioningState": "Succeeded", "resourceGuid": str(uuid.uuid4()),
                               "idleTimeoutInMinutes": 4, "publicIpAddresses": ip_ids,
                               "subnets": [{"id": subnet_id}]}}
            found = self.resources.get(subnet_id.lower())
            if found is None:
                found = self.resources[subnet_id.lower()] = {
                    "id": subnet_id, "name": subnet, "type": _TYPES["virtualnetworks/subnets"], "etag": _etag(),
                    "properties": {"provisioningState": "Succeeded", "addressPrefix": cidr,
                                   "privateEndpointNetworkPolicies": "Disabled",
                                   "privateLinkServiceNetworkPolicies": "Enabled"}}
            found["properties"]["natGateway"] = {"id": gateway_id}
            return self._view(gateway_id.lower())

    # -- operations ----------------------------------------------------------------------------------

    def _advance(self) -> None:
        now = time.monotonic()
        for op in list(self.ops.values()):
            if op.status != "InProgress" or op.done_at > now:
                continue
            found = self.resources.get(op.key) if op.key not in self.groups else self.groups[op.key]
            if op.kind == "delete":
                op.status = "Succeeded"
                self._remove(op.key)
                continue
            if op.error is not None:
                op.status = "Failed"
                if found is not None:
                    found["properties"]["provisioningState"] = "Failed"
                continue
            op.status = "Succeeded"
            if found is not None:
                found["properties"]["provisioningState"] = "Succeeded"
                if "virtualNetworkLinkState" in found["properties"]:
                    found["properties"]["virtualNetworkLinkState"] = "Completed"

    def _remove(self, key: str) -> None:
        if key in self.groups:
            del self.groups[key]
            for other in [k for k in self.resources if k.startswith(key + "/")]:
                self._remove(other)
            self.history.append(("delete", key))
            return
        if key not in self.resources:
            return
        for child in [k for k in self.resources if k.startswith(key + "/")]:
            self._remove(child)
        gone = self.resources.pop(key)
        self.history.append(("delete", gone["id"]))
        if gone["type"].endswith("virtualNetworkPeerings"):
            # The remote side's peering back to this VNet loses its partner.
            vnet_id = key.rsplit("/virtualnetworkpeerings/", 1)[0]
            remote_id = gone["properties"]["remoteVirtualNetwork"]["id"].lower()
            for peer in self.resources.values():
                if peer["type"].endswith("virtualNetworkPeerings") \
                        and peer["id"].lower().startswith(remote_id + "/") \
                        and peer["properties"]["remoteVirtualNetwork"]["id"].lower() == vnet_id:
                    peer["properties"]["peeringState"] = "Disconnected"

    def _start(self, kind: str, key: str, name: str) -> AsyncOp:
        error = None
        failure = self.provisioning_failures.get(name.lower()) if kind == "put" else None
        if failure is not None:
            code, message, times = failure
            error = (code, message)
            if times <= 1:
                del self.provisioning_failures[name.lower()]
            else:
                self.provisioning_failures[name.lower()] = (code, message, times - 1)
        op = AsyncOp(str(uuid.uuid4()), kind, key, time.monotonic() + self.op_delay, error)
        self.ops[op.op_id] = op
        return op

    # -- views ---------------------------------------------------------------------------------------

    def _view(self, key: str) -> dict[str, Any]:
        """A stored resource as GET returns it (VNets embed their subnets and peerings; NSGs list the
        subnets that use them; zones count their links)."""
        res = copy.deepcopy(self.resources[key])
        rtype = res["type"]
        if rtype == _TYPES["virtualnetworks"]:
            res["properties"]["subnets"] = [self._view(k) for k in sorted(self.resources)
                                            if k.startswith(key + "/subnets/") and k.count("/") == key.count("/") + 2]
            res["properties"]["virtualNetworkPeerings"] = [
                self._view(k) for k in sorted(self.resources)
                if k.startswith(key + "/virtualnetworkpeerings/") and k.count("/") == key.count("/") + 2]
        elif rtype == _TYPES["networksecuritygroups"]:
            users = [{"id": r["id"]} for r in self.resources.values() if r["type"] == _TYPES["virtualnetworks/subnets"]
                     and (r["properties"].get("networkSecurityGroup") or {}).get("id", "").lower() == key]
            if users:
                res["properties"]["subnets"] = users
        elif rtype == _TYPES["privatednszones"]:
            links = [k for k in self.resources if k.startswith(key + "/virtualnetworklinks/")]
            res["properties"]["numberOfVirtualNetworkLinks"] = len(links)
            res["properties"]["numberOfVirtualNetworkLinksWithRegistration"] = 0
        elif rtype == _TYPES["virtualnetworks/virtualnetworkpeerings"]:
            remote = self.resources.get(res["properties"]["remoteVirtualNetwork"]["id"].lower())
            if remote is not None:
                res["properties"]["remoteAddressSpace"] = copy.deepcopy(remote["properties"]["addressSpace"])
                res["properties"]["remoteVirtualNetworkAddressSpace"] = copy.deepcopy(
                    remote["properties"]["addressSpace"])
        return res

    # -- request handling ----------------------------------------------------------------------------

    def handle(self, method: str, path: str, body: Any, base: str, api_version: str) -> tuple[int, Any, dict[str, str]]:
        """Answer one request: ``(status, json body or None, headers)``. Raises ``ArmError``."""
        parts = [p for p in path.split("/") if p]
        low = [p.lower() for p in parts]
        if len(parts) < 2 or low[0] != "subscriptions":
            raise ArmError(404, "InvalidResourceType", f"The resource path '{path}' is not supported.")
        sub = parts[1]
        rest, lrest = parts[2:], low[2:]
        # Operation status and result URLs
        if len(lrest) >= 5 and lrest[0] == "providers" and lrest[2] == "locations" \
                and lrest[4] in ("operations", "operationresults") and len(rest) == 6:
            return self._op_answer(rest[5], lrest[4] == "operationresults")
        if len(lrest) == 2 and lrest[0] == "operationresults":
            return self._op_answer(rest[1], True)
        if len(lrest) >= 2 and lrest[0] == "resourcegroups":
            rg = rest[1]
            rg_key = f"/subscriptions/{sub}/resourcegroups/{rg}".lower()
            if len(lrest) == 2:
                return self._group(method, sub, rg, rg_key, body, base, api_version)
            redis = azure_redis.handle(self, method, sub, rg, rg_key, rest[2:], body, base, api_version)
            if redis is not None:  # Azure Cache for Redis, private endpoints (standins/azure_redis.py)
                return redis
            if len(lrest) >= 4 and lrest[2] == "providers" and lrest[3] == NETWORK_PROVIDER:
                if len(lrest) == 6 and lrest[4] == "privatednsoperationstatuses":
                    return self._op_answer(rest[5], False)
                if len(lrest) == 6 and lrest[4] == "privatednsoperationresults":
                    return self._op_answer(rest[5], True)
                return self._network(method, sub, rg, rg_key, rest[4:], body, base, api_version)
        raise ArmError(404, "InvalidResourceType", f"The resource path '{path}' is not supported.")

    def _op_answer(self, op_id: str, result: bool) -> tuple[int, Any, dict[str, str]]:
        op = self.ops.get(op_id)
        if op is None:
            raise ArmError(404, "NotFound", f"Operation {op_id} not found.")
        if result:
            if op.status == "InProgress":
                return 202, None, {"Retry-After": self.retry_after}
            return 204, None, {}
        body: dict[str, Any] = {"name": op.op_id, "status": op.status, "startTime": op.started}
        if op.status == "Failed" and op.error is not None:
            body["error"] = {"code": op.error[0], "message": op.error[1]}
        headers = {"Retry-After": self.retry_after} if op.status == "InProgress" else {}
        return 200, body, headers

    def _group(self, method: str, sub: str, rg: str, key: str, body: Any, base: str,
               api_version: str) -> tuple[int, Any, dict[str, str]]:
        found = self.groups.get(key)
        if method == "GET":
            if found is None:
                raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
            return 200, copy.deepcopy(found), {}
        if method == "HEAD":
            return (204 if found is not None else 404), None, {}
        if method == "PUT":
            if not isinstance(body, dict) or not body.get("location"):
                raise ArmError(400, "LocationRequired", "The location property is required for this definition.")
            if found is not None:
                found["tags"] = body.get("tags") or found.get("tags")
                return 200, copy.deepcopy(found), {}
            group = {"id": f"/subscriptions/{sub}/resourceGroups/{rg}", "name": rg,
                     "type": "Microsoft.Resources/resourceGroups", "location": body["location"],
                     "properties": {"provisioningState": "Succeeded"}}
            if body.get("tags"):
                group["tags"] = body["tags"]
            self.groups[key] = group
            self.history.append(("put", group["id"]))
            return 201, copy.deepcopy(group), {}
        if method == "DELETE":
            if found is None:
                raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
            found["properties"]["provisioningState"] = "Deleting"
            op = self._start("delete", key, rg)
            location = f"{base}/subscriptions/{sub}/operationresults/{op.op_id}?api-version={api_version}"
            return 202, None, {"Location": location, "Retry-After": self.retry_after}
        raise ArmError(405, "MethodNotAllowed", f"The method {method} is not allowed.")

    def _network(self, method: str, sub: str, rg: str, rg_key: str, segs: list[str], body: Any, base: str,
                 api_version: str) -> tuple[int, Any, dict[str, str]]:
        lsegs = [s.lower() for s in segs]
        if len(segs) not in (1, 2, 3, 4) or lsegs[0] not in ("virtualnetworks", "networksecuritygroups",
                                                             "privatednszones", *_READ_ONLY):
            raise ArmError(404, "InvalidResourceType", f"The resource type '{'/'.join(segs)}' could not be found.")
        collection = lsegs[0] if len(segs) <= 2 else f"{lsegs[0]}/{lsegs[2]}"
        if collection not in _TYPES:
            raise ArmError(404, "InvalidResourceType", f"The resource type '{collection}' could not be found.")
        if rg_key not in self.groups:
            raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
        canon = [(_SEGMENTS.get(s.lower(), s) if i % 2 == 0 else s) for i, s in enumerate(segs)]
        rid = f"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/" + "/".join(canon)
        key = rid.lower()
        if len(segs) % 2 == 1:  # a collection: list
            if method != "GET":
                raise ArmError(405, "MethodNotAllowed", f"The method {method} is not allowed.")
            if len(segs) == 3 and key.rsplit("/", 1)[0] not in self.resources:
                raise ArmError(404, "ParentResourceNotFound",
                               f"Can not perform requested operation on nested resource. Parent resource "
                               f"'{segs[1]}' not found.")
            items = [self._view(k) for k in sorted(self.resources)
                     if k.startswith(key + "/") and k.count("/") == key.count("/") + 1]
            return 200, {"value": items}, {}
        name = segs[-1]
        parent_key = key.rsplit("/", 2)[0] if len(segs) == 4 else None
        if parent_key is not None and parent_key not in self.resources:
            raise ArmError(404, "ParentResourceNotFound", f"Can not perform requested operation on nested resource. "
                                                          f"Parent resource '{segs[1]}' not found.")
        found = self.resources.get(key)
        private_dns = lsegs[0] == "privatednszones"
        if collection in _READ_ONLY and method != "GET":
            raise ArmError(405, "MethodNotAllowed", f"The stand-in serves {_TYPES[collection]} read-only.")
        if method == "GET":
            if found is None:
                if len(segs) == 4 and collection == "virtualnetworks/subnets":
                    raise ArmError(404, "NotFound", f"Resource {rid} not found.")
                raise ArmError(404, "ResourceNotFound",
                               f"The Resource '{_TYPES[collection]}/{'/'.join(segs[1::2])}' under resource group "
                               f"'{rg}' was not found. For more details please go to "
                               "https://aka.ms/ARMResourceNotFoundFix")
            return 200, self._view(key), {}
        if method == "PUT":
            if not isinstance(body, dict):
                raise ArmError(400, "InvalidRequestFormat", "Cannot parse the request.")
            if found is not None and found["properties"].get("provisioningState") == "Deleting":
                raise ArmError(409, "AnotherOperationInProgress",
                               f"Another operation on this or dependent resource is in progress. "
                               f"To retry later, put or delete the resource '{name}'.")
            for op in self.ops.values():  # a new PUT supersedes the running one
                if op.key == key and op.status == "InProgress" and op.kind == "put":
                    op.status = "Canceled"
            resource = self._build(collection, rid, key, name, body, found)
            created = found is None
            self.resources[key] = resource
            self.history.append(("put", rid))
            op = self._start("put", key, name)
            self._advance()
            headers = self._op_headers(base, sub, rg, resource.get("location", "global"), op, api_version,
                                       private_dns, delete=False)
            return (201 if created else 200), self._view(key), headers
        if method == "DELETE":
            if found is None:
                return 204, None, {}
            self._check_delete(collection, key, found, rg)
            found["properties"]["provisioningState"] = "Deleting"
            op = self._start("delete", key, name)
            self._advance()
            headers = self._op_headers(base, sub, rg, found.get("location", "global"), op, api_version,
                                       private_dns, delete=True)
            return 202, None, headers
        raise ArmError(405, "MethodNotAllowed", f"The method {method} is not allowed.")

    def _op_headers(self, base: str, sub: str, rg: str, location: str, op: AsyncOp, api_version: str,
                    private_dns: bool, delete: bool) -> dict[str, str]:
        if private_dns:
            prefix = f"{base}/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network"
            status_url = f"{prefix}/privateDnsOperationStatuses/{op.op_id}?api-version={api_version}"
            result_url = f"{prefix}/privateDnsOperationResults/{op.op_id}?api-version={api_version}"
        else:
            prefix = f"{base}/subscriptions/{sub}/providers/Microsoft.Network/locations/{location}"
            status_url = f"{prefix}/operations/{op.op_id}?api-version={api_version}"
            result_url = f"{prefix}/operationResults/{op.op_id}?api-version={api_version}"
        headers = {"Azure-AsyncOperation": status_url, "Retry-After": self.retry_after}
        if delete or private_dns:
            headers["Location"] = result_url
        return headers

    def _props(self, body: dict[str, Any]) -> dict[str, Any]:
        props = body.get("properties")
        return dict(props) if isinstance(props, dict) else {}

    def _referenced_vnet(self, ref: Any, message: Callable[[str], str]) -> tuple[str, dict[str, Any]]:
        """The id a reference ``{"id": ...}`` holds and the virtual network it names; 400
        InvalidResourceReference with ``message(id)`` when it names none."""
        ref_id: str = (ref or {}).get("id") or ""
        found = self.resources.get(ref_id.lower())
        if found is None or found["type"] != _TYPES["virtualnetworks"]:
            raise ArmError(400, "InvalidResourceReference", message(ref_id))
        return ref_id, found

    def _build(self, collection: str, rid: str, key: str, name: str, body: dict[str, Any],
               found: dict[str, Any] | None) -> dict[str, Any]:
        """Validate a PUT body and build the stored resource (provisioningState ``Updating``)."""
        props = self._props(body)
        out: dict[str, Any] = {"id": rid, "name": name, "type": _TYPES[collection], "etag": _etag()}
        state = {"provisioningState": "Updating"}
        if collection in ("virtualnetworks", "networksecuritygroups"):
            if not body.get("location"):
                raise ArmError(400, "LocationRequired", "The location property is required for this definition.")
            out["location"] = body["location"]
        if collection.startswith("privatednszones"):
            out["location"] = "global"
        if body.get("tags"):
            out["tags"] = body["tags"]
        guid = (found or {}).get("properties", {}).get("resourceGuid") or str(uuid.uuid4())
        if collection == "virtualnetworks":
            prefixes = (props.get("addressSpace") or {}).get("addressPrefixes") or []
            nets = []
            for prefix in prefixes:
                try:
                    nets.append(ipaddress.ip_network(prefix))
                except ValueError:
                    raise ArmError(400, "InvalidAddressPrefixFormat",
                                   f"Address prefix {prefix} of resource {rid} is not formatted correctly.") from None
            if not nets:
                raise ArmError(400, "InvalidRequestFormat", "Virtual network must have at least one address prefix.")
            out["properties"] = {**state, "resourceGuid": guid, "addressSpace": {"addressPrefixes": list(prefixes)},
                                 "enableDdosProtection": False, "privateEndpointVNetPolicies": "Disabled"}
        elif collection == "virtualnetworks/subnets":
            prefix = props.get("addressPrefix")
            try:
                net = ipaddress.ip_network(prefix or "")
            except ValueError:
                raise ArmError(400, "InvalidAddressPrefixFormat",
                               f"Address prefix {prefix} of resource {rid} is not formatted correctly.") from None
            vnet_key = key.rsplit("/subnets/", 1)[0]
            vnet = self.resources[vnet_key]
            space = [ipaddress.ip_network(p) for p in vnet["properties"]["addressSpace"]["addressPrefixes"]]
            if not any(net.subnet_of(s) for s in space if s.version == net.version):  # type: ignore[arg-type]
                raise ArmError(400, "NetcfgSubnetRangeOutsideVnet",
                               f"Subnet '{name}' is not valid because its IP address range is outside the IP address "
                               f"range of virtual network '{vnet['name']}'.")
            for other_key, other in self.resources.items():
                if other_key.startswith(vnet_key + "/subnets/") and other_key != key \
                        and net.overlaps(ipaddress.ip_network(other["properties"]["addressPrefix"])):
                    raise ArmError(400, "NetcfgSubnetRangesOverlap",
                                   f"Subnet '{name}' is not valid because its IP address range overlaps with that of "
                                   f"an existing subnet '{other['name']}' in virtual network '{vnet['name']}'.")
            out["properties"] = {**state, "addressPrefix": prefix, "privateEndpointNetworkPolicies": "Disabled",
                                 "privateLinkServiceNetworkPolicies": "Enabled"}
            nsg = props.get("networkSecurityGroup")
            if isinstance(nsg, dict) and nsg.get("id"):
                if nsg["id"].lower() not in self.resources:
                    raise ArmError(400, "InvalidResourceReference",
                                   f"Resource {nsg['id']} referenced by resource {rid} was not found. Please make sure "
                                   "that the referenced resource exists, and that both resources are in the same "
                                   "region.")
                out["properties"]["networkSecurityGroup"] = {"id": self.resources[nsg["id"].lower()]["id"]}
        elif collection == "virtualnetworks/virtualnetworkpeerings":
            remote_id, remote = self._referenced_vnet(
                props.get("remoteVirtualNetwork"),
                lambda ref: f"Resource {ref} referenced by resource {rid} was not found.")
            vnet_key = key.rsplit("/virtualnetworkpeerings/", 1)[0]
            local = self.resources[vnet_key]
            mine = [ipaddress.ip_network(p) for p in local["properties"]["addressSpace"]["addressPrefixes"]]
            theirs = [ipaddress.ip_network(p) for p in remote["properties"]["addressSpace"]["addressPrefixes"]]
            overlapping = sorted({str(b) for a in mine for b in theirs if a.overlaps(b)})
            if overlapping:
                raise ArmError(400, "VnetAddressSpacesOverlap",
                               f"Cannot create or update peering {rid}. Virtual networks {local['id']} and "
                               f"{remote['id']} cannot be peered because their address spaces overlap. "
                               f"Overlapping address prefixes: {', '.join(overlapping)}")
            for other_key, other in self.resources.items():
                if other_key != key and other_key.startswith(vnet_key + "/virtualnetworkpeerings/") \
                        and other["properties"]["remoteVirtualNetwork"]["id"].lower() == remote_id.lower():
                    raise ArmError(400, "AnotherPeeringAlreadyReferencesRemoteVnet",
                                   f"Peering {other['id']} already references remote virtual network "
                                   f"{remote['id']}. Cannot add another peering {rid} referencing the same remote "
                                   "virtual network.")
            for other in self.resources.values():
                if other["type"] == _TYPES["virtualnetworks/virtualnetworkpeerings"] \
                        and other["id"].lower().startswith(remote_id.lower() + "/") \
                        and other["properties"]["remoteVirtualNetwork"]["id"].lower() == vnet_key \
                        and other["properties"].get("peeringState") == "Disconnected":
                    raise ArmError(400, "RemotePeeringIsDisconnected",
                                   f"Cannot create or update peering {rid} because remote peering {other['id']} "
                                   f"referencing parent virtual network {local['id']} is in Disconnected state. "
                                   "Update or re-create the remote peering to get it back to Initiated state. "
                                   "Peering gets Disconnected when remote vnet or remote peering is deleted and "
                                   "re-created.")
            back = any(r["type"] == _TYPES["virtualnetworks/virtualnetworkpeerings"]
                       and r["id"].lower().startswith(remote_id.lower() + "/")
                       and r["properties"]["remoteVirtualNetwork"]["id"].lower() == vnet_key
                       for r in self.resources.values())
            out["properties"] = {
                **state, "remoteVirtualNetwork": {"id": remote["id"]},
                "allowVirtualNetworkAccess": bool(props.get("allowVirtualNetworkAccess", True)),
                "allowForwardedTraffic": bool(props.get("allowForwardedTraffic", False)),
                "allowGatewayTransit": bool(props.get("allowGatewayTransit", False)),
                "useRemoteGateways": bool(props.get("useRemoteGateways", False)),
                "peeringState": "Connected" if back else "Initiated",
                "peeringSyncLevel": "FullyInSync" if back else "RemoteNotInSync",
                "resourceGuid": guid,
            }
            if back:
                for r in self.resources.values():
                    if r["type"] == _TYPES["virtualnetworks/virtualnetworkpeerings"] \
                            and r["id"].lower().startswith(remote_id.lower() + "/") \
                            and r["properties"]["remoteVirtualNetwork"]["id"].lower() == vnet_key:
                        r["properties"]["peeringState"] = "Connected"
                        r["properties"]["peeringSyncLevel"] = "FullyInSync"
        elif collection == "networksecuritygroups":
            rules = props.get("securityRules") or []
            out["properties"] = {**state, "resourceGuid": guid, "securityRules": rules, "defaultSecurityRules": [
                {"id": f"{rid}/defaultSecurityRules/{n}", "name": n,
                 "type": "Microsoft.Network/networkSecurityGroups/defaultSecurityRules",
                 "properties": {"provisioningState": "Succeeded", "description": n, "protocol": "*",
                                "sourcePortRange": "*", "destinationPortRange": "*", "sourceAddressPrefix": src,
                                "destinationAddressPrefix": dst, "access": access, "priority": prio,
                                "direction": direction}}
                for n, prio, direction, access, src, dst in _DEFAULT_RULES]}
        elif collection == "privatednszones":
            out["properties"] = {**state, "maxNumberOfRecordSets": 25000, "numberOfRecordSets": 1,
                                 "maxNumberOfVirtualNetworkLinks": 1000,
                                 "maxNumberOfVirtualNetworkLinksWithRegistration": 100,
                                 "internalId": (found or {}).get("properties", {}).get("internalId")
                                 or uuid.uuid4().hex}
        elif collection == "privatednszones/virtualnetworklinks":
            _, linked = self._referenced_vnet(props.get("virtualNetwork"),
                                              lambda ref: f"Virtual network resource not found for '{ref}'.")
            out["properties"] = {**state, "virtualNetwork": {"id": linked["id"]},
                                 "registrationEnabled": bool(props.get("registrationEnabled", False)),
                                 "virtualNetworkLinkState": "InProgress"}
        return out

    def _check_delete(self, collection: str, key: str, found: dict[str, Any], rg: str) -> None:
        if collection == "networksecuritygroups":
            users = [r["id"] for r in self.resources.values() if r["type"] == _TYPES["virtualnetworks/subnets"]
                     and (r["properties"].get("networkSecurityGroup") or {}).get("id", "").lower() == key]
            if users:
                raise ArmError(400, "InUseNetworkSecurityGroup",
                               f"Network security group {found['id']} cannot be deleted because it is in use by the "
                               f"following resources: {', '.join(users)}. In order to delete the Network security "
                               "group, remove the association with the resource(s).")
        elif collection == "privatednszones":
            if any(k.startswith(key + "/virtualnetworklinks/") for k in self.resources):
                raise ArmError(409, "CannotDeleteResource",
                               f"Can not delete resource '{found['name']}' before nested resources are deleted.")
        elif collection == "virtualnetworks":
            linked = [r["id"] for r in self.resources.values()
                      if r["type"] == _TYPES["privatednszones/virtualnetworklinks"]
                      and r["properties"]["virtualNetwork"]["id"].lower() == key]
            if linked:
                raise ArmError(400, "InUseVirtualNetworkCannotBeDeleted",
                               f"Virtual network {found['id']} cannot be deleted because it is linked to private DNS "
                               f"zones: {', '.join(linked)}.")


def make_tls(directory: str) -> tuple[ssl.SSLContext, str]:
    """A fresh CA and a server certificate for 127.0.0.1/localhost, written to ``directory``.

    Returns the server's SSL context and the path of ``ca.crt`` (a client's ``connection_verify``).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Azure stand-in CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(san, critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    os.makedirs(directory, exist_ok=True)
    ca_path = os.path.join(directory, "ca.crt")
    crt_path, key_path = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
    with open(ca_path, "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(crt_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt_path, key_path)
    return ctx, ca_path


class AzureStandIn(StandInServer):
    """A running ARM stand-in: an aiohttp server on its own event loop thread.

    Args:
        port: TCP port (0 = any free port, fixed after the first :meth:`start`).
        op_delay: seconds until a long-running operation ends.
        retry_after: the ``Retry-After`` header on operations (seconds, as a string).
        ssl_context: serve HTTPS with this context (see :func:`make_tls`).
        require_auth: answer ``401`` to requests without ``Authorization: Bearer ...``.
    """

    thread_name = "azure-standin"

    def __init__(self, port: int = 0, host: str = "127.0.0.1", op_delay: float = 0.05, retry_after: str = "0",
                 ssl_context: ssl.SSLContext | None = None, state: AzureState | None = None,
                 require_auth: bool = True) -> None:
        super().__init__(port, host, ssl_context)
        self.require_auth = require_auth
        self.state = state or AzureState(op_delay=op_delay, retry_after=retry_after)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        headers: dict[str, str] = {"x-ms-request-id": str(uuid.uuid4())}
        try:
            api_version = request.query.get("api-version", "")
            if not api_version:
                raise ArmError(400, "MissingApiVersionParameter",
                               "The api-version query parameter (?api-version=) is required for all requests.")
            auth = request.headers.get("Authorization", "")
            if self.require_auth and not auth.lower().startswith("bearer "):
                raise ArmError(401, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is "
                                                            "missing.")
            body: Any = None
            if request.method in ("PUT", "PATCH", "POST"):
                raw = await request.read()
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    raise ArmError(400, "InvalidRequestContent", "The request content was invalid and could not "
                                                                 "be deserialized.") from None
            base = f"{request.scheme}://{request.host}"
            with self.state.lock:
                self.state.request_log.append((request.method, request.path))
                for fault in self.state.faults:
                    if fault.pattern.match(f"{request.method} {request.path}"):
                        fault.times -= 1
                        if fault.times <= 0:
                            self.state.faults.remove(fault)
                        raise ArmError(fault.status, fault.code, fault.message, fault.retry_after)
                self.state._advance()
                status, payload, extra = self.state.handle(request.method, request.path, body, base, api_version)
            headers.update(extra)
        except ArmError as err:
            if err.retry_after is not None:
                headers["Retry-After"] = err.retry_after
            return web.json_response({"error": {"code": err.code, "message": err.message}}, status=err.status,
                                     headers=headers)
        if payload is None:
            return web.Response(status=status, headers=headers)
        return web.json_response(payload, status=status, headers=headers)


def main(argv: list[str] | None = None) -> int:
    """``python -m standins.azure --port N [--op-delay S] [--tls-dir DIR]``; runs until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m standins.azure", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9102)
    parser.add_argument("--op-delay", type=float, default=0.5, help="seconds until an operation ends")
    parser.add_argument("--tls-dir", default="", help="serve HTTPS; write a fresh CA to DIR/ca.crt")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    ctx = make_tls(args.tls_dir)[0] if args.tls_dir else None
    standin = AzureStandIn(port=args.port, host=args.host, op_delay=args.op_delay, ssl_context=ctx)
    return standin.serve_forever("azure stand-in: {url}")


if __name__ == "__main__":
    raise SystemExit(main())
