"""tasks.nginx.missing: missing upstreams are reported while this process sees them fail, expire when it
no longer does, and their label values are bounded (Service port names are customer input)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from tasks.nginx.missing import OTHER, LabelBudget, MissingCollector, MissingUpstreams


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_upstream_is_reported_while_missing_and_dropped_when_found() -> None:
    state = MissingUpstreams()
    state.missing("h1", "http:a")
    state.missing("h1", "stream:b")
    state.missing("h2", "http:a")
    assert state.samples() == [("h1", "http:a", 1.0), ("h1", "stream:b", 1.0), ("h2", "http:a", 1.0)]
    state.found("h1", "http:a")
    state.found("h2", "http:a")
    state.found("h3", "http:zzz")  # never missing: nothing
    assert state.samples() == [("h1", "stream:b", 1.0)]


def test_a_process_that_no_longer_syncs_an_upstream_stops_reporting_it() -> None:
    clock = Clock()
    state = MissingUpstreams(expire=180.0, clock=clock)
    state.missing("h", "http:a")
    clock.now += 179.0
    state.missing("h", "http:b")
    assert [u for _, u, _ in state.samples()] == ["http:a", "http:b"]
    clock.now += 2.0  # a's retries run in another process now (or its Service is gone)
    assert state.samples() == [("h", "http:b", 1.0)]
    clock.now += 180.0
    assert state.samples() == [] and state.current() == {}


def test_the_series_are_bounded_per_host_and_in_hosts_and_names_are_cut() -> None:
    state = MissingUpstreams(max_hosts=2, max_missing=5)
    for i in range(8):
        state.missing("h1", f"http:u{i}")
    state.missing("h2", "http:" + "x" * 100)
    state.missing("h3", "http:a")  # past the hosts bound: not remembered
    assert state.samples(max_labelled=3) == [
        ("h1", "http:u0", 1.0), ("h1", "http:u1", 1.0), ("h1", "http:u2", 1.0), ("h1", OTHER, 2.0),
        ("h2", ("http:" + "x" * 100)[:63], 1.0)]


def test_the_collector_exposes_the_gauge_at_scrape_time() -> None:
    state = MissingUpstreams()
    registry = CollectorRegistry()
    registry.register(MissingCollector(state))
    labels = {"host": "http://h/api", "upstream": "http:web"}
    assert registry.get_sample_value("reconcilery_nginx_upstream_missing", labels) is None
    state.missing("http://h/api", "http:web")
    assert registry.get_sample_value("reconcilery_nginx_upstream_missing", labels) == 1.0


def test_the_counter_label_keeps_the_first_names_per_host() -> None:
    budget = LabelBudget(size=2, max_hosts=1)
    assert [budget.label("h", u) for u in ("http:a", "http:b", "http:c", "http:a")] == ["http:a", "http:b", OTHER,
                                                                                        "http:a"]
    assert budget.label("other-host", "http:a") == OTHER
