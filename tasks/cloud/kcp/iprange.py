"""The KCP IpRange's reads (``pkg/kcp/iprange``): what its provider-independent plan
(:mod:`tasks.cloud.kcp.iprange_plan`) decides over. The IpRange is a declared kind
(:mod:`tasks.cloud.kinds.iprange`): its controller is the generic KCP one (:mod:`tasks.cloud.kcp.kind`),
read -> plan -> execute, then the Scope's provider (``aws`` / ``gcp`` / ``azure``: read -> pure plan ->
the executor's calls).
"""

from __future__ import annotations

from typing import Any

from kube import Kube
from tasks.cloud import clouds, names, registry
from tasks.cloud.kcp.common import used_by
from tasks.cloud.kcp.iprange_plan import Seen, network_name, scope_name

__all__ = ["read"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope and its provider's ranges, the Network, the VpcPeering the provider's IpRange depends on
    (:meth:`~tasks.cloud.providers.Provider.iprange_peering`) and, while deleting, the consumers of its
    Scope (another tenant's object naming it never keeps it). Raises
    ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace)
    if scope is None:
        return Seen(obj, None)
    provider = clouds.get(str((scope.get("spec") or {}).get("provider") or ""))
    network = kcp.get(names.NETWORK, network_name(obj), namespace)
    wanted = provider.iprange_peering(scope) if provider is not None else None
    peering = kcp.get(names.VPC_PEERING, wanted["metadata"]["name"], namespace) if wanted else None
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    consumers = registry.iprange_consumers(skr=False)
    users = used_by(kcp, consumers, namespace, str(obj["metadata"]["name"]), scope=scope_name(obj)) if deleting else {}
    return Seen(obj, scope, provider is not None, provider.existing_ranges(scope) if provider is not None else [],
                network, wanted, peering, users)
