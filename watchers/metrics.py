"""Prometheus metrics of the watch engine: the reflector's live in :mod:`informers.metrics` (one
definition for watchers and for the workers' informers); re-exported here for the watchers."""

from informers.metrics import (
    WATCH_ENQUEUE_ERRORS,
    WATCH_ENQUEUED,
    WATCH_EVENTS,
    WATCH_LAST_EVENT,
    WATCH_MAP_ERRORS,
    WATCH_RELISTS,
    WATCH_RESTARTS,
    WATCH_RESYNCS,
    WATCH_STORE_OBJECTS,
)

__all__ = ["WATCH_ENQUEUED", "WATCH_ENQUEUE_ERRORS", "WATCH_EVENTS", "WATCH_LAST_EVENT", "WATCH_MAP_ERRORS",
           "WATCH_RELISTS", "WATCH_RESTARTS", "WATCH_RESYNCS", "WATCH_STORE_OBJECTS"]
