"""Per-process informers for reconciles: reads of watched kinds from memory, as controller-runtime's
cached client.

A worker process keeps one :class:`Informer` (a :class:`~informers.reflector.Reflector` and its
:class:`~informers.store.Store`) per ``(cluster client, kind, namespace)``, started on the first read
that needs it and shared by every reconcile (thread) of the process. Reads go through
:func:`get` and :func:`list_objects` (a reconcile calls them through its domain's reader,
:mod:`informers.reader`, for the kinds the domain registered as cached):

- the first read of a kind waits until the informer's initial list is in (bounded by the running
  reconcile's deadline, see :mod:`fencing`, and by :func:`sync_timeout`); a store that is not synced
  by then is bypassed: the read goes to the API server, so a slow list never stalls reconciles;
- the worker's own writes through the same :class:`kube.Kube` client are recorded in the stores at
  once (write-through, :meth:`kube.Kube.add_write_listener`): a create, update, patch or status
  patch stores the API server's answer when its resourceVersion is not older than the stored
  object's; a delete drops the object and keeps older watch events of it out (a tombstone) until the
  watch reports the deletion. So the next reconcile in the same process sees its own writes even
  before the watch event arrives (no second ``generateName`` create);
- a kind that is not served reads as :class:`kube.ResourceMissing`, as the API server answers.

Objects handed out are the stored dicts: callers must not change them (:func:`get` and
:func:`list_objects` copy with ``copy=True``), except from the packed stores of the kinds a domain
registered as packed (:func:`pack`), where every read decodes a new dict.

Environment: ``RECONCILERY_INFORMERS`` (``1``; ``0`` = every read goes to the API server),
``RECONCILERY_INFORMER_SYNC_SECONDS`` (10: longest wait of a read for an initial list).
"""

from __future__ import annotations

import builtins
import contextvars
import copy as copy_module
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import fencing
from informers import metrics, settings
from informers.reflector import ReconnectBackoff, Reflector
from informers.store import Store, compact, object_key
from kube import Kube, Resource, ResourceMissing
from kube.toolkit.metrics import Children

log = logging.getLogger(__name__)

#: ``(resource full name, namespace or "")`` of an informer.
Scope = tuple[str, str]


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """``RECONCILERY_INFORMERS`` (on), from ``environ`` or this process's settings."""
    return (settings.current() if environ is None else settings.InformerSettings.load(environ)).informers


def sync_timeout(environ: Mapping[str, str] | None = None) -> float:
    """``RECONCILERY_INFORMER_SYNC_SECONDS`` (10), from ``environ`` or this process's settings. Raises
    :class:`config.SettingsError` (a ``ValueError``) on a bad value."""
    return (settings.current() if environ is None else settings.InformerSettings.load(environ)).informer_sync_seconds


#: Full names of the kinds whose informers keep packed stores in this process (:func:`pack`).
_packed_kinds: set[str] = set()


def pack(*resources: Resource) -> None:
    """Keep the informers of ``resources`` in this process packed (:class:`informers.store.Store`): a
    fraction of the memory, every object read decoded anew. A domain's read registration asks for it
    (``informers.reader.Cached(packed=True)``) for kinds with many objects of which a reconcile reads a
    few; a kind whose reconciles list the whole store is better kept unpacked (the default). Applies
    to informers started afterwards."""
    _packed_kinds.update(res.full_name for res in resources)


def packed(res: Resource) -> bool:
    """Whether the informers of ``res`` keep packed stores (:func:`pack`)."""
    return res.full_name in _packed_kinds


#: Full names of the kinds whose informers keep no label index in this process (:func:`unindex`).
_unindexed_kinds: set[str] = set()


def unindex(*resources: Resource) -> None:
    """Keep the informers of ``resources`` in this process without a label index
    (:attr:`informers.store.Store.label_index`): for kinds a domain reads by name only, where the index
    of labels unique per object would be most of a packed store's memory; a read by label selector then
    decodes every object. A domain's read registration asks for it (``Cached(label_index=False)``).
    Applies to informers started afterwards."""
    _unindexed_kinds.update(res.full_name for res in resources)


def label_indexed(res: Resource) -> bool:
    """Whether the informers of ``res`` index labels (not :func:`unindex` ed)."""
    return res.full_name not in _unindexed_kinds


class Informer(Reflector):
    """A reflector whose store reconciles read; :attr:`served` is ``False`` while the kind is not served."""

    wants_events = False  # only the store: no list differences, no decoded previous objects

    def __init__(self, resource: Resource, namespace: str | None, kube: Kube, cluster: str) -> None:
        scope = f"{namespace}/" if namespace else ""
        store = Store(packed=packed(resource), label_index=label_indexed(resource))
        # an unpacked store keeps compact dicts (interned keys and short strings: half the memory)
        super().__init__(f"informer-{scope}{resource.full_name}", resource, namespace, None, None, kube,
                         store, cluster, backoff=ReconnectBackoff(), transform=None if store.packed else compact)
        self.served = True
        #: a read already waited for the initial list in vain: later reads do not wait (API server)
        self.waited_out = False

    def _list(self) -> None:
        super()._list()
        self.served = True

    def _kind_missing(self, exc: ResourceMissing) -> None:
        self.served = False
        super()._kind_missing(exc)

    def synced(self) -> bool:
        """Whether the initial list is in (a kind that is not served counts: empty)."""
        return self.listed.is_set()


class InformerSet:
    """The informers of one :class:`kube.Kube` client in this process (thread-safe).

    Registers a write listener on ``kube`` so the stores see the process's own writes at once."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._informers: dict[Scope, Informer] = {}
        self._by_resource: dict[str, builtins.list[Informer]] = {}
        kube.add_write_listener(self._on_write)

    def informer(self, res: Resource, namespace: str | None = None) -> Informer:
        """The informer of ``res`` in ``namespace`` (``None``: all namespaces), started on first use."""
        scope = (res.full_name, namespace or "")
        informer = self._informers.get(scope)
        if informer is not None:
            return informer
        with self._lock:
            informer = self._informers.get(scope)
            if informer is None:
                informer = Informer(res, namespace, self.kube, self.kube.cluster)
                self._informers[scope] = informer
                self._by_resource.setdefault(res.full_name, []).append(informer)
                informer.start()
                log.info("informer started cluster=%s resource=%s namespace=%s", self.kube.cluster, res,
                         namespace or "*")
        return informer

    def find(self, res: Resource, namespace: str | None) -> Informer | None:
        """A running informer that holds ``res`` objects of ``namespace``: the namespace's own, or
        the cluster-wide one."""
        return self._informers.get((res.full_name, namespace or "")) or (
            self._informers.get((res.full_name, "")) if namespace else None)

    def _on_write(self, res: Resource, verb: str, obj: dict[str, Any]) -> None:
        informers = self._by_resource.get(res.full_name)
        if not informers:
            return
        namespace, name = object_key(obj)
        meta = obj.get("metadata") or {}
        # gone: our delete, or our write that removed the last finalizer of a deleting object (its
        # answer can arrive after the watch's DELETED: stored, it would stay until the next relist)
        gone = (verb == "delete" and not (meta.get("deletionTimestamp") and meta.get("finalizers"))) or (
            bool(meta.get("deletionTimestamp")) and not meta.get("finalizers"))
        for informer in informers:
            if informer.namespace and informer.namespace != namespace:
                continue
            if gone:
                informer.store.delete_through(namespace, name, str(meta.get("resourceVersion") or ""))
            else:  # created, changed, or still there being deleted
                # packed, or a compact copy of the answer (strings shared)
                informer.store.write_through(obj if informer.store.packed else compact(obj))

    def stop(self) -> None:
        """Stop every informer and the write listener."""
        self.kube.remove_write_listener(self._on_write)
        with self._lock:
            informers = list(self._informers.values())
            self._informers.clear()
            self._by_resource.clear()
        for informer in informers:
            informer.stop()

    def status(self) -> builtins.list[dict[str, Any]]:
        """Per informer: name, synced, served, objects, resourceVersion."""
        return [{"informer": i.name, "synced": i.synced(), "served": i.served, "objects": len(i.store),
                 "resource_version": i.resource_version} for i in list(self._informers.values())]


_lock = threading.Lock()
#: id(kube) -> the kube's informers; a forked child starts its own (threads do not survive fork).
_sets: dict[int, InformerSet] = {}


def informers_for(kube: Kube) -> InformerSet:
    """The :class:`InformerSet` of ``kube`` in this process, created on first use."""
    found = _sets.get(id(kube))
    if found is not None and found.kube is kube and found.pid == os.getpid():
        return found
    stale: InformerSet | None = None
    with _lock:
        found = _sets.get(id(kube))
        if found is None or found.kube is not kube or found.pid != os.getpid():
            if found is not None and found.pid == os.getpid():
                stale = found  # a closed client's informers (its id was reused): stop them
            found = _sets[id(kube)] = InformerSet(kube)
    if stale is not None:
        stale.stop()
    return found


def reset() -> None:
    """Stop and forget every informer of this process (tests; a process whose clusters changed)."""
    with _lock:
        old = [s for s in _sets.values() if s.pid == os.getpid()]
        _sets.clear()
    for informers in old:
        informers.stop()


_direct: contextvars.ContextVar[bool] = contextvars.ContextVar("reconcilery_direct_reads", default=False)


@contextmanager
def direct_reads() -> Iterator[None]:
    """Within the block, :func:`get` and :func:`list_objects` of this context read from the API
    server (a reconcile that must not act on a possibly lagging store)."""
    token = _direct.set(True)
    try:
        yield
    finally:
        _direct.reset(token)


def bypassed() -> bool:
    """Whether reads of this context go to the API server (:func:`direct_reads`)."""
    return _direct.get()


def synced_informer(kube: Kube, res: Resource, namespace: str | None = None, *,
                    always: bool = False) -> Informer | None:
    """The synced informer of ``res`` (``namespace``: a namespace's own informer, ``None``: the
    cluster-wide one), started on first use; ``None`` when informers are disabled or the initial
    list is not in within the wait (what is left of the reconcile's deadline, at most
    :func:`sync_timeout`): the caller reads from the API server then. ``always``: even when
    ``RECONCILERY_INFORMERS`` is off (a domain's own switch decides)."""
    if (not always and not enabled()) or _direct.get():
        return None
    informers = informers_for(kube)
    informer = informers.find(res, namespace) or informers.informer(res, namespace)
    if informer.synced():
        return informer
    if informer.waited_out:
        return None
    wait = sync_timeout()
    fence = fencing.current()
    if fence is not None:
        wait = min(wait, max(0.0, fence.remaining() - 1.0))
    started = time.monotonic()
    ok = informer.listed.wait(wait)
    metrics.INFORMER_WAIT.labels(res.full_name).inc(time.monotonic() - started)
    if not ok and wait >= sync_timeout():
        informer.waited_out = True
        log.warning("informer not synced, reading from the API server cluster=%s resource=%s namespace=%s",
                    kube.cluster, res, namespace or "*")
    return informer if ok else None


# every reconcile reads through here: each (resource, source) child labelled once
_reads = Children(metrics.INFORMER_READS)


def get(kube: Kube, res: Resource, name: str, namespace: str | None = None, *,
        watch_namespace: str | None = None, copy: bool = False) -> dict[str, Any] | None:
    """The object ``namespace/name`` of ``res`` (``None`` if absent) from the process's informer
    (``watch_namespace``: the namespace informer to use; default cluster-wide), or from the API
    server when informers are off or not synced in time. ``copy``: a deep copy the caller may change
    (a packed store's objects are new dicts anyway).

    Raises :class:`kube.ResourceMissing` when the kind is not served, :class:`kube.ApiError` on API
    failures of the fallback read."""
    informer = synced_informer(kube, res, watch_namespace)
    if informer is None:
        _reads(res.full_name, "api").inc()
        return kube.get(res, name, namespace)
    if not informer.served:
        raise ResourceMissing(404, "NotFound", f"the server could not find the requested resource ({res})")
    _reads(res.full_name, "cache").inc()
    obj = informer.store.get(namespace, name)
    return copy_module.deepcopy(obj) if copy and obj is not None and not informer.store.packed else obj


def list_objects(kube: Kube, res: Resource, namespace: str | None = None, label_selector: str | None = None, *,
                 watch_namespace: str | None = None, copy: bool = False) -> builtins.list[dict[str, Any]]:
    """Objects of ``res`` (of ``namespace`` when given) matching ``label_selector``, sorted by
    (namespace, name), from the informer (see :func:`get`) or the API server.

    Raises :class:`kube.ResourceMissing` when the kind is not served, :class:`kube.ApiError` on API
    failures of the fallback read, ``ValueError`` for a selector that does not parse."""
    informer = synced_informer(kube, res, watch_namespace)
    if informer is None:
        _reads(res.full_name, "api").inc()
        return kube.list(res, namespace=namespace, label_selector=label_selector)
    if not informer.served:
        raise ResourceMissing(404, "NotFound", f"the server could not find the requested resource ({res})")
    _reads(res.full_name, "cache").inc()
    found = informer.store.select(label_selector, namespace)
    return copy_module.deepcopy(found) if copy and not informer.store.packed else found


__all__ = ["Informer", "InformerSet", "bypassed", "direct_reads", "enabled", "get", "informers_for",
           "list_objects", "pack", "packed", "reset", "sync_timeout", "synced_informer"]
