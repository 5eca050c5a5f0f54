"""CIDR allocation (``pkg/kcp/iprange/allocate``): the original's vectors and properties."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.cloud.allocate import RESERVED_RANGES, AddressSpace, AllocationError, allocate_cidr, overlaps


@pytest.mark.parametrize(("existing", "expected"), [
    (["10.250.0.0/22", "10.96.0.0/13", "10.104.0.0/13"], "10.250.4.0/22"),
    (["10.250.0.0/16", "10.96.0.0/13", "10.104.0.0/13"], "10.251.0.0/22"),
    ([], "10.250.4.0/22"),
    (["", "", ""], "10.250.4.0/22"),
    (["10.180.0.0/16", "100.64.0.0/12", "100.104.0.0/13"], "10.181.0.0/22"),
    (["10.240.0.0/15", "100.64.0.0/12", "100.104.0.0/13"], "10.244.0.0/22"),  # skips reserved 10.242/16, 10.243/16
    (["10.250.0.0/24", "100.64.0.0/12", "100.104.0.0/13"], "10.250.4.0/22"),  # 10.250.1.0 lies in 10.250.0.0/22
    (["10.250.0.0/16", "10.251.0.0/16", "10.104.0.0/13"], "10.252.0.0/22"),  # pods right after the nodes
    (["10.63.0.0/16", "100.64.0.0/12", "100.104.0.0/13"], "10.96.0.0/22"),  # 10.64.0.0/11 is reserved
])
def test_vectors(existing: list[str], expected: str) -> None:
    assert allocate_cidr(existing) == expected


def test_past_the_ipv4_space_is_an_error() -> None:
    with pytest.raises(AllocationError):
        allocate_cidr(["255.255.252.0/22"])
    with pytest.raises(AllocationError, match="invalid CIDR"):
        allocate_cidr(["nodes"])


cidrs = st.builds(lambda a, p: str(ipaddress.IPv4Network((a, p), strict=False)),
                  st.integers(0, 2**32 - 1), st.integers(8, 28))


@settings(max_examples=300, deadline=None)
@given(st.lists(cidrs, min_size=1, max_size=3))
def test_allocated_range_is_a_free_aligned_22_after_the_nodes(existing: list[str]) -> None:
    try:
        result = ipaddress.IPv4Network(allocate_cidr(existing))
    except AllocationError:
        return  # ran past the end of the IPv4 space
    assert result.prefixlen == 22
    occupied = [ipaddress.IPv4Network(r) for r in [*existing, *RESERVED_RANGES]]
    assert not any(overlaps(result, o) for o in occupied)
    nodes = ipaddress.IPv4Network(existing[0])
    assert int(result.network_address) > int(nodes.network_address)
    # it is the first such range: the /22 before it (if after the nodes) is occupied
    before = int(result.network_address) - 1024
    if before > int(nodes.broadcast_address):
        prev = ipaddress.IPv4Network((before, 22))
        assert any(overlaps(prev, o) for o in occupied)


def test_address_space_vectors() -> None:
    space = AddressSpace(["10.250.0.0/16"])
    assert [space.allocate(p) for p in (17, 18, 19, 20)] == [
        "10.250.0.0/17", "10.250.128.0/18", "10.250.192.0/19", "10.250.224.0/20"]
    space = AddressSpace(["10.250.0.0/16"])
    space.reserve("10.250.8.0/22")
    space.reserve("10.250.16.0/22")
    assert [space.allocate(p) for p in (20, 20, 18, 22, 22, 22, 22)] == [
        "10.250.32.0/20", "10.250.48.0/20", "10.250.64.0/18", "10.250.0.0/22", "10.250.4.0/22",
        "10.250.12.0/22", "10.250.20.0/22"]
    space = AddressSpace(["10.250.0.0/28"])
    space.reserve("10.250.0.8/29")
    assert space.allocate(29) == "10.250.0.0/29"
    with pytest.raises(AllocationError, match="address space exhausted"):
        space.allocate(29)
    space = AddressSpace(["10.250.0.0/16"])
    assert [space.allocate_ip() for _ in range(3)] == ["10.250.0.0", "10.250.0.1", "10.250.0.2"]


def test_address_space_reserve_errors() -> None:
    space = AddressSpace(["10.128.0.0/16"])
    space.reserve("10.128.0.0/17")
    with pytest.raises(AllocationError, match="overlaps"):
        space.reserve("10.128.127.0/24")
    space = AddressSpace(["10.10.0.0/16", "10.20.0.0/16"])
    message = "range 10.15.0.0/16 is out of address space 10.10.0.0/16 10.20.0.0/16"
    with pytest.raises(AllocationError, match=re.escape(message)):
        space.reserve("10.15.0.0/16")
