"""Kubernetes timestamps (``metav1.Time``): the one ``now_rfc3339`` of the house."""

from __future__ import annotations

import datetime as dt


def now_rfc3339(now: dt.datetime | None = None) -> str:
    """``now`` (default: the current time) in UTC at seconds precision, as Kubernetes writes
    ``metav1.Time``: ``2026-01-02T03:04:05Z``. A naive ``now`` is taken as local time."""
    moment = now or dt.datetime.now(dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["now_rfc3339"]
