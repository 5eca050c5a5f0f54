"""The GCP clients of this process, one per kind of client, endpoint and key file (cached: their
transports are reused by every turn).

Each is built for the configured ``GCP_ENDPOINT_URL`` (the stand-in) and ``GCP_SA_JSON_KEY_PATH`` (else
the default credentials); building one imports its Google SDK (inside the client's constructor).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tasks.cloud.gcp.client import GcpClient
from tasks.cloud.gcp.gcpsubnet_client import SubnetClient
from tasks.cloud.gcp.nfsinstance_client import FilestoreClient
from tasks.cloud.gcp.redisinstance_client import MemorystoreClient
from tasks.cloud.settings import CloudSettings

__all__ = ["compute", "filestore", "memorystore", "subnets"]

C = TypeVar("C")
_lock = threading.Lock()
_clients: dict[tuple[str, str, str], Any] = {}


def _cached(kind: str, build: Callable[..., C], settings: CloudSettings) -> C:
    endpoint, keyfile = settings.gcp_endpoint_url or None, settings.gcp_sa_json_key_path or None
    key = (kind, endpoint or "", keyfile or "")
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = build(endpoint=endpoint, credentials_file=keyfile)
        return client


def compute(settings: CloudSettings) -> GcpClient:
    """Compute, Service Networking, Resource Manager tags and operations (IpRange, VPC peering)."""
    return _cached("gcp", GcpClient, settings)


def memorystore(settings: CloudSettings) -> MemorystoreClient:
    """Memorystore for Redis (RedisInstance)."""
    return _cached("gcp-redis", MemorystoreClient, settings)


def filestore(settings: CloudSettings) -> FilestoreClient:
    """Filestore (NfsInstance)."""
    return _cached("filestore", FilestoreClient, settings)


def subnets(settings: CloudSettings) -> SubnetClient:
    """Compute regional subnetworks and Network Connectivity service connection policies (GcpSubnet)."""
    return _cached("gcp-subnets", SubnetClient, settings)
