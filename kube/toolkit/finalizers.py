"""Finalizers: add and remove one with a resourceVersion precondition (thin I/O over ``kube``; the
predicates ``has_finalizer`` / ``deleting`` are pure: :mod:`kube.toolkit.outcome`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kube.client import Kube
from kube.errors import NotFound, ResourceMissing
from kube.resources import Resource

__all__ = ["add_finalizer", "remove_finalizer", "set_finalizers"]


def set_finalizers(kube: Kube, res: Resource, obj: Mapping[str, Any], finalizers: list[str]) -> dict[str, Any]:
    """Merge-patch ``metadata.finalizers`` to ``finalizers`` under the read ``resourceVersion``: a
    concurrent change raises ``kube.Conflict`` (the reconcile runs again on fresh state). Returns the
    object as written. Raises ``kube.ApiError``."""
    meta = obj.get("metadata") or {}
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
    return kube.patch(res, str(meta.get("name")), patch, meta.get("namespace"))


def add_finalizer(kube: Kube, res: Resource, obj: dict[str, Any], finalizer: str) -> dict[str, Any]:
    """``obj`` with ``finalizer`` appended (unchanged, without a request, when present)."""
    current = [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or []]
    if finalizer in current:
        return obj
    return set_finalizers(kube, res, obj, [*current, finalizer])


def remove_finalizer(kube: Kube, res: Resource, obj: dict[str, Any], finalizer: str,
                     legacy: Iterable[str] = ()) -> dict[str, Any] | None:
    """Remove ``finalizer`` (and the ``legacy`` names of it). Returns the object as written (the API
    server deletes a deleting object right after its last finalizer goes), ``obj`` unchanged without
    a request when none is present, or ``None`` when the object is already gone."""
    current = [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or []]
    drop = {finalizer, *legacy}
    keep = [f for f in current if f not in drop]
    if keep == current:
        return obj
    try:
        return set_finalizers(kube, res, obj, keep)
    except (NotFound, ResourceMissing):
        return None
