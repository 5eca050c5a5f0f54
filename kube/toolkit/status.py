"""Writing ``.status`` only when it changed (the executor's status write, and :class:`StatusWriter`).

Status writes are JSON merge patches of the ``status`` subresource with only the fields that differ,
so an unchanged resync writes nothing (controller-runtime's habit; cloud-manager #1815, #983).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kube.client import Kube
from kube.clock import now_rfc3339
from kube.resources import Resource
from kube.toolkit import conditions as cond
from kube.toolkit.outcome import Event, status_patch

__all__ = ["StatusWriter", "write_status"]


def write_status(kube: Kube, res: Resource, obj: Mapping[str, Any], patch: Mapping[str, Any] | None,
                 event: Event | None = None) -> dict[str, Any] | None:
    """Merge-patch ``obj``'s ``status`` subresource with ``patch`` and then record ``event``; nothing
    (no request) when ``patch`` is ``None`` or empty — the caller's pure code decided that nothing
    changed. Returns the object as written, or ``None`` when nothing was written. Raises
    ``kube.ApiError`` (``NotFound`` once the object is gone)."""
    written = None
    if patch:
        meta = obj.get("metadata") or {}
        written = kube.patch_status(res, str(meta.get("name")), dict(patch), meta.get("namespace"))
    if event is not None:
        kube.emit_event(dict(written or obj), event.reason, event.message, event.type)
    return written


class StatusWriter:
    """The status of one object of ``res`` in ``kube``'s cluster, written only when it changes.

    Holds the object as last read or written, so several writes in one reconcile each compare with
    what the API server has. For the Cloud reconcilers' status helpers and any controller that sets
    conditions step by step.

    Args:
        kube: the cluster's client.
        res: the object's kind.
        obj: the object as read (``metadata.name``/``namespace`` identify it).
        now: the clock for condition transition times (RFC 3339).
    """

    def __init__(self, kube: Kube, res: Resource, obj: Mapping[str, Any],
                 now: Callable[[], str] = now_rfc3339) -> None:
        self.kube = kube
        self.res = res
        self.obj: dict[str, Any] = dict(obj)
        self.now = now
        self.writes = 0

    @property
    def status(self) -> dict[str, Any]:
        """A copy of the current status."""
        return copy.deepcopy(self.obj.get("status") or {})

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """Copies of the current conditions."""
        return [dict(c) for c in (self.obj.get("status") or {}).get("conditions") or []]

    @property
    def state(self) -> str:
        """``status.state`` (``""`` when unset)."""
        return str((self.obj.get("status") or {}).get("state") or "")

    def patch(self, **fields: Any) -> bool:
        """Set status fields (``None`` removes one); writes only what differs, by the one comparison
        of :func:`status_patch` (conditions without their transition times). Returns whether a write
        happened. Raises ``kube.ApiError``."""
        changes = status_patch(self.obj.get("status"), fields)
        if changes is None:
            return False
        written = write_status(self.kube, self.res, self.obj, changes)
        if written is not None:
            self.obj = written
        self.writes += 1
        return True

    def set_conditions(self, conditions: list[dict[str, Any]], state: str | None = None, **fields: Any) -> bool:
        """Replace the conditions (and ``state``) unless they say the same already."""
        if state is not None:
            fields["state"] = state
        if not cond.same(conditions, self.conditions):
            fields["conditions"] = conditions
        return self.patch(**fields)

    def exclusive(self, type_: str, status: bool, reason: str, message: str, state: str | None = None,
                  **fields: Any) -> bool:
        """Only this condition (cloud-manager's exclusive conditions), and ``state``."""
        new = cond.condition(type_, status, reason, message, self.now())
        return self.set_conditions(cond.set_exclusive(self.conditions, new), state, **fields)

    def fail(self, reason: str, message: str, state: str = "Error", type_: str = "Error") -> bool:
        """State ``state`` and the exclusive condition ``type_/True`` with ``reason``, ``message``; a
        Warning Event with the same words is recorded when the status changed."""
        changed = self.exclusive(type_, True, reason, message, state)
        if changed:
            self.kube.emit_event(self.obj, reason, message, "Warning")
        return changed

    def ready(self, message: str = "Ready", reason: str = "Ready", state: str = "Ready", **fields: Any) -> bool:
        """State ``Ready`` and the single condition ``Ready/True``."""
        return self.exclusive("Ready", True, reason, message, state, **fields)

    def without(self, type_: str) -> bool:
        """Remove the condition of ``type_`` (if present)."""
        if cond.find(self.conditions, type_) is None:
            return False
        return self.patch(conditions=cond.remove(self.conditions, type_))
