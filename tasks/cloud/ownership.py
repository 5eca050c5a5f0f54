"""Ownership before action: whether a KCP object may be touched on behalf of an SKR object (pure).

Everything read from an SKR is untrusted (docs/cloud.md, "Rule: ownership before action"): its owner can write any
``status.id`` or id label. A KCP object found by such an id is read, updated or deleted for an SKR
object only when the id is a UUID (what the reconciler itself assigns) and the KCP object carries
this SKR's kyma label and the SKR object's remote name/namespace labels. Anything else is an Error
on the SKR object, and nothing in the KCP is touched. Every Cloud kind that mirrors an SKR object
follows this rule (docs/cloud.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.step import StepBuilder

__all__ = ["REASON_INVALID_ID", "REASON_NOT_OWNED", "claim_id", "foreign", "id_label", "identity", "invalid_id",
           "owner_labels", "refusal"]

REASON_INVALID_ID = "InvalidId"
REASON_NOT_OWNED = "NotOwned"


def invalid_id(ident: str) -> str | None:
    """Why ``ident`` cannot name a KCP mirror (the user's words), or ``None`` for a canonical (lowercase,
    hyphenated) UUID."""
    try:
        if str(uuid.UUID(ident)) == ident:  # canonical: lowercase, hyphenated (a valid object name)
            return None
    except (ValueError, AttributeError, TypeError):
        pass
    return f"id {ident!r} is not a UUID"


def owner_labels(kyma: str, name: str, namespace: str = "") -> dict[str, str]:
    """The labels that tie a KCP mirror to one SKR object: kyma, remote name, remote namespace."""
    return {names.LABEL_KYMA_NAME: kyma, names.LABEL_REMOTE_NAME: name, names.LABEL_REMOTE_NAMESPACE: namespace}


def foreign(kcp_obj: Mapping[str, Any] | None, kyma: str, name: str, namespace: str = "") -> str | None:
    """Why ``kcp_obj`` is not the mirror of SKR object ``namespace/name`` of runtime ``kyma`` (the
    user's words, naming no other tenant), or ``None`` when it is (or there is none)."""
    if kcp_obj is None:
        return None
    labels = (kcp_obj.get("metadata") or {}).get("labels") or {}
    for key, value in owner_labels(kyma, name, namespace).items():
        if str(labels.get(key, "")) != value:
            return "id names a KCP object that does not belong to this object"
    return None


def identity(obj: Mapping[str, Any], new_id: str = "") -> str:
    """An SKR object's id: ``status.id``, else its id label, else ``new_id``."""
    meta = obj.get("metadata") or {}
    return str((obj.get("status") or {}).get("id") or (meta.get("labels") or {}).get(names.LABEL_SKR_ID) or new_id)


def id_label(obj: Mapping[str, Any], ident: str) -> str | None:
    """The id label to write so that ``obj`` carries ``ident`` (``None``: it does already)."""
    return None if ((obj.get("metadata") or {}).get("labels") or {}).get(names.LABEL_SKR_ID) == ident else ident


def refusal(run: StepBuilder, kind: str, claimed: str, not_owned: str | None) -> Outcome | None:
    """Ownership before action for an SKR object of ``kind`` claiming id ``claimed``: an id that is not
    a UUID is an Error ``InvalidId``, a KCP object that is not its own (``not_owned``: :func:`foreign`'s
    answer) an Error ``NotOwned``, both ``<kind> <why>``; ``None`` when neither."""
    refused = invalid_id(claimed)
    if refused is not None:
        return run.fail(REASON_INVALID_ID, f"{kind} {refused}")
    if not_owned is not None:
        return run.fail(REASON_NOT_OWNED, f"{kind} {not_owned}")
    return None


def claim_id(run: StepBuilder, new_id: str, kind: str, not_owned: str | None) -> tuple[str, str | None, Outcome | None]:
    """Ownership before action (:func:`refusal`), then the id (the original's ``updateId``) of the SKR
    object of ``kind`` that ``run`` builds for: ``(id, the id label to write or None, None)``, or
    ``("", None, the refusal)``. An object without ``status.id`` takes its id label, else ``new_id``,
    recorded in ``status.id`` with state ``Processing``."""
    ident = str(run.status.get("id") or "")
    claimed = ident or identity(run.obj, new_id)
    refused = refusal(run, kind, claimed, not_owned)
    if refused is not None:
        return "", None, refused
    if ident:
        return ident, None, None
    run.set(id=claimed, state=names.STATE_PROCESSING)
    return claimed, id_label(run.obj, claimed), None
