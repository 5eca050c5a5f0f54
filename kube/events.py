"""Kubernetes Events as plain dicts (pure): build one, name it, bump an identical one.

Aggregation follows client-go's event recorder (``EventCorrelator``'s logger): events with the same
source, involved object, type, reason and message are one Event whose ``count`` and
``lastTimestamp`` grow. client-go keeps that key in a per-process LRU; Reconcilery runs many worker
processes, so the key is the Event's *name* (a hash of the key) and the API server is the cache.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import socket
from typing import Any

from kube.clock import now_rfc3339
from kube.resources import object_ref

SOURCE_COMPONENT = "reconcilery"
#: core/v1 accepts longer messages, events.k8s.io/v1 does not; kubectl shows them in one line.
MAX_MESSAGE_LENGTH = 1024


def involved_reference(involved: dict[str, Any]) -> dict[str, Any]:
    """The ``involvedObject`` ObjectReference of an object dict (apiVersion, kind, namespace, name,
    uid, resourceVersion; empty fields left out). Raises ``ValueError`` without ``metadata.name``."""
    meta = involved.get("metadata") or {}
    if not meta.get("name"):
        raise ValueError("an event's involved object needs metadata.name")
    ref = {
        "apiVersion": involved.get("apiVersion"),
        "kind": involved.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


def truncate_message(message: str) -> str:
    """``message`` cut to :data:`MAX_MESSAGE_LENGTH` characters (ending in ``...`` when cut)."""
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    return message[: MAX_MESSAGE_LENGTH - 3] + "..."


def event_namespace(involved: dict[str, Any]) -> str:
    """Namespace of the Event: the object's, or ``default`` for cluster-scoped objects (as client-go)."""
    return (involved.get("metadata") or {}).get("namespace") or "default"


def event_name(involved: dict[str, Any], reason: str, message: str, type_: str) -> str:
    """Deterministic Event name ``<object name>.<16 hex>`` for the aggregation key (object kind,
    apiVersion, namespace, name, uid; type; reason; message; source)."""
    ref = involved_reference(involved)
    fields = [str(ref.get(f, "")) for f in ("apiVersion", "kind", "namespace", "name", "uid")]
    key = "\x00".join([*fields, type_, reason, truncate_message(message), SOURCE_COMPONENT])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{ref['name'][:253 - 17]}.{digest}"


def new_event(involved: dict[str, Any], reason: str, message: str, type_: str = "Normal",
              now: dt.datetime | None = None, instance: str | None = None) -> dict[str, Any]:
    """A core/v1 Event dict with ``count`` 1, ``source.component`` ``reconcilery``.

    Raises ``ValueError`` when ``type_`` is not ``Normal``/``Warning`` or the object has no name.
    """
    if type_ not in ("Normal", "Warning"):
        raise ValueError(f"event type must be Normal or Warning, got {type_!r}")
    stamp = now_rfc3339(now)
    host = instance or socket.gethostname()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event_name(involved, reason, message, type_),
            "namespace": event_namespace(involved),
        },
        "involvedObject": involved_reference(involved),
        "reason": reason,
        "message": truncate_message(message),
        "type": type_,
        "source": {"component": SOURCE_COMPONENT, "host": host},
        "reportingComponent": SOURCE_COMPONENT,
        "reportingInstance": host,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def bump_event(existing: dict[str, Any], now: dt.datetime | None = None) -> dict[str, Any]:
    """A copy of ``existing`` with ``count`` + 1 and ``lastTimestamp`` now (for a replace with its
    ``resourceVersion``, so concurrent bumps conflict instead of losing counts)."""
    bumped = copy.deepcopy(existing)
    bumped["count"] = int(existing.get("count") or 1) + 1
    bumped["lastTimestamp"] = now_rfc3339(now)
    return bumped


__all__ = ["bump_event", "event_name", "involved_reference", "new_event", "now_rfc3339", "object_ref"]
