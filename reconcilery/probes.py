"""Exec probes of the deployment: ``reconcilery probe worker`` (liveness and readiness of a worker).

A worker touches its heartbeat file (``RECONCILERY_HEARTBEAT_FILE``, default
:data:`DEFAULT_HEARTBEAT_FILE`) at least every 10 s while its Redis connection works and its
dispatcher loop runs; the probe fails when the file is missing or older than ``max_age`` seconds,
and (``--ping``) when Redis does not answer PING.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from workers.redis_client import redis_client
from workers.settings import EngineSettings, current

DEFAULT_HEARTBEAT_FILE = "/tmp/reconcilery-worker.heartbeat"


@dataclass(frozen=True)
class ProbeResult:
    """``ok`` and the one line the probe prints (Kubernetes shows it in the Pod's events)."""

    ok: bool
    message: str


def heartbeat_file(environ: dict[str, str] | None = None) -> str:
    """``RECONCILERY_HEARTBEAT_FILE`` or :data:`DEFAULT_HEARTBEAT_FILE` (from ``environ`` or this
    process's settings, :mod:`workers.settings`)."""
    return (current() if environ is None else EngineSettings.load(environ)).heartbeat_file or DEFAULT_HEARTBEAT_FILE


def check_heartbeat(path: str | os.PathLike[str], max_age: float, now: float | None = None) -> ProbeResult:
    """Whether ``path`` was modified within ``max_age`` seconds of ``now`` (default: the clock)."""
    try:
        mtime = Path(path).stat().st_mtime
    except FileNotFoundError:
        return ProbeResult(False, f"worker unhealthy: no heartbeat file {path} (not started, or no Redis yet)")
    age = (time.time() if now is None else now) - mtime
    if age > max_age:
        return ProbeResult(False, f"worker unhealthy: heartbeat {path} is {age:.0f} s old (max {max_age:.0f} s)")
    return ProbeResult(True, f"worker ok: heartbeat {age:.1f} s old")


def ping_redis(url: str, timeout: float = 2.0) -> ProbeResult:
    """PING the Redis of ``url`` (plain or Sentinel) within ``timeout`` seconds."""
    try:
        client = redis_client(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=None)
        client.ping()
    except Exception as exc:
        return ProbeResult(False, f"worker not ready: Redis does not answer: {exc}")
    return ProbeResult(True, "redis ok")


#: RedBeat's lock (``redbeat_key_prefix`` + ``:lock``): held, and renewed, by the active scheduler.
REDBEAT_LOCK_KEY = "redbeat::lock"


def check_beat_lock(url: str, timeout: float = 2.0) -> ProbeResult:
    """Whether an active beat holds RedBeat's lock in the Redis of ``url``."""
    try:
        held = redis_client(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=None).exists(
            REDBEAT_LOCK_KEY)
    except Exception as exc:
        return ProbeResult(False, f"beat not ready: Redis does not answer: {exc}")
    if not held:
        return ProbeResult(False, f"beat unhealthy: no scheduler holds {REDBEAT_LOCK_KEY}")
    return ProbeResult(True, f"beat ok: {REDBEAT_LOCK_KEY} is held")


__all__ = ["DEFAULT_HEARTBEAT_FILE", "REDBEAT_LOCK_KEY", "ProbeResult", "check_beat_lock", "check_heartbeat",
           "heartbeat_file", "ping_redis"]
