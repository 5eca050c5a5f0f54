"""Prometheus metrics of list + watch (watchers and informers; default registry, served on ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

WATCH_EVENTS = Counter(
    "reconcilery_watch_events_total",
    "Watch events handled, by registration and type (ADDED, MODIFIED, DELETED, BOOKMARK); relist "
    "differences count with their synthetic type.",
    ["registration", "type"],
)
WATCH_RESTARTS = Counter(
    "reconcilery_watch_restarts_total",
    "Watch (re)starts by reason: timeout (server ended the watch), gone (410), error (connection or "
    "API error), missing (kind not served).",
    ["registration", "reason"],
)
WATCH_RELISTS = Counter("reconcilery_watch_relists_total", "Full lists after the first one.", ["registration"])
WATCH_MAP_ERRORS = Counter(
    "reconcilery_watch_map_errors_total", "Events whose map function raised.", ["registration"]
)
WATCH_ENQUEUED = Counter(
    "reconcilery_watch_enqueued_total", "Keys handed to the workqueue.", ["registration", "controller"]
)
WATCH_ENQUEUE_ERRORS = Counter(
    "reconcilery_watch_enqueue_errors_total", "Failed enqueue attempts (retried).", ["registration"]
)
WATCH_STORE_OBJECTS = Gauge("reconcilery_watch_store_objects", "Objects in the cache.", ["registration"])
WATCH_LAST_EVENT = Gauge(
    "reconcilery_watch_last_event_timestamp_seconds",
    "Unix time of the last event, bookmark or list of the watch (a silent watch's value stops moving).",
    ["registration"])
WATCH_RESYNCS = Counter(
    "reconcilery_watch_cache_resyncs_total",
    "Times every cached object was enqueued again (Redis restarted or lost its data).", ["registration"])
INFORMER_READS = Counter(
    "reconcilery_informer_reads_total",
    "Reads of reconciles by source: cache (a worker's informer store) or api (the API server: kind "
    "not cached, or the store not synced in time).", ["resource", "source"])
INFORMER_WAIT = Counter(
    "reconcilery_informer_sync_wait_seconds_total",
    "Seconds reconciles waited for an informer's initial list.", ["resource"])
