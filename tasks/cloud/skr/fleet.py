"""Metrics of the SKR fleet (the sweep and its connects, :mod:`tasks.cloud.skr.connect`,
:mod:`tasks.cloud.sweep`).

- ``reconcilery_cloud_skr_revisit_interval_seconds`` (histogram, seconds): between two connects of the same
  SKR, from the SkrStatus' ``pastConnections`` the connect replaces (its last entry is the previous connect;
  seconds precision; a connect that fails before its SkrStatus is written is no visit);
- ``reconcilery_cloud_skr_revisit_target_seconds`` (gauge, seconds): the configured target
  (``RECONCILERY_CLOUD_REVISIT_TARGET``) the interval is charted and alerted against;
- ``reconcilery_cloud_skr_connects_in_flight`` (gauge): connects running in this process (sum them);
- ``reconcilery_cloud_skrs{status}`` (gauge): the active SKRs by the result of their last connect:
  ``ready``, ``not_ready`` (readiness check failed), ``unreachable`` (the last connect failed), ``pending``
  (active, not connected since activation). A deactivated SKR leaves every structure of the rotation, so
  none is counted (``inactive`` connects are in ``reconcilery_cloud_skr_connects_total{result="inactive"}``);
- ``reconcilery_cloud_skr_unreachable_longest_seconds`` (gauge, seconds): how long the active SKR that has
  been unreachable longest has been (since its first failed connect in a row; 0 when none is).

The last two are read from Redis at scrape (:meth:`tasks.cloud.sweep.Rotation.health`: one ``HGETALL`` of
one short entry per active SKR, and two ``ZCARD``); every process reports the same values: use ``max``.

Not ported from cloud-manager (their labels are per SKR: ``kyma``, ``globalAccountId``, ...):
``cloud_manager_skr_runtime_reconcile_total{kyma}``, ``cloud_manager_skr_runtime_module_active_count``,
``cloud_manager_skr_looper_connect_total_seconds{kyma,timeout}``; their fleet-level counterparts are
``reconcilery_cloud_skr_connects_total``, ``reconcilery_cloud_skrs`` and
``reconcilery_cloud_skr_connect_seconds{result,provider}``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import redis
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kube.toolkit.metrics import gauge, histogram

__all__ = ["IN_FLIGHT", "REVISIT", "REVISIT_TARGET", "STATUSES", "STATUS_BY_RESULT", "FleetCollector", "summary"]

#: ``status`` label values of ``reconcilery_cloud_skrs``.
STATUSES = ("ready", "not_ready", "unreachable", "pending")
#: The connect's ``result`` -> the SKR's status.
STATUS_BY_RESULT = {"ok": "ready", "not_ready": "not_ready", "failed": "unreachable"}

REVISIT = histogram(
    "reconcilery_cloud_skr_revisit_interval_seconds",
    "Seconds between two connects of the same SKR (from its SkrStatus' past connections).",
    buckets=(5, 15, 30, 60, 120, 180, 300, 450, 600, 900, 1800, 3600))
REVISIT_TARGET = gauge("reconcilery_cloud_skr_revisit_target_seconds",
                       "The configured target revisit interval of an SKR, in seconds.")
IN_FLIGHT = gauge("reconcilery_cloud_skr_connects_in_flight", "SKR connects running now in this process.")


def summary(entries: Iterable[str], active: int, now: float) -> tuple[dict[str, int], float]:
    """``({status: n}, longest unreachable seconds)`` of the active SKRs' health ``entries``; SKRs without
    one are ``pending``; an entry that is no valid one counts as ``pending`` too."""
    counts = dict.fromkeys(STATUSES, 0)
    longest = 0.0
    seen = 0
    for entry in entries:
        status, _, since = entry.partition("|")
        if status not in counts or status == "pending":
            continue
        seen += 1
        counts[status] += 1
        if status == "unreachable":
            with contextlib.suppress(ValueError):
                longest = max(longest, now - float(since))
    counts["pending"] = max(0, active - seen)
    return counts, max(0.0, longest)


class FleetCollector(Collector):
    """``reconcilery_cloud_skrs`` and ``reconcilery_cloud_skr_unreachable_longest_seconds`` from
    ``read() -> (health entries, active SKRs)`` at scrape (nothing when Redis cannot be read)."""

    def __init__(self, read: Callable[[], tuple[Mapping[str, str], int]]) -> None:
        self.read = read

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield from self._families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        skrs, longest = self._families()
        try:
            entries, active = self.read()
        except (redis.RedisError, ValueError):
            yield from (skrs, longest)
            return
        counts, seconds = summary(entries.values(), active, time.time())
        for status in STATUSES:
            skrs.add_metric([status], counts[status])
        longest.add_metric([], seconds)
        yield from (skrs, longest)

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (GaugeMetricFamily("reconcilery_cloud_skrs", "Active SKRs by the result of their last connect "
                                  "(ready, not_ready, unreachable, pending: not connected yet).", labels=["status"]),
                GaugeMetricFamily("reconcilery_cloud_skr_unreachable_longest_seconds",
                                  "Seconds the longest-unreachable active SKR has been unreachable (0: none)."))


def register(read: Callable[[], tuple[Mapping[str, str], int]]) -> Any:
    """Register the fleet collector reading ``read() -> (health entries, active SKRs)`` on the default
    registry once; returns it."""
    collector = FleetCollector(read)
    with contextlib.suppress(ValueError):  # registered already
        REGISTRY.register(collector)
    return collector
