"""Status derivation and the KCP -> SKR status projection of IpRanges (pure).

After ``pkg/skr/iprange/state.go`` and ``updateStatus.go``: the SKR IpRange's ``state`` follows from
its conditions, and its conditions mirror the KCP IpRange's once that has a Ready or an Error
condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kube.toolkit.conditions as cond
from tasks.cloud import names

__all__ = ["Projection", "derive_state", "project_kcp_iprange"]


def derive_state(conditions: Sequence[Mapping[str, Any]] | None, current: str = "") -> str:
    """The SKR state from conditions: Ready=True -> ``Ready``; Error=True, Warning=True (sic) or
    QuotaExceeded=True -> ``Error``; only Submitted=True -> ``Creating``; otherwise ``current``."""
    conds = [dict(c) for c in conditions or ()]
    if cond.is_true(conds, names.COND_READY):
        return names.STATE_READY
    if any(cond.is_true(conds, t) for t in (names.COND_ERROR, names.COND_WARNING, names.COND_QUOTA_EXCEEDED)):
        return names.STATE_ERROR
    if cond.is_true(conds, names.COND_SUBMITTED):
        return names.STATE_CREATING
    return current


@dataclass(frozen=True)
class Projection:
    """What the SKR IpRange's status becomes: ``conditions`` (exclusive) or ``None`` to wait."""

    conditions: list[dict[str, Any]] | None
    wait: bool


def project_kcp_iprange(kcp: Mapping[str, Any], skr_conditions: Sequence[Mapping[str, Any]] | None,
                        now: str) -> Projection:
    """KCP IpRange status -> SKR conditions: KCP Error -> exclusive ``Error/True`` reason ``Error``
    with the KCP message; else KCP Ready (and not being deleted) -> exclusive ``Ready/True`` reason
    ``Ready``; else wait (the reconciler requeues)."""
    kcp_conds = [dict(c) for c in (kcp.get("status") or {}).get("conditions") or []]
    existing = [dict(c) for c in skr_conditions or ()]
    error = cond.find(kcp_conds, names.COND_ERROR)
    if error is not None and error.get("status") == "True":
        new = cond.condition(names.COND_ERROR, True, names.REASON_ERROR, str(error.get("message", "")), now)
        return Projection(cond.set_exclusive(existing, new), False)
    ready = cond.find(kcp_conds, names.COND_READY)
    deleting = bool((kcp.get("metadata") or {}).get("deletionTimestamp"))
    if ready is not None and ready.get("status") == "True" and not deleting:
        new = cond.condition(names.COND_READY, True, names.REASON_READY, str(ready.get("message", "")), now)
        return Projection(cond.set_exclusive(existing, new), False)
    return Projection(None, True)
