"""Writing an object's ``status`` only when it changes (the original avoids status churn: #1815, #983).

:class:`StatusWriter` holds the object as last read or written and merge-patches the ``status``
subresource with the fields that differ. Used by every KCP controller, the provider layers (through
their context) and the SKR reconcilers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kube import Kube, Resource
from tasks.cloud import conditions as cond
from tasks.cloud import names

__all__ = ["StatusWriter"]


class StatusWriter:
    """The status of one object of ``res`` in ``kube``'s cluster.

    Args:
        kube: the cluster's client.
        res: the object's kind.
        obj: the object as read (``metadata.name``/``namespace`` identify it).
        now: the clock for condition transition times (RFC 3339).
    """

    def __init__(self, kube: Kube, res: Resource, obj: Mapping[str, Any],
                 now: Callable[[], str] = cond.now_rfc3339) -> None:
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
        return [dict(c) for c in (self.obj.get("status") or {}).get("conditions") or []]

    @property
    def state(self) -> str:
        return str((self.obj.get("status") or {}).get("state") or "")

    def patch(self, **fields: Any) -> bool:
        """Set status fields (``None`` removes one); writes only when something differs. Returns
        whether a write happened. Raises ``kube.ApiError``."""
        current = self.obj.get("status") or {}
        changes = {k: v for k, v in fields.items()
                   if (v is None and k in current) or (v is not None and current.get(k) != v)}
        if not changes:
            return False
        meta = self.obj.get("metadata") or {}
        self.obj = self.kube.patch_status(self.res, str(meta["name"]), changes, meta.get("namespace"))
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
        """Only this condition (the original's exclusive conditions), and ``state``."""
        new = cond.condition(type_, status, reason, message, self.now())
        return self.set_conditions(cond.set_exclusive(self.conditions, new), state, **fields)

    def fail(self, reason: str, message: str, state: str = names.STATE_ERROR, type_: str = names.COND_ERROR) -> bool:
        """State ``state`` (``Error``) and the exclusive condition ``type_/True`` with ``reason``, ``message``;
        a Warning Event with the same words is recorded when the status changed."""
        changed = self.exclusive(type_, True, reason, message, state)
        if changed:
            self.kube.emit_event(self.obj, reason, message, "Warning")
        return changed

    def ready(self, message: str = "Ready", **fields: Any) -> bool:
        """State ``Ready`` and the single condition ``Ready/True`` reason ``Ready``."""
        return self.exclusive(names.COND_READY, True, names.REASON_READY, message, names.STATE_READY, **fields)

    def without(self, type_: str) -> bool:
        """Remove the condition of ``type_`` (if present)."""
        if cond.find(self.conditions, type_) is None:
            return False
        return self.patch(conditions=cond.remove(self.conditions, type_))
