"""What the SKR Redis instance and cluster tier mappings share (pure, data): the AWS fields of the KCP
mirror's ``spec.instance.aws`` (cloud-manager's ``createKcpRedisInstance`` / ``createKcpRedisCluster``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["aws_fields"]


def aws_fields(spec: Mapping[str, Any], table: Mapping[str, str], overrides: Mapping[str, str] | None,
               own: Callable[[str], Mapping[str, Any]]) -> dict[str, Any] | None:
    """``spec.instance.aws`` of the KCP mirror for an SKR AWS Redis ``spec``: the cache node type of its
    ``redisTier`` (``overrides`` win over ``table``; ``None`` for an unknown tier), the engine version
    (``7.0``), auto minor upgrade, auth, then the kind's ``own(tier)`` fields, then the maintenance window
    when set."""
    tier = str(spec.get("redisTier") or "")
    node_type = (overrides or {}).get(tier) or table.get(tier)
    if not node_type:
        return None
    out: dict[str, Any] = {
        "cacheNodeType": node_type,
        "engineVersion": str(spec.get("engineVersion") or "7.0"),
        "autoMinorVersionUpgrade": bool(spec.get("autoMinorVersionUpgrade")),
        "authEnabled": bool(spec.get("authEnabled")),
        **own(tier),
    }
    if spec.get("preferredMaintenanceWindow"):
        out["preferredMaintenanceWindow"] = str(spec["preferredMaintenanceWindow"])
    return out
