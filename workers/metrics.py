"""Prometheus metrics of the workqueue and the reconciles, with controller-runtime's names."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total", "Reconciles per controller and result.", ["controller", "result"])
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total", "Reconciles that ended in an error.", ["controller"])
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds", "Length of one reconcile.", ["controller"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
ADDS = Counter("workqueue_adds_total", "Keys published to the workqueue.", ["name"])
RETRIES = Counter("workqueue_retries_total", "Keys scheduled again after a failure.", ["name"])
DEPTH = Gauge("workqueue_depth", "Keys waiting in the workqueue.", ["name"])
QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds", "Seconds a key waited before its reconcile started.", ["name"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300))
DROPPED = Counter(
    "reconcilery_workqueue_dropped_messages_total",
    "Celery messages dropped because the key was not waiting (duplicate) or is held by another worker.",
    ["name", "reason"])
LEASES_LOST = Counter(
    "reconcilery_workqueue_leases_lost_total", "Reconciles whose key was taken over before they ended.", ["name"])
