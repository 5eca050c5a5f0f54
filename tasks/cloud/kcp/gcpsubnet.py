"""The KCP GcpSubnet reads (``pkg/kcp/provider/gcp/subnet``'s ``focal``, ``loadNetwork`` and
``preventDeleteOnGcpRedisClusterUsage``): what :func:`~.gcpsubnet_plan.plan` decides over, run by the
registry's KCP controller (:mod:`tasks.cloud.kcp.kind`) before the provider's turn."""

from __future__ import annotations

from typing import Any

from kube import Kube
from kube.toolkit import deleting
from tasks.cloud import names
from tasks.cloud.kcp.common import list_served
from tasks.cloud.kcp.gcpsubnet_plan import Seen
from tasks.cloud.kcp.iprange_plan import scope_name

__all__ = ["read"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope, its ``<scope>--kyma`` Network and, while deleting, the KCP GcpRedisClusters naming this
    GcpSubnet in ``spec.subnet.name`` (none while that kind is not served). Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace)
    if scope is None:
        return Seen(obj, None)
    network = kcp.get(names.NETWORK, names.kyma_network(scope_name(obj)), namespace)
    used: list[str] = []
    if deleting(obj):
        name = str(obj["metadata"]["name"])
        used = [f"{c['metadata'].get('namespace', '')}/{c['metadata']['name']}"
                for c in list_served(kcp, names.GCP_REDIS_CLUSTER, namespace)
                if str(((c.get("spec") or {}).get("subnet") or {}).get("name") or "") == name]
    return Seen(obj, scope, network, used)
