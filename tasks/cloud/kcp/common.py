"""Helpers the KCP controllers share: finalizers, labels, consumers of an object (thin I/O over ``kube``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kube import Kube, Resource, ResourceMissing
from tasks.cloud import names

__all__ = ["add_finalizer", "deleting", "ignored", "list_served", "remove_finalizer", "used_by"]


def deleting(obj: Mapping[str, Any]) -> bool:
    """Whether the object has a deletionTimestamp."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def ignored(obj: Mapping[str, Any]) -> bool:
    """Whether the object carries the ``cloud-manager.kyma-project.io/ignore`` label (reconcilers skip it)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get(names.LABEL_IGNORE, "")).lower() in ("true", "1", "yes")


def _finalizers(kube: Kube, res: Resource, obj: dict[str, Any], finalizers: list[str]) -> dict[str, Any]:
    meta = obj["metadata"]
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
    return kube.patch(res, meta["name"], patch, meta.get("namespace"))


def add_finalizer(kube: Kube, res: Resource, obj: dict[str, Any], finalizer: str = names.FINALIZER) -> dict[str, Any]:
    """``obj`` with ``finalizer`` added (a merge patch with a resourceVersion precondition: a concurrent
    change raises ``kube.Conflict``); unchanged when present."""
    current = list((obj.get("metadata") or {}).get("finalizers") or [])
    if finalizer in current:
        return obj
    return _finalizers(kube, res, obj, [*current, finalizer])


def remove_finalizer(kube: Kube, res: Resource, obj: dict[str, Any],
                     finalizer: str = names.FINALIZER) -> dict[str, Any] | None:
    """Remove ``finalizer`` (and the legacy ones); the object, or ``None`` once it is gone."""
    current = list((obj.get("metadata") or {}).get("finalizers") or [])
    keep = [f for f in current if f != finalizer and f not in names.LEGACY_FINALIZERS]
    if keep == current:
        return obj
    try:
        return _finalizers(kube, res, obj, keep)
    except ResourceMissing:
        return None


def list_served(kube: Kube, res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
    """Objects of ``res`` (``[]`` when the kind is not served)."""
    try:
        return kube.list(res, namespace)
    except ResourceMissing:
        return []


def used_by(kube: Kube, kinds: Iterable[Resource], namespace: str | None, iprange: str,
            default_name: str = "") -> dict[str, list[str]]:
    """``kind -> [ns/name ...]`` of the objects of ``kinds`` whose ``spec.ipRange.name`` is ``iprange``
    (an empty reference counts as ``default_name``)."""
    found: dict[str, list[str]] = {}
    for res in kinds:
        for obj in list_served(kube, res, namespace):
            ref = str(((obj.get("spec") or {}).get("ipRange") or {}).get("name") or default_name)
            if ref == iprange:
                meta = obj.get("metadata") or {}
                found.setdefault(res.kind, []).append(f"{meta.get('namespace', '')}/{meta.get('name')}")
    return found


def go_list(items: Iterable[str]) -> str:
    """A list as Go's ``%v`` prints a string slice: ``[a b c]``."""
    return "[" + " ".join(items) + "]"
