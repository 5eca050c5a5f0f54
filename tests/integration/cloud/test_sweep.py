"""The rotation's Redis scripts against a real Redis: idempotent activation, strict rotation, the
min interval below the threshold, backoff, notifications that never reorder, stranding."""

from __future__ import annotations

import re
import time

import pytest
import redis

from tasks.cloud.settings import CloudSettings
from tasks.cloud.sweep import Rotation

pytestmark = pytest.mark.integration


def make(redis_url: str, **overrides: object) -> Rotation:
    settings = CloudSettings(**{"cyclic_workers": 1, "cyclic_min_interval": 60.0, "reconcile_timeout": 10.0,
                                "notif_min_interval": 10.0, **overrides})  # type: ignore[arg-type]
    return Rotation(redis.Redis.from_url(redis_url), settings)


def run_round(rot: Rotation, ok: bool = True) -> list[str]:
    """Dispatch every due SKR and finish them in dispatch order (FIFO workers)."""
    due = rot.dispatch()
    for kyma in due:
        rot.finish(kyma, ok)
    return due


def test_activation_is_idempotent_and_keeps_the_place(redis_url: str) -> None:
    rot = make(redis_url)
    assert [rot.activate(k) for k in ("a", "b", "c")] == [True, True, True]
    assert rot.activate("a") is False
    assert rot.dispatch(limit=1) == ["a"]
    assert rot.activate("a") is False, "an SKR in flight is a member: re-activation must not add it again"
    assert rot.dispatch() == ["b", "c"], "no second entry of a"
    assert rot.fleet() == 3


def test_strict_rotation_new_skrs_join_at_the_tail(redis_url: str) -> None:
    rot = make(redis_url, cyclic_min_interval=0.0)
    for k in ("a", "b", "c", "d"):
        rot.activate(k)
    order: list[str] = []
    order += rot.dispatch()
    for kyma in ("c", "a"):  # workers finish out of order
        rot.finish(kyma, True)
    rot.activate("new")
    for kyma in ("d", "b"):
        rot.finish(kyma, True)
    second = rot.dispatch()
    assert order == ["a", "b", "c", "d"]
    assert second == ["c", "a", "new", "d", "b"], "the order of finishing, the new SKR where it joined"
    for kyma in second:
        rot.finish(kyma, True)
    for _ in range(5):
        assert run_round(rot) == second, "rounds repeat the same strict order"


def test_min_interval_below_the_threshold_immediate_above(redis_url: str) -> None:
    small = make(redis_url, cyclic_min_interval=60.0)  # threshold 6
    for k in ("a", "b"):
        small.activate(k)
    run_round(small)
    assert small.dispatch() == []
    assert small.due("a") is not None and small.due("a") - time.time() > 55
    small.clear()
    big = make(redis_url, cyclic_min_interval=60.0)
    for i in range(6):
        big.activate(f"k{i}")
    run_round(big)
    assert len(big.dispatch()) == 6, "a fleet at the threshold comes straight back"


def test_failed_connect_backs_off_inside_the_rotation(redis_url: str) -> None:
    rot = make(redis_url, cyclic_min_interval=0.0, connect_backoff_base=5.0, connect_backoff_cap=20.0)
    rot.activate("bad")
    rot.activate("good")
    rot.dispatch()
    assert rot.finish("bad", False).delay == 5.0
    rot.finish("good", True)
    assert rot.dispatch() == ["good"]
    assert rot.is_active("bad") and rot.failures("bad") == 1
    rot.redis.zadd(rot.keys["rotation"], {"bad": 0})  # make it due now
    assert "bad" in rot.dispatch()
    assert rot.finish("bad", False).delay == 10.0
    rot.redis.zadd(rot.keys["rotation"], {"bad": 0})
    rot.dispatch()
    assert rot.finish("bad", True).delay == 0.0 and rot.failures("bad") == 0


def test_notifications_never_reorder_the_rotation(redis_url: str) -> None:
    rot = make(redis_url, cyclic_min_interval=0.0, notif_min_interval=10.0)
    assert rot.notify("x") == "inactive"
    for k in ("a", "b", "c"):
        rot.activate(k)
    before = rot.redis.zrange(rot.keys["rotation"], 0, -1, withscores=True)
    assert rot.notify("b") == "accepted"
    assert rot.notify("b") == "coalesced"
    assert rot.finish("b", True).kind == "notification"
    assert rot.redis.zrange(rot.keys["rotation"], 0, -1, withscores=True) == before, "scores untouched"
    assert rot.notify("b") == "rate_limited"
    assert rot.dispatch() == ["a", "b", "c"]
    assert rot.notify("a") == "queued", "its rotation connect is already queued"


def test_deactivated_mid_sweep_is_not_added_back(redis_url: str) -> None:
    rot = make(redis_url, cyclic_min_interval=0.0)
    rot.activate("a")
    assert rot.dispatch() == ["a"]
    assert rot.deactivate("a") is True
    assert rot.finish("a", True).kind == "inactive"
    assert not rot.is_active("a") and rot.dispatch() == []
    assert rot.deactivate("a") is False


def test_stranded_in_flight_skr_is_dispatched_again(redis_url: str) -> None:
    rot = make(redis_url, stranded_after=0.2)
    rot.activate("a")
    assert rot.dispatch() == ["a"]
    assert rot.dispatch() == []
    time.sleep(0.3)
    assert rot.dispatch() == ["a"]


def test_finish_keeps_the_health_entry_in_the_same_call(redis_url: str) -> None:
    """finish(result=) keeps the health entry '<status>|<since>' (finish.lua, its one writer): the since of
    a status stays while the status does, a new status starts a new since, an inactive SKR's entry goes."""
    rot = make(redis_url)
    rot.activate("a")
    rot.dispatch()
    rot.finish("a", False, "failed")
    first = rot.health()["a"]
    assert re.fullmatch(r"unreachable\|\d+\.\d{3}", first), first
    rot.dispatch()
    rot.finish("a", False, "failed")
    assert rot.health()["a"] == first, "still unreachable since the first failure"
    rot.finish("a", True, "ok")  # a notification's connect: the rotation untouched, the health kept
    assert rot.health()["a"].startswith("ready|")
    rot.finish("a", True, "inactive")
    assert rot.health()["a"].startswith("ready|"), "a result without a status leaves the entry"
    rot.deactivate("a")
    rot.redis.hset(rot.keys["health"], "a", "ready|1.000")
    rot.finish("a", True, "ok")
    assert "a" not in rot.health(), "an inactive SKR's entry is removed"
