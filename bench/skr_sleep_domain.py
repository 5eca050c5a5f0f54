"""Domain module for ``bench/skr_sweep.py --mode sleep``: the real sweep and rotation, and a connect that
only sleeps the injected connect time (no API work), so the rotation's and the workqueue's own cost show.

Each connect's end is pushed to the Redis list ``bench:ends`` as ``<redis time>:<kyma>``.
"""

from __future__ import annotations

import os
import time

import redis

from tasks.cloud import controller, settings, sweep
from workers.controller import Backoff, Controller, Key, Result, registry

_redis = redis.Redis.from_url(os.environ["RECONCILERY_REDIS_URL"])


def _connect(key: Key) -> Result:
    s = settings.current()
    rotation = sweep.rotation(s)
    if not rotation.is_active(key.name):
        return Result.done()
    time.sleep(s.connect_delay)
    rotation.finish(key.name, True)
    secs, micros = _redis.time()
    _redis.rpush("bench:ends", f"{secs + micros / 1e6}:{key.name}")
    return Result.done()


registry.register(Controller(sweep.CONNECT, controller.SKR_QUEUE, _connect, backoff=Backoff(1.0, 300.0),
                             timeout=600.0))
