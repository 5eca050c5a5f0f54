"""``reconcilery probe worker``: the heartbeat file's age decides, one line says why."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from reconcilery.probes import check_heartbeat, heartbeat_file

ROOT = Path(__file__).resolve().parents[3]


def test_heartbeat_age(tmp_path: Path) -> None:
    beat = tmp_path / "hb"
    assert not check_heartbeat(beat, 60).ok
    beat.touch()
    os.utime(beat, (1000.0, 1000.0))
    assert check_heartbeat(beat, 60, now=1059.0).ok
    result = check_heartbeat(beat, 60, now=1061.0)
    assert not result.ok and result.message == f"worker unhealthy: heartbeat {beat} is 61 s old (max 60 s)"


def test_heartbeat_file_setting() -> None:
    assert heartbeat_file({}) == "/tmp/reconcilery-worker.heartbeat"
    assert heartbeat_file({"RECONCILERY_HEARTBEAT_FILE": "/run/hb"}) == "/run/hb"


def _probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reconcilery.cli", "probe", "worker", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


def test_the_cli_exits_0_or_1_with_one_line(tmp_path: Path) -> None:
    beat = tmp_path / "hb"
    missing = _probe("--heartbeat-file", str(beat))
    assert missing.returncode == 1 and missing.stdout.strip().startswith("worker unhealthy: no heartbeat file")
    beat.touch()
    fresh = _probe(env={"RECONCILERY_HEARTBEAT_FILE": str(beat)})
    assert fresh.returncode == 0 and len(fresh.stdout.strip().splitlines()) == 1
    old = time.time() - 120
    os.utime(beat, (old, old))
    assert _probe("--heartbeat-file", str(beat), "--max-age", "60").returncode == 1
    # readiness: a fresh heartbeat but no Redis
    beat.touch()
    down = _probe("--heartbeat-file", str(beat), "--ping", env={"RECONCILERY_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert down.returncode == 1 and down.stdout.startswith("worker not ready: Redis does not answer"), down.stdout
