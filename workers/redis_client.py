"""Redis clients from ``RECONCILERY_REDIS_URL`` (one place, so every component connects the same way)."""

from __future__ import annotations

import redis


def redis_client(url: str) -> redis.Redis:
    """A client of the Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``)."""
    return redis.Redis.from_url(url, health_check_interval=30)
