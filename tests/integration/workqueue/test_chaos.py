"""bench/chaos.py, smaller: the real pipeline under every fault keeps its two promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import FAULTS, Chaos

pytestmark = pytest.mark.integration


@pytest.mark.timeout(400)
def test_no_change_is_lost_and_no_key_is_reconciled_twice_at_once_under_faults(tmp_path: Path) -> None:
    report = Chaos(str(tmp_path), seconds=16, workers=2, concurrency=3, objects=60, rate=15,
                   fault_every=2.5, slow_share=0.05).run()
    summary = "\n".join(report.lines())
    assert set(report.faults) == set(FAULTS), summary
    assert report.stranded == [], summary
    assert report.overlaps == [], summary
    assert report.reconciles > 100, summary
    assert max(report.recovery.values()) < 30, summary
