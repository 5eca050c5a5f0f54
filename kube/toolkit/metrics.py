"""Prometheus collectors registered once per process, through prometheus-client's public API only.

A module that defines a metric at import time may be imported twice (``importlib.reload`` in tests,
two entry points of one process): the second definition gets the collector the first registered,
instead of prometheus-client's "Duplicated timeseries" error. Defining one name twice with another
type or other labels is a programming error and raises ``ValueError``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

__all__ = ["Children", "counter", "gauge", "histogram"]

C = TypeVar("C", Counter, Gauge, Histogram)

# No ``<name>_created`` series beside every counter and histogram child: nothing of ours reads them, and at
# fleet size they are half the series of a process (bench/metrics_cost.py). Process-wide, read at scrape.
disable_created_metrics()

_lock = threading.Lock()
_collectors: dict[tuple[int, str], tuple[Any, tuple[str, ...]]] = {}


def _once(kind: type[C], name: str, doc: str, labels: Sequence[str], registry: CollectorRegistry,
          **options: Any) -> C:
    key = (id(registry), name)
    with _lock:
        found = _collectors.get(key)
        if found is not None:
            collector, known_labels = found
            if not isinstance(collector, kind) or known_labels != tuple(labels):
                raise ValueError(f"metric {name} defined again as {kind.__name__}{tuple(labels)}, "
                                 f"first as {type(collector).__name__}{known_labels}")
            return collector
        collector = kind(name, doc, list(labels), registry=registry, **options)
        _collectors[key] = (collector, tuple(labels))
        return collector


def counter(name: str, doc: str, labels: Sequence[str] = (), registry: CollectorRegistry = REGISTRY) -> Counter:
    """The process's Counter ``name`` (``_total`` is added on exposition as prometheus-client does)."""
    return _once(Counter, name, doc, labels, registry)


def gauge(name: str, doc: str, labels: Sequence[str] = (), registry: CollectorRegistry = REGISTRY,
          **options: Any) -> Gauge:
    """The process's Gauge ``name`` (``options``: e.g. ``multiprocess_mode``)."""
    return _once(Gauge, name, doc, labels, registry, **options)


def histogram(name: str, doc: str, labels: Sequence[str] = (), registry: CollectorRegistry = REGISTRY,
              buckets: Sequence[float] | None = None) -> Histogram:
    """The process's Histogram ``name`` (``buckets`` in the metric's unit; default prometheus-client's)."""
    options: dict[str, Any] = {} if buckets is None else {"buckets": tuple(buckets)}
    return _once(Histogram, name, doc, labels, registry, **options)


class Children:
    """The children of ``collector`` whose leading label values are ``fixed``, each labelled once.

    ``Children(WATCH_EVENTS, "informer-nodes")("ADDED")`` is ``WATCH_EVENTS.labels("informer-nodes",
    "ADDED")``: prometheus-client's ``labels()`` takes a lock and validates the values on every call,
    which a hot path (an event, a reconcile) should pay once per label set. The values must be bounded
    (as every label's); a child :meth:`forget` drops is labelled anew on its next use. Not locked: two
    threads may label one child twice, which prometheus-client returns as the same child.
    """

    def __init__(self, collector: Counter | Gauge | Histogram, *fixed: str) -> None:
        self.collector, self.fixed = collector, fixed
        self._children: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        """The child of ``fixed + values`` (a Counter's, Gauge's or Histogram's child)."""
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.collector.labels(*self.fixed, *values)
        return child

    def forget(self) -> None:
        """Drop the children labelled so far (after the collector's series were removed)."""
        self._children.clear()
