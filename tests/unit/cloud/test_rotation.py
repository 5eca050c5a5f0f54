"""The rotation's rules: threshold, revisit delay, failure backoff, SkrStatus's past connections."""

from __future__ import annotations

import pytest

from tasks.cloud.rotation import cyclic_threshold, failure_delay, past_connections, revisit_delay


def test_threshold_is_the_originals() -> None:
    assert cyclic_threshold(1, 60, 10) == 6
    assert cyclic_threshold(16, 60, 10) == 96
    assert cyclic_threshold(1, 5, 10) == 1
    assert cyclic_threshold(1, 60, 0) == 1


@pytest.mark.parametrize(("fleet", "delay"), [(1, 60.0), (5, 60.0), (6, 0.0), (730, 0.0)])
def test_revisit_delay_below_and_above_the_threshold(fleet: int, delay: float) -> None:
    assert revisit_delay(fleet, 1, 60, 10) == delay


def test_failure_backoff_doubles_to_a_cap() -> None:
    assert [failure_delay(n, 5, 60) for n in range(6)] == [0, 5, 10, 20, 40, 60]
    assert failure_delay(10_000, 5, 60) == 60


def test_past_connections_keep_ten_and_average() -> None:
    times = [f"2026-01-01T00:{m:02d}:00Z" for m in range(12)]
    kept, avg = past_connections(times[:-1], times[-1])
    assert kept == times[-10:] and avg == 60
    assert past_connections([], times[0]) == ([times[0]], 0)
    assert past_connections(["garbage"], times[0]) == ([times[0]], 0)
