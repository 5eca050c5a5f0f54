"""The SKR IpRange read, once per connect per IpRange: what :func:`~.iprange_plan.plan` decides over (the
object, the connect's IpRanges, the KCP mirror named by its id, the consumers while deleting). The plan's
writes (id label, finalizer, KCP mirror, status and Event, finalizer removal) are carried out by the
connect's executor (:mod:`tasks.cloud.skr.kind`); one turn creates the mirror of a new IpRange.

Deliberate difference: a quota-exceeded IpRange is checked again at the next connect, not every
300 ms inside the connect's window (which would hold a worker for the whole window).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource
from tasks.cloud import names, registry
from tasks.cloud.kcp.common import used_by
from tasks.cloud.registry import Summary
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.iprange_plan import Seen, identity
from tasks.cloud.skr.kind import mirror

__all__ = ["read", "summary"]


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs: the connect's IpRanges, the KCP mirror named by the object's id (none
    without an id or for an id that is not a UUID: the plan refuses it), the consumers (only while
    deleting). Raises ``kube.ApiError``."""
    name = str(obj["metadata"]["name"])
    kcp_obj = ctx.mirror(names.KCP_IPRANGE, identity(obj))
    users: list[str] = []
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        found = used_by(ctx.skr, registry.iprange_consumers(skr=True), None, name, default_name="default")
        users = [ref for refs in found.values() for ref in refs]
    return Seen(obj=obj, everyone=ctx.objects(res), kcp=kcp_obj, kyma=ctx.kyma,
                provider=ctx.provider, kcp_namespace=ctx.kcp_namespace,
                quota=ctx.quota(res), users=users)


def summary(skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """``up``'s row detail: the KCP CIDR and what it is in the provider (AWS: the subnets per zone; GCP:
    the global address; Azure: the ``--cm`` network), read from the mirror only when it is this object's."""
    found = mirror(kcp, names.KCP_IPRANGE, obj, kyma)
    if found is None:
        return Summary("")
    kst = found.get("status") or {}
    subnets = ", ".join(f"{s.get('zone')} {s.get('range')} {s.get('id')}" for s in kst.get("subnets") or [])
    detail = f"cidr {kst.get('cidr', '?')}" + (f"; subnets: {subnets}" if subnets else "")
    if not subnets:  # GCP: the global address; Azure: the Cloud Manager network
        detail += f"; {kst.get('id') or ((found.get('spec') or {}).get('network') or {}).get('name')}"
    return Summary(detail)
