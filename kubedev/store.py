"""In-memory object store with the API server's write semantics, event log and watch listeners.

Pure (no I/O): the HTTP layer (:mod:`kubedev.server`) only parses requests and serializes answers.
What this module does, after ``k8s.io/apiserver/pkg/registry/generic/registry/store.go``:

- one global ``resourceVersion`` counter (a string on the wire), bumped by every real change;
- create sets ``uid``, ``resourceVersion``, ``creationTimestamp``, ``generation: 1``, resolves
  ``generateName``; 409 AlreadyExists, 404 for a missing namespace, 422 without a name;
- update/patch keep system metadata, honour ``resourceVersion`` preconditions (409 Conflict), keep
  ``status`` on the main resource and change only ``status`` on ``/status`` (for kinds with a status
  subresource), bump ``generation`` when anything but metadata (and status) changes, and are no-ops
  (no new resourceVersion, no event) when nothing changes;
- delete with finalizers marks ``deletionTimestamp`` (MODIFIED) and the object goes when its finalizers
  are emptied (DELETED); namespace and CRD deletion cascade to their objects;
- owner references: when an object goes, its dependents (all of whose owners are gone) are deleted too,
  as the garbage collector does with background propagation;
- every change is appended to a bounded event log so watches can resume from a resourceVersion
  (:meth:`Store.events_since` raises 410 Expired for versions older than the log).

All public methods take an internal re-entrant lock, so the store may be shared across threads, but
listeners are called synchronously with the lock held.
"""

from __future__ import annotations

import base64
import bisect
import copy
import datetime
import json
import logging
import random
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubedev import errors
from kubedev.customresources import SchemaAdmission
from kubedev.errors import ApiError
from kubedev.labelindex import LabelIndex, indexable
from kubedev.patching import apply_patch
from kubedev.resources import Registry, ResourceType
from kubedev.selectors import (
    FieldRequirement,
    LabelRequirement,
    SelectorError,
    match_fields,
    match_labels,
    parse_field_selector,
    parse_label_selector,
)

__all__ = ["DEFAULT_NAMESPACES", "ListResult", "Store", "StoreEvent", "compile_filter", "view"]

log = logging.getLogger("kubedev.store")

Obj = dict[str, Any]
_List = list  # Store.list shadows the builtin inside the class body
#: Namespaces that exist in a fresh store, as on a new cluster.
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACE_KEY = "/namespaces"
CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "namespace",
                "name", "generation", "resourceVersion")


@dataclass(frozen=True)
class StoreEvent:
    """One change: ``type`` is ADDED/MODIFIED/DELETED (or CLOSE: end watches of ``key``; never logged).

    ``obj`` is the object after the change (for DELETED: the last state, with the deletion's RV), ``old``
    the object before (``None`` for ADDED).
    """

    rv: int
    type: str
    key: str
    namespace: str
    obj: Obj
    old: Obj | None


@dataclass(frozen=True)
class ListResult:
    """A list answer: ``items`` (stored dicts, do not mutate), the list ``resource_version``, paging."""

    items: list[Obj]
    resource_version: str
    continue_token: str | None = None
    remaining: int | None = None


Listener = Callable[[StoreEvent], None]


def now_iso() -> str:
    """The current UTC time in the API's RFC 3339 seconds form (``2026-01-02T03:04:05Z``)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def view(rt: ResourceType, obj: Obj) -> Obj:
    """The object as read through ``rt``'s version (``apiVersion``/``kind`` set; shallow copy if needed)."""
    if obj.get("apiVersion") == rt.api_version and obj.get("kind") == rt.kind:
        return obj
    return {**obj, "apiVersion": rt.api_version, "kind": rt.kind}


def compile_filter(rt: ResourceType, namespace: str | None, label_selector: str | None,
                   field_selector: str | None) -> Callable[[Obj], bool]:
    """A predicate for list/watch: namespace (``None`` = all), label and field selectors.

    Raises 400 BadRequest for a bad selector or a field the resource does not support.
    """
    labels, fields = parse_selectors(rt, label_selector, field_selector)
    return _predicate(namespace, labels, fields)


def parse_selectors(rt: ResourceType, label_selector: str | None, field_selector: str | None
                    ) -> tuple[tuple[LabelRequirement, ...], tuple[FieldRequirement, ...]]:
    """The parsed label and field requirements; raises 400 BadRequest as :func:`compile_filter`."""
    try:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from exc
    for req in fields:
        if not rt.allows_field(req.path):
            raise errors.bad_request(f'field label not supported: {req.path}')
    return labels, fields


def _predicate(namespace: str | None, labels: tuple[LabelRequirement, ...],
               fields: tuple[FieldRequirement, ...]) -> Callable[[Obj], bool]:
    def predicate(obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if namespace is not None and meta.get("namespace", "") != namespace:
            return False
        return match_labels(labels, obj) and match_fields(fields, obj)

    return predicate


def _encode_continue(ns: str, name: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([ns, name]).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        ns, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(ns), str(name)
    except (ValueError, TypeError) as exc:
        raise errors.bad_request("continue key is not valid: illegal base64 data") from exc


class Store:
    """The object store. ``event_log_size`` bounds how far back watches can resume (default 10,000)."""

    def __init__(self, event_log_size: int = 10_000) -> None:
        self.registry = Registry()
        self._lock = threading.RLock()
        self._rv = 0
        self._log_size = event_log_size
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._log: deque[StoreEvent] = deque()
        self._log_floor = 0
        self._listeners: dict[str, dict[int, Listener]] = {}
        self._listener_ids = 0
        self._crd_by_key: dict[str, str] = {}
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}
        self._labels = LabelIndex()
        #: sorted (namespace, name) keys per (storage key, namespace or None), rebuilt after a create or
        #: a delete of that storage key: paging through a long list is a bisect per page, not a scan
        self._order: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
        #: CRD schemas enforced on custom objects (the one hook: :meth:`_admit_custom`).
        self.schemas = SchemaAdmission()
        self._bootstrap()

    # ----------------------------------------------------------------- bookkeeping
    @property
    def resource_version(self) -> str:
        """The current (latest) resourceVersion."""
        return str(self._rv)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _bootstrap(self) -> None:
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        for name in DEFAULT_NAMESPACES:
            self.create(ns_type, None, {"metadata": {"name": name}})

    def count(self) -> int:
        """How many objects the store holds (all kinds)."""
        with self._lock:
            return sum(len(names) for by_ns in self._objects.values() for names in by_ns.values())

    def reset(self) -> None:
        """Wipe every object and CRD, recreate the default namespaces, drop the event log, end watches.

        The resourceVersion counter keeps growing, so old resourceVersions stay unambiguous (410).
        """
        with self._lock:
            for key in list(self._listeners):
                self._notify(StoreEvent(self._rv, "CLOSE", key, "", {}, None))
            self._objects.clear()
            self._order.clear()
            self._labels.clear()
            self._crd_by_key.clear()
            self._dependents.clear()
            self.registry.clear_crds()
            self._bootstrap()
            self.compact()

    def compact(self) -> None:
        """Drop the event log: watches from any resourceVersion before now get 410 Gone."""
        with self._lock:
            self._log.clear()
            self._log_floor = self._rv

    # ----------------------------------------------------------------- watch support
    def subscribe(self, key: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for each change of objects stored under ``key``; returns an unsubscribe."""
        with self._lock:
            self._listener_ids += 1
            ident = self._listener_ids
            self._listeners.setdefault(key, {})[ident] = listener

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.get(key, {}).pop(ident, None)

        return unsubscribe

    def events_since(self, key: str, rv: int) -> list[StoreEvent]:
        """Logged events of ``key`` with resourceVersion > ``rv``, oldest first.

        Raises 410 Expired (:func:`kubedev.errors.expired`) when ``rv`` is older than the log.
        """
        with self._lock:
            if rv < self._log_floor:
                raise errors.expired(rv, self._log_floor + 1)
            out: list[StoreEvent] = []
            for event in reversed(self._log):
                if event.rv <= rv:
                    break
                if event.key == key:
                    out.append(event)
            out.reverse()
            return out

    def _notify(self, event: StoreEvent) -> None:
        for listener in list(self._listeners.get(event.key, {}).values()):
            try:
                listener(event)
            except Exception:  # a broken watcher must not break writes
                log.exception("event=listener_failed key=%s", event.key)

    def _emit(self, type_: str, key: str, obj: Obj, old: Obj | None) -> None:
        rv = int(obj["metadata"]["resourceVersion"])
        event = StoreEvent(rv, type_, key, obj["metadata"].get("namespace", ""), obj, old)
        self._log.append(event)
        while len(self._log) > self._log_size:
            self._log_floor = self._log.popleft().rv
        self._notify(event)

    # ----------------------------------------------------------------- reads
    def _bucket(self, key: str, namespace: str) -> dict[str, Obj]:
        return self._objects.setdefault(key, {}).setdefault(namespace, {})

    def _put(self, key: str, ns: str, name: str, obj: Obj) -> None:
        """Store ``obj`` as ``ns/name`` of ``key``: the only write to ``_objects`` (keeps the label index)."""
        bucket = self._bucket(key, ns)
        if name not in bucket:
            self._forget_order(key)
        bucket[name] = obj
        self._labels.put(key, ns, name, obj)

    def _forget_order(self, key: str) -> None:
        for cached in [k for k in self._order if k[0] == key]:
            del self._order[cached]

    def _sorted_keys(self, key: str, namespace: str | None) -> list[tuple[str, str]]:
        """``(namespace, name)`` of every object of ``key`` (in ``namespace``), sorted; cached."""
        cached = self._order.get((key, namespace))
        if cached is None:
            cached = self._order[(key, namespace)] = [(ns, name) for ns, name, _ in self._iter(key, namespace)]
        return cached

    def _find(self, key: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(key, {}).get(namespace, {}).get(name)

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        """The stored object (do not mutate); raises 404 NotFound."""
        with self._lock:
            obj = self._find(rt.storage_key, self._ns(rt, namespace), name)
            if obj is None:
                raise errors.not_found(rt.group, rt.plural, name)
            return obj

    def _iter(self, key: str, namespace: str | None) -> Iterator[tuple[str, str, Obj]]:
        by_ns = self._objects.get(key, {})
        namespaces = [namespace] if namespace is not None else sorted(by_ns)
        for ns in namespaces:
            names = by_ns.get(ns, {})
            for name in sorted(names):
                yield ns, name, names[name]

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None, limit: int | None = None,
             continue_token: str | None = None) -> ListResult:
        """Objects of ``rt`` (in ``namespace``, or all), filtered by selectors, sorted by namespace/name.

        ``limit``/``continue_token`` page through the result like the real server (continue tokens are
        opaque ``namespace/name`` positions); raises 400 on a bad selector or token.
        Equality (``k=v``, ``k==v``) and ``in`` label requirements are answered from the label index
        (cost O(matches)); a selector without any of them scans every object of ``rt`` in scope.
        """
        with self._lock:
            ns = None if namespace is None or not rt.namespaced else namespace
            if not rt.namespaced:
                ns = ""
            labels, fields = parse_selectors(rt, label_selector, field_selector)
            predicate = _predicate(None, labels, fields)
            after = _decode_continue(continue_token) if continue_token else None
            items: list[Obj] = []
            remaining = 0
            last: tuple[str, str] | None = None
            indexed = indexable(labels)
            bucket = self._objects.get(rt.storage_key, {})
            if indexed:
                order = sorted(self._labels.candidates(rt.storage_key, ns, indexed))
            else:
                order = self._sorted_keys(rt.storage_key, ns)
            start = bisect.bisect_right(order, after) if after is not None else 0
            unfiltered = not labels and not fields
            for i in range(start, len(order)):
                obj_ns, name = order[i]
                obj = bucket[obj_ns][name]
                if not unfiltered and not predicate(obj):
                    continue
                if limit and len(items) >= limit:
                    if unfiltered:  # every later object matches too
                        remaining = len(order) - i
                        break
                    remaining += 1
                    continue
                items.append(obj)
                last = (obj_ns, name)
            token = _encode_continue(*last) if remaining and last else None
            return ListResult(items, str(self._rv), token, remaining if token else None)

    def namespace_exists(self, name: str) -> bool:
        """Whether a Namespace named ``name`` exists (terminating ones included)."""
        with self._lock:
            return self._find(NAMESPACE_KEY, "", name) is not None

    # ----------------------------------------------------------------- create
    @staticmethod
    def _ns(rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "") if rt.namespaced else ""

    def create(self, rt: ResourceType, namespace: str | None, body: Any, dry_run: bool = False,
               validated: bool = False, keep_status: bool = False) -> Obj:
        """Create an object of ``rt``; returns the stored object.

        Raises 400 (bad body, namespace mismatch), 404 (namespace missing), 403 (namespace terminating),
        409 AlreadyExists, 422 Invalid (missing or malformed name, or a custom object its CRD's schema
        rejects; ``validated=True``: the caller already validated it in another version).
        ``keep_status``: store the body's ``status`` as given (seeding a state copied from another
        object, e.g. a benchmark's fleet; the HTTP layer never sets it).
        """
        with self._lock:
            if not isinstance(body, dict):
                raise errors.bad_request("the body of the request must be a JSON object")
            meta = dict(body.get("metadata") or {})
            ns = self._ns(rt, namespace)
            if rt.namespaced:
                body_ns = meta.get("namespace")
                if body_ns and ns and body_ns != ns:
                    raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                             "sent on the request")
                ns = ns or body_ns or ""
                if not ns:
                    raise errors.bad_request("the namespace of the object is required")
            name = meta.get("name") or ""
            if not name:
                prefix = meta.get("generateName") or ""
                if not prefix:
                    raise errors.invalid(rt.group, rt.kind, "", "metadata.name", "FieldValueRequired",
                                         "Required value: name or generateName is required")
                for _ in range(100):
                    name = prefix + "".join(random.choices(_NAME_ALPHABET, k=5))
                    if self._find(rt.storage_key, ns, name) is None:
                        break
            self._validate_name(rt, name)
            if rt.namespaced:
                namespace_obj = self._find(NAMESPACE_KEY, "", ns)
                if namespace_obj is None:
                    raise errors.not_found("", "namespaces", ns)
                if (namespace_obj.get("metadata") or {}).get("deletionTimestamp"):
                    raise errors.forbidden(rt.group, rt.plural, name, f"unable to create new content in namespace "
                                           f"{ns} because it is being terminated")
            if self._find(rt.storage_key, ns, name) is not None:
                raise errors.already_exists(rt.group, rt.plural, name)
            crd_name = self._crd_by_key.get(rt.storage_key)
            if crd_name and (self._find(CRD_KEY, "", crd_name) or {}).get("metadata", {}).get("deletionTimestamp"):
                raise errors.method_not_allowed('create not allowed while custom resource definition is '
                                                'terminating')
            obj: Obj = {**body, "apiVersion": rt.api_version, "kind": rt.kind}
            for drop in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(drop, None)
            meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=now_iso(), generation=1)
            if rt.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            if rt.has_status and rt.reset_status_on_create and not keep_status:
                obj.pop("status", None)
            obj["metadata"] = meta
            obj = self._defaults_on_create(rt, obj)
            if rt.custom and not validated:
                obj = self._admit_custom(rt, obj, None, None)
            if rt.storage_key == CRD_KEY:
                self._validate_crd(obj)
            if dry_run:
                meta["resourceVersion"] = str(self._rv)
                return obj
            meta["resourceVersion"] = str(self._next_rv())
            self._put(rt.storage_key, ns, name, obj)
            self._index_owners(rt.storage_key, obj, None)
            if rt.storage_key == CRD_KEY:
                self._serve_crd(obj)
            self._emit("ADDED", rt.storage_key, obj, None)
            return obj

    def _validate_name(self, rt: ResourceType, name: str) -> None:
        pattern, limit = (_LABEL_RE, 63) if rt.storage_key == NAMESPACE_KEY else (_SUBDOMAIN_RE, 253)
        if rt.storage_key == "/events" or rt.storage_key == "events.k8s.io/events":
            pattern = _SUBDOMAIN_RE
        if len(name) > limit or not pattern.match(name):
            what = "RFC 1123 label" if pattern is _LABEL_RE else "RFC 1123 subdomain"
            raise errors.invalid(rt.group, rt.kind, name, "metadata.name", "FieldValueInvalid",
                                 f'Invalid value: "{name}": a lowercase {what} must consist of lower case '
                                 f"alphanumeric characters, '-' or '.', and must start and end with an "
                                 f"alphanumeric character")

    def _defaults_on_create(self, rt: ResourceType, obj: Obj) -> Obj:
        key = rt.storage_key
        if key == NAMESPACE_KEY:
            meta = obj["metadata"]
            meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
            obj["spec"] = {"finalizers": ["kubernetes"], **(obj.get("spec") or {})}
            obj["status"] = {"phase": "Active"}
        elif key == "/pods":
            obj["status"] = {"phase": "Pending", **(obj.get("status") or {})}
        elif key == "/secrets":
            obj = _fold_string_data(obj)
            obj.setdefault("type", "Opaque")
        elif key == CRD_KEY:
            obj["status"] = _crd_status(obj, None)
        return obj

    # ----------------------------------------------------------------- CRDs
    def _validate_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        name = crd["metadata"]["name"]
        expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
        if name != expected:
            raise errors.invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, "metadata.name",
                                 "FieldValueInvalid",
                                 f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        if not names.get("kind") or not spec.get("versions"):
            raise errors.invalid("apiextensions.k8s.io", "CustomResourceDefinition", name, "spec",
                                 "FieldValueRequired", "Required value: names.kind and versions are required")

    def crd_for(self, rt: ResourceType) -> Obj | None:
        """The CRD that serves ``rt`` (``None`` for built-ins; do not mutate)."""
        with self._lock:
            return self._find(CRD_KEY, "", self._crd_by_key.get(rt.storage_key, "")) if rt.custom else None

    def _admit_custom(self, rt: ResourceType, obj: Obj, old: Obj | None, subresource: str | None) -> Obj:
        """``obj`` pruned and defaulted by its CRD version's schema; raises 422 when it is invalid."""
        crd = self.crd_for(rt)
        if crd is None:
            return obj
        return self.schemas.admit(crd, rt, obj, old, subresource)

    def _serve_crd(self, crd: Obj) -> None:
        types = self.registry.set_crd(crd)
        for rt in types:
            self._crd_by_key[rt.storage_key] = crd["metadata"]["name"]

    def _unserve_crd(self, crd: Obj) -> None:
        for rt in self.registry.remove_crd(crd["metadata"]["name"]):
            self._crd_by_key.pop(rt.storage_key, None)
            self._notify(StoreEvent(self._rv, "CLOSE", rt.storage_key, "", {}, None))

    # ----------------------------------------------------------------- update / patch
    def replace(self, rt: ResourceType, namespace: str | None, name: str, body: Any,
                subresource: str | None = None, dry_run: bool = False, validated: bool = False) -> Obj:
        """PUT: replace the object (or only its status for ``subresource="status"``).

        A ``metadata.resourceVersion`` in the body must equal the stored one (else 409 Conflict); without
        one the update is unconditional. Raises 404 if absent, 400 on a name mismatch.
        """
        with self._lock:
            if not isinstance(body, dict):
                raise errors.bad_request("the body of the request must be a JSON object")
            ns = self._ns(rt, namespace)
            current = self._find(rt.storage_key, ns, name)
            if current is None:
                raise errors.not_found(rt.group, rt.plural, name)
            meta = body.get("metadata") or {}
            if meta.get("name") and meta["name"] != name:
                raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on "
                                         f"the URL ({name})")
            self._check_rv(rt, name, current, meta.get("resourceVersion"))
            return self._update(rt, current, body, subresource, dry_run, validated)

    def patch(self, rt: ResourceType, namespace: str | None, name: str, patch_type: str, patch: Any,
              subresource: str | None = None, dry_run: bool = False) -> tuple[Obj, bool]:
        """PATCH with ``patch_type`` one of ``merge``, ``json``, ``strategic``, ``apply``.

        Returns ``(object, created)``; only ``apply`` creates a missing object. Raises 404, 409 (stale
        resourceVersion in the patch), 415 (strategic patch of a custom resource), 422 (bad patch).
        """
        with self._lock:
            ns = self._ns(rt, namespace)
            current = self._find(rt.storage_key, ns, name)
            if patch_type == "strategic" and rt.custom:
                raise errors.unsupported_media_type("application/strategic-merge-patch+json")
            if current is None:
                if patch_type != "apply" or subresource:
                    raise errors.not_found(rt.group, rt.plural, name)
                if not isinstance(patch, dict):
                    raise errors.bad_request("the applied configuration must be an object")
                body = {**patch, "metadata": {**(patch.get("metadata") or {}), "name": name}}
                if rt.namespaced:
                    body["metadata"]["namespace"] = ns
                return self.create(rt, ns, body, dry_run), True
            patched = apply_patch(current, patch_type, patch)
            patched_meta = patched.get("metadata") or {}
            if patched_meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
                self._check_rv(rt, name, current, patched_meta.get("resourceVersion"))
            if patched_meta.get("name", name) != name:
                raise errors.bad_request("metadata.name: the name of a patched object cannot change")
            return self._update(rt, current, patched, subresource, dry_run), False

    def _check_rv(self, rt: ResourceType, name: str, current: Obj, wanted: Any) -> None:
        if wanted not in (None, "") and str(wanted) != current["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name)

    def _update(self, rt: ResourceType, current: Obj, body: Obj, subresource: str | None,
                dry_run: bool, validated: bool = False) -> Obj:
        cur_meta = current["metadata"]
        if subresource == "status":
            new: Obj = dict(current)
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
            new["metadata"] = dict(cur_meta)
        else:
            new = {**body}
            meta = dict(body.get("metadata") or {})
            for field in _SYSTEM_META:
                if field in cur_meta:
                    meta[field] = cur_meta[field]
                else:
                    meta.pop(field, None)
            meta.pop("selfLink", None)
            new["metadata"] = meta
            if rt.has_status:
                if "status" in current:
                    new["status"] = current["status"]
                else:
                    new.pop("status", None)
            if rt.storage_key == "/secrets":
                new = _fold_string_data(new)
            if cur_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or []) - set(cur_meta.get("finalizers") or [])
                if added:
                    raise errors.invalid(rt.group, rt.kind, cur_meta["name"], "metadata.finalizers",
                                         "FieldValueForbidden",
                                         f"Forbidden: no new finalizers can be added if the object is being "
                                         f"deleted, found new finalizers {sorted(added)!r}")
        new["apiVersion"] = current.get("apiVersion", rt.api_version)
        new["kind"] = current.get("kind", rt.kind)
        if rt.custom and not validated:
            new = self._admit_custom(rt, new, current, subresource)
        if rt.storage_key == CRD_KEY and subresource != "status":
            self._validate_crd(new)
            new["status"] = _crd_status(new, current.get("status"))
        if _spec_changed(rt, current, new):
            new["metadata"]["generation"] = int(cur_meta.get("generation") or 0) + 1
        if new == current:
            return current
        if dry_run:
            return new
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        key = rt.storage_key
        ns, name = cur_meta.get("namespace", ""), cur_meta["name"]
        releasing = bool(new["metadata"].get("deletionTimestamp")) and not new["metadata"].get("finalizers")
        if releasing and key not in (NAMESPACE_KEY, CRD_KEY):
            return self._remove(key, ns, name, new, current)
        self._put(key, ns, name, new)
        self._index_owners(key, new, current)
        if key == CRD_KEY:
            self._serve_crd(new)
        self._emit("MODIFIED", key, new, current)
        if releasing and key == NAMESPACE_KEY:
            self._maybe_finish_namespace(name)
        elif releasing and key == CRD_KEY and self._crd_empty(name):
            self._finish_container(CRD_KEY, name)
        return self._find(key, ns, name) or new

    # ----------------------------------------------------------------- delete
    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: Any = None,
               dry_run: bool = False) -> Obj:
        """DELETE: returns the object (marked with ``deletionTimestamp`` if finalizers hold it).

        ``options`` is a DeleteOptions dict: ``preconditions`` (``uid``, ``resourceVersion``) are checked
        (409 Conflict); ``propagationPolicy`` and ``gracePeriodSeconds`` are accepted. Raises 404.
        """
        with self._lock:
            ns = self._ns(rt, namespace)
            current = self._find(rt.storage_key, ns, name)
            if current is None:
                raise errors.not_found(rt.group, rt.plural, name)
            pre = (options or {}).get("preconditions") or {} if isinstance(options, dict) else {}
            meta = current["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise errors.conflict(rt.group, rt.plural, name, f"Precondition failed: UID in precondition: "
                                      f"{pre['uid']}, UID in object meta: {meta.get('uid')}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                raise errors.conflict(rt.group, rt.plural, name, f"Precondition failed: ResourceVersion in "
                                      f"precondition: {pre['resourceVersion']}, ResourceVersion in object meta: "
                                      f"{meta.get('resourceVersion')}")
            if dry_run:
                return current
            return self._delete_obj(rt.storage_key, ns, name)

    def _delete_obj(self, key: str, ns: str, name: str) -> Obj:
        current = self._objects[key][ns][name]
        meta = current["metadata"]
        if meta.get("deletionTimestamp"):
            return current  # already terminating: nothing changes
        cascades = key in (NAMESPACE_KEY, CRD_KEY)
        if meta.get("finalizers") or cascades:
            new_meta = {**meta, "deletionTimestamp": now_iso(), "deletionGracePeriodSeconds": 0,
                        "resourceVersion": str(self._next_rv())}
            if meta.get("generation"):
                new_meta["generation"] = int(meta["generation"]) + 1
            new = {**current, "metadata": new_meta}
            if key == NAMESPACE_KEY:
                new["status"] = {**(current.get("status") or {}), "phase": "Terminating"}
            self._put(key, ns, name, new)
            self._emit("MODIFIED", key, new, current)
            if key == NAMESPACE_KEY:
                self._cascade_namespace(name)
            elif key == CRD_KEY:
                self._cascade_crd(new)
            latest = self._find(key, ns, name)
            return latest if latest is not None else new
        new = {**current, "metadata": {**meta, "resourceVersion": str(self._next_rv())}}
        return self._remove(key, ns, name, new, current)

    def _remove(self, key: str, ns: str, name: str, final: Obj, previous: Obj) -> Obj:
        """Drop an object for good, emit DELETED, then finish whatever waited for it."""
        del self._objects[key][ns][name]
        self._forget_order(key)
        self._labels.drop(key, ns, name)
        if not self._objects[key][ns]:
            del self._objects[key][ns]
        self._index_owners(key, None, previous)
        if key == CRD_KEY:
            self._unserve_crd(final)
        self._emit("DELETED", key, final, previous)
        self._collect_dependents(final)
        if ns:
            self._maybe_finish_namespace(ns)
        crd_name = self._crd_by_key.get(key)
        if crd_name and not self._objects.get(key):
            crd = self._find(CRD_KEY, "", crd_name)
            if crd is not None and crd["metadata"].get("deletionTimestamp"):
                self._finish_container(CRD_KEY, crd_name)
        return final

    def _cascade_namespace(self, namespace: str) -> None:
        for key in list(self._objects):
            for name in list(self._objects[key].get(namespace, {})):
                if self._find(key, namespace, name) is not None:
                    self._delete_obj(key, namespace, name)
        self._maybe_finish_namespace(namespace)

    def _maybe_finish_namespace(self, namespace: str) -> None:
        ns_obj = self._find(NAMESPACE_KEY, "", namespace)
        if ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return
        if any(self._objects[key].get(namespace) for key in self._objects if key != NAMESPACE_KEY):
            return
        self._finish_container(NAMESPACE_KEY, namespace)

    def _cascade_crd(self, crd: Obj) -> None:
        crd_name = crd["metadata"]["name"]
        keys = [key for key, name in self._crd_by_key.items() if name == crd_name]
        for key in keys:
            for ns, name, _ in list(self._iter(key, None)):
                if self._find(key, ns, name) is not None:
                    self._delete_obj(key, ns, name)
        if self._crd_empty(crd_name):
            self._finish_container(CRD_KEY, crd_name)

    def _crd_empty(self, crd_name: str) -> bool:
        return not any(self._objects.get(key) for key, name in self._crd_by_key.items() if name == crd_name)

    def _finish_container(self, key: str, name: str) -> None:
        """Remove a terminating Namespace/CRD once its content is gone and no finalizers remain."""
        obj = self._find(key, "", name)
        if obj is None or obj["metadata"].get("finalizers"):
            return
        final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._next_rv())}}
        self._remove(key, "", name, final, obj)

    def delete_collection(self, rt: ResourceType, namespace: str | None, label_selector: str | None,
                          field_selector: str | None) -> _List[Obj]:
        """DELETE on a list URL: delete every matching object; returns them as the delete left them."""
        with self._lock:
            result = self.list(rt, namespace, label_selector, field_selector)
            out = []
            for obj in result.items:
                meta = obj["metadata"]
                ns = meta.get("namespace", "")
                if self._find(rt.storage_key, ns, meta["name"]) is not None:
                    out.append(self._delete_obj(rt.storage_key, ns, meta["name"]))
            return out

    # ----------------------------------------------------------------- garbage collection
    def _index_owners(self, key: str, new: Obj | None, old: Obj | None) -> None:
        for obj, add in ((old, False), (new, True)):
            if obj is None:
                continue
            meta = obj["metadata"]
            ident = (key, meta.get("namespace", ""), meta["name"])
            for ref in meta.get("ownerReferences") or []:
                uid = ref.get("uid")
                if not uid:
                    continue
                if add:
                    self._dependents.setdefault(uid, set()).add(ident)
                else:
                    deps = self._dependents.get(uid)
                    if deps is not None:
                        deps.discard(ident)
                        if not deps:
                            del self._dependents[uid]

    def _uid_exists(self, uid: str) -> bool:
        # Only called for owner UIDs of dependents, which is rare; a scan keeps the hot path index-free.
        return any(obj["metadata"].get("uid") == uid for by_ns in self._objects.values()
                   for names in by_ns.values() for obj in names.values())

    def _collect_dependents(self, owner: Obj) -> None:
        uid = owner["metadata"].get("uid")
        deps = self._dependents.pop(uid, set()) if uid else set()
        for key, ns, name in sorted(deps):
            dep = self._find(key, ns, name)
            if dep is None:
                continue
            others = [r.get("uid") for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if any(self._uid_exists(o) for o in others if o):
                continue
            self._delete_obj(key, ns, name)


def _spec_changed(rt: ResourceType, old: Obj, new: Obj) -> bool:
    skip = {"metadata", "apiVersion", "kind"}
    if rt.has_status:
        skip.add("status")
    keys = (set(old) | set(new)) - skip
    return any(old.get(k) != new.get(k) for k in keys)


def _fold_string_data(obj: Obj) -> Obj:
    """Secrets: ``stringData`` is write-only and merged into base64 ``data``, as the real API does."""
    if "stringData" not in obj:
        return obj
    obj = dict(obj)
    string_data = obj.pop("stringData") or {}
    data = dict(obj.get("data") or {})
    for k, v in string_data.items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    obj["data"] = data
    return obj


def _crd_status(crd: Obj, previous: Obj | None) -> Obj:
    """The status the apiextensions controllers would set: Established, NamesAccepted, storedVersions."""
    spec = crd.get("spec") or {}
    stored = [v.get("name") for v in spec.get("versions") or [] if v.get("storage")]
    old_stored = list((previous or {}).get("storedVersions") or [])
    ts = now_iso()
    conditions = (previous or {}).get("conditions") or [
        {"type": "NamesAccepted", "status": "True", "lastTransitionTime": ts, "reason": "NoConflicts",
         "message": "no conflicts found"},
        {"type": "Established", "status": "True", "lastTransitionTime": ts, "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted"},
    ]
    return {"conditions": copy.deepcopy(conditions), "acceptedNames": copy.deepcopy(spec.get("names") or {}),
            "storedVersions": old_stored + [v for v in stored if v not in old_stored]}


__all__ += ["ApiError", "now_iso"]
