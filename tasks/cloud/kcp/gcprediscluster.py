"""The KCP GcpRedisCluster reads (``pkg/kcp/provider/gcp/rediscluster``'s ``focal`` and ``loadSubnet``):
what :func:`~.gcprediscluster_plan.plan` decides over, and the kind's KCP side (:data:`KCP`), run by the
registry's KCP controller (:mod:`tasks.cloud.kcp.kind`) before the GCP provider's turn
(:mod:`tasks.cloud.gcp.rediscluster`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kube import Kube
from tasks.cloud import clouds, names, registry
from tasks.cloud.kcp.gcprediscluster_plan import Seen, in_scope, plan, subnet_name
from tasks.cloud.kcp.iprange_plan import scope_name

__all__ = ["KCP", "read"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope, whether its provider is known and the KCP GcpSubnet ``spec.subnet.name`` (``None`` when
    missing or of another Scope). Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace)
    if scope is None:
        return Seen(obj, None)
    known = clouds.get(str((scope.get("spec") or {}).get("provider") or "")) is not None
    name = subnet_name(obj)
    subnet = in_scope(obj, kcp.get(names.GCP_SUBNET, name, namespace)) if name else None
    return Seen(obj, scope, known, subnet)


def _wakes(event: str, obj: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """A deleted GcpRedisCluster wakes the GcpSubnet it names (waiting in ``DeleteWhileUsed``)."""
    name = subnet_name(obj)
    return [("cloud-gcpsubnet", name)] if event == "DELETED" and name else []


#: The kind's KCP side (the subnet's Ready is waited for 5 s at a time: its policy comes with it).
KCP = registry.KcpSide(names.GCP_REDIS_CLUSTER, read=read, plan=lambda seen, t: plan(seen, t, wait_ready=5),
                       wakes=_wakes)
