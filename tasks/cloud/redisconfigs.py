"""Bounds of the Redis configuration maps of the SKR Redis kinds (pure): GcpRedisCluster / GcpRedisInstance
``redisConfigs``, AwsRedisCluster / AwsRedisInstance ``parameters``, AzureRedisCluster / AzureRedisInstance
``redisConfiguration``.

The original's CRDs (``api/cloud-resources/v1beta1/{gcprediscluster,gcpredisinstance,awsrediscluster}
_types.go``) take any ``map[string]string`` and pass it to the provider, which refuses what it does not
support; Azure's is a struct of six optional strings. SKR input is untrusted, so before anything is mirrored
(beyond the original):

- at most :data:`MAX_ENTRIES` entries, keys of at most :data:`MAX_KEY` characters shaped like a Redis
  configuration name (:data:`KEY`: lower case letters, digits, ``-``), values strings of at most
  :data:`MAX_VALUE` characters;
- GcpRedisCluster: only the keys Memorystore for Redis Cluster can modify (:data:`GCP_CLUSTER_KEYS`, from
  its "Supported instance configurations" page);
- Azure: only the original's six struct fields (:data:`AZURE_KEYS`; the CRD prunes others, this holds for
  objects that reach the plan some other way).

The CRDs carry the same count and length bounds (``maxProperties``, ``maxLength``) so the API server refuses
most of it at the door; this check gives the rest a condition with a clear message. Failures are data (a
message), never exceptions, whatever the input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["AZURE_KEYS", "FIELDS", "GCP_CLUSTER_KEYS", "KEY", "MAX_ENTRIES", "MAX_KEY", "MAX_VALUE",
           "REASON_INVALID_REDIS_CONFIGS", "cluster_configs_invalid", "configs_invalid", "instance_configs_invalid"]

#: The SKR condition reason of a configuration map beyond its bounds (the original has none).
REASON_INVALID_REDIS_CONFIGS = "InvalidRedisConfigs"
MAX_ENTRIES = 64
MAX_KEY = 64
MAX_VALUE = 1024
#: A Redis configuration name (``fullmatch``; bounded by :data:`MAX_KEY` before it runs).
KEY = re.compile(r"[a-z0-9][a-z0-9-]*")
#: The spec field of each provider's configuration map.
FIELDS: Mapping[str, str] = {"aws": "parameters", "azure": "redisConfiguration", "gcp": "redisConfigs"}
#: What Memorystore for Redis Cluster lets a cluster modify ("Supported instance configurations").
GCP_CLUSTER_KEYS = frozenset({"maxclients", "maxmemory", "maxmemory-clients", "maxmemory-policy",
                              "notify-keyspace-events", "slowlog-log-slower-than"})
#: The original's ``RedisClusterAzureConfigs`` / ``RedisInstanceAzureConfigs`` fields.
AZURE_KEYS = frozenset({"maxclients", "maxfragmentationmemory-reserved", "maxmemory-delta", "maxmemory-policy",
                        "maxmemory-reserved", "notify-keyspace-events"})


def _show(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, cut at ``limit`` characters (a message never carries a huge key)."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def configs_invalid(field: str, value: Any, allowed: frozenset[str] | None = None, where: str = "") -> str | None:
    """Why the configuration map ``value`` of spec field ``field`` is beyond its bounds (see the module doc),
    or ``None`` (also for a missing or empty one). ``allowed``: the only keys taken (``None``: any name
    shaped as :data:`KEY`); ``where`` names the provider in that message. Never raises; reads at most
    :data:`MAX_ENTRIES` entries."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return f"{field} must be an object of strings"
    if len(value) > MAX_ENTRIES:
        return f"{field} has {len(value)} entries, at most {MAX_ENTRIES} are allowed"
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            return f"{field} keys must be non-empty strings"
        if len(key) > MAX_KEY:
            return f"{field} key {_show(key)} is longer than {MAX_KEY} characters"
        if allowed is not None and key not in allowed:
            return (f"{field} key {_show(key)} is not supported{where}; supported: "
                    f"{', '.join(sorted(allowed))}")
        if not KEY.fullmatch(key):
            return f"{field} key {_show(key)} must be lower case letters, digits and '-'"
        if not isinstance(item, str):
            return f"{field}[{key}] must be a string"
        if len(item) > MAX_VALUE:
            return f"{field}[{key}] is longer than {MAX_VALUE} characters"
    return None


def cluster_configs_invalid(provider: str, spec: Mapping[str, Any]) -> str | None:
    """The Redis cluster kinds' check of ``spec`` (:func:`configs_invalid` of the provider's field of
    :data:`FIELDS`; GCP with :data:`GCP_CLUSTER_KEYS`, Azure with :data:`AZURE_KEYS`); ``None`` for another
    provider or a valid map."""
    field = FIELDS.get(provider)
    if field is None or not isinstance(spec, Mapping):
        return None
    allowed = {"gcp": (GCP_CLUSTER_KEYS, " by Memorystore for Redis Cluster"),
               "azure": (AZURE_KEYS, " by Azure Cache for Redis")}.get(provider, (None, ""))
    return configs_invalid(field, spec.get(field), *allowed)


def instance_configs_invalid(provider: str, spec: Mapping[str, Any]) -> str | None:
    """The Redis instance kinds' check of ``spec``: the bounds of :func:`configs_invalid`; Azure with
    :data:`AZURE_KEYS`. GcpRedisInstance's list of Memorystore for Redis configurations is longer and
    version dependent: its keys are bounded by shape only (Google refuses the others)."""
    field = FIELDS.get(provider)
    if field is None or not isinstance(spec, Mapping):
        return None
    if provider == "azure":
        return configs_invalid(field, spec.get(field), AZURE_KEYS, " by Azure Cache for Redis")
    return configs_invalid(field, spec.get(field))
