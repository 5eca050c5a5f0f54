"""SKR IpRange validation: CIDR messages, overlaps (older wins), quota (older wins)."""

from __future__ import annotations

import pytest

from tasks.cloud.validate import Ranked, cidr_failure, overlap_winner, quota_exceeded, ranges_overlap


@pytest.mark.parametrize(("cidr", "message"), [
    ("10.250.4.0/22", None),
    ("10.250.4.1/22", None),  # host bits allowed, as net.ParseCIDR
    ("10.0.0.0/16", None),
    ("10.0.0.0/30", None),
    ("foo", "CIDR foo has invalid syntax"),
    ("10.0.0.0", "CIDR 10.0.0.0 has invalid syntax"),
    ("10.0.0.0/33", "CIDR 10.0.0.0/33 has invalid syntax"),
    ("fd00::/64", "CIDR fd00::/64 is not IPv4"),
    ("10.0.0.0/31", "CIDR 10.0.0.0/31 block size must not be greater than 30"),
    ("10.0.0.0/15", "CIDR 10.0.0.0/15 block size must not be less than 16"),
])
def test_cidr_failures(cidr: str, message: str | None) -> None:
    assert cidr_failure(cidr) == message


def ipr(name: str, created: str, cidr: str = "") -> dict:
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"cidr": cidr} if cidr else {}}


@pytest.mark.parametrize(("a", "b", "overlap"), [
    ("", "", True), ("10.0.0.0/16", "", False), ("", "10.0.0.0/16", False),
    ("10.0.0.0/16", "10.0.4.0/22", True), ("10.0.0.0/22", "10.0.4.0/22", False), ("10.0.0.0/22", "10.0.0.0/22", True),
])
def test_ranges_overlap(a: str, b: str, overlap: bool) -> None:
    assert ranges_overlap(a, b) is overlap


def test_the_newer_of_two_overlapping_ranges_fails_and_the_older_passes() -> None:
    old = ipr("old", "2026-01-01T00:00:00Z", "10.0.0.0/16")
    new = ipr("new", "2026-01-02T00:00:00Z", "10.0.4.0/22")
    apart = ipr("apart", "2025-01-01T00:00:00Z", "10.9.0.0/16")
    assert overlap_winner(new, [old, new, apart]) == "old"
    assert overlap_winner(old, [old, new, apart]) is None
    assert overlap_winner(apart, [old, new, apart]) is None


def test_same_creation_time_the_smaller_name_is_older() -> None:
    a = ipr("a", "2026-01-01T00:00:00Z")
    b = ipr("b", "2026-01-01T00:00:00Z")
    assert overlap_winner(b, [a, b]) == "a"
    assert overlap_winner(a, [a, b]) is None


def test_quota_older_first() -> None:
    objs = [ipr("c", "2026-01-03T00:00:00Z"), ipr("a", "2026-01-01T00:00:00Z"), ipr("b", "2026-01-01T00:00:00Z")]
    assert [quota_exceeded(o, objs, 1) for o in objs] == [True, False, True]
    assert [quota_exceeded(o, objs, 2) for o in objs] == [True, False, False]
    assert not any(quota_exceeded(o, objs, None) for o in objs)
    ranked = Ranked(objs)  # a connect's snapshot: the same answers, sorted once
    assert [quota_exceeded(o, ranked, q) for q in (1, 2) for o in objs] == [True, False, True, True, False, False]
    assert ranked.place(ipr("z", "2020-01-01T00:00:00Z")) == 3  # not in the list
