"""What a pure plan answers: a :class:`Step` (pure data, no I/O).

A plan never writes to Kubernetes: it answers a Step that :func:`kube.toolkit.status.carry_out`
applies — the finalizer to add or remove, a JSON merge patch of ``.status``, an Event, and when to
come back. This is api-gateway's split (``getDesiredState`` / diff are pure, one ``applyChanges``
writes) and cloud-manager's action results (``StopWithRequeueDelay``, ``StopAndForget``) as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kube.toolkit.conditions import same

__all__ = ["Event", "Step", "status_patch"]


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record on the reconciled object; ``type`` is ``Normal`` or ``Warning``."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Step:
    """The outcome of one plan.

    Attributes:
        status: JSON merge patch (RFC 7386) of the object's ``.status`` (a ``None`` value deletes a
            key; lists such as ``conditions`` are replaced whole); ``None`` when nothing changed.
        event: an Event to record after the status is written (errors a user can act on).
        add_finalizer: a finalizer to add before anything else is written.
        remove_finalizer: a finalizer to remove last (every owned resource is gone).
        requeue_after: seconds until the object is reconciled again; ``None``: not scheduled.
        error: the reconcile failed and is retried with the controller's per-key backoff (the
            message is for logs and metrics; what the user reads goes to ``status``/``event``).
    """

    status: dict[str, Any] | None = None
    event: Event | None = None
    add_finalizer: str | None = None
    remove_finalizer: str | None = None
    requeue_after: float | None = None
    error: str | None = None

    def as_result(self) -> Any:
        """The engine's ``workers.controller.Result`` for this step (after it was carried out)."""
        from workers.controller import Result  # lower layer than workers: resolved at call time

        if self.error is not None:
            return Result.error(self.error)
        if self.requeue_after is not None:
            return Result.requeue(self.requeue_after)
        return Result.done()


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
