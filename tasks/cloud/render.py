"""``reconcilery render iprange``: what the controllers would decide for IpRanges, offline (pure).

For each IpRange (SKR ``cloud-resources`` or KCP ``cloud-control`` kind) and one Scope: the SKR
validation (CIDR syntax and size, overlaps among the given SKR IpRanges, the quota of 1 per SKR),
the CIDR (given, or allocated as the KCP loop would: the first free /22 after the nodes range) and
its zone ranges (AWS: one per Scope zone; other providers: one range in the region). Cloud state (VPC
blocks, existing subnets) is not known offline, so those checks are left to the live controller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tasks.cloud import names
from tasks.cloud.allocate import AllocationError, allocate_cidr
from tasks.cloud.split import CidrParseError, CidrSplitError, split_by_zones
from tasks.cloud.validate import cidr_failure, overlap_winner, quota_exceeded

__all__ = ["Rendered", "render_ipranges"]


@dataclass(frozen=True)
class Rendered:
    """One IpRange's outcome: ``state`` (``Ready`` when it would be provisioned, else ``Error``)."""

    name: str
    kind: str
    cidr: str
    allocated: bool
    ranges: list[tuple[str, str]] = field(default_factory=list)
    state: str = names.STATE_READY
    outcome: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ranges"] = [{"zone": z, "range": r} for z, r in self.ranges]
        return out


def _scope_parts(scope: Mapping[str, Any]) -> tuple[str, list[str], list[str], str]:
    spec = scope.get("spec") or {}
    provider = str(spec.get("provider") or "")
    info = (spec.get("scope") or {}).get(provider) or {}
    network = info.get("network") or {}
    existing = [str(network.get(k) or "") for k in ("nodes", "pods", "services")]
    zones = [str(z.get("name")) for z in network.get("zones") or [] if isinstance(z, dict) and z.get("name")]
    return provider, existing, zones, str(spec.get("region") or "")


def render_ipranges(scope: Mapping[str, Any], ipranges: Sequence[Mapping[str, Any]],
                    quota: int | None = 1) -> list[Rendered]:
    """The outcome of every IpRange with ``scope`` (see the module doc)."""
    provider, existing, zones, region = _scope_parts(scope)
    skr = [o for o in ipranges if str(o.get("apiVersion", "")).startswith(names.SKR_GROUP)]
    now = "9999-12-31T23:59:59Z"  # not yet created objects count as newest, in file order
    stamped = [{**o, "metadata": {"creationTimestamp": now, **(o.get("metadata") or {})}} for o in skr]
    out: list[Rendered] = []
    for obj in ipranges:
        name = str((obj.get("metadata") or {}).get("name") or "?")
        kind = "SKR" if obj in skr else "KCP"
        cidr = str((obj.get("spec") or {}).get("cidr") or "")
        if kind == "SKR":
            me = stamped[skr.index(obj)]
            failure = cidr_failure(cidr) if cidr else None
            if failure:
                out.append(Rendered(name, kind, cidr, False, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_INVALID_CIDR}: {failure}"))
                continue
            winner = overlap_winner(me, stamped)
            if winner is not None:
                out.append(Rendered(name, kind, cidr, False, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_OVERLAP}: CIDR overlaps with {winner}"))
                continue
            if quota_exceeded(me, stamped, quota):
                out.append(Rendered(name, kind, cidr, False, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_QUOTA_EXCEEDED}: Maximum number of {quota} resources "
                                            "exceeded"))
                continue
        allocated = not cidr
        if allocated:
            if not existing[0]:
                out.append(Rendered(name, kind, "", True, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_ALLOCATION_FAILED}: Error due to unknown SKR nodes "
                                            "range"))
                continue
            try:
                cidr = allocate_cidr(existing)
            except AllocationError:
                out.append(Rendered(name, kind, "", True, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_ALLOCATION_FAILED}: Unable to allocate CIDR"))
                continue
        if provider == "aws":
            try:
                ranges = list(zip(zones, split_by_zones(cidr, len(zones)), strict=True))
            except CidrParseError:
                out.append(Rendered(name, kind, cidr, allocated, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_INVALID_CIDR}: Can not parse CIDR"))
                continue
            except CidrSplitError as exc:
                out.append(Rendered(name, kind, cidr, allocated, state=names.STATE_ERROR,
                                    outcome=f"{names.REASON_CIDR_CAN_NOT_SPLIT}: {exc}"))
                continue
        else:
            ranges = [(region or provider, cidr)]
        how = "allocated" if allocated else "given"
        out.append(Rendered(name, kind, cidr, allocated, ranges, names.STATE_READY,
                            f"valid; CIDR {how}; {len(ranges)} subnet(s)"))
    return out
