"""Domain module for bench/workqueue.py: a no-op controller and a bare Celery no-op task.

Both increment the same kind of Redis counter, so their rates compare the workqueue's cost only.
"""

from __future__ import annotations

import os

import redis

from workers.app import app
from workers.controller import Controller, Key, registry

_redis = redis.Redis.from_url(os.environ["RECONCILERY_REDIS_URL"])


def _noop(key: Key) -> None:
    _redis.incr("bench:reconciled")


registry.register(Controller(name="bench-noop", queue="apigateway", reconcile=_noop))


@app.task(name="bench.noop", ignore_result=True, acks_late=True)
def noop() -> None:
    """A bare Celery task doing the same Redis increment."""
    _redis.incr("bench:bare")
