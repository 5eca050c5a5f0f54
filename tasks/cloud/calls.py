"""Provider calls of a plan, and their refusals, as plain data (pure: imports no SDK).

A provider plan (``tasks/cloud/<provider>/*_plan.py``) decides over what its client read and answers
the writes to make as calls (``Client.<method>(*args)``) and the :class:`~kube.toolkit.Outcome` they lead
to. A read or a write the provider refused reaches the plan as a :class:`Refused`, so the plan never
sees the SDK's or the client's exception types. :func:`make_calls` is the one applier of such plans.

A plan over a chain of dependent resources (each needed only once the one before it is done) may
say which read it needs next instead of being given everything: its ``Read`` fields start as
:data:`UNREAD`, the plan takes each through :func:`need` (which raises :class:`Needed` for an unread
one, and the plan answers that name), and :func:`read_as_needed` makes the reads one at a time, in
the plan's order, until the plan needs none. So a turn reads exactly what the decision looks at,
all before any write, and the decision stays in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as _replace
from typing import Any, Protocol, TypeVar

from kube.refusal import Failure, HttpStatus
from kube.toolkit.actions import Call, Write
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["UNREAD", "CallPlan", "KwCall", "Needed", "Refused", "attempt",
           "make_calls", "marked_deleting", "need", "read_as_needed", "with_calls"]

E = TypeVar("E", bound=Exception)


def attempt(error: type[E], fn: Callable[..., Any], *args: Any) -> tuple[Any, E | None]:
    """``(fn(*args), None)``, or ``(None, err)`` when it raises ``error`` (a read whose failure the plan
    answers); any other exception propagates."""
    try:
        return fn(*args), None
    except error as err:
        return None, err


def marked_deleting(obj: Mapping[str, Any], deleting: bool | None) -> Mapping[str, Any]:
    """``obj``, marked deleted when ``deleting`` says so and it has no ``deletionTimestamp`` yet (a
    deletion turn planned over an object the API server has not marked)."""
    meta = obj.get("metadata") or {}
    if not deleting or meta.get("deletionTimestamp"):
        return obj
    return {**obj, "metadata": {**meta, "deletionTimestamp": "deleting"}}


class _Unread:
    """The type of :data:`UNREAD`."""

    def __repr__(self) -> str:
        return "UNREAD"


#: A field of a plan's ``Read`` that was not read (yet).
UNREAD: Any = _Unread()


class Needed(Exception):
    """A plan looked at the read ``key`` that was not read yet."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def need(found: Any, key: str) -> Any:
    """``found.<key>``; raises :class:`Needed` when it is :data:`UNREAD`."""
    value = getattr(found, key)
    if value is UNREAD:
        raise Needed(key)
    return value


R = TypeVar("R")


def read_as_needed(found: R, needs: Callable[[R], str | None], fetch: Mapping[str, Callable[[], Any]],
                   error: type[Exception], refused: Callable[[Any], Refused]) -> R:
    """Fill ``found`` (a frozen dataclass whose unread fields are :data:`UNREAD`) one read at a time:
    while ``needs(found)`` names a field, set it to ``fetch[name]()``, or to ``refused(exc)`` when that
    raises ``error`` (any other exception, ``fencing.FenceError``, propagates). Raises
    ``RuntimeError`` when the plan asks for a field twice (a plan bug that would otherwise loop)."""
    seen: set[str] = set()
    while (key := needs(found)) is not None:
        if key in seen:
            raise RuntimeError(f"the plan needs {key!r} again")
        seen.add(key)
        try:
            value = fetch[key]()
        except error as exc:
            value = refused(exc)
        found = _replace(found, **{key: value})  # type: ignore[type-var]
    return found


@dataclass(frozen=True)
class Refused(HttpStatus):
    """A provider request that failed: the HTTP ``status`` (0 when no answer came), the API's own
    ``message`` (what conditions quote) and ``text``, the error as the client prints it (``str(err)``,
    e.g. Azure's ``(Code) message``)."""

    status: int
    message: str
    text: str = ""


C = TypeVar("C")


class CallPlan(Protocol[C]):
    """What :func:`make_calls` needs of a plan: its calls (each with ``method`` and ``args``), the Outcome
    once all were made (:meth:`done`, given their answers in order) and the Outcome of a refused one."""

    @property
    def calls(self) -> Sequence[C]: ...

    def done(self, answers: Sequence[Any] = ()) -> Outcome: ...

    def failed(self, call: C, refused: Refused) -> Outcome: ...


def make_calls(client: Any, plan: CallPlan[Any], error: type[Exception],
               refused: Callable[[Any], Refused]) -> Outcome:
    """Make ``plan``'s calls on ``client`` in order (``getattr(client, call.method)(*call.args)``) and
    answer the Outcome they lead to: :meth:`CallPlan.done` with their answers, or at the first call that
    raises ``error``, :meth:`CallPlan.failed` with ``refused(exc)`` (later calls are not made). Any
    other exception (``fencing.FenceError``) propagates."""
    answers = []
    for call in plan.calls:
        try:
            answers.append(getattr(client, call.method)(*call.args))
        except error as exc:
            return plan.failed(call, refused(exc))
    return plan.done(answers)


@dataclass(frozen=True)
class KwCall:
    """One provider write made by keyword, ``<client>.<method>(**kwargs)``, with what its refusal means:
    an Error ``reason`` with ``message`` (followed by the provider's own message when ``with_cause``),
    back after ``retry`` seconds (scaled by the plan's ``t``; ``None``: the Error is the only condition
    and the reconcile fails with backoff)."""

    method: str
    kwargs: Mapping[str, Any]
    message: str
    reason: str = names.REASON_CLOUD_PROVIDER_ERROR
    with_cause: bool = False
    retry: float | None = 60.0


def with_calls(run: StepBuilder, t: Callable[[float], float], outcome: Outcome, calls: Sequence[KwCall] = (),
               *, operation: bool = False, transient: float = 10.0) -> Outcome:
    """``outcome`` with ``calls`` made first, in order, and what a refused one means (pure):

    - a transient failure (:attr:`kube.refusal.Failure.retryable`): back after the failure's ``delay``
      (else ``transient`` seconds), scaled by ``t``, with the plan's status changes so far;
    - any other: the call's Error (not exclusive: the other conditions stay), back after its ``retry``
      (a call without one: the only condition, and the reconcile fails with backoff).

    ``operation``: the last call answers a long-running operation's name, recorded in ``opIdentifier``
    (GCP). ``run`` is the plan's builder: a refusal's status builds on the plan's changes."""
    if not calls:
        return outcome
    writes = tuple(Call(c.method, kwargs=dict(c.kwargs), kind=c.message) for c in calls)

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome:
        call = calls[next(i for i, w in enumerate(writes) if w is write)]
        if failure.retryable:
            return run.step(requeue_after=t(failure.delay if failure.delay is not None else transient))
        message = f"{call.message}{failure.message}" if call.with_cause else call.message
        if call.retry is None:
            return run.fail(call.reason, message, backoff=True)
        return run.fail(call.reason, message, requeue_after=t(call.retry), exclusive=False)

    def started(answers: Sequence[Any]) -> Outcome:
        run.set(opIdentifier=str(answers[-1] or "") or None)
        return run.step(requeue_after=outcome.requeue_after)

    return _replace(outcome, writes=(*outcome.writes, *writes), refused=refused,
                   then=started if operation else outcome.then)
