"""Zone splits of an IpRange CIDR (``rangeSplitByZones``)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.cloud.split import CidrParseError, CidrSplitError, split_by_zones, subnet_count


@pytest.mark.parametrize(("cidr", "zones", "expected"), [
    ("10.250.4.0/22", 1, ["10.250.4.0/22"]),
    ("10.250.4.0/22", 2, ["10.250.4.0/23", "10.250.6.0/23"]),
    ("10.250.4.0/22", 3, ["10.250.4.0/24", "10.250.5.0/24", "10.250.6.0/24"]),
    ("10.250.4.0/22", 4, ["10.250.4.0/24", "10.250.5.0/24", "10.250.6.0/24", "10.250.7.0/24"]),
    ("10.251.0.0/22", 5, ["10.251.0.0/25", "10.251.0.128/25", "10.251.1.0/25", "10.251.1.128/25", "10.251.2.0/25"]),
])
def test_vectors(cidr: str, zones: int, expected: list[str]) -> None:
    assert split_by_zones(cidr, zones) == expected


def test_errors_carry_the_original_messages() -> None:
    with pytest.raises(CidrParseError, match=r"^Can not parse CIDR$"):
        split_by_zones("10.250.4.0/33", 3)
    with pytest.raises(CidrSplitError, match=r"^Can not split CIDR to 4 subnets$"):
        split_by_zones("10.0.0.0/31", 3)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(8, 30), st.integers(1, 20))
def test_ranges_are_disjoint_equal_and_inside_the_cidr(address: int, prefix: int, zones: int) -> None:
    cidr = str(ipaddress.IPv4Network((address, prefix), strict=False))
    n = subnet_count(zones)
    if prefix + n.bit_length() - 1 > 32:
        with pytest.raises(CidrSplitError):
            split_by_zones(cidr, zones)
        return
    ranges = [ipaddress.IPv4Network(r) for r in split_by_zones(cidr, zones)]
    parent = ipaddress.IPv4Network(cidr)
    assert len(ranges) == zones
    assert n >= zones and n & (n - 1) == 0 and n < 2 * zones + (zones == 1)
    assert all(r.subnet_of(parent) and r.num_addresses == parent.num_addresses // n for r in ranges)
    assert all(not a.overlaps(b) for i, a in enumerate(ranges) for b in ranges[i + 1:])
    assert ranges == sorted(ranges) and ranges[0].network_address == parent.network_address
