"""The KCP Network's reads (``pkg/kcp/network``). The Network is a declared kind (:mod:`tasks.cloud.kinds.network`):
its ``cloud-network`` controller is the generic KCP one (:mod:`tasks.cloud.kcp.kind`), read ->
:func:`~.network_plan.plan` -> execute, then a managed network's provider.

A reference Network (type ``kyma``: the shoot's own VPC, created by the Scope controller as
``<kyma>--kyma``; type ``external``: a peer's, created for an SKR VPC peering) is Ready once its reference
is copied into ``status.network``. A managed one (type ``cloud-resources``, ``<kyma>--cm``) is provisioned
by the Scope's provider. Deletion waits while a KCP IpRange lives in the Network or a VpcPeering names it
as its local or remote network (Warning ``DeleteWhileUsed``), so a scope's IpRanges and peerings are
always deleted before their networks. The decisions are :mod:`tasks.cloud.kcp.network_plan`.
"""

from __future__ import annotations

from typing import Any

from kube import Kube
from kube.toolkit import deleting
from tasks.cloud import names
from tasks.cloud.kcp.common import list_served
from tasks.cloud.kcp.iprange_plan import network_name, scope_name
from tasks.cloud.kcp.network_plan import Seen

__all__ = ["read"]


def _ref(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope and, while deleting, the IpRanges and VpcPeerings that use the Network. Raises ``kube.ApiError``."""
    name = str(obj["metadata"]["name"])
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace) if scope_name(obj) else None
    if not deleting(obj):
        return Seen(obj, scope)
    ipranges = [_ref(i) for i in kcp.list(names.KCP_IPRANGE, namespace) if network_name(i) == name]
    peerings = list_served(kcp, names.VPC_PEERING, namespace)

    def using(side: str) -> list[str]:
        return [_ref(p) for p in peerings
                if str((((p.get("spec") or {}).get("details") or {}).get(side) or {}).get("name") or "") == name]

    return Seen(obj, scope, ipranges, using("localNetwork"), using("remoteNetwork"))
