"""The KCP VpcPeering's read (``pkg/kcp/vpcpeering``): what :func:`~.vpcpeering_plan.plan` decides over.

The VpcPeering's Scope (and whether its provider is known) and the local and remote Networks its
``spec.details`` names. The kind's controller (:mod:`tasks.cloud.kcp.kind`) carries the plan out and,
once it hands the object on, gives the Scope's provider its turn (its clients, read and plans:
``tasks/cloud/<provider>/vpcpeering.py``); deletion is handed on with whatever networks are left
(``None`` when gone) and ends with the finalizer's removal.
"""

from __future__ import annotations

from typing import Any

from kube import Kube
from tasks.cloud import clouds, names
from tasks.cloud.kcp.iprange_plan import scope_name
from tasks.cloud.kcp.vpcpeering_plan import Seen, network_refs

__all__ = ["read"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope, whether its provider is known and the two Networks. Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace) if scope_name(obj) else None
    known = scope is not None and clouds.get(str((scope.get("spec") or {}).get("provider") or "")) is not None
    (local_ns, local_name), (remote_ns, remote_name) = network_refs(obj)
    local = kcp.get(names.NETWORK, local_name, local_ns) if local_name else None
    remote = kcp.get(names.NETWORK, remote_name, remote_ns) if remote_name else None
    return Seen(obj, scope, known, local, remote)
