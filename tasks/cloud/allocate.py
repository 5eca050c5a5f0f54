"""CIDR allocation for IpRanges without a CIDR (pure).

After ``pkg/kcp/iprange/allocate/allocate.go`` and its ``AddressSpace`` helper. :func:`allocate_cidr`
is the KCP IpRange's rule: the first free ``/22`` after the shoot's nodes range, skipping the pods and
services ranges and the ranges Kyma Environment Broker reserves. It does not look at other IpRanges or
the VPC's secondary ranges (on AWS such conflicts surface later as VPC CIDR/subnet overlaps), as the
original does not.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from tasks.cloud.names import DEFAULT_CIDR

__all__ = ["DEFAULT_CIDR", "RESERVED_RANGES", "AddressSpace", "AllocationError", "allocate_cidr", "overlaps"]

#: Ranges reserved by Kyma Environment Broker; never allocated.
RESERVED_RANGES = ("10.242.0.0/16", "10.64.0.0/11", "10.254.0.0/16", "10.243.0.0/16")
_IPV4_END = 2**32 - 1

Network = ipaddress.IPv4Network


class AllocationError(ValueError):
    """No CIDR can be allocated (bad input range, space exhausted)."""


def _net(cidr: str) -> Network:
    try:
        return ipaddress.IPv4Network(cidr.strip(), strict=False)
    except (ValueError, ipaddress.AddressValueError) as exc:
        raise AllocationError(f"invalid CIDR {cidr!r}: {exc}") from exc


def overlaps(a: Network, b: Network) -> bool:
    """Inclusive interval intersection of two networks."""
    return int(a.network_address) <= int(b.broadcast_address) and int(b.network_address) <= int(a.broadcast_address)


def _containing(address: int, prefix: int) -> Network:
    """The ``/prefix`` network containing ``address``."""
    return ipaddress.IPv4Network((address, prefix), strict=False)


def allocate_cidr(existing: Sequence[str], prefix: int = 22) -> str:
    """The first free ``/prefix`` after ``existing[0]`` (the nodes range) that overlaps none of
    ``existing`` (nodes, pods, services) and :data:`RESERVED_RANGES`.

    Candidates step from "last address of the nodes range + 1" one ``/prefix`` at a time. An empty
    ``existing`` gives :data:`DEFAULT_CIDR` (``10.250.4.0/22``). Raises :class:`AllocationError` for an
    unparsable range or when stepping runs past the IPv4 space.
    """
    ranges = [r for r in existing if r and r.strip()]
    if not ranges:
        return DEFAULT_CIDR
    occupied = [_net(r) for r in ranges] + [_net(r) for r in RESERVED_RANGES]
    start = int(occupied[0].broadcast_address) + 1
    while start <= _IPV4_END:
        candidate = _containing(start, prefix)
        if not any(overlaps(candidate, o) for o in occupied):
            return str(candidate)
        start = int(candidate.broadcast_address) + 1
    raise AllocationError(f"no free /{prefix} after {ranges[0]}")


class AddressSpace:
    """First-fit allocation of aligned ranges inside one or more ranges (``AddressSpace`` helper).

    ``AddressSpace(["10.250.0.0/16"])``; :meth:`reserve` marks a range used, :meth:`allocate` returns the
    lowest free aligned ``/prefix``. Raises :class:`AllocationError` (``address space exhausted``,
    ``range X is out of address space A B``, overlaps).
    """

    def __init__(self, ranges: Iterable[str]) -> None:
        self.ranges = [_net(r) for r in ranges]
        if not self.ranges:
            raise AllocationError("address space needs at least one range")
        self.used: list[Network] = []

    def _inside(self, net: Network) -> bool:
        return any(net.subnet_of(r) for r in self.ranges)

    def _free(self, net: Network) -> bool:
        return not any(overlaps(net, u) for u in self.used)

    def reserve(self, cidr: str) -> None:
        """Mark ``cidr`` as used. Raises when it is outside the space or overlaps a used range."""
        net = _net(cidr)
        if not self._inside(net):
            space = " ".join(str(r) for r in self.ranges)
            raise AllocationError(f"range {net} is out of address space {space}")
        if not self._free(net):
            raise AllocationError(f"range {net} overlaps with an already reserved range")
        self.used.append(net)

    def allocate(self, prefix: int) -> str:
        """The lowest free aligned ``/prefix`` range, now used. Raises ``address space exhausted``."""
        for space in self.ranges:
            if prefix < space.prefixlen:
                continue
            step = 2 ** (32 - prefix)
            address = int(space.network_address)
            while address + step - 1 <= int(space.broadcast_address):
                candidate = ipaddress.IPv4Network((address, prefix))
                if self._free(candidate):
                    self.used.append(candidate)
                    return str(candidate)
                address += step
        raise AllocationError("address space exhausted")

    def allocate_ip(self) -> str:
        """One free address (a ``/32``), as a bare IP string."""
        return self.allocate(32).split("/")[0]
