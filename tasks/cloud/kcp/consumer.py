"""The common read of the KCP objects that live in a KCP IpRange (the IpRange consumers of
:mod:`tasks.cloud.registry`): what cloud-manager's consumer reconcilers load alike before the provider's
flow — the object's Scope, whether its provider is known, and its KCP IpRange — for
:func:`~.consumer_plan.plan` (a kind's :attr:`~tasks.cloud.registry.KcpSide.read` and ``plan``, run by
:mod:`tasks.cloud.kcp.kind`).

Deliberate differences: a deleting object whose IpRange is gone still reaches the provider's delete (the
original stops it with ``InvalidIpRangeReference`` for ever); an IpRange of another Scope is read as none
(:func:`~.consumer_plan.in_scope`: the original loads it by name unchecked).
"""

from __future__ import annotations

from typing import Any

from kube import Kube
from tasks.cloud import clouds, names
from tasks.cloud.kcp.consumer_plan import REASON_INVALID_IPRANGE_REFERENCE, Seen, in_scope, iprange_name
from tasks.cloud.kcp.iprange_plan import scope_name

__all__ = ["REASON_INVALID_IPRANGE_REFERENCE", "read"]


def read(kcp: Kube, obj: dict[str, Any], namespace: str) -> Seen:
    """The Scope, whether its provider is known and the KCP IpRange (``None`` when missing or of another
    Scope). Raises ``kube.ApiError``."""
    scope = kcp.get(names.SCOPE, scope_name(obj), namespace)
    if scope is None:
        return Seen(obj, None)
    known = clouds.get(str((scope.get("spec") or {}).get("provider") or "")) is not None
    name = iprange_name(obj)
    iprange = in_scope(obj, kcp.get(names.KCP_IPRANGE, name, namespace)) if name else None
    return Seen(obj, scope, known, iprange)
