"""An attacker's SKR floods the shared cloud-skr worker with large objects (bench/skr_flood.py, smaller):
its connect fails with a clear SkrStatus condition and a Warning Event, the worker process stays up,
and another tenant's SKR keeps being connected."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.skr_flood import flood
from tests.integration.cloud import conftest
from tests.integration.cloud.conftest import CloudEnv

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def small_read_limits() -> Iterator[None]:
    """Read limits of 4 MiB per list for this module's processes (the default 64 MiB would need a flood
    too large for a test machine; bench/skr_flood.py runs the default)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(conftest.CLOUD_ENV, "RECONCILERY_REMOTE_LIST_MAX_BYTES", str(4 * 2**20))
        yield


@pytest.mark.timeout(600)
def test_a_flood_of_large_objects_fails_the_connect_and_the_worker_survives(cloud: CloudEnv) -> None:
    report = flood(cloud, objects=40, kib=200)  # 8 MiB against a 4 MiB bound
    print("\n".join(report.lines()))
    assert report.worker_alive
    assert report.condition["outcomes"][0].startswith("TooLarge: ")
    assert "ReadLimitExceeded" in report.event and report.event.startswith("Warning")
    assert report.other_connects >= 2
    assert report.rss_peak_mib - report.rss_before_mib < 100
