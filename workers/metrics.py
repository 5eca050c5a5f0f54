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
ADDS = Counter("workqueue_adds_total", "Keys newly waiting in the workqueue.", ["name"])
RETRIES = Counter("workqueue_retries_total", "Keys scheduled again after a failure.", ["name"])
DEPTH = Gauge("workqueue_depth", "Keys waiting in the workqueue.", ["name"])
QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds", "Seconds a key waited before its reconcile started.", ["name"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300))
LEASES_LOST = Counter(
    "workqueue_leases_lost_total", "Reconciles whose key was recovered by another worker before they ended.",
    ["name"])
RECOVERED = Counter(
    "reconcilery_workqueue_recovered_total", "Keys whose lease lapsed (worker dead or cut off), handed on.")
REPAIRED = Counter(
    "reconcilery_workqueue_repaired_total", "Waiting keys that had lost their ready entry, queued again by the audit.")
STUCK = Gauge(
    "reconcilery_reconciles_stuck", "Reconciles of this process running far past their deadline.")
REDIS_RESTARTS = Counter(
    "reconcilery_redis_restarts_total", "Times this process found Redis restarted (run_id changed or state lost).")
PARKED = Gauge(
    "reconcilery_workqueue_parked_keys",
    "Keys parked because their reconcile took its worker down max_lapses times in a row (until a fresh add).",
    ["controller"])
PARKED_TOTAL = Counter(
    "reconcilery_workqueue_parked_total", "Keys this process parked after repeated lease lapses.", ["controller"])
