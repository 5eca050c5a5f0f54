"""What one provider reconcile step returns, and the status helpers that build it (pure).

A step never writes to Kubernetes: it answers a :class:`Step` that the KCP controller applies — a JSON
merge patch of ``.status``, an Event, the finalizer decision and when to come back. Conditions are
``metav1.Condition`` dicts (``type``, ``status``, ``reason``, ``message``, ``lastTransitionTime``).
Status is only patched when something changed (the original compares before patching, to avoid churn).

Shared by the GCP and Azure layers (:mod:`tasks.cloud.gcp`, :mod:`tasks.cloud.azure`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

READY = "Ready"
ERROR = "Error"


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to emit on the object: ``type`` ``Normal``/``Warning``."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Step:
    """The outcome of one reconcile step.

    Attributes:
        status: JSON merge patch (RFC 7386) of the object's ``.status`` (a ``None`` value deletes a key;
            lists such as ``conditions`` are replaced whole); ``None`` when nothing changed.
        requeue_after: seconds until the object is to be reconciled again; ``None``: not scheduled.
        error: the step failed and is to be retried with the controller's per-key backoff (the
            original's ``StopWithRequeue``); the message is for logs.
        remove_finalizer: every cloud resource is gone; the controller may remove its finalizer.
        event: an Event to emit (errors a user can act on).
    """

    status: dict[str, Any] | None = None
    requeue_after: float | None = None
    error: str | None = None
    remove_finalizer: bool = False
    event: Event | None = None

    def as_result(self) -> Any:
        """The engine's ``workers.controller.Result`` for this step (after the patch is written)."""
        from workers.controller import Result

        if self.error is not None:
            return Result.error(self.error)
        if self.requeue_after is not None:
            return Result.requeue(self.requeue_after)
        return Result.done()


def now_rfc3339() -> str:
    """The current time as Kubernetes writes ``metav1.Time`` (UTC, seconds)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, reason: str, message: str, now: str, status: str = "True") -> dict[str, Any]:
    """A ``metav1.Condition`` dict."""
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}


def exclusive(current: list[dict[str, Any]] | None, *new: dict[str, Any]) -> list[dict[str, Any]]:
    """The original's "exclusive conditions": exactly ``new``, keeping ``lastTransitionTime`` of a
    condition whose type and status did not change."""
    before = {c.get("type"): c for c in current or []}
    out = []
    for cond in new:
        old = before.get(cond["type"])
        if old is not None and old.get("status") == cond["status"] and old.get("lastTransitionTime"):
            cond = {**cond, "lastTransitionTime": old["lastTransitionTime"]}
        out.append(cond)
    return out


def set_condition(current: list[dict[str, Any]] | None, cond: dict[str, Any]) -> list[dict[str, Any]]:
    """``meta.SetStatusCondition``: replace the condition of the same type (keeping the others)."""
    others = [c for c in current or [] if c.get("type") != cond["type"]]
    return [*others, *exclusive(current, cond)]


def _same_conditions(a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None) -> bool:
    def key(c: dict[str, Any]) -> tuple[Any, ...]:
        return c.get("type"), c.get("status"), c.get("reason"), c.get("message")

    return sorted(map(key, a or [])) == sorted(map(key, b or []))


def status_patch(current: dict[str, Any] | None, desired: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch taking ``current`` status to ``current`` updated with ``desired`` (only the keys
    of ``desired``; a ``None`` value removes the key). ``None`` when nothing would change; conditions
    are compared without ``lastTransitionTime``."""
    current = current or {}
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if key == "conditions":
            if not _same_conditions(current.get("conditions"), value):
                patch[key] = value
        elif value is None:
            if current.get(key) not in (None, ""):
                patch[key] = None
        elif current.get(key) != value:
            patch[key] = value
    return patch or None


__all__ = ["ERROR", "READY", "Event", "Step", "condition", "exclusive", "now_rfc3339", "set_condition",
           "status_patch"]
