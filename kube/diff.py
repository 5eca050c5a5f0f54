"""Pure helpers every domain uses to apply desired objects: label values and selectors, owner references,
diffing.

The reconcile shape is api-gateway's: ``getDesiredState`` (pure) → ``getActualState`` (one read) →
``getObjectChanges`` (pure) → apply. These helpers are the "pure diff" part, over plain dicts.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from typing import Any

_LABEL_VALUE_OK = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value(value: str) -> str:
    """``value`` as a valid label value (<= 63 characters, alphanumeric at both ends).

    Valid values are returned unchanged; others are cut to 52 characters plus ``-`` and 10 hex of
    their SHA-256, so the result is stable and (practically) unique, and selectors can match it.
    """
    if len(value) <= 63 and _LABEL_VALUE_OK.match(value):
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:10]
    head = re.sub(r"[^-A-Za-z0-9_.]", "-", value)[:52].strip("-_.")
    return f"{head}-{digest}" if head else digest


def label_selector(labels: Mapping[str, str]) -> str:
    """``k=v,k2=v2`` (sorted) for ``kube.list(..., label_selector=...)``."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def owner_reference(owner: Mapping[str, Any], controller: bool = True,
                    block_owner_deletion: bool = True) -> dict[str, Any]:
    """An ``ownerReferences`` entry pointing at ``owner`` (same namespace/cluster only).

    Raises ``ValueError`` when ``owner`` lacks apiVersion, kind, name or uid.
    """
    meta = owner.get("metadata") or {}
    fields = {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"),
              "name": meta.get("name"), "uid": meta.get("uid")}
    missing = [k for k, v in fields.items() if not v]
    if missing:
        raise ValueError(f"owner reference needs {', '.join(missing)}")
    return {**fields, "controller": controller, "blockOwnerDeletion": block_owner_deletion}


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def is_subset(desired: Any, actual: Any) -> bool:
    """Whether ``actual`` already has everything ``desired`` sets (semantic subset compare).

    Dicts: every key of ``desired`` is a subset in ``actual``, extra keys in ``actual`` (server
    defaults) are fine; ``None``/``{}``/``[]`` in ``desired`` match a missing key. Lists: same
    length and element-wise subset (the server defaults fields inside list items, e.g. a Service
    port's ``protocol``). Scalars: equal (``1 == 1.0``).
    """
    if isinstance(desired, Mapping):
        if not isinstance(actual, Mapping):
            return _empty(desired) and _empty(actual)
        for key, value in desired.items():
            if key not in actual:
                if not _empty(value):
                    return False
            elif not is_subset(value, actual[key]):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(actual, list):
            return _empty(desired) and _empty(actual)
        return len(desired) == len(actual) and all(
            is_subset(d, a) for d, a in zip(desired, actual, strict=True)
        )
    if desired is None:
        return _empty(actual)
    if isinstance(desired, bool) or isinstance(actual, bool):
        return desired is actual  # True == 1 in Python, not in JSON
    return bool(desired == actual)


def needs_update(desired: Mapping[str, Any], actual: Mapping[str, Any] | None) -> bool:
    """Whether ``actual`` (the object read from the server, ``None`` if absent) differs from
    ``desired`` in anything ``desired`` sets: ``metadata.labels``, ``metadata.annotations`` and
    every top-level field but apiVersion/kind/metadata/status (``spec``, ``data``, ``webhooks``,
    ...), compared with :func:`is_subset`. Server defaults and extra labels never cause an update.
    """
    if actual is None:
        return True
    d_meta, a_meta = desired.get("metadata") or {}, actual.get("metadata") or {}
    for field in ("labels", "annotations"):
        if not is_subset(d_meta.get(field) or {}, a_meta.get(field) or {}):
            return True
    for key, value in desired.items():
        if key in ("apiVersion", "kind", "metadata", "status"):
            continue
        if not is_subset(value, actual.get(key)):
            return True
    return False


def prepare_replace(desired: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, Any]:
    """The body to PUT so ``actual`` becomes ``desired`` without dropping what others own.

    A copy of ``desired`` carrying ``actual``'s ``resourceVersion`` (so a concurrent change makes
    the PUT conflict), its labels/annotations merged under desired's, and ``actual``'s finalizers
    and ownerReferences unless ``desired`` sets them.
    """
    body = copy.deepcopy(dict(desired))
    meta = body.setdefault("metadata", {})
    a_meta = actual.get("metadata") or {}
    if a_meta.get("resourceVersion"):
        meta["resourceVersion"] = a_meta["resourceVersion"]
    for field in ("labels", "annotations"):
        merged = {**(a_meta.get(field) or {}), **(meta.get(field) or {})}
        if merged:
            meta[field] = merged
    for field in ("finalizers", "ownerReferences"):
        if field not in meta and a_meta.get(field):
            meta[field] = copy.deepcopy(a_meta[field])
    return body
