"""Validation of SKR IpRanges: CIDR syntax and size, overlaps between IpRanges, the quota (pure).

After ``pkg/skr/iprange`` (``validateCidr``, ``preventCidrOverlap``, ``checkQuota``). Failures are data
(a message), never exceptions; the SKR reconciler turns them into conditions with the original's reasons.
Objects are plain dicts as read from the API server.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["DNS_LABEL", "DNS_SUBDOMAIN", "Ranked", "age_key", "cidr_failure", "newer", "overlap_winner",
           "quota_exceeded", "ranges_overlap"]

Obj = Mapping[str, Any]

MIN_PREFIX = 16
MAX_PREFIX = 30

#: A Kubernetes DNS label (namespaces; use with ``fullmatch``: linear, the repeat is bounded).
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
#: A Kubernetes DNS subdomain (object names; ``fullmatch``, at most 253 characters).
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


def cidr_failure(cidr: str) -> str | None:
    """Why ``cidr`` is not a valid SKR IpRange CIDR (``InvalidCidr`` messages), or ``None``.

    Host bits may be set (``10.0.0.1/24`` parses, as Go's ``net.ParseCIDR``); the prefix must be
    between /16 and /30.
    """
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return f"CIDR {cidr} has invalid syntax"
    if "/" not in cidr:
        return f"CIDR {cidr} has invalid syntax"
    if net.version != 4:
        return f"CIDR {cidr} is not IPv4"
    if net.prefixlen > MAX_PREFIX:
        return f"CIDR {cidr} block size must not be greater than {MAX_PREFIX}"
    if net.prefixlen < MIN_PREFIX:
        return f"CIDR {cidr} block size must not be less than {MIN_PREFIX}"
    return None


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def age_key(obj: Obj) -> tuple[str, str]:
    """Sort key "older first": ``(creationTimestamp, name)``; RFC 3339 UTC strings sort by time."""
    meta = _meta(obj)
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


def newer(a: Obj, b: Obj) -> bool:
    """Whether ``a`` is newer than ``b``: later creationTimestamp; on a tie the greater name is newer."""
    return age_key(a) > age_key(b)


def ranges_overlap(a: str, b: str) -> bool:
    """Whether two IpRange CIDRs overlap: two empty ones do, one empty one never, else address overlap."""
    if not a and not b:
        return True
    if not a or not b:
        return False
    try:
        return ipaddress.ip_network(a, strict=False).overlaps(ipaddress.ip_network(b, strict=False))
    except (ValueError, TypeError):
        return False


def overlap_winner(obj: Obj, others: Iterable[Obj]) -> str | None:
    """The name of an older IpRange whose CIDR overlaps ``obj``'s (``obj`` then gets ``CidrOverlap``),
    or ``None``. Only the newer of two overlapping IpRanges fails; the older passes.
    """
    name = _meta(obj).get("name")
    cidr = str((obj.get("spec") or {}).get("cidr") or "")
    for other in sorted(others, key=age_key):
        if _meta(other).get("name") == name:
            continue
        if ranges_overlap(cidr, str((other.get("spec") or {}).get("cidr") or "")) and newer(obj, other):
            return str(_meta(other).get("name"))
    return None


def _quota_key(obj: Obj) -> tuple[str, str, str]:
    return (*age_key(obj), str(_meta(obj).get("namespace") or ""))


def _ref(obj: Obj) -> tuple[Any, Any]:
    return _meta(obj).get("namespace"), _meta(obj).get("name")


class Ranked(list[Any]):
    """A list of objects that knows each one's place oldest first (:func:`quota_exceeded`), sorted once
    on first use: a connect's snapshot, so the quota of each of its n objects costs O(1), not a sort."""

    _places: dict[tuple[Any, Any], int] | None = None

    def place(self, obj: Obj) -> int:
        """``obj``'s index oldest first (``len(self)`` when it is not in the list)."""
        if self._places is None:
            self._places = {}
            for i, o in enumerate(sorted(self, key=_quota_key)):
                self._places.setdefault(_ref(o), i)
        return self._places.get(_ref(obj), len(self))


def quota_exceeded(obj: Obj, all_objects: Sequence[Obj], quota: int | None) -> bool:
    """Whether ``obj`` is beyond ``quota`` (``None`` = unlimited) among ``all_objects`` sorted oldest first
    (namespaced objects: on a tie of time and name, by namespace); a :class:`Ranked` list is sorted once."""
    if quota is None:
        return False
    if isinstance(all_objects, Ranked):
        return all_objects.place(obj) >= quota
    return Ranked(all_objects).place(obj) >= quota
