"""kube.toolkit.metrics: collectors defined once per registry, and their children labelled once."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kube.toolkit.metrics import Children, counter


def test_children_count_under_the_fixed_and_the_given_labels_and_are_labelled_once() -> None:
    registry = CollectorRegistry()
    events = counter("test_watch_events", "Events.", ["registration", "type"], registry=registry)
    of_nodes = Children(events, "informer-nodes")
    of_nodes("ADDED").inc()
    of_nodes("ADDED").inc()
    of_nodes("DELETED").inc()
    assert of_nodes("ADDED") is of_nodes("ADDED") is events.labels("informer-nodes", "ADDED")
    value = registry.get_sample_value
    assert value("test_watch_events_total", {"registration": "informer-nodes", "type": "ADDED"}) == 2
    assert value("test_watch_events_total", {"registration": "informer-nodes", "type": "DELETED"}) == 1
    with pytest.raises(ValueError):  # a wrong label count is still prometheus-client's error
        of_nodes("ADDED", "extra")


def test_a_forgotten_child_is_labelled_anew_after_its_series_was_removed() -> None:
    registry = CollectorRegistry()
    hosts = counter("test_plus_errors", "Errors.", ["host"], registry=registry)
    of = Children(hosts)
    of("a").inc(3)
    hosts.remove("a")
    of.forget()
    of("a").inc()
    assert registry.get_sample_value("test_plus_errors_total", {"host": "a"}) == 1
