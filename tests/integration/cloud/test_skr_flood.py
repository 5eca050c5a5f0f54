"""An attacker's SKR floods the shared cloud-skr worker with large objects (bench/skr_flood.py, smaller):
its connect fails with a clear SkrStatus condition and a Warning Event, the worker process stays up,
and another tenant's SKR keeps being connected."""

from __future__ import annotations

import pytest

from bench.skr_flood import flood
from tests.integration.cloud.conftest import CloudEnv

pytestmark = pytest.mark.integration


@pytest.mark.timeout(600)
def test_a_flood_of_large_objects_fails_the_connect_and_the_worker_survives(cloud: CloudEnv) -> None:
    # the package's processes read SKR lists up to 4 MiB (conftest.CLOUD_ENV): one stack for every module
    report = flood(cloud, objects=40, kib=200)  # 8 MiB against a 4 MiB bound
    print("\n".join(report.lines()))
    assert report.worker_alive
    assert report.condition["outcomes"][0].startswith("TooLarge: ")
    assert "ReadLimitExceeded" in report.event and report.event.startswith("Warning")
    assert report.other_connects >= 2
    assert report.rss_peak_mib - report.rss_before_mib < 100
