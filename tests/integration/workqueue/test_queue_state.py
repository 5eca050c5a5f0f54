"""The workqueue's decisions against real Redis (no worker): what is published, held, delayed."""

from __future__ import annotations

import time

import pytest
import redis

from workers.controller import Backoff, Controller, Key, Registry, Result
from workers.settings import PRIORITY_FRESH, PRIORITY_RESYNC
from workers.workqueue import WorkQueue

K = Key("local", "default", "a")


@pytest.fixture
def published() -> list[tuple[str, Key, int]]:
    return []


@pytest.fixture
def wq(redis_url: str, published: list[tuple[str, Key, int]]) -> WorkQueue:
    reg = Registry()
    reg.register(Controller("c", "apigateway", lambda k: None, backoff=Backoff(base=0.5, cap=2.0)))
    reg.register(Controller("jitter", "nginx", lambda k: None, sync_delay=(0.25, 0.75)))
    return WorkQueue(redis.Redis.from_url(redis_url), lambda c, k, p: published.append((c.name, k, p)), reg)


def test_duplicate_adds_publish_once(wq: WorkQueue, published: list) -> None:
    assert wq.add("c", K) is True
    assert [wq.add("c", K) for _ in range(50)] == [False] * 50
    assert published == [("c", K, PRIORITY_FRESH)]
    assert wq.status("c").waiting == 1


def test_start_takes_a_waiting_key_once(wq: WorkQueue) -> None:
    wq.add("c", K)
    assert wq.start("c", K, "t1", 10).status == "ok"
    assert wq.start("c", K, "t2", 10).status == "busy"  # a second message while t1 runs
    s = wq.status("c")
    assert (s.waiting, s.in_progress) == (0, 1)


def test_a_duplicate_message_for_a_key_nobody_waits_for_is_stale(wq: WorkQueue) -> None:
    assert wq.start("c", K, "t1", 10).status == "stale"


def test_add_during_processing_publishes_again_when_done(wq: WorkQueue, published: list) -> None:
    wq.add("c", K)
    wq.start("c", K, "t1", 10)
    assert wq.add("c", K) is False  # no message while it is running...
    assert len(published) == 1
    finish = wq.done("c", K, "t1", Result.done())
    assert finish.again is True  # ...but one right after
    assert len(published) == 2
    assert wq.start("c", K, "t2", 10).status == "ok"


def test_earliest_requeue_wins(wq: WorkQueue) -> None:
    wq.add_after("c", K, 50)
    wq.add_after("c", K, 5)
    wq.add_after("c", K, 30)
    due = wq.due_in("c", K)
    assert due is not None and 4 < due <= 5


def test_requeue_after_result_schedules_and_pump_publishes_when_due(wq: WorkQueue, published: list) -> None:
    wq.add("c", K)
    wq.start("c", K, "t1", 10)
    wq.done("c", K, "t1", Result.requeue(0.3))
    published.clear()
    assert wq.pump("c")[0] == 0
    time.sleep(0.35)
    assert wq.pump("c")[0] == 1
    assert published == [("c", K, PRIORITY_FRESH)]
    assert wq.due_in("c", K) is None


def test_failures_back_off_exponentially_and_success_forgets(wq: WorkQueue) -> None:
    delays = []
    for i in range(4):
        wq.add("c", K)
        assert wq.start("c", K, f"t{i}", 10).status == "ok"
        finish = wq.done("c", K, f"t{i}", Result.error("boom"))
        delays.append(finish.delay)
        assert wq.failures("c", K) == i + 1
    assert delays == [0.5, 1.0, 2.0, 2.0]  # base 0.5, capped at 2
    wq.add("c", K)
    wq.start("c", K, "ok", 10)
    wq.done("c", K, "ok", Result.done())
    assert wq.failures("c", K) == 0
    assert wq.status("c").failing == 0


def test_terminal_error_is_not_retried(wq: WorkQueue) -> None:
    wq.add("c", K)
    wq.start("c", K, "t", 10)
    finish = wq.done("c", K, "t", Result.terminal("bad input"))
    assert finish.delay == 0 and wq.due_in("c", K) is None and wq.failures("c", K) == 0


def test_a_lapsed_lease_hands_the_key_to_another_worker(wq: WorkQueue, published: list) -> None:
    wq.add("c", K)
    wq.start("c", K, "dead-worker", 0.2)
    published.clear()
    time.sleep(0.25)
    assert wq.pump("c")[0] == 1 and published[0][1] == K
    assert wq.start("c", K, "new-worker", 10).status == "ok"
    # the dead worker's late finish is ignored: the new holder decides
    assert wq.done("c", K, "dead-worker", Result.done()).lost is True
    assert wq.status("c").in_progress == 1


def test_a_redelivered_message_takes_over_its_own_key(wq: WorkQueue) -> None:
    wq.add("c", K)
    wq.start("c", K, "task-1", 30)
    # kombu redelivers the message of a SIGKILLed worker with the same task id
    assert wq.start("c", K, "task-1", 30).status == "ok"


def test_renew_keeps_the_key_and_fails_after_takeover(wq: WorkQueue) -> None:
    wq.add("c", K)
    wq.start("c", K, "t1", 0.3)
    time.sleep(0.2)
    assert wq.renew("c", K, "t1", 0.3)
    time.sleep(0.2)
    assert wq.start("c", K, "t2", 10).status == "busy"  # still held thanks to the renewal
    assert not wq.renew("c", K, "t2", 10)


def test_resync_adds_are_low_priority_and_a_fresh_add_overtakes(wq: WorkQueue, published: list) -> None:
    keys = [Key("local", "ns", f"k{i}") for i in range(5)]
    assert wq.add_many("c", keys, resync=True) == 5
    assert {p for _, _, p in published} == {PRIORITY_RESYNC}
    assert wq.status("c").resync == 5
    published.clear()
    assert wq.add("c", keys[2]) is True  # a live change is not stuck behind the resync backlog
    assert wq.add("c", keys[2]) is False
    assert published == [("c", keys[2], PRIORITY_FRESH)]
    assert wq.status("c").resync == 4


def test_orphaned_waiting_key_is_published_again(wq: WorkQueue, published: list) -> None:
    wq.add("c", K)  # pretend the publisher died right after the script
    published.clear()
    time.sleep(0.2)
    wq.pump("c", orphan_seconds=0.1)
    assert published == [("c", K, PRIORITY_FRESH)]


def test_sync_delay_debounces_into_one_delayed_key(wq: WorkQueue, published: list) -> None:
    for _ in range(10):
        wq.add("jitter", K)
    assert published == []
    due = wq.due_in("jitter", K)
    assert due is not None and 0 < due <= 0.75
    time.sleep(0.8)
    wq.pump("jitter")
    assert published == [("jitter", K, PRIORITY_FRESH)]


def test_unknown_controller_is_a_clear_error(wq: WorkQueue) -> None:
    with pytest.raises(KeyError, match="unknown controller"):
        wq.add("nope", K)
