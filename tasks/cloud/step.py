"""Cloud words on top of :mod:`kube.toolkit`: building the :class:`~kube.toolkit.Outcome` of one Cloud plan (pure).

Every Cloud plan (SKR and KCP, every provider) answers a toolkit :class:`~kube.toolkit.Outcome`: a JSON
merge patch of ``.status`` (written only when it changed), an Event, the finalizer decision and when
to come back; one applier (:func:`kube.toolkit.execute`) writes it. :class:`StepBuilder` collects the
status changes of one plan over the status as read and answers the Outcome, with the Cloud habits:
exclusive Error / Ready conditions (cloud-manager's ``SetExclusiveConditions``), a Warning Event
with the same words when an error changed the status, state ``Error`` / ``Ready``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kube.toolkit.conditions as cond
from kube.clock import now_rfc3339
from kube.toolkit.conditions import condition, set_condition, set_exclusive
from kube.toolkit.outcome import Event, Outcome, status_patch
from tasks.cloud import names
from tasks.cloud.validate import quota_exceeded

READY = names.STATE_READY
ERROR = names.STATE_ERROR

__all__ = ["ERROR", "READY", "Event", "Outcome", "StepBuilder", "go_list", "gone", "status_patch"]


def go_list(items: Sequence[str]) -> str:
    """A list as Go's ``%v`` prints a string slice, ``[a b c]`` (the original's messages naming objects)."""
    return "[" + " ".join(items) + "]"


def gone() -> Outcome:
    """Every cloud resource of the object is gone: the finalizer (Cloud Manager's) may go."""
    return Outcome(remove_finalizer=names.FINALIZER)


class StepBuilder:
    """The status changes of one plan over ``obj`` (as read), answered as a :class:`Outcome`.

    Args:
        obj: the object as read (``metadata``, ``status``).
        now: the clock for condition transition times (RFC 3339; default: now).
    """

    def __init__(self, obj: Mapping[str, Any], now: str | None = None) -> None:
        self.obj = obj
        self.name = str((obj.get("metadata") or {}).get("name") or "")
        self.namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        self.spec: dict[str, Any] = dict(obj.get("spec") or {})
        self.status: dict[str, Any] = dict(obj.get("status") or {})
        self.now = now or now_rfc3339()
        self.changes: dict[str, Any] = {}

    @property
    def deleting(self) -> bool:
        """Whether the object has a ``deletionTimestamp``."""
        return bool((self.obj.get("metadata") or {}).get("deletionTimestamp"))

    def current(self, key: str) -> Any:
        """``status.<key>`` with this plan's changes applied."""
        return self.changes[key] if key in self.changes else self.status.get(key)

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """The conditions with this plan's changes applied."""
        return [dict(c) for c in self.current("conditions") or []]

    def set(self, **fields: Any) -> StepBuilder:
        """Change status fields (``None`` removes one)."""
        self.changes.update(fields)
        return self

    def without(self, type_: str) -> StepBuilder:
        """Remove the condition of ``type_`` (when present)."""
        if cond.find(self.conditions, type_) is not None:
            self.changes["conditions"] = cond.remove(self.conditions, type_)
        return self

    def step(self, **kwargs: Any) -> Outcome:
        """The Outcome: the status patch of the changes (``None`` when nothing differs) and ``kwargs``."""
        return Outcome(status=status_patch(self.status, self.changes), **kwargs)

    def exclusive(self, type_: str, status: bool, reason: str, message: str, state: str | None = None,
                  **fields: Any) -> StepBuilder:
        """Only this condition (keeping its transition time when its status did not change), and ``state``."""
        self.changes["conditions"] = set_exclusive(self.conditions, condition(type_, status, reason, message, self.now))
        if state is not None:
            self.changes["state"] = state
        self.changes.update(fields)
        return self

    def scope_missing(self, t: Callable[[float], float], *, state: str | None = ERROR,
                      exclusive: bool = True) -> Outcome:
        """The turn of a KCP object whose Scope is gone, as every cloud-manager KCP reconciler starts:
        deleting, nothing is left to clean (:func:`gone`); else the Error ``ScopeNoFound`` ``Scope
        <spec.scope.name> does not exist``, back in 60 s (``t`` scales seconds)."""
        if self.deleting:
            return gone()
        name = str((self.spec.get("scope") or {}).get("name") or "")
        return self.fail(names.REASON_SCOPE_NOT_FOUND, f"Scope {name} does not exist", requeue_after=t(60),
                         state=state, exclusive=exclusive)

    def fail(self, reason: str, message: str, *, requeue_after: float | None = None, backoff: bool = False,
             state: str | None = ERROR, type_: str = names.COND_ERROR, exclusive: bool = True) -> Outcome:
        """An Error: condition ``type_``/True ``reason`` ``message`` (the only one, or set among the others
        when not ``exclusive``) and ``state``; a Warning Event with the same words when the status
        changed; come back after ``requeue_after`` seconds, or with backoff (``backoff``), or never."""
        new = condition(type_, True, reason, message, self.now)
        self.changes["conditions"] = set_exclusive(self.conditions, new) if exclusive \
            else set_condition(self.conditions, new)
        if state is not None:
            self.changes["state"] = state
        changed = status_patch(self.status, self.changes) is not None
        return self.step(requeue_after=requeue_after, error=message if backoff else None,
                         event=Event("Warning", reason, message) if changed else None)

    def over_quota(self, everyone: Sequence[Mapping[str, Any]], quota: int | None) -> Outcome | None:
        """The quota of a new object (:func:`~tasks.cloud.validate.quota_exceeded` among ``everyone``):
        beyond it, the Outcome with the only condition ``QuotaExceeded`` and state Error; else ``None``, and
        a ``QuotaExceeded`` condition from before goes (state ``Processing``)."""
        if quota_exceeded(self.obj, everyone, quota):
            self.exclusive(names.COND_QUOTA_EXCEEDED, True, names.REASON_QUOTA_EXCEEDED,
                           f"Maximum number of {quota} resources exceeded", names.STATE_ERROR)
            return self.step()
        if cond.find(self.conditions, names.COND_QUOTA_EXCEEDED) is not None:
            self.without(names.COND_QUOTA_EXCEEDED).set(state=names.STATE_PROCESSING)
        return None

    def ready(self, message: str = names.REASON_READY, **fields: Any) -> Outcome:
        """State ``Ready`` and the single condition Ready/True ``Ready`` ``message`` (and ``fields``)."""
        return self.exclusive(names.COND_READY, True, names.REASON_READY, message, READY, **fields).step()

    def started(self, state: str, operation: str, wait: float) -> Outcome:
        """A long-running cloud operation started: ``state``, ``opIdentifier``; come back after ``wait``."""
        self.changes["state"] = state
        self.changes["opIdentifier"] = operation
        return self.step(requeue_after=wait)
