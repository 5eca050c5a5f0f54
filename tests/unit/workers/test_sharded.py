"""workers/sharded.py without Redis: where a key goes, and what the setting turns on."""

from __future__ import annotations

import zlib
from collections import Counter

import pytest

from workers.controller import Key
from workers.sharded import ShardedWorkQueue, open_workqueue, shard_of, shard_urls
from workers.workqueue import WorkQueue


def test_a_key_s_shard_is_crc32_of_its_encoding_and_the_same_in_every_process() -> None:
    key = Key("local", "kcp-system", "kyma-000001")
    assert shard_of(key, 2) == zlib.crc32(key.encode().encode()) % 2
    assert shard_of(key, 1) == 0


def test_keys_spread_evenly() -> None:
    counts = Counter(shard_of(Key("local", "ns", f"obj-{i}"), 4) for i in range(4000))
    assert set(counts) == {0, 1, 2, 3}
    assert all(900 <= n <= 1100 for n in counts.values())


@pytest.mark.parametrize(("setting", "urls"), [
    ("", []),
    (" , ", []),
    ("redis://a:6379/0", ["redis://a:6379/0"]),
    ("redis://a:6379/0, redis://b:6379/0,", ["redis://a:6379/0", "redis://b:6379/0"]),
])
def test_shard_urls(setting: str, urls: list[str]) -> None:
    assert shard_urls(setting) == urls


def test_without_shard_urls_the_workqueue_is_the_one_redis_one() -> None:
    wq = open_workqueue("redis://127.0.0.1:1/0", "")
    assert type(wq) is WorkQueue
    sharded = open_workqueue("redis://127.0.0.1:1/0", "redis://127.0.0.1:1/0,redis://127.0.0.1:2/0")
    assert isinstance(sharded, ShardedWorkQueue) and len(sharded.shards) == 2
    sharded.close()
    with pytest.raises(ValueError):
        ShardedWorkQueue([])
