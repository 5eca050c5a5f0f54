"""Splitting an IpRange's CIDR into one range per zone (pure).

After ``rangeSplitByZones`` of ``pkg/kcp/provider/aws/iprange/v2``: with ``z`` zones the CIDR is cut
into ``n`` equal subnets, ``n`` the smallest power of two >= ``z``, and the first ``z`` are kept, one
per zone in the Scope's zone order.
"""

from __future__ import annotations

import ipaddress

__all__ = ["CidrParseError", "CidrSplitError", "split_by_zones", "subnet_count"]


class CidrParseError(ValueError):
    """The CIDR cannot be parsed (reason ``InvalidCidr``, message ``Can not parse CIDR``)."""


class CidrSplitError(ValueError):
    """The CIDR is too small for the zones (reason ``CidrCanNotSplit``); ``count`` is ``n``."""

    def __init__(self, count: int) -> None:
        super().__init__(f"Can not split CIDR to {count} subnets")
        self.count = count


def subnet_count(zones: int) -> int:
    """The smallest power of two >= ``zones`` (1 for 0 or 1 zone)."""
    n = 1
    while n < zones:
        n *= 2
    return n


def split_by_zones(cidr: str, zones: int) -> list[str]:
    """The first ``zones`` of the ``subnet_count(zones)`` equal subnets of ``cidr``, in address order.

    Raises :class:`CidrParseError` for an unparsable CIDR, :class:`CidrSplitError` when the subnets
    would be smaller than a ``/32``.
    """
    try:
        net = ipaddress.IPv4Network(cidr.strip(), strict=False)
    except (ValueError, AttributeError) as exc:
        raise CidrParseError("Can not parse CIDR") from exc
    n = subnet_count(zones)
    bits = n.bit_length() - 1
    if net.prefixlen + bits > 32:
        raise CidrSplitError(n)
    subnets = list(net.subnets(prefixlen_diff=bits)) if bits else [net]
    return [str(s) for s in subnets[:zones]]
