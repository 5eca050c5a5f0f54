"""``reconcilery probe worker`` against a real worker process: its heartbeat keeps the probe green,
and the probe turns red once the worker is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.processes import stop_process, wait_for
from tests.fixtures.workers import ROOT, WorkerPool

pytestmark = pytest.mark.integration


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reconcilery.cli", "probe", "worker", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))


def test_a_running_worker_passes_its_probes(worker_pool: Callable[[str], WorkerPool], redis_url: str,
                                            tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    (proc,) = worker_pool("tests.integration.workqueue.probe").start(1, RECONCILERY_HEARTBEAT_FILE=str(beat))
    wait_for(beat.exists, timeout=30, message="heartbeat written")
    live = _probe("--heartbeat-file", str(beat), "--max-age", "30")
    assert live.returncode == 0, live.stdout
    ready = subprocess.run([sys.executable, "-m", "reconcilery.cli", "probe", "worker", "--heartbeat-file", str(beat),
                            "--ping"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "RECONCILERY_REDIS_URL": redis_url})
    assert ready.returncode == 0, ready.stdout
    stop_process(proc)
    wait_for(lambda: _probe("--heartbeat-file", str(beat), "--max-age", "3").returncode == 1, timeout=30,
             interval=1.0, message="the probe fails once the heartbeat stops")
