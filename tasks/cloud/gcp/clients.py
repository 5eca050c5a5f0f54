"""The GCP clients of this process, one per client class, endpoint and key file (cached: their
transports are reused by every turn). A new kind's client needs no edit here: its read asks
``clients.of(MyClient, settings)`` for it.

Each is built for the configured ``GCP_ENDPOINT_URL`` (the stand-in) and ``GCP_SA_JSON_KEY_PATH`` (else
the default credentials); building one imports its Google SDK (inside the client's constructor). Every
client built here counts its HTTP requests (:func:`tasks.cloud.gcp.metrics.instrument`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tasks.cloud.gcp import metrics as gcp_metrics
from tasks.cloud.gcp.client import GcpClient
from tasks.cloud.settings import CloudSettings

__all__ = ["compute", "of"]

C = TypeVar("C")
_lock = threading.Lock()
_clients: dict[tuple[str, str, str], Any] = {}


def of(build: Callable[..., C], settings: CloudSettings) -> C:
    """The process's client of class ``build`` for the configured endpoint and key file, built once as
    ``build(endpoint=..., credentials_file=...)`` (``None`` each when unset). Raises what the
    constructor raises (the client layer's error for an unusable key file)."""
    endpoint, keyfile = settings.gcp_endpoint_url or None, settings.gcp_sa_json_key_path or None
    key = (f"{build.__module__}.{getattr(build, '__qualname__', build)}", endpoint or "", keyfile or "")
    with _lock:
        client = _clients.get(key)
        if client is None:
            # every google-cloud-* client it holds counts its requests (tasks.cloud.provider_metrics)
            client = _clients[key] = gcp_metrics.instrument(build(endpoint=endpoint, credentials_file=keyfile))
        return client


def compute(settings: CloudSettings) -> GcpClient:
    """Compute, Service Networking, Resource Manager tags and operations (IpRange, VPC peering)."""
    return of(GcpClient, settings)
