"""The sync lock's failure cases against a real Redis (tasks/nginx/synclock.py): a lock that lapsed and
was taken by another, a retried acquire, renewal and fencing, the known servers handed to exactly the
next sync, and Redis unreachable."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tasks.nginx.synclock import VIEW_SECONDS, Lease, SyncLockLost, SyncLocks, View, decode_view, encode_view
from tasks.nginx.translate import UpstreamRef
from tests.fixtures.processes import free_port

HOST = "http://10.1.1.4:9000/api"
WEB, DB = UpstreamRef("http", "web"), UpstreamRef("stream", "db")


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def locks(client: redis.Redis) -> SyncLocks:
    return SyncLocks(client)


def test_a_release_of_a_lock_that_lapsed_and_was_taken_leaves_it_and_stamps_nothing(
        locks: SyncLocks, client: redis.Redis) -> None:
    first = locks.acquire(HOST, WEB)
    assert first is not None and first[1] == 0.0 and locks.acquire(HOST, WEB) is None
    client.delete(locks.name(HOST, WEB))  # lapsed (its TTL passed)
    second = locks.acquire(HOST, WEB)
    assert second is not None
    assert not locks.release(HOST, WEB, first[0], View(locks.now(), {0: "10.0.0.1:80"}))
    assert client.get(locks.name(HOST, WEB)) == second[0].encode()  # still the second's
    assert locks.release(HOST, WEB, second[0])
    third = locks.acquire(HOST, WEB)
    assert third is not None and third[1] > 0.0  # the second's release stamped it; the first left no view
    assert locks.acquire_many(HOST, [WEB], third[0])[WEB].view is None


def test_an_acquire_retried_after_its_script_ran_takes_its_own_lock(locks: SyncLocks) -> None:
    assert set(locks.acquire_many(HOST, [WEB, DB], "t1")) == {WEB, DB}
    assert set(locks.acquire_many(HOST, [WEB, DB], "t1")) == {WEB, DB}  # the answer was lost: retried
    assert locks.acquire_many(HOST, [WEB, DB], "t2") == {}
    assert locks.release_many(HOST, [WEB, DB], "t1") == {WEB, DB}


def test_the_servers_a_sync_left_go_to_the_next_acquire_only(locks: SyncLocks, client: redis.Redis) -> None:
    view = View(locks.now(), {3: "10.0.1.11:30080", 7: "[fd00::1]:30080"})
    assert decode_view(encode_view(view)) == view and decode_view("x\n1 a") is None and decode_view("") is None
    token = locks.acquire_many(HOST, [WEB, DB])[WEB].token
    assert locks.release_many(HOST, [WEB, DB], token, {WEB: view}) == {WEB, DB}
    assert 0 < client.pttl("reconcilery:nginx-view:" + locks.name(HOST, WEB).split(":", 2)[2]) <= VIEW_SECONDS * 1000
    other = SyncLocks(redis.Redis(connection_pool=client.connection_pool))  # another worker process
    held = other.acquire_many(HOST, [WEB, DB])
    assert held[WEB].view == view and held[DB].view is None
    other.release_many(HOST, [WEB, DB], held[WEB].token)  # a sync that left nothing known (it failed)
    assert locks.acquire_many(HOST, [WEB])[WEB].view is None  # taken once: the next sync reads the servers


def test_a_view_older_than_its_lifetime_is_not_kept(locks: SyncLocks) -> None:
    token = locks.acquire_many(HOST, [WEB])[WEB].token
    locks.release_many(HOST, [WEB], token, {WEB: View(locks.now() - VIEW_SECONDS - 1, {0: "10.0.0.1:80"})})
    assert locks.acquire_many(HOST, [WEB])[WEB].view is None


def test_a_lease_renews_its_locks_and_fences_the_writes_of_one_it_lost(locks: SyncLocks, client: redis.Redis) -> None:
    taken = time.monotonic()
    token = locks.acquire_many(HOST, [WEB, DB])[WEB].token
    lease = Lease(locks, HOST, [WEB, DB], token, taken, renew=0.0)  # renew before every write
    client.pexpire(locks.name(HOST, WEB), 1000)
    lease.check(WEB)
    assert client.pttl(locks.name(HOST, WEB)) > 1000 and lease.renewals == 1  # extended to the lock's TTL
    client.set(locks.name(HOST, DB), "another sync's token")  # DB's lapsed and was taken
    lease.check(WEB)
    with pytest.raises(SyncLockLost):
        lease.check(DB)
    # a lease its holder could not renew in time (a process stopped longer than the TTL) is lost locally
    stale = Lease(locks, HOST, [WEB], token, time.monotonic() - locks.seconds, renew=0.0)
    with pytest.raises(SyncLockLost):
        stale.check(WEB)
    assert client.get(locks.name(HOST, WEB)) == token.encode()  # nothing was asked of Redis


def test_redis_unreachable_is_an_error_of_the_sync(locks: SyncLocks) -> None:
    down = SyncLocks(redis.Redis(port=free_port(), socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0)))
    with pytest.raises(redis.ConnectionError):
        down.acquire_many(HOST, [WEB])
    with pytest.raises(redis.ConnectionError):
        down.now()
