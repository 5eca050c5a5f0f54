"""Memorystore for Redis (``redis.googleapis.com/v1``) inside the GCP stand-in (:mod:`standins.gcp`).

The REST surface ``google-cloud-redis`` (transport ``rest``) uses, as documented in the Memorystore
for Redis v1 reference: ``projects/{p}/locations/{l}/instances`` create (``instanceId``), get, list,
patch (``updateMask``: ``memorySizeGb``, ``replicaCount``, ``redisConfigs``, ``maintenancePolicy``,
``authEnabled``, ``displayName``, ``labels``), ``:upgrade`` (``redisVersion``), delete,
``/authString``, and ``projects/{p}/locations/{l}/operations/{id}``. An instance is ``CREATING`` /
``UPDATING`` / ``DELETING`` until its operation is done (``op_delay``), then ``READY`` (or gone).
Validation as Google's: ``BASIC`` takes no replicas, ``STANDARD_HA`` 1-5 with read replicas enabled;
memory 1-300 GB; a version downgrade is refused; an instance needs ``authorizedNetwork`` and, with
``PRIVATE_SERVICE_ACCESS``, a ``reservedIpRange``. Errors are One Platform bodies (404
``NOT_FOUND``, 409 ``ALREADY_EXISTS``, 400 ``INVALID_ARGUMENT``, 400 ``FAILED_PRECONDITION`` while an
operation runs).
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Error", "MemorystoreState", "enum_names", "finish_due", "mask_paths", "route"]

VERSIONS = ("REDIS_3_2", "REDIS_4_0", "REDIS_5_0", "REDIS_6_X", "REDIS_7_0", "REDIS_7_2")
MUTABLE = {"memorySizeGb", "replicaCount", "redisConfigs", "maintenancePolicy", "authEnabled", "displayName", "labels"}
CA_CERT = "-----BEGIN CERTIFICATE-----\nMIIBstandinMemorystoreServerCA\n-----END CERTIFICATE-----\n"


#: ``$alt=json;enum-encoding=int``: the REST clients send enums as numbers (redis.v1 proto values).
_ENUMS = {"tier": {1: "BASIC", 3: "STANDARD_HA"}, "connectMode": {1: "DIRECT_PEERING", 2: "PRIVATE_SERVICE_ACCESS"},
          "transitEncryptionMode": {1: "SERVER_AUTHENTICATION", 2: "DISABLED"},
          "readReplicasMode": {1: "READ_REPLICAS_DISABLED", 2: "READ_REPLICAS_ENABLED"}}
_DAYS = {1: "MONDAY", 2: "TUESDAY", 3: "WEDNESDAY", 4: "THURSDAY", 5: "FRIDAY", 6: "SATURDAY", 7: "SUNDAY"}


def enum_names(body: dict[str, Any], enums: Mapping[str, Mapping[int, str]]) -> dict[str, Any]:
    """A copy of ``body`` whose fields named in ``enums`` that are numbers are their names (an unknown
    number its decimal string)."""
    out = dict(body)
    for key, values in enums.items():
        if isinstance(out.get(key), int):
            out[key] = values.get(out[key], str(out[key]))
    return out


def _names(body: Any) -> Any:
    """``body`` with numeric enums as their names (what the stand-in stores and answers)."""
    if not isinstance(body, dict):
        return body
    out = enum_names(body, _ENUMS)
    policy = out.get("maintenancePolicy")
    if isinstance(policy, dict):
        windows = []
        for window in policy.get("weeklyMaintenanceWindow") or []:
            window = dict(window)
            if isinstance(window.get("day"), int):
                window["day"] = _DAYS.get(window["day"], str(window["day"]))
            windows.append(window)
        out["maintenancePolicy"] = {**policy, "weeklyMaintenanceWindow": windows}
    return out


@dataclass
class _Op:
    name: str
    done_at: float
    apply: Any
    done: bool = False
    error: dict[str, Any] | None = None


@dataclass
class MemorystoreState:
    """The instances and operations (guarded by the GCP stand-in's lock)."""

    op_delay: float = 0.05
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    auth: dict[str, str] = field(default_factory=dict)
    ops: dict[str, _Op] = field(default_factory=dict)

    def advance(self) -> None:
        """Finish every operation whose time has come."""
        finish_due(self.ops.values())

    def _op(self, parent: str, apply: Any) -> dict[str, Any]:
        name = f"{parent}/operations/operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        self.ops[name] = _Op(name, time.monotonic() + self.op_delay, apply)
        self.advance()
        return self.operation(name)

    def operation(self, name: str) -> dict[str, Any]:
        self.advance()
        op = self.ops.get(name)
        if op is None:
            raise _Error(404, f"Operation {name} not found.", "NOT_FOUND")
        out: dict[str, Any] = {"name": op.name, "done": op.done}
        if op.error:
            out["error"] = op.error
        return out

    # ---- instances ---------------------------------------------------------------------------------

    def get(self, name: str) -> dict[str, Any]:
        self.advance()
        if name not in self.instances:
            raise _Error(404, f"Resource '{name}' was not found", "NOT_FOUND")
        return copy.deepcopy(self.instances[name])

    def list(self, parent: str) -> dict[str, Any]:
        self.advance()
        return {"instances": [copy.deepcopy(i) for n, i in sorted(self.instances.items())
                              if n.startswith(f"{parent}/instances/")]}

    def create(self, parent: str, instance_id: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not instance_id:
            raise _Error(400, "instance_id and instance are required", "INVALID_ARGUMENT")
        name = f"{parent}/instances/{instance_id}"
        if name in self.instances:
            raise _Error(409, f"Resource '{name}' already exists", "ALREADY_EXISTS")
        tier = body.get("tier") or "BASIC"
        replicas = int(body.get("replicaCount") or 0)
        memory = int(body.get("memorySizeGb") or 0)
        version = body.get("redisVersion") or "REDIS_7_0"
        problems = []
        if tier not in ("BASIC", "STANDARD_HA"):
            problems.append(f"Invalid tier {tier}")
        if not 1 <= memory <= 300:
            problems.append("memory_size_gb must be between 1 and 300")
        if tier == "BASIC" and replicas:
            problems.append("replica_count must be 0 for the BASIC tier")
        if tier == "STANDARD_HA" and not 0 <= replicas <= 5:
            problems.append("replica_count must be between 0 and 5")
        if version not in VERSIONS:
            problems.append(f"Invalid redis_version {version}")
        if not body.get("authorizedNetwork"):
            problems.append("authorized_network is required")
        if body.get("connectMode") == "PRIVATE_SERVICE_ACCESS" and not body.get("reservedIpRange"):
            problems.append("reserved_ip_range is required with PRIVATE_SERVICE_ACCESS")
        if problems:
            raise _Error(400, "; ".join(problems), "INVALID_ARGUMENT")
        location = parent.rsplit("/", 1)[-1]
        host = f"10.{len(self.instances) % 250}.0.3"
        instance = {
            "name": name, "displayName": body.get("displayName") or "", "labels": body.get("labels") or {},
            "locationId": f"{location}-a", "currentLocationId": f"{location}-a", "redisVersion": version,
            "reservedIpRange": body.get("reservedIpRange") or "", "host": host, "port": 6379,
            "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "state": "CREATING",
            "redisConfigs": body.get("redisConfigs") or {}, "tier": tier, "memorySizeGb": memory,
            "authorizedNetwork": body["authorizedNetwork"],
            "connectMode": body.get("connectMode") or "DIRECT_PEERING",
            "authEnabled": bool(body.get("authEnabled")),
            "transitEncryptionMode": body.get("transitEncryptionMode") or "DISABLED",
            "replicaCount": replicas, "readReplicasMode": "READ_REPLICAS_ENABLED" if replicas else
            "READ_REPLICAS_DISABLED"}
        if replicas:
            instance.update(readEndpoint=f"10.{len(self.instances) % 250}.0.4", readEndpointPort=6379)
        if instance["transitEncryptionMode"] == "SERVER_AUTHENTICATION":
            instance["serverCaCerts"] = [{"serialNumber": "1", "cert": CA_CERT, "sha1Fingerprint": "00"}]
        if body.get("maintenancePolicy"):
            instance["maintenancePolicy"] = body["maintenancePolicy"]
        self.instances[name] = instance
        if instance["authEnabled"]:
            self.auth[name] = uuid.uuid4().hex

        def ready() -> None:
            if name in self.instances:
                self.instances[name]["state"] = "READY"

        return self._op(parent, ready)

    def _ready(self, name: str) -> dict[str, Any]:
        found = self.instances.get(name)
        if found is None:
            raise _Error(404, f"Resource '{name}' was not found", "NOT_FOUND")
        if found["state"] != "READY":
            raise _Error(400, f"Instance {name} is in state {found['state']}: an operation is in progress",
                         "FAILED_PRECONDITION")
        return found

    def patch(self, name: str, mask: str, body: Any) -> dict[str, Any]:
        self.advance()
        found = self._ready(name)
        paths = mask_paths(mask, body, MUTABLE)
        if "replicaCount" in paths and found["tier"] == "BASIC" and int(body.get("replicaCount") or 0):
            raise _Error(400, "replica_count must be 0 for the BASIC tier", "INVALID_ARGUMENT")
        found["state"] = "UPDATING"
        changes = {p: copy.deepcopy(body.get(p)) for p in paths}

        def apply() -> None:
            target = self.instances.get(name)
            if target is None:
                return
            for key, value in changes.items():
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = value
            if "authEnabled" in changes:
                target["authEnabled"] = bool(changes["authEnabled"])
                if target["authEnabled"]:
                    self.auth.setdefault(name, uuid.uuid4().hex)
                else:
                    self.auth.pop(name, None)
            target["state"] = "READY"

        return self._op(name.rsplit("/instances/", 1)[0], apply)

    def upgrade(self, name: str, body: Any) -> dict[str, Any]:
        self.advance()
        found = self._ready(name)
        version = str((body or {}).get("redisVersion") or "")
        if version not in VERSIONS:
            raise _Error(400, f"Invalid redis_version {version}", "INVALID_ARGUMENT")
        if VERSIONS.index(version) < VERSIONS.index(found["redisVersion"]):
            raise _Error(400, "Downgrading the Redis version is not supported", "INVALID_ARGUMENT")
        found["state"] = "UPDATING"

        def apply() -> None:
            if name in self.instances:
                self.instances[name].update(redisVersion=version, state="READY")

        return self._op(name.rsplit("/instances/", 1)[0], apply)

    def delete(self, name: str) -> dict[str, Any]:
        self.advance()
        found = self.instances.get(name)
        if found is None:
            raise _Error(404, f"Resource '{name}' was not found", "NOT_FOUND")
        found["state"] = "DELETING"

        def apply() -> None:
            self.instances.pop(name, None)
            self.auth.pop(name, None)

        return self._op(name.rsplit("/instances/", 1)[0], apply)

    def auth_string(self, name: str) -> dict[str, Any]:
        found = self.get(name)
        return {"authString": self.auth.get(name, "")} if found.get("authEnabled") else {}


class _Error(Exception):
    """A refused request: HTTP ``status``, ``message``, the ``google.rpc`` status ``reason`` (the Memorystore
    stand-ins' one error: :mod:`standins.memorystore_cluster` raises it too)."""

    def __init__(self, status: int, message: str, reason: str) -> None:
        super().__init__(message)
        self.status, self.message, self.reason = status, message, reason


def finish_due(ops: Iterable[Any]) -> None:
    """Finish every operation of ``ops`` (``done``, ``done_at`` monotonic seconds, ``apply()``) whose time
    has come, in order."""
    now = time.monotonic()
    for op in ops:
        if not op.done and op.done_at <= now:
            op.done = True
            op.apply()


def mask_paths(mask: str, body: Any, mutable: Container[str]) -> list[str]:
    """The paths of an ``updateMask`` (comma separated), each one of ``mutable``. Raises :class:`_Error` 400
    ``INVALID_ARGUMENT`` for an empty mask, a body that is not an object, or an unsupported path."""
    paths = [p for p in mask.split(",") if p]
    if not paths or not isinstance(body, dict):
        raise _Error(400, "update_mask is required", "INVALID_ARGUMENT")
    bad = [p for p in paths if p not in mutable]
    if bad:
        raise _Error(400, f"Unsupported update_mask paths: {', '.join(bad)}", "INVALID_ARGUMENT")
    return paths


def route(state: MemorystoreState, method: str, parts: list[str], query: dict[str, str],
          body: Any) -> tuple[int, Any] | None:
    """The answer of a Memorystore request (``parts``: the path's segments), ``None`` for other paths.
    Raises ``(status, message, reason)`` as :class:`_Error`, which the caller turns into its error body."""
    if len(parts) < 6 or parts[:2] != ["v1", "projects"] or parts[3] != "locations":
        return None
    parent = "/".join(parts[1:5])
    rest = parts[5:]
    body = _names(body)
    if rest[0] == "operations" and len(rest) == 2 and method == "GET":
        return 200, state.operation(f"{parent}/operations/{rest[1]}")
    if rest[0] != "instances":
        return None
    if len(rest) == 1:
        if method == "POST":
            return 200, state.create(parent, query.get("instanceId", ""), body)
        if method == "GET":
            return 200, state.list(parent)
    elif len(rest) == 2:
        ident, _, verb = rest[1].partition(":")
        name = f"{parent}/instances/{ident}"
        if verb == "upgrade" and method == "POST":
            return 200, state.upgrade(name, body)
        if not verb and method == "GET":
            return 200, state.get(name)
        if not verb and method == "PATCH":
            return 200, state.patch(name, query.get("updateMask", ""), body)
        if not verb and method == "DELETE":
            return 200, state.delete(name)
    elif len(rest) == 3 and rest[2] == "authString" and method == "GET":
        return 200, state.auth_string(f"{parent}/instances/{rest[1]}")
    return None


Error = _Error
