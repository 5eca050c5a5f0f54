"""Informer stores: the last seen object of every (namespace, name) of one list + watch.

A :class:`Store` is what client-go calls an indexer: a thread-safe map ``(namespace, name) ->
object`` fed by a reflector (:mod:`informers.reflector`), with

- packed objects (``Store(packed=True)``: the kinds a domain registers packed, such as API Gateway's
  owned objects in the workers' informers and its APIRules and owned objects in the watcher): each object
  is kept as its compact JSON deflated against a template of its kind (:class:`Packer`) and decoded on
  every read, so a read hands out a new dict the caller owns; an owned VirtualService takes some 50
  bytes instead of 3.6 KB as an interned dict (7.5 KB decoded). Reads are few per reconcile (its
  owned objects), so decoding them costs little next to the memory saved. Unpacked (the default:
  kinds that reconciles or map functions list whole) a store keeps the dicts it was given and hands
  them out as they are (read-only);
- a label index (``"key=value" -> object keys``), so an equality label selector is answered without
  scanning the store (:meth:`Store.select`); an index value that one object holds keeps its key
  alone, not a set of one (most label values of owned objects name their owner: one object each);
- resourceVersion ordering: an object replaces the stored one only when its resourceVersion is not
  older (:func:`newer_or_equal`), so a watch event that lags a write-through (the worker's own write,
  recorded from the API server's answer) never brings back an older state; in a packed store an
  object with the stored resourceVersion is the stored object and is not packed again;
- tombstones: an object the worker deleted itself is dropped at once and kept out until the watch
  reports its deletion, or a list no longer contains it, or :data:`TOMBSTONE_SECONDS` passed.

:func:`relist_events` is the pure diff that turns a fresh list into the events missed while a watch
was down. Everything here is pure or in-memory: no I/O.
"""

from __future__ import annotations

import builtins
import json
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from informers.selectors import Selector, parse_selector

ObjectKey = tuple[str, str]
#: (type, object, old) of an event before it becomes a ``WatchEvent``.
RawEvent = tuple[str, dict[str, Any], dict[str, Any] | None]
#: An index function: the values an object is found under (client-go's ``IndexFunc``).
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]
#: Seconds a tombstone of the worker's own delete keeps older watch events out.
TOMBSTONE_SECONDS = 60.0
#: The keys filed under one index value: one key alone, or a set of two or more.
IndexEntry = ObjectKey | set[ObjectKey]


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    """``(namespace, name)`` of an object dict (namespace ``""`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def resource_version(obj: Mapping[str, Any] | None) -> str:
    """``metadata.resourceVersion`` of ``obj`` (``""`` when missing)."""
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def newer_or_equal(candidate: str, current: str) -> bool:
    """Whether resourceVersion ``candidate`` is not older than ``current``.

    resourceVersions are opaque to clients, but every API server (etcd revisions) and the dev API
    server hand out increasing integers; when either is not an integer (or missing) the candidate
    wins, which is what a store without ordering would do."""
    if candidate.isdigit() and current.isdigit():
        return int(candidate) >= int(current)
    return True


#: Strings up to this length are interned by :func:`compact` (names, labels, hosts, enum values).
INTERN_MAX = 64


def compact(value: Any) -> Any:
    """``value`` (decoded JSON) rebuilt with its keys and short strings interned (pure).

    Objects of one kind repeat the same keys, label pairs and values thousands of times; sharing the
    strings halves the memory a decoded object takes (a VirtualService: about 7.5 KB decoded, 3.6 KB
    compact). The stores keep packed text instead (:func:`pack`, a third of that again)."""
    if isinstance(value, dict):
        return {sys.intern(k) if type(k) is str else k: compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compact(v) for v in value]
    if type(value) is str and len(value) <= INTERN_MAX:
        return sys.intern(value)
    return value


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, check_circular=False).encode
#: deflate's window (2**13 bytes: the dictionary and an object's own repeats) and memory level: small
#: enough that setting up a compressor costs microseconds, not the ~100 µs of zlib's defaults.
_WBITS = 13
_MEM_LEVEL = 2
_LEVEL = 6


class Packer:
    """Packs objects of one kind: compact JSON, deflated against a dictionary (pure).

    The dictionary is the compact JSON of one object of the kind (the ``template``, the first one
    a store sees): objects of one kind share most of their text (keys, labels, the owner's module
    labels, gateways, principals), so an owned VirtualService of about 1.1 KB of JSON packs into
    some 50 bytes. A packed object is ``resourceVersion``, a newline, and the deflated text, so its
    resourceVersion is read without inflating it (:func:`packed_version`)."""

    def __init__(self, template: Mapping[str, Any] | None = None) -> None:
        self.zdict = _encode(template).encode()[-(1 << _WBITS):] if template is not None else b""

    def pack(self, obj: Mapping[str, Any], text: bytes | None = None) -> bytes:
        """``obj`` (decoded JSON) packed; ``text``: its JSON text when the caller has it (a watch line's),
        else it is encoded here. Raises ``TypeError`` or ``ValueError`` for a value JSON cannot hold."""
        text = text if text is not None else _encode(obj).encode()
        if self.zdict:
            deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, -_WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, self.zdict)
        else:
            deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, -_WBITS, _MEM_LEVEL)
        return resource_version(obj).encode() + b"\n" + deflate.compress(text) + deflate.flush()

    def unpack(self, packed: bytes) -> dict[str, Any]:
        """The object :meth:`pack` packed (a new dict on every call). Raises ``ValueError`` (or
        ``zlib.error``) on bytes this packer did not make."""
        body = memoryview(packed)[packed.index(b"\n") + 1:]
        inflate = zlib.decompressobj(-_WBITS, zdict=self.zdict) if self.zdict else zlib.decompressobj(-_WBITS)
        value = json.loads(inflate.decompress(body))
        if not isinstance(value, dict):
            raise ValueError("packed value is not an object")
        return value


def packed_version(packed: bytes) -> str:
    """The resourceVersion of a packed object, without inflating it."""
    return packed[:packed.index(b"\n")].decode()


class Snapshot(Mapping[ObjectKey, dict[str, Any]]):
    """A store's objects at one moment, decoded when read (what :meth:`Store.snapshot` returns)."""

    def __init__(self, packed: dict[ObjectKey, bytes], packer: Packer) -> None:
        self._packed = packed
        self._packer = packer

    def __getitem__(self, key: ObjectKey) -> dict[str, Any]:
        return self._packer.unpack(self._packed[key])

    def __iter__(self) -> Iterator[ObjectKey]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __contains__(self, key: object) -> bool:
        return key in self._packed

    def version(self, key: ObjectKey) -> str:
        """The resourceVersion of the object at ``key`` (``KeyError`` if absent), not decoding it."""
        return packed_version(self._packed[key])


def relist_events(cache: Mapping[ObjectKey, dict[str, Any]], items: Iterable[dict[str, Any]]) -> list[RawEvent]:
    """The events that turn ``cache`` into the fresh list ``items`` (pure).

    New objects are ``ADDED`` (old ``None``), objects whose resourceVersion changed ``MODIFIED``
    (old: the cached one), cached objects missing from the list ``DELETED`` (object and old: the
    last known state, client-go's ``DeletedFinalStateUnknown``). Unchanged objects give nothing, so
    a relist after a gap delivers each missed change exactly once. Order: the list's order, then
    deletions sorted by key. A :class:`Snapshot` is compared by resourceVersion without decoding
    its unchanged objects.
    """
    version_of: Callable[[ObjectKey], str] = (
        cache.version if isinstance(cache, Snapshot) else (lambda k: resource_version(cache[k])))
    out: list[RawEvent] = []
    seen: set[ObjectKey] = set()
    for obj in items:
        key = object_key(obj)
        seen.add(key)
        if key not in cache:
            out.append(("ADDED", obj, None))
        elif version_of(key) != resource_version(obj) or not resource_version(obj):
            out.append(("MODIFIED", obj, cache[key]))
    for key in sorted(set(cache) - seen):
        old = cache[key]
        out.append(("DELETED", old, old))
    return out


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _raw_labels(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("labels")


def _terms(obj: Mapping[str, Any] | None) -> set[str]:
    """The label index terms (``"key=value"``) of ``obj``."""
    return {f"{k}={v}" for k, v in _labels(obj).items()}


class Store:
    """Thread-safe ``(namespace, name) -> object`` of one list + watch, with a label index.

    ``packed``: objects are kept packed (:class:`Packer`) and every read decodes, so readers get new
    dicts of their own and writers' dicts are not kept. Unpacked, the store keeps the dicts it is
    given and readers get those: treat them as read-only (the API server's answers are never changed
    in place, every update stores a new dict)."""

    def __init__(self, packed: bool = False, label_index: bool = True) -> None:
        self.packed = packed
        #: whether labels are indexed (``False``: :meth:`select` scans and decodes every object: for
        #: kinds read by name only, whose index would be most of a packed store's memory)
        self.label_index = label_index
        self._lock = threading.Lock()
        self._packer_lock = threading.Lock()  # apart: the packer is made inside and outside _lock
        self._objects: dict[ObjectKey, Any] = {}  # packed bytes, or the dicts
        #: set by the first object stored, never changed after (every stored object was packed by it)
        self._packer: Packer | None = None
        self._index: dict[str, IndexEntry] = {}
        #: key -> (resourceVersion at our delete, monotonic expiry)
        self._tombstones: dict[ObjectKey, tuple[str, float]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, IndexEntry]] = {}

    # ---- indexers ------------------------------------------------------------------------------

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Keep index ``name``: value -> keys of the objects ``fn`` files under it (built over the
        stored objects now, kept current after). A second call with the same name is a no-op.
        ``fn`` must not raise; it gets a decoded object."""
        with self._lock:
            if name in self._indexers:
                return
            self._indexers[name] = fn
            index: dict[str, IndexEntry] = {}
            for key, packed in self._objects.items():
                for value in set(fn(self._load(packed))):
                    _file(index, value, key)
            self._indices[name] = index

    def by_index(self, name: str, values: Iterable[str]) -> builtins.list[dict[str, Any]]:
        """The objects filed under any of ``values`` in index ``name``, sorted by key (new dicts).
        Raises ``KeyError`` for an index never added."""
        with self._lock:
            index = self._indices[name]
            keys = {k for v in values for k in _keys(index.get(v))}
            found = [self._objects[k] for k in sorted(keys) if k in self._objects]
        return [self._load(p) for p in found]

    # ---- reads ---------------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The cached object (a new dict when packed), or ``None``."""
        with self._lock:
            packed = self._objects.get((namespace or "", name))
        return None if packed is None else self._load(packed)

    def version(self, namespace: str | None, name: str) -> str | None:
        """The resourceVersion of the cached object (``None``: not cached), without decoding it."""
        with self._lock:
            packed = self._objects.get((namespace or "", name))
        return None if packed is None else self._version_of(packed)

    def keys(self, namespace: str | None = None) -> builtins.list[ObjectKey]:
        """The keys of every cached object (of ``namespace`` when given), sorted; nothing decoded."""
        with self._lock:
            return sorted(k for k in self._objects if namespace is None or k[0] == namespace)

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every cached object (of ``namespace`` when given; a snapshot, in no particular order)."""
        with self._lock:
            found = [p for key, p in self._objects.items() if namespace is None or key[0] == namespace]
        return [self._load(p) for p in found]

    def select(self, selector: str | Selector | None,
               namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        """The cached objects matching label ``selector`` (``"a=b,c!=d"``, ``None``: all), of
        ``namespace`` when given, sorted by key. Equality terms are answered from the label index
        (a selector of equality terms only decodes nothing but the matches; without
        :attr:`label_index` every object of the namespace is decoded and matched).
        Raises ``ValueError`` for a selector that does not parse."""
        sel = parse_selector(selector) if not isinstance(selector, Selector) else selector
        only_equals = (self.label_index and bool(sel.equals)
                       and not (sel.not_equals or sel.in_ or sel.not_in or sel.exists or sel.absent))
        with self._lock:
            if sel.equals and self.label_index:
                indexed = [self._index.get(f"{k}={v}") for k, v in sel.equals]
                candidates: builtins.list[set[ObjectKey] | tuple[ObjectKey, ...]] = [_keys(e) for e in indexed]
                smallest = min(candidates, key=len)  # a term nobody has: (), nothing matches
                keys: Iterable[ObjectKey] = smallest
                if only_equals:  # every key must be under every term
                    rest = [e for e in indexed if e is not None]
                    keys = [k for k in keys if all(_holds(e, k) for e in rest)]
            else:
                keys = self._objects.keys()
            found = [(key, self._objects[key]) for key in sorted(keys)
                     if (namespace is None or key[0] == namespace) and key in self._objects]
        out = []
        for _, packed in found:
            obj = self._load(packed)
            if only_equals or sel.matches(_labels(obj)):
                out.append(obj)
        return out

    def snapshot(self) -> Mapping[ObjectKey, dict[str, Any]]:
        """The whole map at this moment (for :func:`relist_events`); a packed store's
        (:class:`Snapshot`) decodes the objects read."""
        with self._lock:
            if self.packed:
                return Snapshot(dict(self._objects), self._packer or Packer())
            return dict(self._objects)

    # ---- writes (the reflector's and the write-through's) --------------------------------------

    def apply(self, type_: str, obj: dict[str, Any], *, decode_old: bool = True,
              text: bytes | None = None) -> dict[str, Any] | None:
        """Record a watch event (``ADDED``/``MODIFIED`` store, ``DELETED`` removes); the previous object
        (decoded; always ``None`` with ``decode_old=False``, for a caller that does not look at it).
        ``text``: ``obj``'s JSON text as received, which a packed store keeps instead of encoding ``obj``.

        An ``ADDED``/``MODIFIED`` object older than the stored one (a write-through got there first)
        or than the tombstone of our own delete is ignored (the stored object is returned as the
        previous one, so a map function sees no change)."""
        key = object_key(obj)
        with self._lock:
            if type_ == "DELETED":
                self._tombstones.pop(key, None)
                before = self._remove(key)
                return before if decode_old else None
            old = self._objects.get(key)
            _, before = self._put_if_current(key, obj, old, text)
            if old is None or not decode_old:
                return None
            return before if before is not None else self._load(old)  # decoded once, for the index too

    def write_through(self, obj: dict[str, Any]) -> bool:
        """Record the answer to our own create/update/patch (only when not older than the stored
        object). Whether it was stored."""
        key = object_key(obj)
        with self._lock:
            return self._put_if_current(key, obj, self._objects.get(key))[0]

    def _put_if_current(self, key: ObjectKey, obj: dict[str, Any], old: Any,
                        text: bytes | None = None) -> tuple[bool, dict[str, Any] | None]:
        """Store ``obj`` over ``old`` (the lock held) unless it is older than ``old`` or a tombstone of
        ours keeps it out. Whether it was stored (or already is: same resourceVersion), and ``old``
        decoded when storing needed it."""
        version = resource_version(obj)
        if old is not None:
            current = self._version_of(old)
            if self.packed and version and version == current:
                return True, None  # the same object (the watch event of our own write): nothing to pack
            if not newer_or_equal(version, current):
                return False, None
        if self._buried(key, version):
            return False, None
        return True, self._put(key, obj, old, text)

    def delete_through(self, namespace: str | None, name: str, version: str = "") -> None:
        """Record our own delete of ``namespace/name``: dropped at once, and watch events not newer
        than ``version`` (default: the stored object's) are kept out until the deletion is seen."""
        key = (namespace or "", name)
        with self._lock:
            old = self._objects.get(key)
            version = version or (self._version_of(old) if old is not None else "")
            self._tombstones[key] = (version, time.monotonic() + TOMBSTONE_SECONDS)
            self._remove(key)

    def replace(self, items: Iterable[dict[str, Any]], version: str = "") -> None:
        """Make the cache exactly ``items`` (after a list at resourceVersion ``version``); objects of
        our own writes newer than the list stay."""
        fresh: dict[ObjectKey, Any] = {}
        indexed: dict[ObjectKey, tuple[set[str], dict[str, set[str]]]] = {}
        items = builtins.list(items)
        packer = self._packer_for(items[0]) if items and self.packed else None
        indexers = self._indexers_now()
        for obj in items:  # packed and indexed outside the lock: a relist of 100k objects takes a while
            key = object_key(obj)
            fresh[key] = packer.pack(obj) if packer is not None else obj
            indexed[key] = (self._terms_of(obj), {name: set(fn(obj)) for name, fn in indexers.items()})
        with self._lock:
            if version:
                for key, packed in self._objects.items():
                    mine = self._version_of(packed)
                    if mine.isdigit() and version.isdigit() and int(mine) > int(version):
                        fresh[key] = packed
                        indexed.pop(key, None)
                self._tombstones = {k: t for k, t in self._tombstones.items()
                                    if k in fresh and t[0].isdigit() and version.isdigit()
                                    and int(t[0]) > int(version)}
                for key in self._tombstones:
                    fresh.pop(key, None)
            else:
                self._tombstones.clear()
            self._objects = fresh
            self._index = {}
            self._indices = {name: {} for name in self._indexers}
            for key, packed in fresh.items():
                entry = indexed.get(key)
                if entry is None or set(entry[1]) != set(self._indexers):  # kept, or an indexer added meanwhile
                    obj = self._load(packed)
                    entry = (self._terms_of(obj), {name: set(fn(obj)) for name, fn in self._indexers.items()})
                terms, values = entry
                for term in terms:
                    _file(self._index, term, key)
                for name, vals in values.items():
                    for value in vals:
                        _file(self._indices[name], value, key)

    def _terms_of(self, obj: Mapping[str, Any] | None) -> set[str]:
        """The label index terms of ``obj`` (none when labels are not indexed)."""
        return _terms(obj) if self.label_index else set()

    def _indexers_now(self) -> dict[str, IndexFunc]:
        with self._lock:
            return dict(self._indexers)

    def _packer_for(self, obj: Mapping[str, Any]) -> Packer:
        """The store's packer; the first object stored makes it (its dictionary)."""
        packer = self._packer
        if packer is None:
            with self._packer_lock:
                if self._packer is None:
                    self._packer = Packer(obj)
                packer = self._packer
        return packer

    def _load(self, stored: Any) -> dict[str, Any]:
        """The object as stored: decoded from a packed store, the dict itself from another."""
        if not self.packed:
            return stored
        assert self._packer is not None  # set before the first object was stored
        return self._packer.unpack(stored)

    def _version_of(self, stored: Any) -> str:
        return packed_version(stored) if self.packed else resource_version(stored)

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    # ---- under the lock ------------------------------------------------------------------------

    def _buried(self, key: ObjectKey, version: str) -> bool:
        stone = self._tombstones.get(key)
        if stone is None:
            return False
        if time.monotonic() > stone[1] or (version.isdigit() and stone[0].isdigit() and int(version) > int(stone[0])):
            del self._tombstones[key]  # expired, or a newer object of the same name (recreated)
            return False
        return True

    def _put(self, key: ObjectKey, obj: dict[str, Any], old: Any, text: bytes | None = None) -> dict[str, Any] | None:
        """Store ``obj`` (its JSON ``text`` when known) over ``old`` and index it; ``old`` decoded
        (``None`` when there was none)."""
        packed = self._packer_for(obj).pack(obj, text) if self.packed else obj
        before = self._load(old) if old is not None else None
        if before is None or _raw_labels(before) != _raw_labels(obj):  # most updates keep the labels
            was, now = self._terms_of(before), self._terms_of(obj)
            for term in was - now:
                _unfile(self._index, term, key)
            for term in now - was:
                _file(self._index, term, key)
        for name, fn in self._indexers.items():
            index = self._indices[name]
            old_values = set(fn(before)) if before is not None else set()
            new_values = set(fn(obj))
            for value in old_values - new_values:
                _unfile(index, value, key)
            for value in new_values - old_values:
                _file(index, value, key)
        self._objects[key] = packed
        return before

    def _remove(self, key: ObjectKey) -> dict[str, Any] | None:
        """Drop ``key`` and its index entries; the object it had (decoded), or ``None``."""
        old = self._objects.pop(key, None)
        if old is None:
            return None
        obj = self._load(old)
        for term in self._terms_of(obj):
            _unfile(self._index, term, key)
        for name, fn in self._indexers.items():
            for value in set(fn(obj)):
                _unfile(self._indices[name], value, key)
        return obj


def _keys(entry: IndexEntry | None) -> set[ObjectKey] | tuple[ObjectKey, ...]:
    """The keys of one index entry."""
    if entry is None:
        return ()
    return entry if isinstance(entry, set) else (entry,)


def _holds(entry: IndexEntry, key: ObjectKey) -> bool:
    return key in entry if isinstance(entry, set) else entry == key


def _file(index: dict[str, IndexEntry], value: str, key: ObjectKey) -> None:
    """File ``key`` under ``value``: the key alone while it is the only one, a set from the second."""
    entry = index.get(value)
    if entry is None:
        index[value] = key
    elif isinstance(entry, set):
        entry.add(key)
    elif entry != key:
        index[value] = {entry, key}


def _unfile(index: dict[str, IndexEntry], value: str, key: ObjectKey) -> None:
    entry = index.get(value)
    if entry is None:
        return
    if isinstance(entry, set):
        entry.discard(key)
        if len(entry) == 1:
            index[value] = next(iter(entry))
        elif not entry:
            del index[value]
    elif entry == key:
        del index[value]


class Stores:
    """The caches of every registration of a watch process, by registration name."""

    def __init__(self) -> None:
        self._stores: dict[str, Store] = {}

    def add(self, registration: str, packed: bool = False) -> Store:
        """A new empty store for ``registration`` (``packed``: see :class:`Store`). Raises ``ValueError``
        if it exists."""
        if registration in self._stores:
            raise ValueError(f"duplicate watch registration {registration!r}")
        store = self._stores[registration] = Store(packed)
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

    def keys(self, registration: str) -> builtins.list[ObjectKey]:
        """The keys of every cached object of ``registration`` (sorted; nothing decoded). Raises
        ``KeyError`` if it is not watched here."""
        return self.store(registration).keys()

    def get(self, registration: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One cached object of ``registration`` (``None`` if absent). Raises ``KeyError`` like :meth:`list`."""
        return self.store(registration).get(namespace, name)

    def names(self) -> builtins.list[str]:
        return sorted(self._stores)


__all__ = ["IndexFunc", "ObjectKey", "Packer", "RawEvent", "Snapshot", "Store", "Stores", "compact", "newer_or_equal",
           "object_key", "packed_version", "relist_events", "resource_version"]
