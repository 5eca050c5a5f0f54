"""Read-modify-write of one object with client-go's ``retry.RetryOnConflict`` (thin I/O over ``kube``).

For objects the controller does not own but keeps one field of (a caBundle in a CRD or a webhook
configuration): GET the object, let a pure function compute the updated object, and replace it
(PUT with the read ``resourceVersion``); a ``409 Conflict`` reads again, up to ``attempts`` times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kube.client import Kube
from kube.errors import Conflict
from kube.resources import Resource

__all__ = ["CONFLICT_ATTEMPTS", "update_on_conflict"]

#: client-go's ``retry.DefaultBackoff`` has 4 steps.
CONFLICT_ATTEMPTS = 4


def update_on_conflict(kube: Kube, res: Resource, name: str,
                       update: Callable[[dict[str, Any] | None], dict[str, Any] | None],
                       namespace: str | None = None, attempts: int = CONFLICT_ATTEMPTS) -> dict[str, Any] | None:
    """GET ``namespace/name`` of ``res``, call ``update(obj)`` (pure; ``obj`` is ``None`` when the
    object does not exist; it answers the updated object, or ``None`` when nothing is to change) and
    replace the object with the answer (``metadata.managedFields`` left out, as a PUT carries none).

    Returns the object as written, or ``None`` when ``update`` answered ``None`` (no write). Raises
    ``kube.Conflict`` after ``attempts`` conflicting writes and any other ``kube.ApiError``.
    """
    for attempt in range(1, attempts + 1):
        updated = update(kube.get(res, name, namespace=namespace))
        if updated is None:
            return None
        meta = updated.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        try:
            return kube.replace(res, updated)
        except Conflict:
            if attempt == attempts:
                raise
    return None
