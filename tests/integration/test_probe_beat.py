"""``reconcilery probe beat`` on a real Redis: healthy only while a scheduler holds RedBeat's lock."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import redis

from reconcilery.probes import REDBEAT_LOCK_KEY
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration


def _probe(redis_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reconcilery.cli", "probe", "beat"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "RECONCILERY_REDIS_URL": redis_url})


def test_probe_beat_follows_the_redbeat_lock(redis_url: str, redis_client: redis.Redis) -> None:
    idle = _probe(redis_url)
    assert idle.returncode == 1 and idle.stdout.strip() == f"beat unhealthy: no scheduler holds {REDBEAT_LOCK_KEY}"
    redis_client.set(REDBEAT_LOCK_KEY, "token", px=30000)
    assert _probe(redis_url).returncode == 0
