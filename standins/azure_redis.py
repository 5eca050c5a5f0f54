"""Azure Cache for Redis and private endpoints inside the ARM stand-in (:mod:`standins.azure`).

The ARM surface ``azure-mgmt-redis`` and ``azure-mgmt-network`` use, as documented in their REST
references, with the stand-in's long-running operations (``Azure-AsyncOperation``, ``Location``,
``op_delay``), its injected 429/5xx and provisioning failures:

- ``Microsoft.Cache/redis/{name}``: ``PUT`` (201, ``Creating`` until the operation ends, then
  ``Succeeded``; the SKU is validated: ``Basic``/``Standard`` take family ``C``, ``Premium`` family
  ``P``, capacity 0-6 / 1-5; ``redisVersion`` and ``redisConfiguration`` cannot change later:
  ``400 BadRequest``; clustering is Premium's: ``shardCount`` 0-10 (0: not clustered) and
  ``replicasPerPrimary`` 1-3, default 1, echoed as ``replicasPerMaster`` too; elsewhere ``400
  BadRequest``), ``PATCH`` (SKU capacity within the family, ``shardCount`` — a clustered cache stays
  clustered —, a ``redisVersion`` upgrade; the replicas cannot change: ``400 BadRequest``; ``Scaling``
  until done, then ``Succeeded``), ``GET`` (``hostName``
  ``<name>.redis.cache.windows.net``, ``port`` 6379, ``sslPort`` 6380, ``enableNonSslPort``),
  ``DELETE`` (202, ``Deleting``, then gone; ``409 Conflict`` while private endpoints use it),
  ``POST .../listKeys``;
- ``Microsoft.Network/privateEndpoints/{name}``: ``PUT`` (the subnet and the linked service must
  exist: ``400 InvalidResourceReference``), ``GET``, ``DELETE`` (refused while it has DNS zone groups:
  ``409 InUsePrivateEndpoint``);
- ``Microsoft.Network/privateEndpoints/{pe}/privateDnsZoneGroups/{name}``: ``PUT`` (every zone must
  exist), ``GET``, ``DELETE``.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from standins.arm import ArmError, ArmState

__all__ = ["handle"]

REDIS = "Microsoft.Cache/redis"
ENDPOINT = "Microsoft.Network/privateEndpoints"
ZONE_GROUP = "Microsoft.Network/privateEndpoints/privateDnsZoneGroups"
_SKUS = {"basic": ("C", range(0, 7)), "standard": ("C", range(0, 7)), "premium": ("P", range(1, 6))}
SHARDS, REPLICAS = range(0, 11), range(1, 4)
_VERSIONS = {"6": "6.0.20", "6.0": "6.0.20", "latest": "6.0.20", "4": "4.0.14", "4.0": "4.0.14"}


def _error(status: int, code: str, message: str) -> Exception:
    return ArmError(status, code, message)


def _not_found(rid: str, rg: str) -> Exception:
    return _error(404, "ResourceNotFound", f"The Resource '{rid}' under resource group '{rg}' was not found.")


def handle(state: ArmState, method: str, sub: str, rg: str, rg_key: str, rest: list[str], body: Any, base: str,
           api_version: str) -> tuple[int, Any, dict[str, str]] | None:
    """The answer of a Redis or private endpoint request (``rest``: the path after the resource group),
    ``None`` for anything else. Raises the stand-in's ``ArmError``."""
    low = [p.lower() for p in rest]
    if len(low) < 3 or low[0] != "providers":
        return None
    if low[1] == "microsoft.cache" and low[2] == "redis" and len(low) == 3 and method == "GET":
        return 200, {"value": [_view(r) for k, r in sorted(state.resources.items())
                               if r["type"] == REDIS and k.startswith(rg_key + "/")]}, {}
    if low[1] == "microsoft.cache" and low[2] == "redis" and len(low) in (4, 5):
        kind, segs = REDIS, rest[3:]
    elif low[1] == "microsoft.network" and low[2] == "privateendpoints" and len(low) == 4:
        kind, segs = ENDPOINT, rest[3:]
    elif low[1] == "microsoft.network" and low[2] == "privateendpoints" and len(low) == 6 \
            and low[4] == "privatednszonegroups":
        kind, segs = ZONE_GROUP, [rest[3], rest[5]]
    else:
        return None
    if rg_key not in state.groups:
        raise _error(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
    prefix = f"/subscriptions/{sub}/resourceGroups/{rg}/providers"
    if kind == REDIS:
        rid = f"{prefix}/Microsoft.Cache/redis/{segs[0]}"
    elif kind == ENDPOINT:
        rid = f"{prefix}/Microsoft.Network/privateEndpoints/{segs[0]}"
    else:
        rid = f"{prefix}/Microsoft.Network/privateEndpoints/{segs[0]}/privateDnsZoneGroups/{segs[1]}"
    key = rid.lower()
    found = state.resources.get(key)
    if kind == REDIS and len(low) == 5:
        if low[4] != "listkeys" or method != "POST":
            raise _error(404, "InvalidResourceType", f"The resource path '{'/'.join(rest)}' is not supported.")
        if found is None:
            raise _not_found(f"{REDIS}/{segs[0]}", rg)
        return 200, {"primaryKey": found["_keys"][0], "secondaryKey": found["_keys"][1]}, {}
    if kind == ZONE_GROUP and f"{prefix}/Microsoft.Network/privateEndpoints/{segs[0]}".lower() not in state.resources:
        raise _error(404, "ParentResourceNotFound", f"Can not perform requested operation on nested resource. "
                                                    f"Parent resource '{segs[0]}' not found.")
    if method == "GET":
        if found is None:
            raise _not_found(f"{kind}/{'/'.join(segs)}", rg)
        return 200, _view(found), {}
    location = str((found or {}).get("location") or (body or {}).get("location") or "westeurope")
    if method in ("PUT", "PATCH"):
        if not isinstance(body, dict):
            raise _error(400, "InvalidRequestFormat", "Cannot parse the request.")
        if found is not None and found["properties"].get("provisioningState") in ("Deleting", "Creating", "Scaling"):
            raise _error(409, "Conflict", f"The resource '{segs[-1]}' is busy processing a previous update request "
                                          "or is undergoing system maintenance.")
        if method == "PATCH":
            if found is None or kind != REDIS:
                raise _not_found(f"{kind}/{'/'.join(segs)}", rg)
            resource = _patch_redis(found, body)
        elif kind == REDIS:
            resource = _build_redis(rid, segs[0], body, found)
        elif kind == ENDPOINT:
            resource = _build_endpoint(state, rid, segs[0], body)
        else:
            resource = _build_zone_group(state, rid, segs[1], body)
        created = found is None
        state.resources[key] = resource
        state.history.append(("put", rid))
        op = state._start("put", key, segs[-1])
        state._advance()
        headers = _headers(base, sub, location, op.op_id, api_version, kind, delete=False)
        return (201 if created and method == "PUT" else 200), _view(state.resources[key]), headers
    if method == "DELETE":
        if found is None:
            return 204, None, {}
        if kind == ENDPOINT and any(k.startswith(key + "/privatednszonegroups/") for k in state.resources):
            raise _error(409, "InUsePrivateEndpoint", f"Private endpoint {rid} has DNS zone groups; delete them first.")
        found["properties"]["provisioningState"] = "Deleting"
        op = state._start("delete", key, segs[-1])
        state._advance()
        return 202, None, _headers(base, sub, location, op.op_id, api_version, kind, delete=True)
    raise _error(405, "MethodNotAllowed", f"The method {method} is not allowed.")


def _headers(base: str, sub: str, location: str, op_id: str, api_version: str, kind: str,
             delete: bool) -> dict[str, str]:
    provider = "Microsoft.Cache" if kind == REDIS else "Microsoft.Network"
    prefix = f"{base}/subscriptions/{sub}/providers/{provider}/locations/{location}"
    headers = {"Azure-AsyncOperation": f"{prefix}/operations/{op_id}?api-version={api_version}", "Retry-After": "0"}
    if delete:
        headers["Location"] = f"{prefix}/operationResults/{op_id}?api-version={api_version}"
    return headers


def _view(resource: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(resource)
    out.pop("_keys", None)
    out.pop("_requested", None)
    if out["type"] == REDIS and out["properties"].get("provisioningState") in ("Updating",):
        out["properties"]["provisioningState"] = "Creating"
    return out


def _sku(body: dict[str, Any]) -> dict[str, Any]:
    sku = ((body.get("properties") or {}).get("sku")) or body.get("sku") or {}
    name, family = str(sku.get("name") or ""), str(sku.get("family") or "")
    capacity = sku.get("capacity")
    allowed = _SKUS.get(name.lower())
    if allowed is None or family != allowed[0] or not isinstance(capacity, int) or capacity not in allowed[1]:
        raise _error(400, "BadRequest", f"The SKU {name}/{family}{capacity} is not valid.")
    return {"name": name, "family": family, "capacity": capacity}


def _build_redis(rid: str, name: str, body: dict[str, Any], found: dict[str, Any] | None) -> dict[str, Any]:
    props = dict(body.get("properties") or {})
    if not body.get("location"):
        raise _error(400, "LocationRequired", "The location property is required for this definition.")
    sku = _sku(body)
    version = str(props.get("redisVersion") or "6")
    configuration = dict(props.get("redisConfiguration") or {})
    if found is not None and (version, configuration) != tuple(found["_requested"]):
        raise _error(400, "BadRequest", "redisVersion and redisConfiguration can not be changed by a PUT.")
    cluster = _cluster(sku, props.get("shardCount"), props.get("replicasPerPrimary", props.get("replicasPerMaster")))
    if found is not None and cluster.get("replicasPerPrimary") != found["properties"].get("replicasPerPrimary"):
        raise _error(400, "BadRequest", "The number of replicas can not be changed after creation.")
    keys = (found or {}).get("_keys") or [uuid.uuid4().hex, uuid.uuid4().hex]
    full_version = _VERSIONS.get(version, version)
    return {
        "id": rid, "name": name, "type": REDIS, "location": body["location"], "tags": body.get("tags") or {},
        "_keys": keys, "_requested": [version, configuration],
        "properties": {
            "provisioningState": "Updating", "sku": sku, "redisVersion": full_version,
            "redisConfiguration": {"maxclients": "1000", "maxmemory-reserved": "30", "maxmemory-policy": "volatile-lru",
                                   **configuration},
            "enableNonSslPort": bool(props.get("enableNonSslPort", False)),
            "minimumTlsVersion": props.get("minimumTlsVersion") or "1.2",
            "publicNetworkAccess": props.get("publicNetworkAccess") or "Enabled",
            "hostName": f"{name}.redis.cache.windows.net", "port": 6379, "sslPort": 6380,
            **cluster,
        },
    }


def _int(value: Any, allowed: range, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise _error(400, "BadRequest", f"The {what} {value!r} is not valid: {allowed.start}-{allowed.stop - 1}.")
    return value


def _cluster(sku: dict[str, Any], shards: Any, replicas: Any) -> dict[str, Any]:
    """The clustering properties of a cache of ``sku`` (Premium only): ``shardCount`` when clustered,
    ``replicasPerPrimary`` (and its older name ``replicasPerMaster``)."""
    if sku["name"].lower() != "premium":
        if shards or replicas:
            raise _error(400, "BadRequest", "shardCount and replicasPerPrimary are only supported by Premium caches.")
        return {}
    out: dict[str, Any] = {}
    if shards is not None and _int(shards, SHARDS, "shardCount"):
        out["shardCount"] = shards
    count = 1 if replicas is None else _int(replicas, REPLICAS, "replicasPerPrimary")
    return {**out, "replicasPerPrimary": count, "replicasPerMaster": count}


def _patch_redis(found: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(found)
    props = body.get("properties") or {}
    if "sku" in props or "sku" in body:
        sku = _sku(body)
        if sku["family"] != found["properties"]["sku"]["family"]:
            raise _error(400, "BadRequest", "Scaling between SKU families is not supported.")
        out["properties"]["sku"] = sku
    premium = out["properties"]["sku"]["name"].lower() == "premium"
    if "shardCount" in props:
        if not premium:
            raise _error(400, "BadRequest", "shardCount is only supported by Premium caches.")
        shards = _int(props["shardCount"], SHARDS, "shardCount")
        if not shards and found["properties"].get("shardCount"):
            raise _error(400, "BadRequest", "Clustering can not be disabled on a clustered cache.")
        if shards:
            out["properties"]["shardCount"] = shards
    for key in ("replicasPerPrimary", "replicasPerMaster"):
        if props.get(key) is not None and props[key] != found["properties"].get(key):
            raise _error(400, "BadRequest", "The number of replicas can not be changed after creation.")
    if props.get("redisVersion"):
        wanted = _VERSIONS.get(str(props["redisVersion"]), str(props["redisVersion"]))
        have = str(found["properties"].get("redisVersion") or "")
        if [int(p) for p in wanted.split(".") if p.isdigit()] < [int(p) for p in have.split(".") if p.isdigit()]:
            raise _error(400, "BadRequest", f"The Redis version can not be downgraded from {have} to {wanted}.")
        if wanted != have:
            out["properties"]["redisVersion"] = wanted
            out["_requested"] = [str(props["redisVersion"]), out["_requested"][1]]
    for key in ("enableNonSslPort", "minimumTlsVersion", "publicNetworkAccess"):
        if key in props:
            out["properties"][key] = props[key]
    out["properties"]["provisioningState"] = "Scaling"
    return out


def _build_endpoint(state: ArmState, rid: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    props = dict(body.get("properties") or {})
    subnet_id = str((props.get("subnet") or {}).get("id") or "")
    if subnet_id.lower() not in state.resources:
        raise _error(400, "InvalidResourceReference", f"Resource {subnet_id} referenced by resource {rid} was not "
                                                      "found.")
    connections = []
    for conn in props.get("privateLinkServiceConnections") or []:
        target = str(((conn.get("properties") or {}).get("privateLinkServiceId")) or "")
        if target.lower() not in state.resources:
            raise _error(400, "InvalidResourceReference", f"Resource {target} referenced by resource {rid} was not "
                                                          "found.")
        connections.append({"id": f"{rid}/privateLinkServiceConnections/{conn.get('name')}", "name": conn.get("name"),
                            "properties": {"provisioningState": "Succeeded", "privateLinkServiceId": target,
                                           "groupIds": list((conn.get("properties") or {}).get("groupIds") or []),
                                           "privateLinkServiceConnectionState": {"status": "Approved",
                                                                                 "description": "Auto-Approved"}}})
    return {"id": rid, "name": name, "type": ENDPOINT, "location": body.get("location") or "westeurope",
            "properties": {"provisioningState": "Updating", "subnet": {"id": state.resources[subnet_id.lower()]["id"]},
                           "privateLinkServiceConnections": connections,
                           "networkInterfaces": [{"id": f"{rid}.nic.{uuid.uuid4().hex[:8]}"}],
                           "customDnsConfigs": []}}


def _build_zone_group(state: ArmState, rid: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    configs = []
    for config in (body.get("properties") or {}).get("privateDnsZoneConfigs") or []:
        zone = str(((config.get("properties") or {}).get("privateDnsZoneId")) or "")
        if zone.lower() not in state.resources:
            raise _error(400, "InvalidResourceReference", f"Resource {zone} referenced by resource {rid} was not "
                                                          "found.")
        configs.append({"name": config.get("name"), "properties": {"privateDnsZoneId": zone, "recordSets": []}})
    return {"id": rid, "name": name, "type": ZONE_GROUP,
            "properties": {"provisioningState": "Updating", "privateDnsZoneConfigs": configs}}
