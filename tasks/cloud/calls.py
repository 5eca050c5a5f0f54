"""Provider calls of a plan, and their refusals, as plain data (pure: imports no SDK).

A provider plan (``tasks/cloud/<provider>/*_plan.py``) decides over what its client read and answers
the writes to make as calls (``Client.<method>(*args)``, :func:`with_planned` / :func:`with_calls`) in the
:class:`~kube.toolkit.Outcome` they lead to; :func:`kube.toolkit.execute` makes them. A read or a write the
provider refused reaches the plan as a :class:`~kube.refusal.Failure`, so the plan never sees the SDK's or
the client's exception types.

A plan over a chain of dependent resources (each needed only once the one before it is done) may
say which read it needs next instead of being given everything: its ``Read`` fields start as
:data:`UNREAD`, the plan takes each through :func:`need` (which raises :class:`Needed` for an unread
one, and the plan answers that name), and :func:`read_as_needed` makes the reads one at a time, in
the plan's order, until the plan needs none (the plan raises :class:`Needed`; :func:`needed` turns
that into the name). So a turn reads exactly what the decision looks at,
all before any write, and the decision stays in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as _replace
from typing import Any, Protocol, TypeVar

from kube.refusal import Failure, Refusal
from kube.toolkit.actions import Call, Write
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["UNREAD", "KwCall", "Needed", "Planned", "attempt", "marked_deleting", "need", "needed",
           "read_as_needed", "with_calls", "with_planned"]

def attempt(fn: Callable[..., Any], *args: Any) -> tuple[Any, Failure | None]:
    """``(fn(*args), None)``, or ``(None, its failure)`` when a client refused it (a
    :class:`~kube.refusal.Refusal`: a read whose failure the plan answers); any other exception
    (``fencing.FenceError``) propagates."""
    try:
        return fn(*args), None
    except Refusal as err:
        return None, err.failure


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


def read_as_needed(found: R, needs: Callable[[R], str | None], fetch: Mapping[str, Callable[[], Any]]) -> R:
    """Fill ``found`` (a frozen dataclass whose unread fields are :data:`UNREAD`) one read at a time:
    while ``needs(found)`` names a field, set it to ``fetch[name]()``, or to the refusal's
    :class:`~kube.refusal.Failure` when that raises a client's :class:`~kube.refusal.Refusal` (any other
    exception, ``fencing.FenceError``, propagates). Raises
    ``RuntimeError`` when the plan asks for a field twice (a plan bug that would otherwise loop)."""
    seen: set[str] = set()
    while (key := needs(found)) is not None:
        if key in seen:
            raise RuntimeError(f"the plan needs {key!r} again")
        seen.add(key)
        try:
            value = fetch[key]()
        except Refusal as exc:
            value = exc.failure
        found = _replace(found, **{key: value})  # type: ignore[type-var]
    return found


C = TypeVar("C", bound="Planned")


class Planned(Protocol):
    """A provider write as a plan describes it: ``<client>.<method>(*args)`` (and what its refusal means,
    the plan's own fields)."""

    @property
    def method(self) -> str: ...

    @property
    def args(self) -> tuple[Any, ...]: ...


def with_planned(calls: Sequence[C], done: Callable[[Sequence[Any]], Outcome],
                 failed: Callable[[C, Failure], Outcome]) -> Outcome:
    """The Outcome that makes ``calls`` in order through the turn's default client, then is
    ``done(answers)`` (their answers, in order); the first refused one ends the turn with
    ``failed(call, failure)`` (the calls after it are not made). No calls: ``done(())`` (pure; the
    executor, :func:`kube.toolkit.execute`, makes them)."""
    if not calls:
        return done(())
    writes = tuple(Call(c.method, tuple(c.args), kind=c.method) for c in calls)

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome:
        return failed(calls[next(i for i, w in enumerate(writes) if w is write)], failure)

    return Outcome(writes=writes, then=done, refused=refused)


def needed(decide: Callable[[], Any]) -> str | None:
    """The field of a ``Read`` that ``decide()`` (a plan over it) looks at unread (it raised
    :class:`Needed`), ``None`` when it needs none: the ``needs`` of :func:`read_as_needed`."""
    try:
        decide()
    except Needed as exc:
        return exc.key
    return None


@dataclass(frozen=True)
class KwCall:
    """One provider write made by keyword, ``<client>.<method>(**kwargs)``, with what its refusal means:
    an Error ``reason`` with ``message`` (followed by the provider's own message when ``with_cause``),
    back after ``retry`` seconds (scaled by the plan's ``t``; ``None``: the Error is the only condition
    and the reconcile fails with backoff); ``client``: which of the turn's clients (``""``: the default one)."""

    method: str
    kwargs: Mapping[str, Any]
    message: str
    reason: str = names.REASON_CLOUD_PROVIDER_ERROR
    with_cause: bool = False
    retry: float | None = 60.0
    client: str = ""


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
    writes = tuple(Call(c.method, kwargs=dict(c.kwargs), client=c.client, kind=c.message) for c in calls)

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
