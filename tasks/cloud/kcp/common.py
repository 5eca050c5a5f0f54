"""Helpers the Cloud reconcilers share: the ignore label, consumers of an object (thin I/O over ``kube``).

Finalizers, conditions and status writes are :mod:`kube.toolkit`'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kube import Kube, Resource, ResourceMissing, client_for
from tasks.cloud import names, settings
from tasks.cloud.settings import CloudSettings
from workers.controller import Key

__all__ = ["ignored", "list_served", "load", "used_by"]


def load(key: Key, res: Resource) -> tuple[CloudSettings, Kube, dict[str, Any] | None]:
    """The settings, the key's cluster client and the object of ``key`` (``None`` when it is gone or
    carries the ignore label: the reconcile is done). Raises ``kube.ApiError``."""
    kube = client_for(key.cluster)
    obj = kube.get(res, key.name, key.namespace)
    return settings.current(), kube, None if obj is None or ignored(obj) else obj


def ignored(obj: Mapping[str, Any]) -> bool:
    """Whether the object carries the ``cloud-manager.kyma-project.io/ignore`` label (reconcilers skip it)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get(names.LABEL_IGNORE, "")).lower() in ("true", "1", "yes")


def list_served(kube: Kube, res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
    """Objects of ``res`` (``[]`` when the kind is not served)."""
    try:
        return kube.list(res, namespace)
    except ResourceMissing:
        return []


def used_by(kube: Kube, kinds: Iterable[Resource], namespace: str | None, iprange: str,
            default_name: str = "", scope: str | None = None) -> dict[str, list[str]]:
    """``kind -> [ns/name ...]`` of the objects of ``kinds`` whose ``spec.ipRange.name`` is ``iprange``
    (an empty reference counts as ``default_name``); ``scope``: only those of that Scope
    (``spec.scope.name``): an object of another tenant naming this IpRange never keeps it."""
    found: dict[str, list[str]] = {}
    for res in kinds:
        for obj in list_served(kube, res, namespace):
            spec = obj.get("spec") or {}
            ref = str((spec.get("ipRange") or {}).get("name") or default_name)
            if ref != iprange or (scope is not None and str((spec.get("scope") or {}).get("name") or "") != scope):
                continue
            meta = obj.get("metadata") or {}
            found.setdefault(res.kind, []).append(f"{meta.get('namespace', '')}/{meta.get('name')}")
    return found
