"""The workqueue over two Redis servers (workers/sharded.py): keys spread over both, each key held by at
most one taker at a time, and one shard's loss leaves the other's keys as they were."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from reconcilery.localredis import LocalRedis
from tests.fixtures.processes import free_port
from workers.controller import Controller, Key, Registry, Result
from workers.dispatch import Dispatcher
from workers.sharded import ShardedWorkQueue, shard_of
from workers.workqueue import QueueStatus

Q = "sharded"
KEYS = [Key("local", "ns", f"obj-{i}") for i in range(40)]


@pytest.fixture
def servers(redis_server: LocalRedis) -> Iterator[list[LocalRedis]]:
    """Shard 0: the session's Redis (flushed); shard 1: a second redis-server started for this test."""
    redis.Redis.from_url(redis_server.url).flushall()
    second = LocalRedis(free_port()).start()
    try:
        yield [redis_server, second]
    finally:
        second.stop()


@pytest.fixture
def reg() -> Registry:
    reg = Registry()
    reg.register(Controller(name="c", queue=Q, reconcile=lambda k: None))
    return reg


def sharded(servers: list[LocalRedis], reg: Registry) -> ShardedWorkQueue:
    return ShardedWorkQueue([redis.Redis.from_url(s.url) for s in servers], reg)


def test_keys_spread_over_both_shards_and_each_is_held_by_one_taker(servers: list[LocalRedis], reg: Registry) -> None:
    a, b = sharded(servers, reg), sharded(servers, reg)  # two worker processes
    assert a.add_many("c", KEYS) == len(KEYS)
    on_1 = sum(shard_of(k, 2) for k in KEYS)
    assert 0 < on_1 < len(KEYS)
    assert [s.status("c").waiting for s in a.shards] == [len(KEYS) - on_1, on_1]
    assert a.status("c").waiting == len(KEYS)

    first = a.fetch([Q], 25, 30.0).taken + a.fetch([Q], 25, 30.0).taken
    assert sorted(t.key.name for t in first) == sorted(k.name for k in KEYS)
    assert {a.shard(t.key) for t in first} == {0, 1}
    assert b.fetch([Q], 100, 30.0).taken == []  # every key is held by a
    assert b.add_many("c", KEYS) == len(KEYS)  # changed while held: waiting, not ready
    assert b.fetch([Q], 100, 30.0).taken == []
    assert b.renew([(t.controller, t.key, "1") for t in first], 30.0) == [False] * len(KEYS)  # not the holder
    assert a.renew([(t.controller, t.key, t.token) for t in first], 30.0) == [True] * len(KEYS)

    assert all(a.done(t, Result.done()).again for t in first)  # re-queued on its own shard
    second = b.fetch([Q], 100, 30.0).taken
    assert sorted(t.key.name for t in second) == sorted(k.name for k in KEYS)
    tokens = {t.key: int(t.token) for t in first}
    assert all(int(t.token) > tokens[t.key] for t in second)  # fenced: each key's tokens increase
    assert all(a.done(t, Result.done()).lost for t in first)  # a's old tokens record nothing


def test_a_shard_that_loses_its_data_holds_back_only_its_own_keys(servers: list[LocalRedis], reg: Registry) -> None:
    wq = sharded(servers, reg)
    wq.add_many("c", KEYS)
    taken = wq.fetch([Q], 100, 30.0).taken
    held = next(t for t in taken if wq.shard(t.key) == 0)  # held through shard 1's loss
    for t in taken:
        if t is not held:
            wq.done(t, Result.done())
    wq.add_many("c", [t.key for t in taken if t is not held])
    epoch = wq.fetch([Q], 0, 2.0).epoch
    servers[1].kill()  # no AOF: shard 1 comes back empty
    servers[1].start()
    after = wq.fetch([Q], 100, 2.0, known_epoch=epoch)
    assert after.epoch.split("|")[0] == epoch.split("|")[0] and after.epoch != epoch
    assert after.quiet > 0  # shard 1's quiet period (nothing of it is handed out for one lease)
    assert {t.key for t in after.taken} == {k for k in KEYS if shard_of(k, 2) == 0} - {held.key}  # shard 0 goes on
    assert wq.holder("c", held.key) == held.token
    assert wq.done(held, Result.done()).lost is False
    assert wq.shards[1].status("c").waiting == 0  # shard 1's keys are gone (watchers enqueue them again)


def test_dispatchers_on_two_shards_never_run_a_key_twice_at_once(servers: list[LocalRedis]) -> None:
    running: set[Key] = set()
    overlaps: list[Key] = []
    runs: list[Key] = []
    lock = threading.Lock()

    def reconcile(key: Key) -> None:
        with lock:
            if key in running:
                overlaps.append(key)
            running.add(key)
        time.sleep(0.01)
        with lock:
            running.discard(key)
            runs.append(key)

    reg = Registry()
    reg.register(Controller(name="c", queue=Q, reconcile=reconcile))
    queues = [sharded(servers, reg) for _ in range(2)]
    dispatchers = [Dispatcher(wq, [Q], 4, lease_seconds=5.0, default_timeout=5.0, idle_wait=0.5).start()
                   for wq in queues]
    try:
        for _ in range(3):  # every key changed three times while the dispatchers run
            queues[0].add_many("c", KEYS)
            time.sleep(0.05)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (queues[0].status("c").waiting or queues[0].status("c").in_progress):
            time.sleep(0.05)
    finally:
        for d in dispatchers:
            d.stop(timeout=5)
        for wq in queues:
            wq.close()
    assert overlaps == []
    assert set(runs) == set(KEYS) and len(runs) >= len(KEYS)
    assert queues[0].status("c") == QueueStatus("c", Q, 0, 0, 0, 0, 0, 0)
