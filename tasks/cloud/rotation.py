"""The SKR rotation's rules (pure): when an SKR is visited again, how a failing one backs off, and
what ``SkrStatus`` records of the past connects.

After ``pkg/skr/runtime/looper`` (cyclic sleeve) and ``pkg/skr/runtime`` (SkrStatus saver). The Redis
side (who is active, who is due, notifications) is :mod:`tasks.cloud.sweep`.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

__all__ = ["PAST_CONNECTIONS", "cyclic_threshold", "failure_delay", "past_connections", "revisit_delay",
           "revisit_interval"]

#: SkrStatus keeps this many past connection times.
PAST_CONNECTIONS = 10


def cyclic_threshold(workers: int, min_interval: float, reconcile_timeout: float) -> int:
    """``max(1, workers * min_interval / reconcile_timeout)``: at or above this fleet size a finished
    SKR goes straight back to the tail of the rotation (1 x 60 s / 10 s = 6 by default)."""
    if reconcile_timeout <= 0:
        return 1
    return max(1, int(workers * min_interval / reconcile_timeout))


def revisit_delay(fleet: int, workers: int, min_interval: float, reconcile_timeout: float) -> float:
    """Seconds after a connect ends before the SKR is due again: 0 for a fleet at or above
    :func:`cyclic_threshold`, else ``min_interval`` (``cyclicMinInterval``)."""
    if fleet >= cyclic_threshold(workers, min_interval, reconcile_timeout):
        return 0.0
    return max(0.0, min_interval)


def failure_delay(failures: int, base: float, cap: float) -> float:
    """Backoff of an SKR after ``failures`` consecutive failed connects: ``min(cap, base * 2**(n-1))``."""
    if failures <= 0:
        return 0.0
    return float(min(cap, base * 2 ** min(failures - 1, 62)))


def _parse(ts: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


def past_connections(previous: Sequence[str], now: str) -> tuple[list[str], int]:
    """``previous`` connection times (RFC 3339) plus ``now``, the last :data:`PAST_CONNECTIONS` kept,
    and the average interval between them in whole seconds (0 with fewer than two)."""
    kept = [*(p for p in previous if _parse(p) is not None), now][-PAST_CONNECTIONS:]
    times = [t for t in (_parse(p) for p in kept) if t is not None]
    if len(times) < 2:
        return kept, 0
    span = (times[-1] - times[0]).total_seconds()
    return kept, max(0, int(span / (len(times) - 1)))


def revisit_interval(previous: Sequence[str], now: str) -> float | None:
    """Seconds from the last parseable time of ``previous`` connection times (RFC 3339) to ``now``;
    ``None`` without one (a first connect) or when ``now`` is unreadable. Never negative."""
    current = _parse(now)
    last = next((t for t in (_parse(p) for p in reversed(previous)) if t is not None), None)
    if current is None or last is None:
        return None
    return max(0.0, (current - last).total_seconds())
