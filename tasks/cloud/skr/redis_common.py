"""The SKR-side reads the Redis instance and cluster kinds share: ``up``'s row detail of an object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube, Resource, resources
from tasks.cloud.registry import Summary
from tasks.cloud.skr.kind import mirror
from tasks.cloud.skr.redis_common_plan import secret_name

__all__ = ["summary"]


def summary(kcp_res: Resource, endpoint: str, skr: Kube, kcp: Kube, kyma: str, obj: Mapping[str, Any]) -> Summary:
    """The auth Secret's keys in the SKR and the KCP mirror's ``status.<endpoint>`` (the mirror of kind
    ``kcp_res`` only when it is the object's own; ``""`` without one). Raises ``kube.ApiError``."""
    found = mirror(kcp, kcp_res, obj, kyma)
    if found is None:
        return Summary("")
    name = secret_name(obj)
    secret = skr.get(resources.SECRET, name, str(obj["metadata"].get("namespace") or "")) or {}
    return Summary(f"secret {name}: {' '.join(sorted(secret.get('data') or {})) or '-'}; endpoint "
                   f"{(found.get('status') or {}).get(endpoint) or '?'}")
