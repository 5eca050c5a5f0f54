"""The provider-call pieces every provider plan shares (tasks/cloud/calls.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kube.refusal import Failure, Refusal
from kube.toolkit import execute
from kube.toolkit.outcome import Outcome
from tasks.cloud.calls import UNREAD, Needed, need, needed, read_as_needed, with_planned


class Boom(Refusal):
    """A client's refusal: HTTP 409."""

    @property
    def failure(self) -> Failure:
        return Failure.of_http(409, str(self))


@dataclass(frozen=True)
class Planned:
    method: str
    args: tuple[Any, ...]


class Client:
    def __init__(self) -> None:
        self.made: list[tuple[str, tuple]] = []

    def ok(self, *args: Any) -> str:
        self.made.append(("ok", args))
        return f"op-{len(self.made)}"

    def no(self, *args: Any) -> str:
        self.made.append(("no", args))
        raise Boom("refused")

    def broken(self, *args: Any) -> str:
        raise KeyError("not a refusal")


def planned(*calls: Planned, got: list[Any] | None = None) -> Outcome:
    def done(answers: Sequence[Any]) -> Outcome:
        if got is not None:
            got.extend(answers)
        return Outcome(requeue_after=1)

    return with_planned(calls, done, lambda call, failure: Outcome(error=f"{call.method}: {failure.status} "
                                                                         f"{failure.message}"))


def test_planned_calls_are_made_in_order_and_their_answers_handed_to_the_plan() -> None:
    client, got = Client(), []
    outcome = planned(Planned("ok", (1,)), Planned("ok", (2, 3)), got=got)
    assert execute(outcome, clients={"": client}).outcome == Outcome(requeue_after=1)
    assert client.made == [("ok", (1,)), ("ok", (2, 3))] and got == ["op-1", "op-2"]


def test_no_calls_is_the_plans_outcome_at_once() -> None:
    assert planned() == Outcome(requeue_after=1)


def test_the_first_refused_call_ends_the_turn() -> None:
    client = Client()
    outcome = planned(Planned("ok", ()), Planned("no", ("x",)), Planned("ok", ()))
    assert execute(outcome, clients={"": client}).outcome.error == "no: 409 refused"
    assert [m for m, _ in client.made] == ["ok", "no"]


def test_other_exceptions_propagate() -> None:
    with pytest.raises(KeyError):
        execute(planned(Planned("broken", ())), clients={"": Client()})


def test_needed_names_the_read_a_plan_looks_at_unread() -> None:
    assert needed(lambda: need(Read(), "b")) == "b"
    assert needed(lambda: need(Read(b=1), "b")) is None


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
    found = read_as_needed(Read(), needs, fetch)
    assert asked == ["b"] and found == Read(UNREAD, "stop")


def test_a_refused_read_is_data() -> None:
    def needs(found: Read) -> str | None:
        return "a" if found.a is UNREAD else None

    def no() -> Any:
        raise Boom("refused")

    def broken() -> Any:
        raise ValueError("not a refusal")

    assert read_as_needed(Read(), needs, {"a": no}) == Read(Failure.of_http(409, "refused"))
    with pytest.raises(ValueError):
        read_as_needed(Read(), needs, {"a": broken})
    assert repr(UNREAD) == "UNREAD"


def test_a_plan_asking_twice_for_a_read_is_a_bug_not_a_loop() -> None:
    with pytest.raises(RuntimeError, match="needs 'a' again"):
        read_as_needed(Read(), lambda found: "a", {"a": lambda: 1})
