"""The provider-call pieces every provider plan shares (tasks/cloud/calls.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.toolkit.outcome import Outcome
from tasks.cloud.calls import UNREAD, Needed, Refused, make_calls, need, read_as_needed


class Boom(Exception):
    pass


@dataclass(frozen=True)
class Call:
    method: str
    args: tuple[Any, ...]


@dataclass
class Plan:
    calls: Sequence[Call]
    got: list[Any] = field(default_factory=list)

    def done(self, answers: Sequence[Any] = ()) -> Outcome:
        self.got = list(answers)
        return Outcome(requeue_after=1)

    def failed(self, call: Call, refused: Refused) -> Outcome:
        return Outcome(error=f"{call.method}: {refused.status} {refused.message}")


class Client:
    def __init__(self) -> None:
        self.made: list[tuple[str, tuple]] = []

    def ok(self, *args: Any) -> str:
        self.made.append(("ok", args))
        return f"op-{len(self.made)}"

    def no(self, *args: Any) -> str:
        self.made.append(("no", args))
        raise Boom("refused")


def refused(exc: Boom) -> Refused:
    return Refused(409, str(exc))


def test_make_calls_in_order_and_hand_the_answers_to_the_plan() -> None:
    client, plan = Client(), Plan([Call("ok", (1,)), Call("ok", (2, 3))])
    assert make_calls(client, plan, Boom, refused) == Outcome(requeue_after=1)
    assert client.made == [("ok", (1,)), ("ok", (2, 3))] and plan.got == ["op-1", "op-2"]


def test_the_first_refused_call_ends_the_turn() -> None:
    client = Client()
    step = make_calls(client, Plan([Call("ok", ()), Call("no", ("x",)), Call("ok", ())]), Boom, refused)
    assert step.error == "no: 409 refused" and [m for m, _ in client.made] == ["ok", "no"]


def test_other_exceptions_propagate() -> None:
    with pytest.raises(Boom):
        make_calls(Client(), Plan([Call("no", ())]), ValueError, refused)


def test_refused_words() -> None:
    assert Refused(429, "slow").too_many_requests and not Refused(429, "slow").conflict
    assert Refused(409, "busy").conflict and not Refused(0, "no answer").too_many_requests


@dataclass(frozen=True)
class Read:
    a: Any = UNREAD
    b: Any = UNREAD


def test_need_and_read_as_needed_read_in_the_plans_order_only_what_it_looks_at() -> None:
    def needs(found: Read) -> str | None:
        try:
            return None if need(found, "b") == "stop" else (need(found, "a") and None)
        except Needed as needed:
            return needed.key

    asked: list[str] = []
    fetch = {"a": lambda: asked.append("a") or "go", "b": lambda: asked.append("b") or "stop"}
    found = read_as_needed(Read(), needs, fetch, Boom, refused)
    assert asked == ["b"] and found == Read(UNREAD, "stop")


def test_a_refused_read_is_data() -> None:
    def needs(found: Read) -> str | None:
        return "a" if found.a is UNREAD else None

    def no() -> Any:
        raise Boom("refused")

    assert read_as_needed(Read(), needs, {"a": no}, Boom, refused) == Read(Refused(409, "refused"))
    with pytest.raises(Boom):
        read_as_needed(Read(), needs, {"a": no}, ValueError, refused)
    assert repr(UNREAD) == "UNREAD"


def test_a_plan_asking_twice_for_a_read_is_a_bug_not_a_loop() -> None:
    with pytest.raises(RuntimeError, match="needs 'a' again"):
        read_as_needed(Read(), lambda found: "a", {"a": lambda: 1}, Boom, refused)
