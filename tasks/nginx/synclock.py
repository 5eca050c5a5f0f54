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

**Expiry, renewal, fencing.** A lock lapses after :data:`LOCK_SECONDS` unless its holder renews it, so
a worker that died holding it delays that upstream by at most that long, never blocks it for good. A
holder renews its locks before a write once :data:`RENEW_SECONDS` passed since the last renewal
(:class:`Lease`; one Redis round trip for a shard's batch of upstreams) and writes nothing more to an
upstream whose lock it cannot prove (:class:`SyncLockLost`): a sync longer than the TTL is extended,
and one whose lock lapsed (its process stopped for longer than the TTL, Redis unreachable) is fenced,
so two syncs never write one upstream at once. The lease is trusted locally only until the time its
last renewal was *sent* plus the TTL minus :data:`MARGIN_SECONDS`. NGINX Plus has no conditional
writes, so the fence is the holder's own check: a process paused between that check and its request
for longer than what is left of the lease could still write late, as with any lease.

**Known servers.** A release may leave the upstream's servers as the sync left them (``id`` and
address of each, :func:`encode_view`) under ``reconcilery:nginx-view:...``, kept at most
:data:`VIEW_SECONDS` after the ``GET`` they descend from. The next acquire, by any process, takes the
view and deletes it in the same script, so a view is only ever handed to the sync right after the one
that wrote it: a sync that died, failed or lost its lock in between leaves none, and the next sync
reads the servers again. With a view, a sync skips ``GET .../servers`` (a Node change: one POST or
DELETE per upstream instead of a GET and a POST); an error answer to a write made from a view makes it
read them after all (:func:`tasks.nginx.controller.sync_upstream`).

**Redis down or slow.** Every operation is one script (atomic). Redis unreachable raises
``redis.RedisError``: the reconcile fails and is retried with backoff, and a lock it took stays until
its TTL. A command that gets no answer within :data:`SOCKET_TIMEOUT` fails like a dropped connection.
The client retries such a command (:func:`workers.redis_client.redis_client`), and every script is safe
to run twice: an acquire retried after its script ran finds the lock holding its own token and takes
it (before, it saw its own lock as another's: the upstream's key requeued itself for the TTL), a
retried release or renewal finds the lock released or renewed. A
release of a lock that lapsed and was taken by another sync leaves it alone (compare-and-delete) and
stamps nothing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import redis

from fencing import FenceError
from tasks.nginx.translate import UpstreamRef
from workers.redis_client import redis_client
from workers.settings import load

#: Seconds a lock is kept unless its holder renews it (a worker killed mid-sync delays the upstream this long).
LOCK_SECONDS = 30.0
#: Seconds after a renewal (or the acquire) from which a holder renews its locks before its next write.
RENEW_SECONDS = 10.0
#: Seconds the holder's own view of its lease ends before the TTL it last set (clock rates, the round trip).
MARGIN_SECONDS = 2.0
#: Seconds the stamp of the last sync is kept (far longer than any sync's cluster read is used).
STAMP_SECONDS = 600.0
#: Seconds a view of an upstream's servers is used after the ``GET`` it descends from: the edge reads
#: every upstream at least this often while it changes, and a resync (every 300 s) reads it then.
VIEW_SECONDS = 60.0
#: Servers a view holds at most (a larger upstream is read every time).
VIEW_MAX_SERVERS = 10_000
#: Seconds one Redis command may take before it fails (and is retried by the client): a Redis that
#: accepts connections but does not answer never holds a sync for ever.
SOCKET_TIMEOUT = 5.0
PREFIX = "reconcilery:nginx-sync:"
STAMP_PREFIX = "reconcilery:nginx-synced:"
VIEW_PREFIX = "reconcilery:nginx-view:"

# KEYS: lock, stamp, view triples; ARGV: token, lock ms -> per triple: stamp of the last sync ("0": none) and
# the view (taken: deleted), or "" and "" when another holds the lock. A lock holding this token already
# (the script ran, its answer was lost and the client retried) is taken.
_ACQUIRE = """
local out = {}
for i = 1, #KEYS / 3 do
  local lock = KEYS[3 * i - 2]
  if redis.call('SET', lock, ARGV[1], 'NX', 'PX', ARGV[2]) or redis.call('GET', lock) == ARGV[1] then
    out[2 * i - 1] = redis.call('GET', KEYS[3 * i - 1]) or '0'
    out[2 * i] = redis.call('GET', KEYS[3 * i]) or ''
    redis.call('DEL', KEYS[3 * i])
  else
    out[2 * i - 1] = ''
    out[2 * i] = ''
  end
end
return out
"""
# KEYS: lock, stamp, view triples; ARGV: token, stamp ms, view ms, then per triple: the Redis time the
# view was verified and the view ("": none; kept view ms after that time) -> per triple 1 when released,
# 0 when the lock was no longer this token's (nothing written)
_RELEASE = """
local t = redis.call('TIME')
local now = t[1] .. '.' .. string.format('%06d', t[2])
local seconds = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {}
for i = 1, #KEYS / 3 do
  out[i] = 0
  if redis.call('GET', KEYS[3 * i - 2]) == ARGV[1] then
    redis.call('SET', KEYS[3 * i - 1], now, 'PX', ARGV[2])
    local view = ARGV[3 + 2 * i]
    local ms = math.floor((tonumber(ARGV[2 + 2 * i]) - seconds) * 1000 + tonumber(ARGV[3]))
    if view ~= '' and ms > 0 then
      redis.call('SET', KEYS[3 * i], view, 'PX', ms)
    end
    redis.call('DEL', KEYS[3 * i - 2])
    out[i] = 1
  end
end
return out
"""
# KEYS: locks; ARGV: token, lock ms -> per lock 1 when still this token's (its TTL set again), else 0
_RENEW = """
local out = {}
for i = 1, #KEYS do
  out[i] = 0
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    out[i] = 1
  end
end
return out
"""


class SyncLockLost(FenceError):
    """The sync's lock of its upstream lapsed or was taken by another sync: it must not write (the
    reconcile fails and is retried with backoff)."""


class View(NamedTuple):
    """An upstream's servers as the last sync left them: ``servers`` ``{id: address}``, ``verified`` the
    Redis time (seconds) before the ``GET .../servers`` they descend from."""

    verified: float
    servers: Mapping[int, str]


def encode_view(view: View) -> str:
    """``"<verified>\\n<id> <id> ...\\n<address> <address> ..."`` (addresses hold no whitespace:
    ``host:port``, ``[v6]:port``); three lines, so that decoding is two splits."""
    return f"{view.verified:.6f}\n{' '.join(map(str, view.servers))}\n{' '.join(view.servers.values())}"


def decode_view(text: str) -> View | None:
    """The :class:`View` of :func:`encode_view`'s text; ``None`` when it is empty or does not parse."""
    head, ids, addresses = [*text.split("\n"), "", "", ""][:3] if text else ("", "", "")
    try:
        idents, servers = ids.split(), addresses.split()
        if not head or len(idents) != len(servers):
            return None
        return View(float(head), dict(zip(map(int, idents), servers, strict=True)))
    except ValueError:
        return None


class Held(NamedTuple):
    """An upstream's lock as :meth:`SyncLocks.acquire_many` took it: its ``token``, the ``stamp`` of the
    upstream's last sync (Redis time, ``0.0``: none known) and the ``view`` that sync left (``None``)."""

    token: str
    stamp: float
    view: View | None = None


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
                self._client = redis_client(load().redis_url, socket_timeout=SOCKET_TIMEOUT)
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
            pair = name[len(PREFIX):]
            keys += [name, STAMP_PREFIX + pair, VIEW_PREFIX + pair]
        return keys

    def acquire(self, host: str, upstream: UpstreamRef) -> tuple[str, float] | None:
        """Take the lock of ``upstream`` on ``host``: ``(token, stamp of the last sync)`` (``0.0``: none
        known), or ``None`` when another sync holds it. The view the last sync left is dropped."""
        held = self.acquire_many(host, [upstream]).get(upstream)
        return None if held is None else (held.token, held.stamp)

    def acquire_many(self, host: str, upstreams: Sequence[UpstreamRef], token: str | None = None
                     ) -> dict[UpstreamRef, Held]:
        """Take the locks of ``upstreams`` on ``host`` that are free, in one round trip: ``{upstream:
        Held}``; the held ones are left out. A shard syncs its upstreams in batches. ``token``: default a
        fresh random one (a lock already holding ``token`` is taken again, as a retried call does)."""
        if not upstreams:
            return {}
        token = token or os.urandom(12).hex()
        got = self._redis().eval(_ACQUIRE, 3 * len(upstreams), *self._keys(host, upstreams), token,
                                 int(self.seconds * 1000))
        out = {}
        for i, upstream in enumerate(upstreams):
            stamp, view = (v.decode() if isinstance(v, bytes) else str(v) for v in got[2 * i:2 * i + 2])
            if stamp:
                out[upstream] = Held(token, float(stamp), decode_view(view))
        return out

    def release(self, host: str, upstream: UpstreamRef, token: str, view: View | None = None) -> bool:
        """Free the lock if ``token`` still holds it (a lapsed lock taken by another sync is left alone),
        stamp the upstream as synced now and leave ``view`` for the next sync; whether it was released."""
        return bool(self.release_many(host, [upstream], token, {upstream: view} if view else None))

    def release_many(self, host: str, upstreams: Sequence[UpstreamRef], token: str,
                     views: Mapping[UpstreamRef, View] | None = None) -> set[UpstreamRef]:
        """:meth:`release` of ``upstreams`` taken with one :meth:`acquire_many` (``token``), in one round
        trip; ``views``: what each sync left, kept until :data:`VIEW_SECONDS` after its ``verified``
        time (Redis' clock, :meth:`now`). Returns the upstreams released (the rest had lapsed)."""
        if not upstreams:
            return set()
        args: list[str | int] = []
        for upstream in upstreams:
            view = (views or {}).get(upstream)
            if view is None or len(view.servers) > VIEW_MAX_SERVERS:
                args += [0, ""]
            else:
                args += [f"{view.verified:.6f}", encode_view(view)]
        got = self._redis().eval(_RELEASE, 3 * len(upstreams), *self._keys(host, upstreams), token,
                                 int(STAMP_SECONDS * 1000), int(VIEW_SECONDS * 1000), *args)
        return {upstream for upstream, ok in zip(upstreams, got, strict=True) if int(ok)}

    def renew_many(self, host: str, upstreams: Sequence[UpstreamRef], token: str) -> set[UpstreamRef]:
        """Set the TTL of the locks ``token`` still holds back to :attr:`seconds`, in one round trip;
        returns those (the others lapsed, maybe taken by another sync)."""
        if not upstreams:
            return set()
        got = self._redis().eval(_RENEW, len(upstreams), *(self.name(host, u) for u in upstreams), token,
                                 int(self.seconds * 1000))
        return {upstream for upstream, ok in zip(upstreams, got, strict=True) if int(ok)}


class Lease:
    """The locks of one batch of upstreams of ``host`` taken with ``token`` (:meth:`SyncLocks.acquire_many`),
    as their holder sees them: :meth:`check` before every write renews them all once
    :data:`RENEW_SECONDS` passed since ``taken`` (a ``time.monotonic()`` value before the acquire was
    sent) and raises :class:`SyncLockLost` for an upstream whose lock is no longer provably this
    holder's. Thread-confined (one sync's thread).
    """

    def __init__(self, locks: SyncLocks, host: str, upstreams: Iterable[UpstreamRef], token: str,
                 taken: float, renew: float = RENEW_SECONDS, margin: float = MARGIN_SECONDS) -> None:
        self.locks, self.host, self.token = locks, host, token
        self.held = set(upstreams)
        self.renew, self.margin = renew, margin
        self._renewed = taken
        self.renewals = 0

    def check(self, upstream: UpstreamRef) -> None:
        """Raise :class:`SyncLockLost` unless the lock of ``upstream`` is this holder's (renewing the
        batch's locks when due). Raises ``redis.RedisError`` when a due renewal cannot reach Redis."""
        now = time.monotonic()
        if upstream in self.held and now - self._renewed >= self.renew:
            if now - self._renewed >= self.locks.seconds - self.margin:
                self.held.clear()  # lapsed before it could be renewed: another may hold it now
            else:
                self.held = self.locks.renew_many(self.host, sorted(self.held, key=str), self.token)
                self._renewed = now
                self.renewals += 1
        if upstream not in self.held:
            raise SyncLockLost(f"sync lock of {upstream} on {self.host} lapsed or was taken: not written")


#: The process's locks.
SYNC_LOCKS = SyncLocks()
