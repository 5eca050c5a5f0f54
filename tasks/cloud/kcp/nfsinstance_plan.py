"""The KCP NfsInstance's own part of its provider-independent plan (``pkg/kcp/nfsinstance``; pure).

The common part of an IpRange's consumer is :func:`tasks.cloud.kcp.consumer_plan.plan` (the Scope, the
IpRange, the finalizer; the IpRange waited for 5 s at a time); an NfsInstance adds ``copyStatusHostsToHost``
before the finalizer (:func:`copy_host`, its ``prepare``), then the Scope's provider provisions the file
service (EFS: :mod:`tasks.cloud.aws.nfsinstance`, Filestore: :mod:`tasks.cloud.gcp.nfsinstance`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["copy_host"]


def copy_host(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``copyStatusHostsToHost``: ``status.host`` follows ``status.hosts[0]`` (the status fields to write, pure)."""
    hosts = list((obj.get("status") or {}).get("hosts") or [])
    return {"host": str(hosts[0])} if hosts else {}
