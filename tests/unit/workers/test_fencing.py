"""The fence of a running reconcile: lost leases, deadlines, bounded timeouts."""

from __future__ import annotations

import threading
import time

import pytest

import fencing


def fence(deadline: float = 60.0, lease: float = 30.0) -> fencing.Fence:
    now = time.monotonic()
    return fencing.Fence(token="7", deadline=now + deadline, valid_until=now + lease)


def test_outside_a_reconcile_nothing_is_bounded() -> None:
    assert fencing.current() is None
    fencing.check()
    assert fencing.timeout(30.0) == 30.0


def test_a_lost_lease_refuses_reads_and_writes() -> None:
    f = fence()
    with fencing.fenced(f):
        fencing.check()
        f.mark_lost("taken over")
        with pytest.raises(fencing.LeaseLost, match="taken over"):
            fencing.check()
        with pytest.raises(fencing.LeaseLost):
            fencing.timeout(30.0)
    assert fencing.current() is None


def test_a_lease_not_renewed_in_time_expires_locally() -> None:
    f = fence(lease=0.05)
    time.sleep(0.06)
    assert f.lost and "expired" in f.reason
    f.extend(time.monotonic() + 10)  # too late: a lost lease stays lost
    assert f.lost


def test_renewals_extend_the_lease() -> None:
    f = fence(lease=0.05)
    f.extend(time.monotonic() + 10)
    time.sleep(0.06)
    assert not f.lost


def test_the_deadline_ends_the_reconcile() -> None:
    f = fence(deadline=0.05)
    with fencing.fenced(f):
        time.sleep(0.06)
        with pytest.raises(fencing.DeadlineExceeded):
            fencing.check()


@pytest.mark.parametrize(("write", "expected"), [(False, 20.0), (True, 5.0)])
def test_timeouts_are_bounded_by_the_deadline_and_for_writes_by_the_lease(write: bool, expected: float) -> None:
    with fencing.fenced(fence(deadline=20.0, lease=5.0)):
        assert fencing.timeout(60.0, write=write) == pytest.approx(expected, abs=0.1)
        assert fencing.timeout(1.0, write=write) == 1.0


def test_fences_are_per_thread() -> None:
    seen: list[object] = []
    with fencing.fenced(fence()):
        t = threading.Thread(target=lambda: seen.append(fencing.current()))
        t.start()
        t.join()
    assert seen == [None]
