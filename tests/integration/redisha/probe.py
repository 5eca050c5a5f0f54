"""A controller that records every reconcile in a separate "witness" Redis (``PROBE_WITNESS_URL``),
so the record survives whatever happens to the workqueue's Redis. Loaded via RECONCILERY_DOMAINS."""

from __future__ import annotations

import os

import redis

from workers.controller import Backoff, Controller, Key, Result, registry

_witness = redis.Redis.from_url(os.environ.get("PROBE_WITNESS_URL", "redis://127.0.0.1:6379/15"))


def reconcile(key: Key) -> Result:
    _witness.sadd("reconciled", key.name)
    return Result.done()


PROBE = registry.register(Controller(name="failover-probe", queue="apigateway", reconcile=reconcile,
                                     backoff=Backoff(base=0.1, cap=1.0)))
