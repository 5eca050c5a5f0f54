"""The workqueue's decisions against real Redis (no worker process): what is taken, held, fenced, delayed."""

from __future__ import annotations

import time

import pytest
import redis

from workers.controller import Backoff, Controller, Key, Registry, Result
from workers.workqueue import WorkQueue, controller_key, queue_key

K = Key("local", "ns", "a")
Q = "apigateway"


@pytest.fixture
def reg() -> Registry:
    reg = Registry()
    reg.register(Controller(name="c", queue=Q, reconcile=lambda k: None, backoff=Backoff(base=0.5, cap=2.0)))
    reg.register(Controller(name="d", queue=Q, reconcile=lambda k: None))
    reg.register(Controller(name="jitter", queue="nginx", reconcile=lambda k: None, sync_delay=(0.25, 0.75)))
    return reg


@pytest.fixture
def wq(redis_url: str, reg: Registry) -> WorkQueue:
    return WorkQueue(redis.Redis.from_url(redis_url), reg)


def take(wq: WorkQueue, n: int = 10, lease: float = 10.0, queues: tuple[str, ...] = (Q,), audit: bool = False):
    return wq.fetch(list(queues), n, lease, audit=audit).taken


def test_duplicate_adds_queue_one_entry(wq: WorkQueue) -> None:
    assert wq.add("c", K) is True
    assert wq.add("c", K) is False
    assert wq.ready_depth(Q) == (1, 0)
    (t,) = take(wq)
    assert (t.controller, t.key) == ("c", K)
    assert take(wq) == []


def test_every_take_gets_a_fresh_increasing_fencing_token(wq: WorkQueue) -> None:
    tokens = []
    for _ in range(3):
        wq.add("c", K)
        (t,) = take(wq)
        tokens.append(int(t.token))
        assert wq.done(t, Result.done()).lost is False
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def test_a_key_added_while_it_runs_runs_again_after_never_during(wq: WorkQueue) -> None:
    wq.add("c", K)
    (t1,) = take(wq)
    assert wq.add("c", K) is True  # waiting again (dirty), but not ready while held
    assert take(wq) == []
    finish = wq.done(t1, Result.done())
    assert finish.again is True
    (t2,) = take(wq)
    assert t2.key == K and int(t2.token) > int(t1.token)


def test_a_lapsed_lease_is_recovered_and_the_old_holder_is_fenced(wq: WorkQueue) -> None:
    wq.add("c", K)
    (dead,) = take(wq, lease=0.2)
    time.sleep(0.3)
    got = wq.fetch([Q], 10, 10.0)
    assert got.recovered == 1
    assert got.taken == [] and wq.failures("c", K) == 1  # a lapse is a failure: backoff 0.5 s first
    time.sleep(0.55)
    (alive,) = wq.fetch([Q], 10, 10.0).taken
    assert alive.key == K and int(alive.token) > int(dead.token) and alive.failures == 1
    assert wq.renew([("c", K, dead.token)], 10) == [False]
    assert wq.done(dead, Result.done()).lost is True  # its late result is dropped
    assert wq.holder("c", K) == alive.token
    assert wq.done(alive, Result.done()).lost is False


def test_renewal_keeps_the_key_through_many_lease_lengths(wq: WorkQueue) -> None:
    wq.add("c", K)
    (t,) = take(wq, lease=0.3)
    for _ in range(5):
        time.sleep(0.15)
        assert wq.renew([("c", K, t.token)], 0.3) == [True]
        assert wq.fetch([Q], 10, 10.0).recovered == 0
    assert wq.holder("c", K) == t.token


def test_requeue_after_is_taken_only_when_due(wq: WorkQueue) -> None:
    wq.add("c", K)
    (t,) = take(wq)
    wq.done(t, Result.requeue(0.4))
    got = wq.fetch([Q], 10, 10.0)
    assert got.taken == [] and got.next_due is not None and 0 < got.next_due <= 0.4
    time.sleep(0.45)
    (again,) = take(wq)
    assert again.key == K and wq.due_in("c", K) is None


def test_the_earliest_due_time_wins(wq: WorkQueue) -> None:
    wq.add_after("c", K, 50)
    wq.add_after("c", K, 5)
    wq.add_after("c", K, 30)
    due = wq.due_in("c", K)
    assert due is not None and 4 < due <= 5


def test_failures_back_off_by_the_controllers_backoff_and_success_forgets(wq: WorkQueue, reg: Registry) -> None:
    delays = []
    for i in range(4):
        wq.add("c", K)
        (t,) = take(wq)
        assert t.failures == i
        finish = wq.done(t, Result.error("boom"))
        delays.append(finish.delay)
        assert wq.failures("c", K) == i + 1
        wq.redis.delete(controller_key("c", "delayed"))
    assert delays == [reg.get("c").backoff.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.0]
    wq.add("c", K)
    (t,) = take(wq)
    wq.done(t, Result.done())
    assert wq.failures("c", K) == 0 and wq.status("c").failing == 0


def test_terminal_error_is_not_retried(wq: WorkQueue) -> None:
    wq.add("c", K)
    (t,) = take(wq)
    finish = wq.done(t, Result.terminal("bad input"))
    assert finish.delay == 0 and wq.due_in("c", K) is None and wq.failures("c", K) == 0


def test_resync_keys_wait_behind_fresh_ones_and_a_fresh_add_overtakes(wq: WorkQueue) -> None:
    keys = [Key("local", "ns", f"k{i}") for i in range(5)]
    assert wq.add_many("c", keys, resync=True) == 5
    assert wq.status("c").resync == 5 and wq.ready_depth(Q) == (0, 5)
    assert wq.add("c", keys[3]) is True  # a live change of a key in the backlog moves it ahead...
    assert wq.add("c", keys[3]) is False
    fresh = Key("local", "ns", "fresh")
    wq.add("c", fresh)
    order = [t.key for t in take(wq, n=1) + take(wq, n=1)]
    assert order == [keys[3], fresh]  # ...in the order of the live changes, before the backlog
    rest = [t.key.name for t in take(wq, n=10)]
    assert rest == ["k0", "k1", "k2", "k4"]  # the superseded resync entry of k3 is skipped
    assert wq.status("c").resync == 0 and wq.redis.get(queue_key(Q, "stale")) in (b"0", None)


def test_the_audit_queues_a_waiting_key_whose_entry_was_lost(wq: WorkQueue) -> None:
    wq.add("c", K)
    wq.redis.delete(queue_key(Q, "ready"))  # an entry lost outside the scripts
    assert wq.fetch([Q], 10, 10.0).taken == []  # without an audit it is not found...
    got = wq.fetch([Q], 10, 10.0, audit=True)
    assert got.repaired == 1 and [t.key for t in got.taken] == [K]


def test_wake_tokens_follow_the_ready_entries(wq: WorkQueue) -> None:
    assert wq.wait([Q], 0.05) is False  # nothing queued: the wait times out
    wq.add("c", K)
    t0 = time.monotonic()
    assert wq.wait([Q], 5) is True and time.monotonic() - t0 < 1
    take(wq)
    assert wq.redis.llen(queue_key(Q, "wake")) == 0  # nothing left to take: no stale wake-ups


def test_entries_of_controllers_a_process_does_not_run_are_left_for_others(redis_url: str, wq: WorkQueue) -> None:
    wq.add("d", K)
    wq.add("c", K)
    only_c = Registry()
    only_c.register(Controller(name="c", queue=Q, reconcile=lambda k: None))
    other = WorkQueue(redis.Redis.from_url(redis_url), only_c)
    assert other.fetch([Q], 10, 10.0).taken == []  # d's entry is first: put back, not taken
    assert [(t.controller, t.key) for t in take(wq)] == [("d", K), ("c", K)]


def test_sync_delay_debounces_into_one_delayed_key(wq: WorkQueue) -> None:
    for _ in range(10):
        wq.add("jitter", K)
    assert take(wq, queues=("nginx",)) == []
    due = wq.due_in("jitter", K)
    assert due is not None and 0 < due <= 0.75
    time.sleep(0.8)
    assert [t.key for t in take(wq, queues=("nginx",))] == [K]


def test_a_batch_with_duplicates_and_mixed_controllers_is_one_call(wq: WorkQueue) -> None:
    items = [("c", Key("local", "ns", f"k{i % 500}")) for i in range(1000)] + [("d", K)]
    assert wq.add_batch(items) == 501
    assert wq.status("c").waiting == 500 and wq.status("d").waiting == 1


def test_unknown_controller_is_a_clear_error(wq: WorkQueue) -> None:
    with pytest.raises(KeyError, match="unknown controller"):
        wq.add("nope", K)


def test_controller_names_with_spaces_are_refused() -> None:
    with pytest.raises(ValueError, match="without spaces"):
        Controller(name="a b", queue=Q, reconcile=lambda k: None)


def test_a_new_process_on_a_new_redis_takes_at_once(wq: WorkQueue) -> None:
    wq.add("c", K)
    got = wq.fetch([Q], 10, 5.0)
    assert got.quiet == 0 and [t.key for t in got.taken] == [K] and got.epoch


def test_a_restarted_redis_holds_back_takes_for_one_lease(wq: WorkQueue) -> None:
    epoch = wq.fetch([Q], 10, 5.0).epoch
    wq.redis.set("rq:run-id", "another-server-run")  # as after a restart or a failover
    wq.add("c", K)
    got = wq.fetch([Q], 10, 5.0, known_epoch=epoch)
    assert got.taken == [] and 4.5 < got.quiet <= 5.0 and got.next_due is not None and got.next_due <= 5.0
    wq.redis.delete("rq:quiet")  # the lease has passed
    assert [t.key for t in wq.fetch([Q], 10, 5.0, known_epoch=epoch).taken] == [K]


def test_a_redis_that_lost_its_data_holds_back_takes_for_those_who_knew_it(wq: WorkQueue) -> None:
    old = wq.fetch([Q], 10, 5.0).epoch
    wq.redis.flushall()
    wq.add("c", K)
    got = wq.fetch([Q], 10, 5.0, known_epoch=old)
    assert got.epoch != old and got.quiet > 4 and got.taken == []
    assert wq.fetch([Q], 10, 5.0, known_epoch=got.epoch).taken == []  # still quiet for everybody
    assert wq.check_epoch(got.epoch, 5.0)[0] == got.epoch


def test_fencing_tokens_never_repeat_even_when_the_last_writes_are_lost(wq: WorkQueue) -> None:
    wq.add("c", K)
    (first,) = take(wq)
    wq.done(first, Result.done())
    wq.redis.set("rq:fence", "1")  # the counter lost its last writes (AOF everysec, a crash)
    wq.add("c", K)
    (second,) = take(wq)
    assert int(second.token) > int(first.token)


def lapse(wq: WorkQueue, max_lapses: int = 3, controller: str = "c"):
    """Take K (it must be ready), let its lease lapse (as if its worker died), and recover it."""
    (t,) = wait_taken(wq, lease=0.05)
    assert t.controller == controller
    time.sleep(0.1)
    return wq.fetch([Q], 0, 10.0, max_lapses=max_lapses)


def wait_taken(wq: WorkQueue, lease: float = 10.0):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = take(wq, lease=lease)
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("nothing became ready")


def test_a_key_that_takes_its_worker_down_backs_off_and_is_parked_after_max_lapses(wq: WorkQueue) -> None:
    wq.add("c", K)
    got = lapse(wq)
    assert got.recovered == 1 and got.parked == [] and got.taken == []
    assert 0.4 < (wq.due_in("c", K) or 0) <= 0.5  # Backoff(base=0.5).delay(1)
    assert take(wq) == []
    got = lapse(wq)  # second try, taken once due, dies too
    assert got.parked == [] and wq.failures("c", K) == 2
    assert 0.9 < (wq.due_in("c", K) or 0) <= 1.0
    got = lapse(wq)
    assert [(p.controller, p.key, p.lapses) for p in got.parked] == [("c", K, 3)]
    assert got.taken == [] and wq.due_in("c", K) is None
    status = wq.status("c")
    assert (status.parked, status.waiting, status.delayed, status.in_progress) == (1, 0, 0, 0)
    assert [k for k, _ in wq.parked("c")] == [K]
    time.sleep(2.1)  # past any backoff: still parked
    assert take(wq) == []


def test_an_add_while_the_key_ran_is_folded_into_the_retry_after_a_lapse(wq: WorkQueue) -> None:
    wq.add("c", K)
    (_t,) = take(wq, lease=0.05)
    wq.add("c", K)  # a change while it runs
    time.sleep(0.1)
    got = wq.fetch([Q], 10, 10.0)
    assert got.recovered == 1 and got.taken == []
    assert wq.status("c").waiting == 0 and wq.due_in("c", K) is not None  # it runs after the backoff


def test_a_resync_leaves_a_parked_key_parked_and_a_fresh_add_unparks_it(wq: WorkQueue) -> None:
    wq.add("c", K)
    assert lapse(wq, max_lapses=1).parked[0].key == K
    assert wq.add("c", K, resync=True) is False
    assert take(wq) == [] and wq.status("c").parked == 1
    assert wq.add("c", K) is True  # a watch event or `reconcilery enqueue`
    assert wq.status("c").parked == 0
    (t,) = take(wq)
    assert t.failures == 1  # the failure count stays: backoff keeps growing if it dies again
    assert wq.done(t, Result.done()).lost is False and wq.failures("c", K) == 0


def test_a_delayed_add_unparks_too(wq: WorkQueue) -> None:
    wq.add("c", K)
    lapse(wq, max_lapses=1)
    wq.add_after("c", K, 0.0)  # a controller with a sync delay enqueues fresh changes this way
    assert wq.status("c").parked == 0
    assert wait_taken(wq)[0].key == K


def test_a_recorded_result_forgets_the_lapses(wq: WorkQueue) -> None:
    wq.add("c", K)
    lapse(wq, max_lapses=2)
    (t,) = wait_taken(wq)
    wq.done(t, Result.error("an ordinary failure, the worker survived"))
    assert wq.redis.hget(controller_key("c", "lapses"), K.encode()) is None
    assert lapse(wq, max_lapses=2).parked == []  # one lapse in a row, not two


def test_max_lapses_zero_never_parks(wq: WorkQueue) -> None:
    wq.add("d", K)
    for _ in range(4):
        assert lapse(wq, max_lapses=0, controller="d").parked == []
    assert wq.failures("d", K) == 4 and wq.status("d").parked == 0


def test_two_suspects_never_share_a_process_so_a_neighbour_is_never_parked_with_the_poison(
        wq: WorkQueue) -> None:
    """Two keys die with one worker (the poison took its neighbour down). Each is then a suspect: a
    fetch takes one only for a caller that runs no suspect, one per fetch, and leaves the other at
    the head of its list (``held``). The neighbour's clean run clears it; only the poison lapses on."""
    poison, neighbour, other = K, Key("local", "ns", "b"), Key("local", "ns", "c")
    wq.add("c", poison)
    wq.add("c", neighbour)
    assert len(take(wq, lease=0.05)) == 2  # one worker, two reconciles at once
    time.sleep(0.1)
    assert wq.fetch([Q], 0, 10.0).recovered == 2  # it died: both lapsed once
    time.sleep(0.6)  # past both backoffs (0.5 s)
    wq.add("c", other)  # an ordinary key, queued before the suspects are due
    busy = wq.fetch([Q], 10, 10.0, suspects=1)  # a worker that runs a suspect already
    assert [(t.key, t.suspect) for t in busy.taken] == [(other, False)] and busy.held
    first = wq.fetch([Q], 10, 10.0)  # a worker that runs none: one suspect, the other stays first
    assert [(t.key, t.suspect) for t in first.taken] == [(poison, True)] and first.held
    second = wq.fetch([Q], 10, 10.0)
    assert [(t.key, t.suspect) for t in second.taken] == [(neighbour, True)] and not second.held
    wq.done(second.taken[0], Result.done())  # the neighbour was innocent: it is no suspect any more
    assert wq.redis.hget(controller_key("c", "lapses"), neighbour.encode()) is None
    wq.add("c", neighbour)
    assert [(t.key, t.suspect) for t in wq.fetch([Q], 10, 10.0, suspects=1).taken] == [(neighbour, False)]
