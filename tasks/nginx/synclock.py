"""One sync at a time per (NGINX Plus host, upstream), across keys and worker processes (I/O: Redis).

The workqueue keeps one *key* exclusive. A Node change enqueues a host's shard keys
(:func:`tasks.nginx.controller.host_keys`) while a Service change enqueues the upstream's own key, so two
keys cover one upstream; two syncs of it at once would both add a missing server and leave it twice on
NGINX Plus. Every sync of an upstream therefore holds its lock here: ``SET NX PX`` of
``reconcilery:nginx-sync:<host>|<protocol:upstream>`` with a random token, released by a compare-and-delete.

Holding the lock is not enough: a sync that read the cluster *before* another one synced the upstream
would put older servers back. So the release stamps the upstream with Redis' clock
(``reconcilery:nginx-synced:...``, kept :data:`STAMP_SECONDS`), :meth:`SyncLocks.acquire` returns that stamp,
and a sync whose cluster read may be older than it (it took :meth:`SyncLocks.now` before reading) reads
again before it writes.

What a sync does when the lock is held (:func:`tasks.nginx.controller.reconcile`): the upstream's own key
requeues itself shortly after (the sync holding the lock may have read the cluster before the change that
enqueued it); a shard key retries the upstreams it could not lock once the rest are done, then requeues.
The lock lapses after :data:`LOCK_SECONDS` (longer than any sync: the client's timeouts are 3 + 10 s per
request), so a worker that died holding it delays that upstream, never blocks it for good.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence

import redis

from tasks.nginx.translate import UpstreamRef
from workers.redis_client import redis_client
from workers.settings import load

#: Seconds a lock is kept when its holder never releases it (a worker killed mid-sync).
LOCK_SECONDS = 120.0
#: Seconds the stamp of the last sync is kept (far longer than any sync's cluster read is used).
STAMP_SECONDS = 600.0
PREFIX = "reconcilery:nginx-sync:"
STAMP_PREFIX = "reconcilery:nginx-synced:"

# KEYS: lock, stamp pairs; ARGV: token, lock ms -> per pair "" when held, else the stamp of the last
# sync ("0": none)
_ACQUIRE = """
local out = {}
for i = 1, #KEYS / 2 do
  if redis.call('SET', KEYS[2 * i - 1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    out[i] = redis.call('GET', KEYS[2 * i]) or '0'
  else
    out[i] = ''
  end
end
return out
"""
# KEYS: lock, stamp pairs; ARGV: token, stamp ms
_RELEASE = """
local t = redis.call('TIME')
local now = t[1] .. '.' .. string.format('%06d', t[2])
for i = 1, #KEYS / 2 do
  if redis.call('GET', KEYS[2 * i - 1]) == ARGV[1] then
    redis.call('SET', KEYS[2 * i], now, 'PX', ARGV[2])
    redis.call('DEL', KEYS[2 * i - 1])
  end
end
return 0
"""


class SyncLocks:
    """The locks of one Redis (``client``; default: the workers' ``RECONCILERY_REDIS_URL``, on first use).

    ``acquire`` returns a token (``None`` when another sync holds the lock), ``release`` frees it only if
    the token still holds it. Raises ``redis.RedisError`` when Redis cannot be reached (the reconcile
    fails and is retried, as when the workqueue itself cannot reach Redis).
    """

    def __init__(self, client: redis.Redis | None = None, seconds: float = LOCK_SECONDS) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.seconds = seconds

    def _redis(self) -> redis.Redis:
        with self._lock:
            if self._client is None:
                self._client = redis_client(load().redis_url)
            return self._client

    @staticmethod
    def name(host: str, upstream: UpstreamRef) -> str:
        """The Redis key of ``upstream`` on ``host``."""
        return f"{PREFIX}{host}|{upstream}"

    def now(self) -> float:
        """Redis' clock (seconds): taken before a cluster read, compared with :meth:`acquire`'s stamp."""
        seconds, micros = self._redis().time()
        return float(seconds) + micros / 1e6

    def _keys(self, host: str, upstreams: Iterable[UpstreamRef]) -> list[str]:
        keys = []
        for upstream in upstreams:
            name = self.name(host, upstream)
            keys += [name, STAMP_PREFIX + name[len(PREFIX):]]
        return keys

    def acquire(self, host: str, upstream: UpstreamRef) -> tuple[str, float] | None:
        """Take the lock of ``upstream`` on ``host``: ``(token, stamp of the last sync)`` (``0.0``: none
        known), or ``None`` when another sync holds it."""
        return self.acquire_many(host, [upstream]).get(upstream)

    def acquire_many(self, host: str, upstreams: Sequence[UpstreamRef]) -> dict[UpstreamRef, tuple[str, float]]:
        """Take the locks of ``upstreams`` on ``host`` that are free, in one round trip: ``{upstream: (token,
        stamp of its last sync)}``; the held ones are left out. A shard syncs its upstreams in batches."""
        if not upstreams:
            return {}
        token = os.urandom(12).hex()
        got = self._redis().eval(_ACQUIRE, 2 * len(upstreams), *self._keys(host, upstreams), token,
                                 int(self.seconds * 1000))
        out = {}
        for upstream, stamp in zip(upstreams, got, strict=True):
            text = stamp.decode() if isinstance(stamp, bytes) else str(stamp)
            if text:
                out[upstream] = (token, float(text))
        return out

    def release(self, host: str, upstream: UpstreamRef, token: str) -> None:
        """Free the lock if ``token`` still holds it (a lapsed lock taken by another sync is left alone)
        and stamp the upstream as synced now."""
        self.release_many(host, [upstream], token)

    def release_many(self, host: str, upstreams: Sequence[UpstreamRef], token: str) -> None:
        """:meth:`release` of ``upstreams`` taken with one :meth:`acquire_many` (``token``), in one round trip."""
        if upstreams:
            self._redis().eval(_RELEASE, 2 * len(upstreams), *self._keys(host, upstreams), token,
                               int(STAMP_SECONDS * 1000))


#: The process's locks.
SYNC_LOCKS = SyncLocks()
