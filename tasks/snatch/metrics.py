"""Prometheus metrics of the Snatch webhook (process-wide, default registry)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

#: Admission requests by ``result`` (``mutated``, ``unchanged``, ``rejected``) and ``reason``
#: (a :class:`tasks.snatch.mutate.Reason` value, ``malformed_review`` or ``internal_error``).
ADMISSION_REQUESTS = Counter(
    "snatch_admission_requests", "Pod admission requests answered by the Snatch webhook", ["result", "reason"]
)
ADMISSION_DURATION = Histogram(
    "snatch_admission_duration_seconds", "Time to answer one admission request (seconds)",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
#: The original's counters (KIM Snatch): incremented each time the webhook enters that mode (the
#: original does it once at start-up; here the pool check repeats, so also on each change of mode).
SHOOTS_DEFAULT = Counter("kim_snatch_shoots_default", "Indicates the number of Shoots with NodeAffinity")
SHOOTS_FALLBACK = Counter("kim_snatch_shoots_fallback", "Indicates the number of Shoots with missing NodeAffinity")
POOL_NODE_PRESENT = Gauge("snatch_pool_node_present", "1 when a node of the Kyma worker pool exists (mutating)")
NAMESPACE_CACHE_SIZE = Gauge("snatch_namespace_cache_size", "Namespaces in the webhook's namespace cache")
CLUSTER_CHECK_ERRORS = Counter(
    "snatch_cluster_check_errors", "Failed reads of nodes or namespaces from the API server", ["check"]
)
CERT_RELOADS = Counter("snatch_certificate_reloads", "Serving certificate (re)loads", ["result"])
CERT_NOT_AFTER = Gauge("snatch_certificate_not_after_timestamp_seconds",
                       "Expiry of the serving certificate in use (Unix seconds)")
