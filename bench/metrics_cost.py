"""The metrics endpoint's cost at fleet size: ``python bench/metrics_cost.py [--skrs 5000] [--apirules 100000]``.

Issue 30's measure: at 5,000 SKRs and 100k APIRules, how many series a process's ``/metrics`` carries
(at most 10,000) and how long a scrape takes, with label values bounded (no SKR id, object name,
namespace or key in a label).

The real recording code runs in this one process at that scale, against a real Redis (a fresh
``redis-server`` on a free port) for the collectors read from Redis at scrape time:

- the SKR fleet: every SKR activated in the rotation, connected once (``reconcilery_cloud_skr_connect_seconds``,
  revisit intervals, the health entry of :mod:`tasks.cloud.skr.fleet`), its objects recorded per connect
  (``kind_metrics.record_skr``: 8 kinds each), 5 KCP objects per SKR recorded with their state;
- provider calls (``provider_metrics.record_call``) over 3 providers x 40 methods x 15 regions x the
  answer codes 200 and 404, and a few error codes: a generous bound on what a fleet calls;
- reconciles of every registered controller (``controller_runtime_*``), and requeues of every Cloud kind;
- the API Gateway watcher's state map fed 100k APIRule events (``reconcilery_apigateway_apirules``).

Every metric lives in this process, so its series count is an upper bound of any one process's (a worker
has only its pool's; the watcher only the watch metrics). Printed: series per metric family (the 15
largest), the total, the scrape time (``generate_latest`` and an HTTP GET of ``/metrics``: median of 20),
the response size, and the label-value check; then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port  # noqa: E402

#: Label values that would be unbounded: an SKR (kyma) name, an SKR/KCP id, an APIRule or namespace name.
UNBOUNDED = re.compile(r"skr-\d+|[0-9a-f]{8}-[0-9a-f]{4}-|rule-\d+|ns-\d+")
PROVIDERS = ("aws", "gcp", "azure")
SKR_KINDS = ("iprange", "awsvpcpeering", "awsnfsvolume", "awsredisinstance", "awsnfsbackupschedule",
             "awsnfsvolumebackup", "awsrediscluster", "gcpsubnet")
KCP_KINDS = ("iprange", "vpcpeering", "nfsinstance", "redisinstance", "network")


def seed_cloud(skrs: int) -> None:
    """Record ``skrs`` SKRs' connects, objects and KCP objects, and provider calls, through the real code."""
    from tasks.cloud import kind_metrics, provider_metrics, settings, sweep
    from tasks.cloud.skr import connect, fleet

    rotation = sweep.rotation(settings.current())
    for i in range(skrs):
        kyma = f"skr-{i:05d}"
        rotation.activate(kyma)
        provider = PROVIDERS[i % 3]
        result = "ok" if i % 50 else "failed"
        connect.CONNECT_SECONDS.labels(result, provider).observe(10.0 + i % 7)
        connect.CONNECTS.labels(result, "rotation").inc()
        fleet.REVISIT.observe(290.0 + i % 20)
        rotation.finish(kyma, result == "ok", result)
        kind_metrics.record_skr(kyma, {(kind_metrics.kind_label(k, "cloud-resources.kyma-project.io"),
                                        "Ready" if i % 10 else "Error"): 1 for k in SKR_KINDS})
        for k in KCP_KINDS:
            kind = kind_metrics.kind_label(k, "cloud-control.kyma-project.io")
            kind_metrics.OBJECTS.put(f"kcp/{kind}/kcp-system/{i:08x}-0000-4000-8000-000000000000",
                                     {f"{kind}|Ready": 1})
    for k in (*SKR_KINDS, *KCP_KINDS):
        kind = kind_metrics.kind_label(k, "cloud-control.kyma-project.io")
        kind_metrics.TIME_TO_READY.labels(kind).observe(42.0)
        for reason in kind_metrics.REASONS:
            kind_metrics.REQUEUES.labels(kind, reason).inc()
    for provider in PROVIDERS:
        for m in range(40):
            for r in range(15):
                for code in (200, 404):
                    provider_metrics.record_call(provider, f"Service/Method{m}", code, f"region-{r}")
        for code in (0, 400, 403, 409, 429, 500, 503):
            provider_metrics.record_call(provider, "Service/Method0", code, "region-0")


class _Stores:
    """A stand-in for the watcher's stores (the state map rebuilds from an empty cache)."""

    def list(self, resource: Any) -> list[Any]:
        return []


def seed_apirules(n: int) -> int:
    """Feed the watcher's APIRule state map ``n`` APIRules (10% not Ready); returns the map's bytes (tracemalloc)."""
    import tracemalloc

    from tasks.apigateway import watches

    counts = watches.state_counts_of(_Stores())  # type: ignore[arg-type]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(n):
        counts.update({"metadata": {"namespace": f"ns-{i % 1000}", "name": f"rule-{i}"},
                       "status": {"state": "Ready" if i % 10 else "Warning"}})
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    globals()["_keep"] = counts  # the gauge holds the map weakly through its stores
    return grown


def seed_engine() -> None:
    """One reconcile and one queue wait of every registered controller."""
    from workers import metrics
    from workers.app import load_domains
    from workers.controller import registry

    load_domains()
    for controller in registry:
        for result in ("success", "error", "requeue", "requeue_after"):
            metrics.RECONCILE_TOTAL.labels(controller.name, result).inc()
        metrics.RECONCILE_TIME.labels(controller.name).observe(0.01)
        metrics.QUEUE_DURATION.labels(controller.name).observe(0.01)
        metrics.ADDS.labels(controller.name).inc()
        metrics.DEPTH.labels(controller.name).set(0)
        metrics.PARKED.labels(controller.name).set(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skrs", type=int, default=5000)
    parser.add_argument("--apirules", type=int, default=100_000)
    args = parser.parse_args()

    redis = LocalRedis(free_port(), workdir=str(Path(os.environ.get("TMPDIR", "/tmp")) / f"mcost-{os.getpid()}"))
    redis.start()
    os.environ["RECONCILERY_REDIS_URL"] = redis.url
    try:
        from prometheus_client import REGISTRY, generate_latest, start_http_server
        from prometheus_client.parser import text_string_to_metric_families

        import tasks.cloud.skr.connect  # noqa: F401 - registers the fleet collector

        started = time.perf_counter()
        seed_engine()
        seed_cloud(args.skrs)
        apirule_bytes = seed_apirules(args.apirules)
        seeded = time.perf_counter() - started

        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            body = generate_latest(REGISTRY)
            times.append(time.perf_counter() - t0)
        port = free_port()
        start_http_server(port, addr="127.0.0.1")
        http = []
        for _ in range(20):
            t0 = time.perf_counter()
            requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).raise_for_status()
            http.append(time.perf_counter() - t0)

        per_family: Counter[str] = Counter()
        bad: set[str] = set()
        for family in text_string_to_metric_families(body.decode()):
            for sample in family.samples:
                per_family[family.name] += 1
                bad.update(v for v in sample.labels.values() if UNBOUNDED.search(v))
        total = sum(per_family.values())
        print(f"seeded {args.skrs} SKRs, {args.apirules} APIRules in {seeded:.1f} s "
              f"(the APIRule state map: {apirule_bytes / args.apirules:.0f} B per APIRule)")
        print(f"{'family':60} {'series':>7}")
        for name, n in per_family.most_common(15):
            print(f"{name:60} {n:7d}")
        print(f"{'total (' + str(len(per_family)) + ' families)':60} {total:7d}")
        print(f"scrape: generate_latest p50 {statistics.median(times) * 1000:.1f} ms, HTTP GET p50 "
              f"{statistics.median(http) * 1000:.1f} ms, {len(body) / 1024:.0f} KiB")
        print(f"label values naming an SKR, object, namespace or id: {sorted(bad)[:5] or 'none'}")
        print(json.dumps({"skrs": args.skrs, "apirules": args.apirules, "series": total,
                          "families": len(per_family), "scrape_ms": round(statistics.median(times) * 1000, 1),
                          "http_scrape_ms": round(statistics.median(http) * 1000, 1),
                          "bytes": len(body), "unbounded_label_values": len(bad),
                          "apirule_state_bytes_per_apirule": round(apirule_bytes / max(args.apirules, 1)),
                          "largest": dict(per_family.most_common(3))}))
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
