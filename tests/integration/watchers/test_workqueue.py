"""The watch engine feeding the real Redis workqueue, and enqueue failures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from informers.store import Stores
from kube import Kube, resources
from tests.fixtures.processes import wait_for
from watchers import WatchManager, WatchRegistration
from watchers.engine import WatchEvent
from workers.controller import Controller, Key, Registry
from workers.workqueue import WorkQueue

pytestmark = pytest.mark.integration

FAST: dict[str, Any] = {"watch_timeout": (5.0, 10.0), "backoff_base": 0.05, "backoff_cap": 0.2}


def map_to(controller: str) -> Any:
    def map_event(event: WatchEvent, _stores: Stores) -> Iterator[tuple[str, Key]]:
        meta = event.object["metadata"]
        yield controller, Key(event.cluster, meta["namespace"], meta["name"])
    return map_event


def test_keys_reach_the_redis_workqueue_once(kube: Kube, unique_ns: str, redis_url: str) -> None:
    controllers = Registry()
    controllers.register(Controller("cm", "nginx", lambda key: None))
    wq = WorkQueue(redis.Redis.from_url(redis_url), controllers)
    manager = WatchManager([WatchRegistration("wq-cm", resources.CONFIGMAP, unique_ns, None, map_to("cm"))],
                           wq.add, kube=kube, enqueue_many=wq.add_batch, **FAST).start()
    try:
        assert manager.wait_ready(10)
        kube.create(resources.CONFIGMAP, {"metadata": {"name": "a", "namespace": unique_ns}})
        for i in range(5):  # changes before a worker takes the key: one entry to take
            kube.patch(resources.CONFIGMAP, "a", {"data": {"i": str(i)}}, unique_ns)
        wait_for(lambda: wq.status("cm").waiting == 1, message="one waiting key")
        time.sleep(0.3)
        taken = wq.fetch(["nginx"], 10, 10.0).taken
        assert [(t.controller, t.key.ref) for t in taken] == [("cm", f"{unique_ns}/a")]
    finally:
        manager.stop()


def test_a_redis_that_lost_its_state_gets_every_cached_key_again(kube: Kube, unique_ns: str,
                                                                  redis_url: str) -> None:
    from workers.epoch import RedisEpoch

    controllers = Registry()
    controllers.register(Controller("cm", "nginx", lambda key: None))
    client = redis.Redis.from_url(redis_url)
    wq = WorkQueue(client, controllers)
    for i in range(3):
        kube.create(resources.CONFIGMAP, {"metadata": {"name": f"c{i}", "namespace": unique_ns}})
    manager = WatchManager([WatchRegistration("wq-cm", resources.CONFIGMAP, unique_ns, None, map_to("cm"))],
                           wq.add, kube=kube, enqueue_many=wq.add_batch, **FAST).start()
    epoch = RedisEpoch(client)
    try:
        assert manager.wait_ready(10)
        wait_for(lambda: wq.status("cm").waiting == 3, message="three waiting keys")
        assert epoch.check() is False  # the baseline
        client.flushall()  # Redis came back empty
        assert epoch.check() is True
        assert manager.resync_all() == 3
        assert wq.status("cm").waiting == 3 and epoch.check() is False
    finally:
        manager.stop()


def test_enqueue_failures_are_retried_and_bad_controllers_dropped(kube: Kube, unique_ns: str) -> None:
    flaky: dict[str, Any] = {"fail": 2, "calls": 0, "got": []}

    def enqueue(controller: str, key: Key) -> None:
        flaky["calls"] += 1
        if controller == "unknown":
            raise KeyError("unknown controller 'unknown'")
        if flaky["fail"] > 0:
            flaky["fail"] -= 1
            raise ConnectionError("redis down")
        flaky["got"].append((controller, key.ref))

    def map_event(event: WatchEvent, _stores: Stores) -> Iterator[tuple[str, Key]]:
        meta = event.object["metadata"]
        key = Key(event.cluster, meta["namespace"], meta["name"])
        yield "unknown", key
        yield "cm", key

    manager = WatchManager([WatchRegistration("flaky-cm", resources.CONFIGMAP, unique_ns, None, map_event)],
                           enqueue, kube=kube, **FAST).start()
    try:
        kube.create(resources.CONFIGMAP, {"metadata": {"name": "a", "namespace": unique_ns}})
        kube.create(resources.CONFIGMAP, {"metadata": {"name": "b", "namespace": unique_ns}})
        wait_for(lambda: len(flaky["got"]) == 2, message="both keys after retries")
        assert flaky["got"] == [("cm", f"{unique_ns}/a"), ("cm", f"{unique_ns}/b")]
        assert flaky["calls"] == 2 + 2 + 2  # 2 refused (unknown), 2 retried failures, 2 successes
    finally:
        manager.stop()
