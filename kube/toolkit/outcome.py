"""What a pure plan answers: one :class:`Outcome` (pure data, no I/O), and the predicates every plan uses.

A plan never writes: it answers an Outcome that :func:`kube.toolkit.execute.execute` carries out — the
finalizer to add, the writes in order (Kubernetes :class:`~kube.toolkit.actions.Action` s and provider
:class:`~kube.toolkit.actions.Call` s), a JSON merge patch of ``.status`` written once, an Event, the
finalizer to remove last, and when to come back. What the answers of the writes mean (an id to
record) is :attr:`Outcome.then`, what a refused write means is :attr:`Outcome.refused`: both pure.
This is api-gateway's split (``getDesiredState`` / diff are pure, one ``applyChanges`` writes) and
cloud-manager's action results (``StopWithRequeueDelay``, ``StopAndForget``) as data.

The predicates (:func:`has_finalizer`, :func:`deleting`, :func:`status_changed`) are the one
definition of each for every plan of every domain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kube.refusal import Failure
from kube.toolkit.actions import Write
from kube.toolkit.conditions import same

if TYPE_CHECKING:  # the engine's result type: a higher layer, named for the checker only
    from workers.controller import Result

__all__ = ["Event", "Outcome", "at_end", "deleting", "has_finalizer", "status_changed", "status_patch"]


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record on the reconciled object; ``type`` is ``Normal`` or ``Warning``."""

    type: str
    reason: str
    message: str


#: ``(answers of the writes made, in order) -> the Outcome they lead to``.
Then = Callable[[Sequence[Any]], "Outcome"]
#: ``(the refused write, its failure, answers of the writes before it) -> the Outcome it leads to``, or
#: ``None``: the refusal does not stop the writes (the next one follows; the failure is its answer).
Refused = Callable[[Write, Failure, Sequence[Any]], "Outcome | None"]


@dataclass(frozen=True)
class Outcome:
    """The outcome of one plan: what to write, in which order, and what to answer the engine.

    Attributes:
        status: JSON merge patch (RFC 7386) of the object's ``.status`` (a ``None`` value deletes a
            key; lists such as ``conditions`` are replaced whole); ``None`` when nothing changed.
        event: an Event to record after the status is written (errors a user can act on).
        add_finalizer: a finalizer to add before anything else is written.
        remove_finalizer: a finalizer to remove last (every owned resource is gone).
        requeue_after: seconds until the object is reconciled again; ``None``: not scheduled.
        error: the reconcile failed and is retried with the controller's per-key backoff (the
            message is for logs and metrics; what the user reads goes to ``status``/``event``).
        writes: Kubernetes actions and provider calls, made in order after the finalizer is added.
        then: the Outcome once every write was made, given their answers (``None``: this one). Its
            own writes are made too; its ``add_finalizer`` is ignored (already added).
        refused: what a refused write means (``None``: the default of
            :func:`~kube.toolkit.execute.execute`: a Kubernetes error propagates, a provider call's
            transient failure comes back after its delay, any other fails with backoff).
        handoff: the stage the reconcile goes on with once this outcome is carried out (``None``: it
            ends here). A controller of stages reads it: Cloud's KCP controllers hand an object to its
            Scope's provider with ``"reconcile"`` or ``"delete"`` after the provider-independent part.
    """

    status: dict[str, Any] | None = None
    event: Event | None = None
    add_finalizer: str | None = None
    remove_finalizer: str | None = None
    requeue_after: float | None = None
    error: str | None = None
    writes: tuple[Write, ...] = ()
    then: Then | None = None
    refused: Refused | None = None
    handoff: str | None = None

    def also(self, *writes: Write) -> Outcome:
        """This outcome with ``writes`` made after its own."""
        return replace(self, writes=(*self.writes, *writes)) if writes else self

    def first(self, *writes: Write) -> Outcome:
        """This outcome with ``writes`` made before its own."""
        return replace(self, writes=(*writes, *self.writes)) if writes else self

    def as_result(self) -> Result:
        """The engine's ``workers.controller.Result`` for this outcome (after it was carried out)."""
        from workers.controller import Result  # a higher layer than kube: resolved at call time

        if self.error is not None:
            return Result.error(self.error)
        if self.requeue_after is not None:
            return Result.requeue(self.requeue_after)
        return Result.done()


def at_end(outcome: Outcome, last: Callable[[Outcome], Outcome]) -> Outcome:
    """``outcome`` whose final outcome, the one the executor ends with after its writes and their
    ``then`` / ``refused`` (a refusal the plan leaves to the executor's default excepted), is
    ``last(final)`` (pure). ``last`` may add writes: they are made after the ones before it, e.g. the
    objects of the turn's own that go once its provider released the finalizer."""
    if not outcome.writes and outcome.then is None:
        return last(outcome)
    then, refused = outcome.then, outcome.refused

    def after(answers: Sequence[Any]) -> Outcome:
        return at_end(then(answers) if then is not None else replace(outcome, writes=(), refused=None), last)

    def failed(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        handled = refused(write, failure, answers) if refused is not None else None
        return None if handled is None else at_end(handled, last)

    return replace(outcome, then=after, refused=failed if refused is not None else None)


def deleting(obj: Mapping[str, Any]) -> bool:
    """Whether the object has a ``deletionTimestamp``."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Whether ``finalizer`` is in the object's ``metadata.finalizers``."""
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def status_patch(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch taking ``current`` (a ``.status``) to ``current`` updated with ``desired`` (only
    the keys of ``desired``; a ``None`` value removes the key). ``None`` when nothing would change;
    ``conditions`` are compared without ``lastTransitionTime`` and order (no status churn on resync:
    cloud-manager #1815, #983)."""
    current = current or {}
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if key == "conditions":
            old: Sequence[dict[str, Any]] | None = current.get("conditions")
            if not same(old, value):
                patch[key] = value
        elif value is None:
            if current.get(key) not in (None, ""):
                patch[key] = None
        elif current.get(key) != value:
            patch[key] = value
    return patch or None


def status_changed(current: Mapping[str, Any] | None, desired: Mapping[str, Any],
                   ignore: Sequence[str] = ()) -> bool:
    """Whether writing ``desired`` over ``current`` (both ``.status``) would change anything, by the one
    comparison of :func:`status_patch` (conditions without their transition times and order); keys in
    ``ignore`` (a timestamp such as ``lastProcessedTime``) do not count."""
    if ignore:
        desired = {k: v for k, v in desired.items() if k not in ignore}
    return status_patch(current, desired) is not None
