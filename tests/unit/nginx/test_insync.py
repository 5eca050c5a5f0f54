"""tasks.nginx.insync: a host is in sync while no upstream's last sync to it failed; the map is bounded."""

from __future__ import annotations

from tasks.nginx.insync import HostSync


def test_a_host_is_out_of_sync_until_every_failing_upstream_succeeds() -> None:
    sync = HostSync()
    assert sync.in_sync("h1") and sync.succeeded("h1", "http:a")
    assert sync.failed("h1", "http:a") is False
    assert sync.failed("h1", "stream:b") is False
    assert sync.succeeded("h2", "http:a")  # other hosts are not affected
    assert sync.succeeded("h1", "http:a") is False  # stream:b still failing
    assert sync.failing("h1") == {"stream:b"}
    assert sync.succeeded("h1", "stream:b") and sync.in_sync("h1")


def test_a_failure_after_a_success_counts_the_last_sync() -> None:
    sync = HostSync()
    sync.succeeded("h", "http:a")
    sync.failed("h", "http:a")
    assert not sync.in_sync("h")
    sync.succeeded("h", "http:a")
    assert sync.in_sync("h")


def test_the_map_is_bounded_in_hosts_and_upstreams() -> None:
    sync = HostSync(max_hosts=2, max_failing=3)
    for i in range(10):
        sync.failed("h1", f"http:u{i}")
    assert len(sync.failing("h1")) == 3 and not sync.in_sync("h1")
    sync.failed("h2", "http:a")
    assert sync.failed("h3", "http:a") is False  # past the bound: reported out of sync, not remembered
    assert sync.failing("h3") == frozenset()
    for i in range(3):
        sync.succeeded("h1", f"http:u{i}")
    assert sync.in_sync("h1")  # u3..u9 were never remembered: their next failing retry adds them again
    sync.failed("h1", "http:u5")
    assert sync.failing("h1") == {"http:u5"}


def test_a_failure_is_forgotten_after_expire_seconds_unless_it_fails_again() -> None:
    """A retry that succeeded in another worker process is never seen here: the failure expires."""
    now = [1000.0]
    sync = HostSync(expire=180.0, clock=lambda: now[0])
    sync.failed("h", "http:a")
    now[0] += 179.0
    assert not sync.in_sync("h")
    sync.failed("h", "http:a")  # still failing: marked again by a retry in this process
    now[0] += 179.0
    assert not sync.in_sync("h") and sync.failing("h") == {"http:a"}
    now[0] += 2.0
    assert sync.in_sync("h") and sync.failing("h") == frozenset()
