"""The ``cloud-nfsinstance`` controller: KCP NfsInstances into the provider's file service (``pkg/kcp/nfsinstance``).

The common part of an IpRange's consumer (:mod:`tasks.cloud.kcp.consumer`: the Scope, the IpRange, the
finalizer; the IpRange waited for 5 s at a time), with ``copyStatusHostsToHost`` (``status.host``
follows ``status.hosts[0]``) before the finalizer, then the provider's flow
(:mod:`tasks.cloud.providers`, ``reconcile_nfsinstance`` / ``delete_nfsinstance``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud import names
from tasks.cloud.kcp import consumer
from tasks.cloud.kcp.consumer import REASON_INVALID_IPRANGE_REFERENCE, ConsumerKind
from tasks.cloud.providers import NfsInstanceContext
from workers.controller import Key, Result

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "copy_host", "reconcile"]


def copy_host(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``copyStatusHostsToHost``: ``status.host`` follows ``status.hosts[0]`` (the status fields to write, pure)."""
    hosts = list((obj.get("status") or {}).get("hosts") or [])
    return {"host": str(hosts[0])} if hosts else {}


KIND: ConsumerKind[NfsInstanceContext] = ConsumerKind(
    names.NFS_INSTANCE, NfsInstanceContext, lambda p, ctx: p.reconcile_nfsinstance(ctx),
    lambda p, ctx: p.delete_nfsinstance(ctx), wait_ready=5, prepare=copy_host)


def reconcile(key: Key) -> Result:
    """Reconcile the KCP NfsInstance ``key``."""
    return consumer.reconcile(key, KIND)
