"""Network Connectivity service connection policies (``networkconnectivity.googleapis.com/v1``) inside the
GCP stand-in (:mod:`standins.gcp`).

The REST surface of the v1 reference (what ``google-api-python-client``'s ``networkconnectivity`` v1
discovery client sends): ``projects/{p}/locations/{l}/serviceConnectionPolicies`` create
(``serviceConnectionPolicyId``, ``requestId``), get, list, patch (``updateMask``: ``description``,
``labels``, ``pscConfig`` and its fields, camelCase or snake_case), delete, and
``projects/{p}/locations/{l}/operations/{id}``. Writes answer a long-running ``Operation`` (metadata
``OperationMetadata`` with ``target`` and ``verb``; ``response`` the policy, or ``Empty`` for a delete);
as in cloud-manager's own GCP mock (``pkg/kcp/provider/gcp/mock2``) a write takes effect at once and its
operation is done when answered. A repeated ``requestId`` answers the first request's operation.

Checked as the API does: the policy id (a name), one policy per id (409 ``ALREADY_EXISTS``), an existing
network and ``serviceClass``, ``pscConfig.subnetworks`` naming existing subnetworks of the policy's region,
one policy per network, region and service class, ``network`` and ``serviceClass`` immutable (400
``INVALID_ARGUMENT``), 404 ``NOT_FOUND`` for a missing policy or operation. A subnetwork a policy names
cannot be deleted (:meth:`ConnectivityState.using`).
"""

from __future__ import annotations

import copy
import datetime
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Compute", "ConnectivityState", "Error"]

OPERATION_METADATA = "type.googleapis.com/google.cloud.networkconnectivity.v1.OperationMetadata"
POLICY_TYPE = "type.googleapis.com/google.cloud.networkconnectivity.v1.ServiceConnectionPolicy"
_ID_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_NETWORK_RE = re.compile(r"^(?:https://www\.googleapis\.com/compute/v1/)?projects/([^/]+)/global/networks/([^/]+)$")
_SUBNETWORK_RE = re.compile(
    r"^(?:https://www\.googleapis\.com/compute/v1/)?projects/([^/]+)/regions/([^/]+)/subnetworks/([^/]+)$")
#: Update mask paths (either spelling) -> the field they name.
_MASK = {"description": "description", "labels": "labels", "pscConfig": "pscConfig", "psc_config": "pscConfig",
         "pscConfig.subnetworks": "pscConfig.subnetworks", "psc_config.subnetworks": "pscConfig.subnetworks",
         "pscConfig.limit": "pscConfig.limit", "psc_config.limit": "pscConfig.limit"}
_RPC_CODE = {"INVALID_ARGUMENT": 3, "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "FAILED_PRECONDITION": 9}


class Error(Exception):
    """An HTTP error answer: ``status``, ``message``, the rpc status name ``reason``."""

    def __init__(self, status: int, message: str, reason: str) -> None:
        super().__init__(message)
        self.status, self.message, self.reason = status, message, reason


class Compute(Protocol):
    """What the policies look up in Compute (the GCP stand-in's state)."""

    def has_network(self, project: str, name: str) -> bool: ...

    def has_subnetwork(self, project: str, region: str, name: str) -> bool: ...


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class ConnectivityState:
    """The policies and their operations (guarded by the GCP stand-in's lock).

    Args:
        compute: the networks and subnetworks the policies name.
        take_failure: ``(api, verb, target id) -> (code, message)`` of an injected operation failure, or
            ``None`` (:meth:`standins.gcp.GcpState.fail_operation` with api ``networkconnectivity``).
    """

    compute: Compute
    take_failure: Callable[[str, str, str], tuple[str, str] | None] = lambda api, verb, target: None
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    _requests: dict[str, str] = field(default_factory=dict)

    def using(self, subnetwork: str) -> str | None:
        """The policy naming the subnetwork ``projects/{p}/regions/{r}/subnetworks/{n}``, or ``None``."""
        for name, policy in sorted(self.policies.items()):
            if subnetwork in ((policy.get("pscConfig") or {}).get("subnetworks") or []):
                return name
        return None

    # ---- operations -----------------------------------------------------------------------------

    def _operation(self, parent: str, verb: str, target: str, request_id: str,
                   apply: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
        """A write as a long-running operation, done at once: ``apply`` runs unless a failure was
        injected (then the operation ends in that error and nothing changes)."""
        if request_id and request_id in self._requests:
            return copy.deepcopy(self.operations[self._requests[request_id]])
        name = f"{parent}/operations/operation-{int(datetime.datetime.now().timestamp() * 1000)}-" \
               f"{uuid.uuid4().hex[:13]}-{uuid.uuid4().hex[:8]}"
        now = _now()
        op: dict[str, Any] = {"name": name, "done": True, "metadata": {
            "@type": OPERATION_METADATA, "createTime": now, "endTime": now, "target": target, "verb": verb,
            "requestedCancellation": False, "apiVersion": "v1"}}
        failure = self.take_failure("networkconnectivity", verb, target.rsplit("/", 1)[-1])
        if failure is not None:
            code, message = failure
            op["error"] = {"code": _RPC_CODE.get(code, 9), "message": message}
        else:
            result = apply()
            op["response"] = {"@type": POLICY_TYPE, **result} if result is not None else \
                {"@type": "type.googleapis.com/google.protobuf.Empty"}
        self.operations[name] = op
        if request_id:
            self._requests[request_id] = name
        return copy.deepcopy(op)

    def operation(self, name: str) -> dict[str, Any]:
        if name not in self.operations:
            raise Error(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return copy.deepcopy(self.operations[name])

    # ---- policies -------------------------------------------------------------------------------

    def _get(self, name: str) -> dict[str, Any]:
        if name not in self.policies:
            raise Error(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return self.policies[name]

    def get(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(self._get(name))

    def list_policies(self, parent: str) -> dict[str, Any]:
        found = [copy.deepcopy(p) for n, p in sorted(self.policies.items())
                 if n.startswith(f"{parent}/serviceConnectionPolicies/")]
        return {"serviceConnectionPolicies": found} if found else {}

    def _subnetworks(self, parent: str, psc: Any) -> list[str]:
        """``pscConfig.subnetworks`` as paths; 400 for one that is not an existing subnetwork of the
        policy's project and region."""
        project, region = parent.split("/")[1], parent.split("/")[3]
        out: list[str] = []
        for given in (psc or {}).get("subnetworks") or []:
            found = _SUBNETWORK_RE.match(str(given))
            if not found or not self.compute.has_subnetwork(*found.groups()):
                raise Error(400, f"Subnetwork '{given}' does not exist", "INVALID_ARGUMENT")
            if (found.group(1), found.group(2)) != (project, region):
                raise Error(400, f"Subnetwork '{given}' is not in the region of {parent}", "INVALID_ARGUMENT")
            out.append(f"projects/{found.group(1)}/regions/{found.group(2)}/subnetworks/{found.group(3)}")
        return out

    def create(self, parent: str, policy_id: str, request_id: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise Error(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
        if not _ID_RE.match(policy_id or ""):
            raise Error(400, f"Invalid service_connection_policy_id '{policy_id}': it must match "
                             "[a-z]([-a-z0-9]*[a-z0-9])?", "INVALID_ARGUMENT")
        if request_id and request_id in self._requests:
            return copy.deepcopy(self.operations[self._requests[request_id]])
        name = f"{parent}/serviceConnectionPolicies/{policy_id}"
        if name in self.policies:
            raise Error(409, f"Resource '{name}' already exists", "ALREADY_EXISTS")
        network = _NETWORK_RE.match(str(body.get("network") or ""))
        if not network or not self.compute.has_network(*network.groups()):
            raise Error(400, f"Network '{body.get('network')}' does not exist", "INVALID_ARGUMENT")
        network_path = f"projects/{network.group(1)}/global/networks/{network.group(2)}"
        service_class = str(body.get("serviceClass") or "")
        if not service_class:
            raise Error(400, "service_class is required", "INVALID_ARGUMENT")
        psc = dict(body.get("pscConfig") or {})
        subnetworks = self._subnetworks(parent, psc)
        if not subnetworks:
            raise Error(400, "psc_config.subnetworks is required", "INVALID_ARGUMENT")
        for other_name, other in self.policies.items():
            if other_name.startswith(f"{parent}/") and other["network"] == network_path \
                    and other["serviceClass"] == service_class:
                raise Error(400, f"A service connection policy for network {network_path}, region "
                                 f"{parent.split('/')[3]} and service class {service_class} already exists: "
                                 f"{other_name}", "INVALID_ARGUMENT")
        now = _now()
        policy: dict[str, Any] = {"name": name, "createTime": now, "updateTime": now, "network": network_path,
                                  "serviceClass": service_class, "infrastructure": "PSC",
                                  "pscConfig": {**{k: v for k, v in psc.items() if k in ("limit",)},
                                                "subnetworks": subnetworks},
                                  "etag": uuid.uuid4().hex}
        if psc.get("producerInstanceLocation") not in (None, "", "PRODUCER_INSTANCE_LOCATION_UNSPECIFIED"):
            policy["pscConfig"]["producerInstanceLocation"] = str(psc["producerInstanceLocation"])
        for key in ("description", "labels"):
            if body.get(key):
                policy[key] = copy.deepcopy(body[key])

        def apply() -> dict[str, Any]:
            self.policies[name] = policy
            return copy.deepcopy(policy)

        return self._operation(parent, "create", name, request_id, apply)

    def patch(self, name: str, mask: str, request_id: str, body: Any) -> dict[str, Any]:
        found = self._get(name)
        if not isinstance(body, dict):
            raise Error(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
        network = _NETWORK_RE.match(str(body.get("network") or ""))
        given = {"network": f"projects/{network.group(1)}/global/networks/{network.group(2)}" if network
                 else body.get("network"), "serviceClass": body.get("serviceClass")}
        for key, value in given.items():
            if value and value != found[key]:
                raise Error(400, f"{key} of a service connection policy is immutable", "INVALID_ARGUMENT")
        paths = [p.strip() for p in mask.split(",") if p.strip()] or ["description", "labels", "pscConfig"]
        unknown = [p for p in paths if p not in _MASK]
        if unknown:
            raise Error(400, f"Invalid update_mask paths: {', '.join(unknown)}", "INVALID_ARGUMENT")
        parent = name.rsplit("/serviceConnectionPolicies/", 1)[0]
        change: dict[str, Any] = {}
        for path in (_MASK[p] for p in paths):
            if path in ("description", "labels"):
                change[path] = copy.deepcopy(body.get(path))
            elif path in ("pscConfig", "pscConfig.subnetworks"):
                change["subnetworks"] = self._subnetworks(parent, body.get("pscConfig"))
            else:
                change["limit"] = (body.get("pscConfig") or {}).get("limit")

        def apply() -> dict[str, Any]:
            for key, value in change.items():
                target = found["pscConfig"] if key in ("subnetworks", "limit") else found
                if value in (None, "", {}):
                    target.pop(key, None)
                else:
                    target[key] = value
            found.update(updateTime=_now(), etag=uuid.uuid4().hex)
            return copy.deepcopy(found)

        return self._operation(parent, "update", name, request_id, apply)

    def delete(self, name: str, request_id: str) -> dict[str, Any]:
        if not (request_id and request_id in self._requests):
            self._get(name)

        def apply() -> None:
            self.policies.pop(name, None)

        return self._operation(name.rsplit("/serviceConnectionPolicies/", 1)[0], "delete", name, request_id, apply)

    # ---- routing --------------------------------------------------------------------------------

    def owns(self, parts: list[str]) -> bool:
        """Whether ``/v1/projects/{p}/locations/{l}/...`` (``parts``: the path's segments) is this API's:
        the policies, and operations it started (Memorystore and Filestore share the operations path)."""
        if len(parts) < 6 or parts[:2] != ["v1", "projects"] or parts[3] != "locations":
            return False
        if parts[5] == "serviceConnectionPolicies":
            return True
        return parts[5] == "operations" and "/".join(parts[1:]) in self.operations

    def route(self, method: str, parts: list[str], query: dict[str, str], body: Any) -> tuple[int, Any]:
        """The answer of a request :meth:`owns`. Raises :class:`Error`."""
        parent, rest = "/".join(parts[1:5]), parts[5:]
        if rest[0] == "operations" and len(rest) == 2 and method == "GET":
            return 200, self.operation(f"{parent}/operations/{rest[1]}")
        request_id = query.get("requestId", "")
        if rest[0] == "serviceConnectionPolicies":
            if len(rest) == 1 and method == "POST":
                return 200, self.create(parent, query.get("serviceConnectionPolicyId", ""), request_id, body)
            if len(rest) == 1 and method == "GET":
                return 200, self.list_policies(parent)
            if len(rest) == 2:
                name = f"{parent}/serviceConnectionPolicies/{rest[1]}"
                if method == "GET":
                    return 200, self.get(name)
                if method == "PATCH":
                    return 200, self.patch(name, query.get("updateMask", ""), request_id, body)
                if method == "DELETE":
                    return 200, self.delete(name, request_id)
        raise Error(404, f"Method not found: {method} /{'/'.join(parts)}", "NOT_FOUND")
