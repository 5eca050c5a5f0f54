"""Informer-style caches: the last seen object of every (namespace, name) of a registration.

The engine keeps one :class:`Store` per watch registration so an event carries the previous
object (``WatchEvent.old``) and map functions can look at other registrations' objects through
:class:`Stores` (a Service event mapped to every APIRule that references it), as client-go's
informers and indexers do. :func:`relist_events` is the pure diff that turns a fresh list into the
events missed while the watch was down.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Mapping
from typing import Any

ObjectKey = tuple[str, str]
#: (type, object, old) of an event before it becomes a ``WatchEvent``.
RawEvent = tuple[str, dict[str, Any], dict[str, Any] | None]


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    """``(namespace, name)`` of an object dict (namespace ``""`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def resource_version(obj: Mapping[str, Any]) -> str:
    """``metadata.resourceVersion`` of ``obj`` (``""`` when missing)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def relist_events(cache: Mapping[ObjectKey, dict[str, Any]], items: Iterable[dict[str, Any]]) -> list[RawEvent]:
    """The events that turn ``cache`` into the fresh list ``items`` (pure).

    New objects are ``ADDED`` (old ``None``), objects whose resourceVersion changed ``MODIFIED``
    (old: the cached one), cached objects missing from the list ``DELETED`` (object and old: the
    last known state, client-go's ``DeletedFinalStateUnknown``). Unchanged objects give nothing, so
    a relist after a gap delivers each missed change exactly once. Order: the list's order, then
    deletions sorted by key.
    """
    out: list[RawEvent] = []
    seen: set[ObjectKey] = set()
    for obj in items:
        key = object_key(obj)
        seen.add(key)
        old = cache.get(key)
        if old is None:
            out.append(("ADDED", obj, None))
        elif resource_version(old) != resource_version(obj) or not resource_version(obj):
            out.append(("MODIFIED", obj, old))
    for key in sorted(set(cache) - seen):
        out.append(("DELETED", cache[key], cache[key]))
    return out


class Store:
    """Thread-safe ``(namespace, name) -> object`` of one registration. Readers get the stored
    dicts themselves: treat them as read-only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[ObjectKey, dict[str, Any]] = {}

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The cached object, or ``None``."""
        with self._lock:
            return self._objects.get((namespace or "", name))

    def list(self) -> list[dict[str, Any]]:
        """Every cached object (a snapshot, in no particular order)."""
        with self._lock:
            return list(self._objects.values())

    def snapshot(self) -> dict[ObjectKey, dict[str, Any]]:
        """A shallow copy of the whole map (for :func:`relist_events`)."""
        with self._lock:
            return dict(self._objects)

    def apply(self, type_: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Record a watch event (``ADDED``/``MODIFIED`` store, ``DELETED`` removes); the previous object."""
        key = object_key(obj)
        with self._lock:
            if type_ == "DELETED":
                return self._objects.pop(key, None)
            old = self._objects.get(key)
            self._objects[key] = obj
            return old

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        """Make the cache exactly ``items`` (after a list)."""
        fresh = {object_key(obj): obj for obj in items}
        with self._lock:
            self._objects = fresh

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)


class Stores:
    """The caches of every registration of a watch process, by registration name."""

    def __init__(self) -> None:
        self._stores: dict[str, Store] = {}

    def add(self, registration: str) -> Store:
        """A new empty store for ``registration``. Raises ``ValueError`` if it exists."""
        if registration in self._stores:
            raise ValueError(f"duplicate watch registration {registration!r}")
        store = self._stores[registration] = Store()
        return store

    def store(self, registration: str) -> Store:
        """The store of ``registration``. Raises ``KeyError`` (with the known names) if unknown."""
        try:
            return self._stores[registration]
        except KeyError:
            known = ", ".join(sorted(self._stores)) or "none"
            raise KeyError(f"no watch registration {registration!r} in this process (have: {known})") from None

    def list(self, registration: str) -> list[dict[str, Any]]:
        """Every cached object of ``registration``. Raises ``KeyError`` if it is not watched here."""
        return self.store(registration).list()

    def get(self, registration: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One cached object of ``registration`` (``None`` if absent). Raises ``KeyError`` like :meth:`list`."""
        return self.store(registration).get(namespace, name)

    def names(self) -> builtins.list[str]:
        return sorted(self._stores)
