"""An inverted label index for the store: which objects carry a label ``key=value``.

Pure (no I/O, no locking: :class:`kubedev.store.Store` calls it with its lock held). The real API server
answers label-selected lists from its watch cache by scanning; the dev server keeps this index instead so
that a reconcile's "list my owned objects by owner label" costs O(matches), not O(objects of the kind).

Entries: ``(storage key, namespace or None for all namespaces, label key, label value)`` -> set of
``(namespace, name)``. Only string label values are indexed: a non-string value never satisfies an equality
requirement (:meth:`kubedev.selectors.LabelRequirement.matches` compares with the selector's strings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubedev.selectors import LabelRequirement

__all__ = ["LabelIndex", "indexable"]

ObjKey = tuple[str, str]  # (namespace, name) inside one storage key
_EMPTY: frozenset[ObjKey] = frozenset()


def _labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def indexable(reqs: tuple[LabelRequirement, ...]) -> list[LabelRequirement]:
    """The requirements the index can answer: equality (``k=v``, ``k==v``) and ``k in (...)``."""
    return [r for r in reqs if r.op in ("=", "in")]


class LabelIndex:
    """Label postings per storage key and namespace (and across namespaces).

    :meth:`put` / :meth:`drop` keep it in step with the store's writes; :meth:`candidates` gives a superset
    of the objects matching a selector's indexable requirements (exact for them; the caller still applies
    the full predicate for the other requirements and field selectors).
    """

    def __init__(self) -> None:
        self._postings: dict[tuple[str, str | None, str, str], set[ObjKey]] = {}
        # The labels each object was indexed under, so a drop never depends on the (shared) stored dict.
        self._indexed: dict[tuple[str, str, str], dict[str, str]] = {}

    def clear(self) -> None:
        """Forget everything (the store was wiped)."""
        self._postings.clear()
        self._indexed.clear()

    def put(self, key: str, ns: str, name: str, obj: Mapping[str, Any]) -> None:
        """Index ``obj`` stored under ``key`` as ``ns/name``, replacing what that object had before."""
        labels = _labels_of(obj)
        ident = (key, ns, name)
        before = self._indexed.get(ident)
        if before == labels:
            return
        if before is not None:
            self._unpost(key, ns, name, {k: v for k, v in before.items() if labels.get(k) != v})
            self._post(key, ns, name, {k: v for k, v in labels.items() if before.get(k) != v})
        else:
            self._post(key, ns, name, labels)
        if labels:
            self._indexed[ident] = labels
        else:
            self._indexed.pop(ident, None)

    def drop(self, key: str, ns: str, name: str) -> None:
        """Remove the object ``ns/name`` of ``key`` from the index (no-op if absent)."""
        before = self._indexed.pop((key, ns, name), None)
        if before:
            self._unpost(key, ns, name, before)

    def candidates(self, key: str, namespace: str | None, reqs: list[LabelRequirement]) -> set[ObjKey]:
        """``(namespace, name)`` of objects of ``key`` (in ``namespace``, or all) matching every one of
        ``reqs`` (each of op ``=`` or ``in``; see :func:`indexable`). ``reqs`` must not be empty."""
        sets: list[set[ObjKey] | frozenset[ObjKey]] = []
        for req in reqs:
            found = [self._postings.get((key, namespace, req.key, v), _EMPTY) for v in req.values]
            sets.append(found[0] if len(found) == 1 else set().union(*found))
        sets.sort(key=len)
        out = set(sets[0])
        for other in sets[1:]:
            if not out:
                break
            out &= other
        return out

    def _post(self, key: str, ns: str, name: str, labels: Mapping[str, str]) -> None:
        for lk, lv in labels.items():
            for scope in (ns, None):
                self._postings.setdefault((key, scope, lk, lv), set()).add((ns, name))

    def _unpost(self, key: str, ns: str, name: str, labels: Mapping[str, str]) -> None:
        for lk, lv in labels.items():
            for scope in (ns, None):
                entry = (key, scope, lk, lv)
                names = self._postings.get(entry)
                if names is not None:
                    names.discard((ns, name))
                    if not names:
                        del self._postings[entry]
