"""The Kubernetes client of Reconcilery: dict bodies for any kind over the official ``ApiClient``.

Requests go through the official client's pieces: its credentials, default headers and query encoding
(``ApiClient``) and its urllib3 ``PoolManager`` (never preloaded), so core and custom kinds are the same code and
answers are plain dicts. Errors are mapped by :func:`kube.errors.error_for`.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import urllib3
from kubernetes.client import ApiClient

import fencing
from kube import audit, events
from kube.errors import ApiError, Conflict, NotFound, ReadLimitExceeded, ResourceMissing, error_for
from kube.resources import EVENT, Resource, object_ref

log = logging.getLogger(__name__)

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
LIST_PAGE_SIZE = 500
#: The Accept header of :meth:`Kube.list_metadata`: the metadata-only list, else plain JSON.
METADATA_LIST_ACCEPT = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1,application/json")
Query = Sequence[tuple[str, str | int | bool]]
#: ``(resource, verb, object)`` after a successful write of this client: verb ``"write"`` (create,
#: replace, patch, status patch: ``object`` is the API server's answer, decoded once more for the
#: listeners, never the dict the caller gets) or ``"delete"`` (``object`` is the answer when it is the
#: object, else ``{"metadata": {"name", "namespace"}}``). Listeners must not change it.
WriteListener = Callable[[Resource, str, dict[str, Any]], None]


#: Bytes asked of the socket per read of a bounded answer.
_CHUNK = 64 * 1024
#: Bytes of an error (non-2xx) answer read at most, from any cluster: a Status is a few hundred bytes.
ERROR_BODY_MAX = 64 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what a client reads from a cluster it does not trust (an SKR: its owner controls
    its API server's answers). Past one, the request raises :class:`ReadLimitExceeded` and nothing
    more is read or kept.

    Attributes:
        page_size: objects asked per list page (``limit``).
        max_objects: objects per list (all pages together).
        max_bytes: bytes of one list (all pages together) and of any one answer.
        total_deadline: the client's ``timeout`` bounds the whole body (read in chunks, the deadline
            checked between them) and is urllib3's total timeout for connect and headers (a
            :class:`kube.clusters.RemoteKube` also cuts headers that trickle past it), so a
            trickling answer cannot hold a worker.
    """

    page_size: int = LIST_PAGE_SIZE
    max_objects: int = 10_000
    max_bytes: int = 64 * 2**20
    total_deadline: bool = True


class ByteBudget:
    """Bytes of answers one client (one SKR connect) may hold at once: lists charge their raw bytes
    while read and keep them charged while their caller holds the objects (:meth:`Kube.list_measured`,
    given back with :meth:`give`); any answer is read only up to what is left. Thread-safe.

    Sized by :func:`kube.clusters.connect_budget` from the pod's memory (issue 27: a kind's list
    could be 64 MiB, decoded about 3.8x, for each of 8 connect threads of a 512 Mi worker).

    Args:
        total: bytes (raw JSON as read, not decoded objects); ``>= 1``.
    """

    def __init__(self, total: int) -> None:
        self.total = max(1, total)
        self._used = 0
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        """Bytes that may still be read (``>= 0``)."""
        with self._lock:
            return max(0, self.total - self._used)

    def take(self, n: int, what: str) -> None:
        """Charge ``n`` bytes; raises :class:`ReadLimitExceeded` (reason ``"BudgetExhausted"``,
        nothing charged) when fewer are left."""
        with self._lock:
            if n > self.total - self._used:
                raise budget_exhausted(what, self.total)
            self._used += n

    def give(self, n: int) -> None:
        """Give back ``n`` bytes taken before (their objects are dropped)."""
        with self._lock:
            self._used = max(0, self._used - n)


def budget_exhausted(what: str, total: int) -> ReadLimitExceeded:
    """The error of a read past a :class:`ByteBudget` (its message names the budget, not the data)."""
    return ReadLimitExceeded("BudgetExhausted", f"{what}: the connect's memory budget of {total} bytes is "
                             "exhausted (RECONCILERY_REMOTE_CONNECT_BUDGET_BYTES, or the pod's memory)")


def _meta(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata")
    return meta if isinstance(meta, dict) else {}


class Kube:
    """Client of one cluster. Thread-safe (one urllib3 pool per ``ApiClient``).

    Args:
        api_client: the official client, configured for the cluster (host, TLS, credentials).
        cluster: the cluster's name (``"local"``, an SKR id), for logs.
        timeout: seconds for connect and for each read of a non-watch request (with ``limits``: for
            the whole request).
        limits: bounds on answers (None: unbounded, for the clusters Reconcilery trusts).
        budget: bytes this client's answers may hold at once (with ``limits``; None: no budget).
    """

    #: urllib3 keywords of every request: redirects are followed as urllib3 does by default
    #: (:class:`kube.clusters.RemoteKube`: never, and no retries).
    _redirects: dict[str, Any] = {}

    def __init__(self, api_client: ApiClient, cluster: str = "local", timeout: float = 30.0,
                 limits: ReadLimits | None = None, budget: ByteBudget | None = None) -> None:
        self.api_client = api_client
        self.cluster = cluster
        self.timeout = timeout
        self.limits = limits
        self.budget = budget
        self._listeners: tuple[WriteListener, ...] = ()
        self._kept: _HostPool | None = None  # the host's connection pool (:meth:`_send`)
        self._listeners_lock = threading.Lock()

    # ---- write listeners -------------------------------------------------------------------

    def add_write_listener(self, listener: WriteListener) -> None:
        """Call ``listener(resource, verb, object)`` after each successful write through this client
        (the workers' informers keep their stores current with it: read-your-own-writes)."""
        with self._listeners_lock:
            self._listeners = (*self._listeners, listener)

    def remove_write_listener(self, listener: WriteListener) -> None:
        """Stop calling ``listener`` (no-op when it is not registered)."""
        with self._listeners_lock:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

    def _wrote(self, res: Resource, verb: str, obj: dict[str, Any]) -> None:
        for listener in self._listeners:
            try:
                listener(res, verb, obj)
            except Exception:  # a listener must never fail a write that happened
                log.exception("write listener failed cluster=%s resource=%s", self.cluster, res)

    # ---- transport -------------------------------------------------------------------------

    def open(self, method: str, path: str, query: Query = (), body: Any = None,
             content_type: str | None = None, timeout: float | tuple[float, float] | None = None,
             name: str | None = None, accept: str | None = None) -> urllib3.BaseHTTPResponse:
        """Send one request; the open urllib3 response on 2xx (caller reads and closes it).

        A non-2xx answer's body is read through :func:`_read_bounded`: at most :data:`ERROR_BODY_MAX`
        bytes, the request's timeout a total deadline from the start of the request (a trickled or
        endless error body cannot hold a thread; issue 27), else :class:`ReadLimitExceeded`.

        ``accept``: the Accept header (default ``application/json``).
        ``timeout``: seconds, or ``(connect, read)``; default :attr:`timeout` for both. Inside a
        reconcile the timeout is bounded by what is left of its deadline (and, for writes, of its
        lease), and a reconcile that must stop gets :class:`fencing.LeaseLost` or
        :class:`fencing.DeadlineExceeded` instead of a request (see :mod:`fencing`).
        Raises :class:`ApiError` (``status`` 0 when the server is unreachable) or a subclass.
        """
        audit.record(method, path, query)  # RBAC check of deploy/ (no-op unless RECONCILERY_KUBE_AUDIT_DIR)
        started = time.monotonic()
        if fencing.current() is not None:
            write = method not in ("GET", "HEAD")
            if timeout is None:
                bounded = fencing.timeout(self.timeout, write=write)
                timeout = bounded if self.limits is not None else (bounded, bounded)
            else:
                fencing.check()
        elif timeout is None and self.limits is not None:
            timeout = self.timeout  # a number: urllib3's total timeout, not one per read
        headers = {"Accept": accept or "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        try:
            response = self._send(method, path, query, headers, body,
                                  timeout if timeout is not None else (self.timeout, self.timeout))
        except (urllib3.exceptions.HTTPError, OSError) as exc:  # TLS failures too (urllib3's SSLError)
            raise ApiError(0, "Unreachable", f"{method} {path}: {exc}") from exc
        if not 200 <= response.status <= 299:
            total = timeout if timeout is not None else self.timeout
            deadline = started + (max(total) if isinstance(total, tuple) else total)
            # an error body is bounded for every cluster: at most 64 KiB, the timeout a total deadline
            raw = _read_or_hang_up(response, f"{method} {path}", lambda: _read_bounded(
                response, f"{method} {path}: error answer HTTP {response.status}", ERROR_BODY_MAX, deadline))
            raise error_for(response.status, bytes(raw), name)
        return response

    def _send(self, method: str, path: str, query: Query, headers: dict[str, str], body: Any,
              timeout: float | tuple[float, float]) -> urllib3.BaseHTTPResponse:
        """One request through the official client's urllib3 ``PoolManager`` (its TLS, proxy and pool
        settings) with the official client's default headers and credentials
        (``ApiClient.update_params_for_auth``, token refresh hooks included) and its query encoding
        (``ApiClient.parameters_to_url_query``); ``body`` is sent as JSON. The host's connection pool is
        kept by the client (:class:`_HostPool`): ``PoolManager.urlopen``'s URL parse and pool
        lookup, and ``ApiClient.call_api``'s layers, cost more per request than the rest of urllib3's
        path (issue 31: about 120 us of 310 us per request). Raises what urllib3 raises."""
        api = self.api_client
        headers.update(api.default_headers)
        if api.cookie:
            headers["Cookie"] = api.cookie
        api.update_params_for_auth(headers, None, ["BearerToken"], path, method, None)
        uri = f"{path}?{api.parameters_to_url_query(list(query), None)}" if query else path
        data = json.dumps(body) if body is not None else None
        limit = (urllib3.Timeout(total=timeout) if isinstance(timeout, (int, float))
                 else urllib3.Timeout(connect=timeout[0], read=timeout[1]))
        manager = api.rest_client.pool_manager
        host = api.configuration.host
        kept = self._kept
        if kept is None or not kept.serves(manager, host):  # first use, or closed (or replaced) since
            kept = self._kept = _HostPool.of(manager, host)
        if kept.pool is not None and _PLAIN_URI.fullmatch(kept.prefix + uri):
            return kept.pool.urlopen(method, kept.prefix + uri, body=data, headers=headers, timeout=limit,
                                     preload_content=False, assert_same_host=False, **self._redirects)
        return manager.urlopen(method, host + uri, body=data, headers=headers, timeout=limit,
                               preload_content=False, **self._redirects)

    def request(self, method: str, path: str, query: Query = (), body: Any = None,
                content_type: str | None = None, name: str | None = None, accept: str | None = None) -> Any:
        """Send one request and decode its JSON answer (``None`` for an empty body).

        Raises :class:`ApiError` or a subclass (:class:`NotFound`, :class:`Conflict`, ...).
        """
        return self._decode(method, path, *self._raw(method, path, query, body, content_type, name, accept=accept))

    def _raw(self, method: str, path: str, query: Query = (), body: Any = None,
             content_type: str | None = None, name: str | None = None,
             max_bytes: int | None = None, accept: str | None = None) -> tuple[int, bytes | bytearray]:
        """Send one request; ``(status, raw answer)`` of a 2xx answer (raises as :meth:`request`).
        With :attr:`limits`, the answer is read in chunks and abandoned past ``max_bytes`` (or past
        ``max_bytes`` when given, what is left of a list's budget) or past the request's deadline."""
        limits = self.limits
        deadline = time.monotonic() + self.timeout
        response = self.open(method, path, query, body, content_type, name=name, accept=accept)
        cap = limits.max_bytes if limits is not None and max_bytes is None else max_bytes
        budget = self.budget
        by_budget = budget is not None and cap is not None and budget.left < cap
        if by_budget and budget is not None:
            cap = budget.left
        def read() -> bytes | bytearray:
            if limits is None or cap is None:
                return response.data
            try:
                return _read_bounded(response, f"{method} {path}", cap, deadline if limits.total_deadline else None)
            except ReadLimitExceeded as exc:
                if by_budget and budget is not None and exc.reason == "TooLarge":
                    raise budget_exhausted(f"{method} {path} of cluster {self.cluster}", budget.total) from exc
                raise

        return response.status, _read_or_hang_up(response, f"{method} {path}", read)

    @staticmethod
    def _decode(method: str, path: str, status: int, raw: bytes | bytearray) -> Any:
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(status, "BadResponse", f"{method} {path}: answer is not JSON") from exc

    def _write(self, res: Resource, method: str, path: str, body: Any, content_type: str | None = None,
               name: str | None = None) -> dict[str, Any]:
        """A write whose answer is the object; write listeners get their own decoded copy of it."""
        status, raw = self._raw(method, path, body=body, content_type=content_type, name=name)
        obj = dict(self._decode(method, path, status, raw) or {})
        if self._listeners and obj:
            self._wrote(res, "write", json.loads(raw))
        return obj

    # ---- objects ---------------------------------------------------------------------------

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or ``None`` if it does not exist. Raises :class:`ResourceMissing` when the
        kind is not served, :class:`ApiError` on other failures."""
        try:
            obj = self.request("GET", res.path(namespace, name), name=name)
        except ResourceMissing:
            raise
        except NotFound:
            return None
        return dict(obj)

    def list_with_version(self, res: Resource, namespace: str | None = None,
                          label_selector: str | None = None, field_selector: str | None = None,
                          page_size: int = LIST_PAGE_SIZE) -> tuple[list[dict[str, Any]], str]:
        """Every matching object (pages of ``page_size`` followed) and the list's resourceVersion
        (the snapshot to start a watch from). Items get ``apiVersion``/``kind`` filled in (the API
        server leaves them out of list items). With :attr:`limits`, pages are at most
        ``limits.page_size`` and the list at most ``max_objects`` objects and ``max_bytes`` bytes
        (and what is left of :attr:`budget`, given back when the list is returned).
        Raises :class:`ResourceMissing`, :class:`ReadLimitExceeded`, :class:`ApiError`."""
        items, version, size = self.list_measured(res, namespace, label_selector, field_selector, page_size)
        if self.budget is not None:
            self.budget.give(size)
        return items, version

    def list_measured(self, res: Resource, namespace: str | None = None,
                      label_selector: str | None = None, field_selector: str | None = None,
                      page_size: int = LIST_PAGE_SIZE, *,
                      accept: str | None = None) -> tuple[list[dict[str, Any]], str, int]:
        """As :meth:`list_with_version`, and the raw bytes read (0 without :attr:`limits`); ``accept``:
        the Accept header (:meth:`list_metadata`). With a
        :attr:`budget`, those bytes stay charged to it until the caller gives them back
        (``kube.budget.give(size)``) when it drops the objects; a list past what is left raises
        :class:`ReadLimitExceeded` (reason ``"BudgetExhausted"``) and keeps nothing charged."""
        taken = [0]  # bytes charged so far, given back when the list fails
        try:
            return self._list(res, namespace, label_selector, field_selector, page_size, taken, accept)
        except BaseException:
            if self.budget is not None:
                self.budget.give(taken[0])
            raise

    def _list(self, res: Resource, namespace: str | None, label_selector: str | None,
              field_selector: str | None, page_size: int, taken: builtins.list[int],
              accept: str | None = None) -> tuple[builtins.list[dict[str, Any]], str, int]:
        limits = self.limits
        budget = self.budget
        if limits is not None:
            page_size = min(page_size, limits.page_size)
            pages_left = limits.max_objects // max(1, page_size) + 2  # a server that pages forever
            bytes_left = limits.max_bytes
        query: list[tuple[str, str | int | bool]] = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        items: list[dict[str, Any]] = []
        version = ""
        token = ""
        while True:
            page_query = [*query, ("limit", page_size)] + ([("continue", token)] if token else [])
            path = res.path(namespace)
            if limits is None:
                page = _list_page("GET", path, self.request("GET", path, page_query, accept=accept))
            else:
                pages_left -= 1
                if pages_left < 0:
                    raise ReadLimitExceeded("TooManyPages", f"list {res} of cluster {self.cluster}: more pages "
                                            f"than {limits.max_objects} objects need")
                status, raw = self._raw("GET", path, page_query, max_bytes=bytes_left, accept=accept)
                bytes_left -= len(raw)
                if budget is not None:
                    budget.take(len(raw), f"list {res} of cluster {self.cluster}")
                taken[0] += len(raw)
                page = _list_page("GET", path, self._decode("GET", path, status, raw), status)
                del raw
                if len(items) + len(page.get("items") or []) > limits.max_objects:
                    raise ReadLimitExceeded("TooManyObjects", f"list {res} of cluster {self.cluster}: more than "
                                            f"{limits.max_objects} objects")
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            meta = page.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            version = version or str(meta.get("resourceVersion") or "")
            token = str(meta.get("continue") or "")
            if not token:
                return items, version, taken[0]

    def list(self, res: Resource, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict[str, Any]]:
        """Every matching object (all namespaces when ``namespace`` is None). Raises
        :class:`ResourceMissing` when the kind is not served, :class:`ApiError` otherwise."""
        return self.list_with_version(res, namespace, label_selector, field_selector)[0]

    def list_metadata(self, res: Resource, namespace: str | None = None,
                      label_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        """The metadata of every matching object, each as ``{"apiVersion", "kind", "metadata"}`` of
        ``res``: asked for as a ``PartialObjectMetadataList`` (``Accept: application/json;as=
        PartialObjectMetadataList;g=meta.k8s.io;v=v1``, as client-go's metadata client), so an API server
        sends no spec or status; a server that does not serve that form sends the whole objects, of which
        only the metadata is kept. Bounded like :meth:`list` (read limits, budget). Raises
        :class:`ResourceMissing` when the kind is not served, :class:`ApiError` otherwise (reason
        ``BadResponse`` for an answer that is not a list of objects with object metadata)."""
        items, _, size = self.list_measured(res, namespace, label_selector, accept=METADATA_LIST_ACCEPT)
        if self.budget is not None:
            self.budget.give(size)  # only the metadata is kept, and it is the caller's now
        found = []
        for item in items:
            meta = item.get("metadata") or {}
            if not isinstance(meta, dict):
                raise ApiError(200, "BadResponse", f"list {res} of cluster {self.cluster}: an item's metadata "
                                                   "is not an object")
            found.append({"apiVersion": res.api_version, "kind": res.kind, "metadata": meta})
        return found

    def create(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        """Create ``body`` (namespace from ``metadata.namespace``); the created object.
        Raises :class:`Conflict` (reason ``AlreadyExists``) if it exists, :class:`ApiError` otherwise."""
        body = {"apiVersion": res.api_version, "kind": res.kind, **body}
        return self._write(res, "POST", res.path(_meta(body).get("namespace")), body)

    def replace(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        """PUT ``body`` (name/namespace from its metadata); with ``metadata.resourceVersion`` set a
        concurrent change raises :class:`Conflict`. Raises :class:`NotFound` if the object is gone."""
        meta = _meta(body)
        name = meta.get("name")
        if not name:
            raise ValueError("replace needs metadata.name")
        body = {"apiVersion": res.api_version, "kind": res.kind, **body}
        return self._write(res, "PUT", res.path(meta.get("namespace"), name), body, name=name)

    def patch(self, res: Resource, name: str, patch: dict[str, Any] | builtins.list[dict[str, Any]],
              namespace: str | None = None, patch_type: str = "merge") -> dict[str, Any]:
        """Patch an object; ``patch_type`` is ``merge`` (RFC 7386), ``json`` (RFC 6902, a list of
        operations) or ``strategic``. Raises ``ValueError`` for another type, :class:`NotFound`,
        :class:`Conflict` (a ``test`` op or resourceVersion precondition failed), :class:`ApiError`."""
        return self._patch(res, name, patch, namespace, patch_type, None)

    def patch_status(self, res: Resource, name: str, status: dict[str, Any],
                     namespace: str | None = None) -> dict[str, Any]:
        """Merge-patch the ``status`` subresource with ``{"status": status}`` (``None`` values delete
        fields). Raises :class:`NotFound`, :class:`ApiError`."""
        return self._patch(res, name, {"status": status}, namespace, "merge", "status")

    def _patch(self, res: Resource, name: str, patch: Any, namespace: str | None, patch_type: str,
               subresource: str | None) -> dict[str, Any]:
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            known = sorted(PATCH_CONTENT_TYPES)
            raise ValueError(f"patch_type must be one of {known}, got {patch_type!r}") from None
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a json patch is a list of operations")
        return self._write(res, "PATCH", res.path(namespace, name, subresource), patch, content_type, name)

    def delete(self, res: Resource, name: str, namespace: str | None = None,
               propagation_policy: str | None = "Background") -> None:
        """Delete an object; absent objects (and kinds that are not served) are fine.
        Raises :class:`ApiError` on other failures."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation_policy} \
            if propagation_policy else None
        try:
            answer = self.request("DELETE", res.path(namespace, name), body=body, name=name)
        except NotFound:
            answer = None
        if self._listeners:
            obj = answer if isinstance(answer, dict) and answer.get("kind") not in (None, "Status") \
                and isinstance(answer.get("metadata"), dict) else None
            self._wrote(res, "delete", dict(obj) if obj is not None else
                        {"metadata": {"name": name, "namespace": namespace or ""}})

    def served(self, res: Resource) -> bool:
        """Whether the API server serves ``res`` (discovery of its group/version).
        Raises :class:`ApiError` when the server cannot be asked."""
        try:
            doc = self.request("GET", res.group_version_path) or {}
        except NotFound:
            return False
        return any(r.get("name") == res.plural for r in doc.get("resources") or [])

    def wait_served(self, resources: Iterable[Resource], timeout: float, interval: float = 0.05) -> None:
        """Block until every one of ``resources`` is served (CRDs just created or replaced), polling
        discovery every ``interval`` seconds. Raises ``TimeoutError`` naming the first one still not
        served after ``timeout`` seconds, :class:`ApiError` when the server cannot be asked."""
        deadline = time.monotonic() + timeout
        for res in resources:
            while not self.served(res):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{res} not served after {timeout:.0f} s")
                time.sleep(interval)

    # ---- events ----------------------------------------------------------------------------

    def emit_event(self, involved: dict[str, Any], reason: str, message: str, type: str = "Normal") -> None:
        """Record a core/v1 Event about ``involved`` (an object dict), aggregated like client-go's
        recorder: an identical Event (same object, type, reason, message) gets ``count`` + 1 and a
        new ``lastTimestamp`` instead of a new Event. Best effort as in client-go: API failures are
        logged, not raised. Raises ``ValueError`` for a bad ``type`` or an object without a name."""
        event = events.new_event(involved, reason, message, type)
        name, namespace = event["metadata"]["name"], event["metadata"]["namespace"]
        try:
            for _ in range(5):
                try:
                    self.create(EVENT, event)
                    return
                except Conflict:
                    existing = self.get(EVENT, name, namespace)
                if existing is None:
                    continue  # deleted (expired) in between: create again
                try:
                    self.replace(EVENT, events.bump_event(existing))
                    return
                except (Conflict, NotFound):
                    continue  # another worker bumped it (or it expired): read again
            log.warning("event not recorded cluster=%s object=%s reason=%s: too many conflicts",
                        self.cluster, object_ref(involved), reason)
        except ApiError as exc:
            log.warning("event not recorded cluster=%s object=%s reason=%s error=%s",
                        self.cluster, object_ref(involved), reason, exc)

    def close(self) -> None:
        """Close the connection pool."""
        self.api_client.close()

    def __repr__(self) -> str:
        return f"Kube(cluster={self.cluster!r}, host={self.api_client.configuration.host!r})"


#: A request URI urllib3's URL parsing would leave as it is (no character it percent-encodes).
_PLAIN_URI = re.compile(r"/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*")


class _HostPool(NamedTuple):
    """The connection pool ``manager`` picks for ``host`` (``scheme://netloc[/prefix]``, a Configuration's
    host; ``pool`` is ``None`` through a proxy: requests then go through ``PoolManager.urlopen``) and the
    host's path ``prefix``."""

    manager: urllib3.PoolManager
    host: str
    pool: urllib3.HTTPConnectionPool | None
    prefix: str

    @classmethod
    def of(cls, manager: urllib3.PoolManager, host: str) -> _HostPool:
        split = host.find("/", host.find("://") + 3)
        base, prefix = (host[:split], host[split:]) if split > 0 else (host, "")
        pool = None if isinstance(manager, urllib3.ProxyManager) else manager.connection_from_url(base)
        return cls(manager, host, pool, prefix)

    def serves(self, manager: urllib3.PoolManager, host: str) -> bool:
        """Whether this is still the pool of ``manager`` for ``host`` (not closed with the client)."""
        return self.manager is manager and self.host == host and (self.pool is None or self.pool.pool is not None)


def _list_page(method: str, path: str, page: Any, status: int = 200) -> dict[str, Any]:
    """A list answer checked for its shape: an object whose ``items`` (if any) is a list of objects
    (``None``, an empty answer, is an empty page). Raises :class:`ApiError` ``BadResponse`` otherwise: an
    untrusted cluster's answer of another shape is an error of that cluster, not a crash of the caller."""
    if page is None:
        return {}
    items = page.get("items") if isinstance(page, dict) else None
    if not isinstance(page, dict) or not isinstance(items or [], list) or \
            not all(isinstance(item, dict) for item in items or []):
        raise ApiError(status, "BadResponse", f"{method} {path}: the answer is not a list of objects")
    return page


def _read_or_hang_up(response: urllib3.BaseHTTPResponse, what: str,
                     read: Callable[[], bytes | bytearray]) -> bytes | bytearray:
    """``read()`` of ``response``'s body, its connection released after; a read that failed
    (:class:`ApiError` ``Unreachable`` naming ``what``) or was abandoned (:class:`ReadLimitExceeded`)
    hangs up first, so the rest of the body never goes back to the pool."""
    try:
        return read()
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        _hang_up(response)
        raise ApiError(0, "Unreachable", f"{what}: {exc}") from exc
    except ReadLimitExceeded:
        _hang_up(response)
        raise
    finally:
        response.release_conn()


def _hang_up(response: urllib3.BaseHTTPResponse) -> None:
    """Close the connection of an answer abandoned mid-body: the rest is never read, and the
    connection must not go back to the pool with it (the server sees the hang-up and stops)."""
    with contextlib.suppress(urllib3.exceptions.HTTPError, OSError):
        response.close()


def _read_bounded(response: urllib3.BaseHTTPResponse, what: str, max_bytes: int,
                  deadline: float | None) -> bytearray:
    """The body of ``response``, read in chunks as they arrive; raises :class:`ReadLimitExceeded`
    once it passes ``max_bytes`` (checked against Content-Length first) or monotonic ``deadline``."""
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ReadLimitExceeded("TooLarge", f"{what}: answer of {declared} bytes exceeds {max_bytes}")
    buf = bytearray()
    while True:
        if deadline is not None and time.monotonic() > deadline:
            raise ReadLimitExceeded("DeadlineExceeded", f"{what}: answer not complete within the request's deadline")
        chunk = response.read1(_CHUNK)
        if not chunk:
            return buf
        buf += chunk
        if len(buf) > max_bytes:
            raise ReadLimitExceeded("TooLarge", f"{what}: answer exceeds {max_bytes} bytes")
