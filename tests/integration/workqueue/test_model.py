"""A stateful property test of the workqueue's Lua scripts against a small Python model of the queue.

Hypothesis drives add / add_after / fetch / renew / done / lease expiry / lost entries in any order
on a real Redis and checks after every step that Redis holds what the model holds (dedupe, holders,
failure counts, delayed keys, priorities) and the invariants the engine's guarantees rest on:

- exclusivity: a key has at most one holder, a token that lost its key can neither renew nor record;
- fencing tokens are unique and strictly increasing;
- fresh keys are taken before resync keys, a fresh add overtakes a resync;
- the earliest due time wins; failures back off by ``Backoff.delay`` and success forgets them;
- every waiting key that is not held has an entry to take (after an audit, even when entries were lost);
- a lapsed lease counts as a failure and backs off; ``MAX_LAPSES`` lapses in a row park the key (never
  waiting, delayed or held) until a fresh add; a reconcile that records its result forgets the lapses;
- a key whose last run lapsed (a suspect) is taken only by a caller that runs no suspect, one per fetch.

Times are bimodal so that Redis' real clock never makes a step ambiguous: a delay or lease is either
due now (0) or far away (>= 1000 s), and "time passes" shifts every stored due time back by 5000 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from workers.controller import Backoff, Controller, Key, Registry, Result, ResultKind
from workers.workqueue import Taken, WorkQueue, controller_key, queue_key

pytestmark = pytest.mark.integration

Q = "apigateway"
CONTROLLERS = ("c", "d")
KEYS = [Key("local", "ns", f"k{i}") for i in range(4)]
FAR = 1000.0
BACKOFF = Backoff(base=FAR, cap=4 * FAR)
SHIFT = 5000.0
MAX_LAPSES = 2

controllers = st.sampled_from(CONTROLLERS)
keys = st.sampled_from(KEYS)


@dataclass
class Model:
    """What the queue should hold. Keys are ``(controller, Key)``; times are "now" (<= 0) or far."""

    waiting: dict[tuple[str, Key], str] = field(default_factory=dict)  # -> "fresh" | "resync"
    holder: dict[tuple[str, Key], str] = field(default_factory=dict)  # -> token
    lease: dict[tuple[str, Key], float] = field(default_factory=dict)  # -> expiry
    delayed: dict[tuple[str, Key], float] = field(default_factory=dict)  # -> due
    failures: dict[tuple[str, Key], int] = field(default_factory=dict)
    lapses: dict[tuple[str, Key], int] = field(default_factory=dict)
    parked: set[tuple[str, Key]] = field(default_factory=set)

    def ready(self) -> set[tuple[str, Key]]:
        return {k for k in self.waiting if k not in self.holder}


class QueueMachine(RuleBasedStateMachine):
    url = ""

    def __init__(self) -> None:
        super().__init__()
        self.redis = redis.Redis.from_url(self.url)
        self.redis.flushall()
        reg = Registry()
        for name in CONTROLLERS:
            reg.register(Controller(name=name, queue=Q, reconcile=lambda k: None, backoff=BACKOFF))
        self.wq = WorkQueue(self.redis, reg)
        self.model = Model()
        self.taken: list[Taken] = []  # every key handed out, current and superseded
        self.tokens: list[int] = []
        self.damaged = False

    # -- producers ----------------------------------------------------------------------------

    @rule(c=controllers, key=keys, resync=st.booleans())
    def add(self, c: str, key: Key, resync: bool) -> None:
        m, k = self.model, (c, key)
        if resync and k in m.parked:  # a resync leaves a parked key parked
            assert self.wq.add(c, key, resync=resync) is False
            return
        if k in m.parked:  # a fresh add un-parks it
            m.parked.discard(k)
            m.lapses.pop(k, None)
        expected = k not in m.waiting or (not resync and m.waiting[k] == "resync")
        if k not in m.waiting:
            m.waiting[k] = "resync" if resync else "fresh"
        elif not resync:
            m.waiting[k] = "fresh"
        assert self.wq.add(c, key, resync=resync) is expected

    @rule(c=controllers, key=keys, far=st.booleans())
    def add_after(self, c: str, key: Key, far: bool) -> None:
        due = FAR if far else 0.0
        k = (c, key)
        if k in self.model.parked:  # a delayed add is a fresh add too
            self.model.parked.discard(k)
            self.model.lapses.pop(k, None)
        self.model.delayed[k] = min(self.model.delayed.get(k, due), due)
        self.wq.add_after(c, key, due)

    # -- consumers ----------------------------------------------------------------------------

    @rule(limit=st.integers(1, 5), audit=st.booleans(), busy=st.booleans())
    def fetch(self, limit: int, audit: bool, busy: bool) -> None:
        m = self.model
        for k, due in list(m.delayed.items()):  # due keys become waiting, at fresh priority
            if due <= 0:
                del m.delayed[k]
                m.waiting[k] = "fresh"
        parked = set()
        for k, expiry in list(m.lease.items()):  # lapsed leases: a failure with backoff, or parked
            if expiry <= 0:
                del m.lease[k], m.holder[k]
                m.waiting.pop(k, None)  # an add made while it ran is folded into the retry
                m.failures[k] = m.failures.get(k, 0) + 1
                m.lapses[k] = m.lapses.get(k, 0) + 1
                if m.lapses[k] >= MAX_LAPSES:
                    m.delayed.pop(k, None)
                    m.parked.add(k)
                    parked.add(k)
                else:
                    m.delayed[k] = BACKOFF.delay(m.failures[k])
        ready = m.ready()
        suspects = {k for k in ready if m.lapses.get(k)}  # their last run lapsed: one per process
        got = self.wq.fetch([Q], limit, FAR, audit=audit, max_lapses=MAX_LAPSES, suspects=1 if busy else 0)
        assert {(p.controller, p.key) for p in got.parked} == parked
        assert all(p.lapses == MAX_LAPSES for p in got.parked)
        if audit and self.damaged:
            assert got.repaired > 0
            self.damaged = False
        taken = [(t.controller, t.key) for t in got.taken]
        assert len(set(taken)) == len(taken)
        assert set(taken) <= ready
        assert {(t.controller, t.key) for t in got.taken if t.suspect} == suspects & set(taken)
        assert len(suspects & set(taken)) <= (0 if busy else 1)
        if not self.damaged:  # every other ready key is taken, up to the limit
            takeable = len(ready) - len(suspects) + (0 if busy or not suspects else 1)
            assert len(taken) == min(limit, takeable)
            assert not got.held or takeable < len(ready)  # held: a suspect was left for another process
            assert got.held or len(taken) == limit or takeable == len(ready)
        fresh_ready = {k for k in ready if m.waiting[k] == "fresh"}
        if not self.damaged and any(m.waiting[k] == "resync" for k in taken):  # resync once no fresh is left
            assert fresh_ready - suspects <= set(taken)  # a suspect may be left for another process
        for t in got.taken:
            k = (t.controller, t.key)
            assert t.failures == m.failures.get(k, 0)
            del m.waiting[k]
            m.holder[k], m.lease[k] = t.token, FAR
            self.tokens.append(int(t.token))
            self.taken.append(t)
        assert self.tokens == sorted(set(self.tokens))

    @rule(data=st.data())
    def renew(self, data: st.DataObject) -> None:
        if not self.taken:
            return
        t = data.draw(st.sampled_from(self.taken))
        k = (t.controller, t.key)
        ok = self.model.holder.get(k) == t.token
        assert self.wq.renew([(t.controller, t.key, t.token)], FAR) == [ok]
        if ok:
            self.model.lease[k] = FAR

    @rule(data=st.data(), outcome=st.sampled_from(list(ResultKind)), far=st.booleans())
    def done(self, data: st.DataObject, outcome: ResultKind, far: bool) -> None:
        if not self.taken:
            return
        t = data.draw(st.sampled_from(self.taken))
        m, k = self.model, (t.controller, t.key)
        result = {ResultKind.SUCCESS: Result.done(), ResultKind.ERROR: Result.error("x"),
                  ResultKind.TERMINAL: Result.terminal("x"),
                  ResultKind.REQUEUE_AFTER: Result.requeue(FAR if far else 0.0)}[outcome]
        finish = self.wq.done(t, result)
        if m.holder.get(k) != t.token:
            assert finish.lost  # a superseded token records nothing
            return
        assert not finish.lost
        del m.holder[k], m.lease[k]
        m.lapses.pop(k, None)
        if outcome is ResultKind.ERROR:
            m.failures[k] = m.failures.get(k, 0) + 1
            assert finish.delay == BACKOFF.delay(m.failures[k])
            m.delayed[k] = min(m.delayed.get(k, finish.delay), finish.delay)
        else:
            m.failures.pop(k, None)
            if outcome is ResultKind.REQUEUE_AFTER:
                m.delayed[k] = min(m.delayed.get(k, result.requeue_after or 0.0), result.requeue_after or 0.0)
        assert finish.again is (k in m.waiting)

    # -- the world ----------------------------------------------------------------------------

    @rule()
    def time_passes(self) -> None:
        """Every delay and lease runs out (holders that did not renew lose their keys)."""
        for c in CONTROLLERS:
            for part in ("delayed", "leases"):
                name = controller_key(c, part)
                for member, score in self.redis.zrange(name, 0, -1, withscores=True):
                    self.redis.zadd(name, {member: score - SHIFT})
        self.model.delayed = {k: v - SHIFT for k, v in self.model.delayed.items()}
        self.model.lease = {k: v - SHIFT for k, v in self.model.lease.items()}

    @rule()
    def entries_lost(self) -> None:
        """Ready entries vanish outside the scripts (what the audit exists for)."""
        if self.redis.delete(queue_key(Q, "ready"), queue_key(Q, "ready-resync")):
            self.damaged = True  # entries (and with them the stale count's meaning) are gone

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def redis_holds_what_the_model_holds(self) -> None:
        m = self.model
        for c in CONTROLLERS:
            def members(part: str, c: str = c) -> set[Key]:
                return {Key.decode(x.decode()) for x in self.redis.zrange(controller_key(c, part), 0, -1)}

            assert members("waiting") == {k for (cc, k) in m.waiting if cc == c}
            resync = {Key.decode(x.decode()) for x in self.redis.smembers(controller_key(c, "resync"))}
            assert resync == {k for (cc, k), p in m.waiting.items() if cc == c and p == "resync"}
            held = {Key.decode(k.decode()): v.decode()
                    for k, v in self.redis.hgetall(controller_key(c, "processing")).items()}
            assert held == {k: tok for (cc, k), tok in m.holder.items() if cc == c}
            assert members("leases") == set(held)
            assert members("delayed") == {k for (cc, k) in m.delayed if cc == c}
            failures = {Key.decode(k.decode()): int(v)
                        for k, v in self.redis.hgetall(controller_key(c, "failures")).items()}
            assert failures == {k: n for (cc, k), n in m.failures.items() if cc == c}
            lapses = {Key.decode(k.decode()): int(v)
                      for k, v in self.redis.hgetall(controller_key(c, "lapses")).items()}
            assert lapses == {k: n for (cc, k), n in m.lapses.items() if cc == c}
            assert members("parked") == {k for (cc, k) in m.parked if cc == c}
            assert not members("parked") & (members("waiting") | members("delayed") | set(held))

    @invariant()
    def every_ready_key_has_an_entry(self) -> None:
        if self.damaged:
            return
        entries = [x.decode() for name in ("ready", "ready-resync")
                   for x in self.redis.lrange(queue_key(Q, name), 0, -1)]
        stale = int(self.redis.get(queue_key(Q, "stale")) or 0)
        ready = {f"{c} {k.encode()}" for c, k in self.model.ready()}
        assert ready <= set(entries)
        assert len(entries) - stale == len(ready)


def test_the_scripts_keep_the_models_invariants(redis_url: str) -> None:
    QueueMachine.url = redis_url
    run_state_machine_as_test(QueueMachine, settings=settings(
        max_examples=60, stateful_step_count=40, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
