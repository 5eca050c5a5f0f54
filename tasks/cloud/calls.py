"""Provider calls of a plan, and their refusals, as plain data (pure: imports no SDK).

A provider plan (``tasks/cloud/<provider>/*_plan.py``) decides over what its client read and answers
the writes to make as calls (``Client.<method>(*args)``) and the :class:`~kube.toolkit.Step` they lead
to. A read or a write the provider refused reaches the plan as a :class:`Refused`, so the plan never
sees the SDK's or the client's exception types. :func:`make_calls` is the one applier of such plans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kube.toolkit.step import Step

__all__ = ["CallPlan", "Refused", "make_calls"]


@dataclass(frozen=True)
class Refused:
    """A provider request that failed: the HTTP ``status`` (0 when no answer came), the API's own
    ``message`` (what conditions quote) and ``text``, the error as the client prints it (``str(err)``,
    e.g. Azure's ``(Code) message``)."""

    status: int
    message: str
    text: str = ""

    @property
    def too_many_requests(self) -> bool:
        """HTTP 429."""
        return self.status == 429

    @property
    def conflict(self) -> bool:
        """HTTP 409."""
        return self.status == 409


C = TypeVar("C")


class CallPlan(Protocol[C]):
    """What :func:`make_calls` needs of a plan: its calls (each with ``method`` and ``args``), the Step
    once all were made (:meth:`done`, given their answers in order) and the Step of a refused one."""

    @property
    def calls(self) -> Sequence[C]: ...

    def done(self, answers: Sequence[Any] = ()) -> Step: ...

    def failed(self, call: C, refused: Refused) -> Step: ...


def make_calls(client: Any, plan: CallPlan[Any], error: type[Exception],
               refused: Callable[[Any], Refused]) -> Step:
    """Make ``plan``'s calls on ``client`` in order (``getattr(client, call.method)(*call.args)``) and
    answer the Step they lead to: :meth:`CallPlan.done` with their answers, or at the first call that
    raises ``error``, :meth:`CallPlan.failed` with ``refused(exc)`` (later calls are not made). Any
    other exception (``fencing.FenceError``) propagates."""
    answers = []
    for call in plan.calls:
        try:
            answers.append(getattr(client, call.method)(*call.args))
        except error as exc:
            return plan.failed(call, refused(exc))
    return plan.done(answers)
