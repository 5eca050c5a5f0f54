"""Applying desired objects: :class:`Action` (pure data) and :func:`apply_actions` (the one writer).

api-gateway's ``applyChanges``: the plan computes the actions (create / update / delete, pure), one
function writes them in order and stops at the first refused write, whose message becomes the
object's status. A stale ``resourceVersion`` (``Conflict``) is not a refusal: the reconcile runs again
on fresh state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kube.client import Kube
from kube.errors import ApiError, Conflict, ResourceMissing
from kube.resources import Resource
from kube.toolkit.actions import Action, Verb

__all__ = ["Action", "ApplyError", "Verb", "apply_actions"]

log = logging.getLogger("reconcilery.kube.toolkit")

@dataclass(frozen=True)
class ApplyError:
    """The first refused write: the action and the API server's words (``message``)."""

    action: Action
    status: int
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.action.describe()}: {self.message}"


def apply_actions(kube: Kube, actions: Iterable[Action], resources: Mapping[str, Resource], *,
                  raise_missing: bool = False,
                  written: Callable[[Action], None] | None = None) -> ApplyError | None:
    """Write ``actions`` in order (create, replace, delete; a delete of a missing object is done)
    and stop at the first refused write, which is returned (``None``: all applied). ``resources``
    maps each action's ``kind`` to its resource. ``written(action)`` is called after each write
    (metrics). Raises ``kube.Conflict`` (the object changed since it was read: reconcile again),
    ``kube.ResourceMissing`` for a kind no longer served when ``raise_missing`` (the reads said it
    was served: read again; otherwise it is a refused write), and ``KeyError`` for an unknown kind."""
    for action in actions:
        res = action.resource or resources[action.kind]
        try:
            if action.verb == "create":
                kube.create(res, action.object)
            elif action.verb == "update":
                kube.replace(res, action.object)
            else:
                kube.delete(res, action.name, action.namespace or None)
        except ApiError as exc:
            if isinstance(exc, Conflict) or (raise_missing and isinstance(exc, ResourceMissing)):
                raise
            log.warning("apply refused action=%s status=%s error=%s", action.describe(), exc.status, exc.message)
            return ApplyError(action, exc.status, exc.reason or str(exc.status), exc.message)
        if written is not None:
            written(action)
    return None
