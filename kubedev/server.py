"""The dev Kubernetes API server: aiohttp routes over :class:`kubedev.store.Store`, and a threaded runner.

``build_app(store)`` gives an aiohttp application (for embedding in a running loop);
:class:`DevAPIServer` runs one in a background thread with its own event loop, for tests and
``reconcilery up``. Besides the default cluster (``store``, served at the root), the server serves any
number of independent clusters at URL path prefixes: cluster ``skr-1`` is
``http://host:port/clusters/skr-1`` (its own :class:`~kubedev.store.Store`, CRDs, watches and
resourceVersions; the official client and kubectl take the prefixed URL as their ``server``), so one
process can stand in for a KCP, a Garden and a thousand SKRs (see :class:`Clusters`).

The HTTP layer parses URLs, query parameters and bodies, calls the store and serializes its answers;
watches stream one JSON event per line (``application/json``, chunked) like the real server, so the
official client's ``watch.Watch`` and ``kubectl get -w`` both work.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web

from kubedev import discovery, encoding, errors
from kubedev.admission import Admission
from kubedev.conversion import Converter
from kubedev.errors import ApiError
from kubedev.protobuf import ProtobufError, decode_object
from kubedev.resources import ResourceType
from kubedev.store import Store, StoreEvent, compile_filter, view

__all__ = ["CLUSTERS_PREFIX", "Clusters", "DevAPIServer", "build_app", "kubeconfig_dict"]

log = logging.getLogger("kubedev.server")
T = TypeVar("T")

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}
_OPENAPI_V2_PB = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_DEFAULT_WATCH_TIMEOUT = 1800.0  # the real server's --min-request-timeout
_STORE_KEY = web.AppKey("store", Store)
_STATE_KEY = web.AppKey("state", dict)
#: URL path prefix of the named clusters: ``/clusters/<name>/api/v1/...``.
CLUSTERS_PREFIX = "/clusters/"


_dumps = encoding.dumps  # compact JSON; a CRD's spec encoded once (kubedev.encoding)


def _metadata_list_version(accept: str) -> str | None:
    """``v1`` / ``v1beta1`` when the first media range of ``accept`` that this server can answer is a
    ``PartialObjectMetadataList`` of ``meta.k8s.io`` in that version (``application/json;as=
    PartialObjectMetadataList;g=meta.k8s.io;v=v1``, as the API server negotiates it), else ``None``
    (plain JSON; ranges it cannot answer, e.g. protobuf or tables, are passed over)."""
    for media_range in accept.split(","):
        kind, *params = (part.strip() for part in media_range.split(";"))
        if kind not in ("application/json", "application/*", "*/*"):
            continue
        given = dict(p.split("=", 1) for p in params if "=" in p)
        if "as" not in given:
            return None
        if given["as"] == "PartialObjectMetadataList" and given.get("g") == "meta.k8s.io" \
                and given.get("v") in ("v1", "v1beta1"):
            return given["v"]
    return None


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=_dumps(obj), status=status, content_type="application/json")


def _error(exc: ApiError) -> web.Response:
    return _json(exc.status(), exc.code)


class _Watches:
    """The live watch queues, so shutdown and reset can end them."""

    def __init__(self) -> None:
        self.queues: set[asyncio.Queue[StoreEvent | None]] = set()

    def close_all(self) -> None:
        for queue in list(self.queues):
            queue.put_nowait(None)


class Clusters:
    """The named clusters of one dev API server: ``name -> Store``, each served at ``/clusters/<name>``.

    A cluster costs one small :class:`~kubedev.store.Store` (its four default namespaces) and one
    request handler, so thousands fit in one process. Thread-safe: :meth:`add` and :meth:`remove` may be
    called from any thread while the server runs. Names must be non-empty and contain no ``/``.
    """

    def __init__(self, bookmark_interval: float = 5.0, event_log_size: int = 1_000) -> None:
        self.bookmark_interval = bookmark_interval
        self.event_log_size = event_log_size
        self._handlers: dict[str, _Handler] = {}
        self._lock = threading.Lock()

    def add(self, name: str, store: Store | None = None) -> Store:
        """Serve cluster ``name`` (idempotent: an existing cluster keeps its store); returns its store.

        Raises ``ValueError`` for an empty name or one containing ``/``.
        """
        if not name or "/" in name:
            raise ValueError(f"cluster name must be non-empty and contain no '/': {name!r}")
        with self._lock:
            handler = self._handlers.get(name)
            if handler is None:
                handler = _Handler(store if store is not None else Store(event_log_size=self.event_log_size),
                                   _Watches(), self.bookmark_interval, prefix=f"{CLUSTERS_PREFIX}{name}")
                self._handlers[name] = handler
            return handler.store

    def remove(self, name: str) -> bool:
        """Stop serving ``name``: its open watches end, its objects are gone. Returns whether it existed."""
        with self._lock:
            handler = self._handlers.pop(name, None)
        if handler is None:
            return False
        handler.store.reset()  # ends the cluster's watches (CLOSE) and frees its objects
        handler.watches.close_all()
        return True

    def store(self, name: str) -> Store | None:
        """The store of cluster ``name``, or ``None``."""
        handler = self._handlers.get(name)
        return handler.store if handler is not None else None

    def names(self) -> list[str]:
        """The served cluster names, sorted."""
        with self._lock:
            return sorted(self._handlers)

    def handler(self, name: str) -> _Handler | None:
        return self._handlers.get(name)

    def close_all(self) -> None:
        """End the open watches of every cluster (server shutdown)."""
        with self._lock:
            handlers = list(self._handlers.values())
        for handler in handlers:
            handler.watches.close_all()

    def clear(self) -> None:
        """Stop serving every named cluster."""
        for name in self.names():
            self.remove(name)


def build_app(store: Store, bookmark_interval: float = 5.0, clusters: Clusters | None = None) -> web.Application:
    """The aiohttp application serving ``store``; ``bookmark_interval`` is seconds between BOOKMARKs.

    ``clusters``: the named clusters served under ``/clusters/<name>`` (an unknown name answers 404).
    """
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[_STORE_KEY] = store
    watches = _Watches()
    named = clusters if clusters is not None else Clusters(bookmark_interval)
    app[_STATE_KEY] = {"watches": watches, "bookmark_interval": bookmark_interval, "clusters": named}

    async def on_shutdown(_: web.Application) -> None:
        watches.close_all()
        named.close_all()

    app.on_shutdown.append(on_shutdown)
    handler = _Handler(store, watches, bookmark_interval)
    app[_STATE_KEY]["handler"] = handler

    async def route(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith(CLUSTERS_PREFIX):
            name, _, tail = path[len(CLUSTERS_PREFIX):].partition("/")
            target = named.handler(name)
            if target is None:
                return _error(errors.ApiError(404, "NotFound", f"cluster {name!r} is not served here"))
            return await target.dispatch(request, "/" + tail)
        return await handler.dispatch(request, path)

    app.router.add_route("*", "/{tail:.*}", route)
    return app


def request_verb(method: str, path: str, watch: bool) -> str:
    """The API verb of a request: ``WATCH``, ``LIST`` (a GET of a collection), else the HTTP method."""
    if method != "GET":
        return method
    if watch:
        return "WATCH"
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return "LIST" if len(rest) == 1 else "GET"


def _parse_int(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(str(value))
    except ValueError as exc:
        raise errors.bad_request(f"invalid {name}: {value!r}") from exc


class _Handler:
    def __init__(self, store: Store, watches: _Watches, bookmark_interval: float, prefix: str = "") -> None:
        self.store = store
        self.watches = watches
        self.bookmark_interval = bookmark_interval
        self.admission = Admission(store)
        self.prefix = prefix  # the cluster's URL path prefix ("" for the default cluster)
        self.requests = 0  # requests served (benchmarks read it)
        #: requests by verb: GET (one object or discovery), LIST, WATCH, POST, PUT, PATCH, DELETE
        self.verbs: collections.Counter[str] = collections.Counter()
        self.converter = Converter(store)

    async def dispatch(self, request: web.Request, path: str | None = None) -> web.StreamResponse:
        self.requests += 1
        self.verbs[request_verb(request.method, request.path if path is None else path,
                                request.query.get("watch") in ("true", "1"))] += 1
        try:
            return await self._dispatch(request, request.path if path is None else path)
        except ApiError as exc:
            return _error(exc)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # an internal bug must surface as a 500 Status, like the real server
            log.exception("event=internal_error method=%s path=%s", request.method, request.path)
            return _error(ApiError(500, "InternalError", f"Internal error occurred: {exc!r}"))

    async def _dispatch(self, request: web.Request, path: str) -> web.StreamResponse:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _json({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2",
                                    "/openapi/v3", "/readyz", "/version"]})
        head = parts[0]
        if head in ("healthz", "readyz", "livez"):
            return web.Response(text="ok")
        if head == "version":
            return _json(discovery.version_info())
        if head == "openapi":
            return self._openapi(parts[1:])
        if head == "api":
            if len(parts) == 1:
                return _json(discovery.api_versions(request.host))
            group, version, rest = "", parts[1], parts[2:]
        elif head == "apis":
            if len(parts) == 1:
                return _json(discovery.api_group_list(self.store.registry.all()))
            if len(parts) == 2:
                versions = [rt.version for rt in self.store.registry.all() if rt.group == parts[1]]
                if not versions:
                    raise errors.resource_not_found()
                return _json(discovery.api_group(parts[1], list(dict.fromkeys(versions))))
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.resource_not_found()
        if not rest:
            gv = f"{group}/{version}" if group else version
            types = [rt for rt in self.store.registry.all() if rt.group_version == gv]
            if not types:
                raise errors.resource_not_found()
            return _json(discovery.api_resource_list(gv, types))
        return await self._resource(request, group, version, rest)

    def _openapi(self, rest: list[str]) -> web.Response:
        types = self.store.registry.all()
        if rest == ["v2"]:
            # An empty protobuf Document: kubectl then finds no schema for the kind and skips client-side
            # validation (it only falls back to v2 for CRs created after its CRD cache was filled).
            return web.Response(body=b"", headers={"Content-Type": _OPENAPI_V2_PB})
        if rest == ["v3"]:
            return _json(discovery.openapi_v3_root(types, self.prefix))
        if len(rest) >= 3 and rest[0] == "v3":
            gv = "v1" if rest[1:] == ["api", "v1"] else "/".join(rest[2:])
            if not any(rt.group_version == gv for rt in types):
                raise errors.resource_not_found()
            return _json(discovery.openapi_v3_group_version(gv, types))
        raise errors.resource_not_found()

    async def _resource(self, request: web.Request, group: str, version: str,
                        rest: list[str]) -> web.StreamResponse:
        query = request.query
        watch = query.get("watch", "") in ("1", "true", "True")
        if rest[0] == "watch":
            watch, rest = True, rest[1:]
        namespace: str | None = None
        registry = self.store.registry
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = registry.lookup(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.resource_not_found()
        rt = registry.lookup(group, version, rest[0])
        if rt is None:
            raise errors.resource_not_found()
        if namespace is not None and not rt.namespaced:
            raise errors.resource_not_found()
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        if subresource is not None and (subresource != "status" or not rt.has_status):
            raise errors.resource_not_found()
        method = request.method
        dry_run = bool(query.get("dryRun"))
        if self.converter.needed(rt):
            return await self._converted(request, rt, namespace, name, subresource, watch, dry_run)
        if name is None:
            if method == "GET" and watch:
                return await self._watch(request, rt, namespace)
            if method == "GET":
                return self._list(request, rt, namespace)
            if method == "POST":
                body = await self.admission.admit(rt, namespace, "CREATE", await self._body(request),
                                                  dry_run=dry_run)
                await self.admission.validate(rt, namespace, "CREATE", body, dry_run=dry_run)
                return _json(view(rt, self.store.create(rt, namespace, body, dry_run)), 201)
            if method == "DELETE":
                deleted = self.store.delete_collection(rt, namespace, query.get("labelSelector"),
                                                       query.get("fieldSelector"))
                return _json({"kind": f"{rt.kind}List", "apiVersion": rt.api_version,
                              "metadata": {"resourceVersion": self.store.resource_version},
                              "items": [view(rt, o) for o in deleted]})
            raise errors.method_not_allowed()
        if rt.namespaced and namespace is None:
            raise errors.resource_not_found()
        if method == "GET":
            if watch:
                raise errors.method_not_allowed()
            return _json(view(rt, self.store.get(rt, namespace, name)))
        if method == "PUT":
            body = await self._body(request)
            if self._exists(rt, namespace, name):
                old = view(rt, self.store.get(rt, namespace, name))
                body = await self.admission.admit(rt, namespace, "UPDATE", body, old, dry_run, subresource or "")
                await self.admission.validate(rt, namespace, "UPDATE", body, old, dry_run, subresource or "")
            return _json(view(rt, self.store.replace(rt, namespace, name, body, subresource, dry_run)))
        if method == "PATCH":
            content_type = request.content_type
            patch_type = _PATCH_TYPES.get(content_type)
            if patch_type is None:
                raise errors.unsupported_media_type(content_type)
            body = await self._body(request, yaml_ok=patch_type == "apply")
            obj, created = self.store.patch(rt, namespace, name, patch_type, body, subresource, dry_run)
            return _json(view(rt, obj), 201 if created else 200)
        if method == "DELETE":
            options = await self._body(request, optional=True)
            if self.admission.validates(rt, "DELETE") and self._exists(rt, namespace, name):
                stored = view(rt, self.store.get(rt, namespace, name))
                await self.admission.validate(rt, namespace, "DELETE", None, stored, dry_run)
            gone = self.store.delete(rt, namespace, name, options, dry_run)
            if rt.returns_deleted or (gone["metadata"].get("deletionTimestamp") and \
                    self._exists(rt, namespace, name)):
                return _json(view(rt, gone))
            details: dict[str, Any] = {"name": name}
            if rt.group:
                details["group"] = rt.group
            details.update(kind=rt.plural, uid=gone["metadata"].get("uid", ""))
            return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                          "details": details})
        raise errors.method_not_allowed()

    def _exists(self, rt: ResourceType, namespace: str | None, name: str) -> bool:
        try:
            self.store.get(rt, namespace, name)
        except ApiError:
            return False
        return True

    @staticmethod
    async def _body(request: web.Request, yaml_ok: bool = False, optional: bool = False) -> Any:
        raw = await request.read()
        if not raw.strip():
            if optional:
                return None
            raise errors.bad_request("the request body is empty")
        if request.content_type == "application/vnd.kubernetes.protobuf":
            try:
                return decode_object(raw)
            except ProtobufError as exc:
                raise errors.ApiError(415, "UnsupportedMediaType", str(exc), {}) from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            if yaml_ok:
                try:
                    return yaml.safe_load(raw)
                except yaml.YAMLError:
                    pass
            raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc

    def _list(self, request: web.Request, rt: ResourceType, namespace: str | None) -> web.Response:
        query = request.query
        result = self.store.list(rt, namespace, query.get("labelSelector"), query.get("fieldSelector"),
                                 _parse_int(query.get("limit"), "limit"), query.get("continue") or None)
        meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
            meta["remainingItemCount"] = result.remaining
        metadata_as = _metadata_list_version(request.headers.get("Accept", ""))
        if metadata_as is not None:  # client-go's metadata client: the objects' metadata only
            api_version = f"meta.k8s.io/{metadata_as}"
            body = encoding.dumps_list(
                {"kind": "PartialObjectMetadataList", "apiVersion": api_version, "metadata": meta},
                [{"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": view(rt, o)["metadata"]}
                 for o in result.items])
            return web.Response(body=body, content_type="application/json")
        body = encoding.dumps_list({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta},
                                   [view(rt, o) for o in result.items])
        return web.Response(body=body, content_type="application/json")

    async def _converted(self, request: web.Request, rt: ResourceType, namespace: str | None, name: str | None,
                         subresource: str | None, watch: bool, dry_run: bool) -> web.StreamResponse:
        """A request for a version served through the CRD's conversion webhook (:mod:`kubedev.conversion`)."""
        conv, method, query = self.converter, request.method, request.query
        storage = conv.storage_type(rt)
        if name is None:
            if method == "GET" and watch:
                return await self._watch(request, storage, namespace, view_as=rt)
            if method == "GET":
                result = self.store.list(storage, namespace, query.get("labelSelector"), query.get("fieldSelector"),
                                         _parse_int(query.get("limit"), "limit"), query.get("continue") or None)
                meta: dict[str, Any] = {"resourceVersion": result.resource_version}
                if result.continue_token:
                    meta.update({"continue": result.continue_token, "remainingItemCount": result.remaining})
                items = await conv.to_request_version(rt, list(result.items))
                return _json({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta, "items": items})
            if method == "POST":
                body = await self.admission.admit(rt, namespace, "CREATE", await self._body(request), dry_run=dry_run)
                await self.admission.validate(rt, namespace, "CREATE", body, dry_run=dry_run)
                return _json(await conv.create(rt, namespace, body, dry_run), 201)
            if method == "DELETE":
                deleted = self.store.delete_collection(storage, namespace, query.get("labelSelector"),
                                                       query.get("fieldSelector"))
                return _json({"kind": f"{rt.kind}List", "apiVersion": rt.api_version,
                              "metadata": {"resourceVersion": self.store.resource_version},
                              "items": await conv.to_request_version(rt, deleted)})
            raise errors.method_not_allowed()
        if rt.namespaced and namespace is None:
            raise errors.resource_not_found()
        if method == "GET" and not watch:
            return _json((await conv.to_request_version(rt, [self.store.get(storage, namespace, name)]))[0])
        if method == "PUT":
            body = await self._body(request)
            if self._exists(storage, namespace, name):
                old = (await conv.to_request_version(rt, [self.store.get(storage, namespace, name)]))[0]
                body = await self.admission.admit(rt, namespace, "UPDATE", body, old, dry_run, subresource or "")
                await self.admission.validate(rt, namespace, "UPDATE", body, old, dry_run, subresource or "")
            return _json(await conv.replace(rt, namespace, name, body, subresource, dry_run))
        if method == "PATCH":
            patch_type = _PATCH_TYPES.get(request.content_type)
            if patch_type is None:
                raise errors.unsupported_media_type(request.content_type)
            body = await self._body(request, yaml_ok=patch_type == "apply")
            obj, created = await conv.patch(rt, namespace, name, patch_type, body, subresource, dry_run)
            return _json(obj, 201 if created else 200)
        if method == "DELETE":
            options = await self._body(request, optional=True)
            if self.admission.validates(rt, "DELETE") and self._exists(storage, namespace, name):
                stored = (await conv.to_request_version(rt, [self.store.get(storage, namespace, name)]))[0]
                await self.admission.validate(rt, namespace, "DELETE", None, stored, dry_run)
            gone = self.store.delete(storage, namespace, name, options, dry_run)
            if gone["metadata"].get("deletionTimestamp") and self._exists(storage, namespace, name):
                return _json((await conv.to_request_version(rt, [gone]))[0])
            details: dict[str, Any] = {"name": name, "group": rt.group, "kind": rt.plural,
                                       "uid": gone["metadata"].get("uid", "")}
            return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                          "details": details})
        raise errors.method_not_allowed()

    async def _watch(self, request: web.Request, rt: ResourceType, namespace: str | None,
                     view_as: ResourceType | None = None) -> web.StreamResponse:
        query = request.query
        ns_filter = namespace if rt.namespaced else None
        predicate = compile_filter(rt, ns_filter, query.get("labelSelector"), query.get("fieldSelector"))
        timeout = _parse_int(query.get("timeoutSeconds"), "timeoutSeconds")
        bookmarks = query.get("allowWatchBookmarks", "") in ("1", "true", "True")
        send_initial = query.get("sendInitialEvents", "") in ("1", "true", "True")
        rv_param = query.get("resourceVersion") or ""
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        queue: asyncio.Queue[StoreEvent | None] = asyncio.Queue()

        def listener(event: StoreEvent) -> None:
            if threading.get_ident() == loop_thread:
                queue.put_nowait(event)
            else:
                loop.call_soon_threadsafe(queue.put_nowait, event)

        unsubscribe = self.store.subscribe(rt.storage_key, listener)
        self.watches.queues.add(queue)
        response: web.StreamResponse | None = None
        try:
            failure: ApiError | None = None
            initial: list[tuple[str, dict[str, Any]]] = []
            if send_initial or rv_param in ("", "0"):
                initial = [("ADDED", o) for o in self.store.list(rt, ns_filter, query.get("labelSelector")).items
                           if predicate(o)]
            else:
                rv = _parse_int(rv_param, "resourceVersion") or 0
                try:
                    for event in self.store.events_since(rt.storage_key, rv):
                        translated = _translate(event, predicate)
                        if translated:
                            initial.append(translated)
                except ApiError as exc:
                    failure = exc
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                               "Cache-Control": "no-cache, private"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            if failure is not None:
                await response.write(_dumps({"type": "ERROR", "object": failure.status()}) + b"\n")
                return response
            shown = view_as or rt
            if initial:
                await response.write(await self._event_lines(shown, initial, view_as is not None))
            if send_initial:
                await response.write(self._bookmark(shown, initial_end=True))
            await self._stream(response, shown, queue, predicate, timeout, bookmarks, view_as is not None)
            return response
        except ApiError as exc:  # a conversion failed mid-stream: the real server ends the watch with an ERROR
            if response is not None:
                with contextlib.suppress(ConnectionError):
                    await response.write(_dumps({"type": "ERROR", "object": exc.status()}) + b"\n")
                return response
            raise
        except ConnectionError:
            return response if response is not None else web.Response()  # the client went away
        finally:
            unsubscribe()
            self.watches.queues.discard(queue)

    def _bookmark(self, rt: ResourceType, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": self.store.resource_version}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _dumps({"type": "BOOKMARK", "object": {"kind": rt.kind, "apiVersion": rt.api_version,
                                                      "metadata": meta}}) + b"\n"

    async def _event_lines(self, rt: ResourceType, events: list[tuple[str, dict[str, Any]]], convert: bool) -> bytes:
        """Watch event lines; ``convert``: objects go through the conversion webhook first (one review)."""
        if not convert:
            return b"".join(_event_line(rt, t, o) for t, o in events)
        objs = await self.converter.to_request_version(rt, [o for _, o in events])
        return b"".join(_dumps({"type": t, "object": o}) + b"\n" for (t, _), o in zip(events, objs, strict=True))

    async def _stream(self, response: web.StreamResponse, rt: ResourceType,
                      queue: asyncio.Queue[StoreEvent | None], predicate: Callable[[dict[str, Any]], bool],
                      timeout: int | None, bookmarks: bool, convert: bool = False) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout if timeout and timeout > 0 else _DEFAULT_WATCH_TIMEOUT)
        next_bookmark = loop.time() + self.bookmark_interval
        while True:
            now = loop.time()
            if now >= deadline:
                return
            wait = deadline - now
            if bookmarks:
                wait = max(0.0, min(wait, next_bookmark - now))
            try:
                first = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                first = None
                if bookmarks and loop.time() >= next_bookmark:
                    await response.write(self._bookmark(rt))
                    next_bookmark = loop.time() + self.bookmark_interval
                continue
            batch = [first]
            while not queue.empty():
                batch.append(queue.get_nowait())
            chunks: list[tuple[str, dict[str, Any]]] = []
            done = False
            for event in batch:
                if event is None or event.type == "CLOSE":
                    done = True
                    break
                translated = _translate(event, predicate)
                if translated:
                    chunks.append(translated)
            if chunks:
                await response.write(await self._event_lines(rt, chunks, convert))
            if done:
                return
            if bookmarks and loop.time() >= next_bookmark and queue.empty():
                await response.write(self._bookmark(rt))
                next_bookmark = loop.time() + self.bookmark_interval


def _event_line(rt: ResourceType, type_: str, obj: dict[str, Any]) -> bytes:
    return _dumps({"type": type_, "object": view(rt, obj)}) + b"\n"


def _translate(event: StoreEvent, predicate: Callable[[dict[str, Any]], bool]) -> tuple[str, dict[str, Any]] | None:
    """A store event as this watch sees it: objects entering/leaving the selection become ADDED/DELETED."""
    if event.type in ("ADDED", "DELETED"):
        return (event.type, event.obj) if predicate(event.obj) else None
    new_ok = predicate(event.obj)
    old_ok = event.old is not None and predicate(event.old)
    if new_ok:
        return ("MODIFIED" if old_ok else "ADDED", event.obj)
    if old_ok and event.old is not None:
        meta = {**event.old["metadata"], "resourceVersion": event.obj["metadata"]["resourceVersion"]}
        return ("DELETED", {**event.old, "metadata": meta})
    return None


def kubeconfig_dict(url: str, token: str = "dev", name: str = "kubedev", namespace: str = "default") -> dict[str, Any]:
    """A kubeconfig (as a dict) pointing at ``url`` with a bearer ``token``; context namespace ``namespace``."""
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
    }


class DevAPIServer:
    """A dev API server on ``host:port`` (``port=0`` picks a free one) in a background thread.

    ``store`` lets a new server continue an old one's state (simulated restart); ``bookmark_interval``
    is seconds between watch BOOKMARK events. Use ``start()``/``stop()`` or ``with DevAPIServer() as s``.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, store: Store | None = None,
                 bookmark_interval: float = 5.0, event_log_size: int = 10_000) -> None:
        self.host = host
        self._port = port
        self.store = store if store is not None else Store(event_log_size=event_log_size)
        self.bookmark_interval = bookmark_interval
        #: The named clusters served at ``/clusters/<name>`` (see :meth:`add_cluster`).
        self.clusters = Clusters(bookmark_interval)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._app: web.Application | None = None
        self._stopped = asyncio.Event()

    @property
    def port(self) -> int:
        """The TCP port the server listens on (known after :meth:`start`)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    def start(self, timeout: float = 10.0) -> DevAPIServer:
        """Start listening; returns ``self`` once the socket is bound. Raises ``OSError`` if it cannot bind."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve(ready))
            except BaseException as exc:  # report bind errors to start()
                failure.append(exc)
                ready.set()
            finally:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name=f"kubedev-{self._port}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError("dev API server did not start")
        if failure:
            self._thread.join(5)
            self._thread = None
            raise failure[0]
        log.info("event=devapi_started url=%s", self.url)
        return self

    async def _serve(self, ready: threading.Event) -> None:
        self._stopped = asyncio.Event()
        self._app = build_app(self.store, self.bookmark_interval, self.clusters)
        runner = web.AppRunner(self._app, access_log=None, handler_cancellation=True, shutdown_timeout=2.0)
        await runner.setup()
        self._runner = runner
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._port))
        except OSError:
            sock.close()
            await runner.cleanup()
            raise
        self._port = sock.getsockname()[1]
        site = web.SockSite(runner, sock)
        await site.start()
        ready.set()
        await self._stopped.wait()
        self._app[_STATE_KEY]["watches"].close_all()
        await runner.cleanup()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving: open watches end cleanly, the port is released. Idempotent."""
        if self._thread is None or self._loop is None:
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout)
        self._thread = None
        log.info("event=devapi_stopped url=%s", self.url)

    def call(self, fn: Callable[[], T], timeout: float | None = 30.0) -> T:
        """Run ``fn`` on the server's loop thread (safe against concurrent requests) and return its value;
        ``timeout`` seconds to wait for it (``None``: no limit, e.g. seeding a large fleet)."""
        if self._loop is None or self._thread is None:
            return fn()

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def reset(self) -> None:
        """Wipe all objects and CRDs, end open watches, drop the event log (see :meth:`Store.reset`);
        the named clusters are removed."""
        self.call(self.store.reset)
        self.clusters.clear()

    def add_cluster(self, name: str) -> str:
        """Serve a fresh, independent cluster ``name`` (idempotent); returns its URL
        ``http://host:port/clusters/<name>``. Raises ``ValueError`` for a bad name."""
        self.clusters.add(name)
        return self.cluster_url(name)

    def remove_cluster(self, name: str) -> bool:
        """Stop serving cluster ``name`` (its watches end); returns whether it existed."""
        return self.clusters.remove(name)

    def cluster_url(self, name: str | None = None) -> str:
        """URL of cluster ``name`` (``None``: the default cluster, :attr:`url`)."""
        return self.url if name is None else f"{self.url}{CLUSTERS_PREFIX}{name}"

    def request_count(self, cluster: str | None = None) -> int:
        """Requests served so far by cluster ``cluster`` (``None``: the default one; ``"*"``: every
        named cluster together). 0 before :meth:`start`."""
        if cluster == "*":
            return sum(h.requests for n in self.clusters.names() if (h := self.clusters.handler(n)) is not None)
        if cluster is not None:
            named = self.clusters.handler(cluster)
            return named.requests if named is not None else 0
        return int(self._app[_STATE_KEY]["handler"].requests) if self._app is not None else 0

    def request_counts(self, cluster: str | None = None) -> dict[str, int]:
        """Requests served so far by cluster ``cluster`` (``None``: the default one; ``"*"``: every named
        cluster together), by verb: ``GET`` (one object, discovery), ``LIST``, ``WATCH``, ``POST``, ``PUT``,
        ``PATCH``, ``DELETE``."""
        if self._app is None:
            return {}
        if cluster == "*":
            def total() -> dict[str, int]:
                out: collections.Counter[str] = collections.Counter()
                for name in self.clusters.names():
                    named = self.clusters.handler(name)
                    if named is not None:
                        out.update(named.verbs)
                return dict(out)

            return self.call(total)
        handler = self._app[_STATE_KEY]["handler"] if cluster is None else self.clusters.handler(cluster)
        return self.call(lambda: dict(handler.verbs)) if handler is not None else {}

    def kubeconfig(self, cluster: str | None = None, token: str = "dev", namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig dict for cluster ``cluster`` (``None``: the default one)."""
        return kubeconfig_dict(self.cluster_url(cluster), token, cluster or "kubedev", namespace)

    def compact(self) -> None:
        """Drop the event log: watches from older resourceVersions now get 410 Gone."""
        self.call(self.store.compact)

    def write_kubeconfig(self, path: str | Path, token: str = "dev", cluster: str | None = None,
                         namespace: str = "default") -> Path:
        """Write a kubectl-usable kubeconfig for this server (``cluster``: one of its named clusters) to
        ``path`` (parents created); returns it."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(cluster, token, namespace), sort_keys=False))
        return target

    def __enter__(self) -> DevAPIServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


async def serve_forever(host: str, port: int, kubeconfig: str | None = None,
                        bookmark_interval: float = 5.0,
                        on_ready: Callable[[str], Awaitable[None] | None] | None = None) -> None:
    """Serve until cancelled (for ``python -m kubedev``); writes ``kubeconfig`` once listening."""
    store = Store()
    runner = web.AppRunner(build_app(store, bookmark_interval), access_log=None, handler_cancellation=True,
                           shutdown_timeout=2.0)
    await runner.setup()
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    site = web.SockSite(runner, sock)
    await site.start()
    bound = sock.getsockname()[1]
    url = f"http://{f'[{host}]' if ':' in host else host}:{bound}"
    if kubeconfig:
        Path(kubeconfig).parent.mkdir(parents=True, exist_ok=True)
        Path(kubeconfig).write_text(yaml.safe_dump(kubeconfig_dict(url), sort_keys=False))
    log.info("event=devapi_started url=%s kubeconfig=%s", url, kubeconfig)
    if on_ready is not None:
        result = on_ready(url)
        if asyncio.iscoroutine(result):
            await result
    try:
        while True:
            await asyncio.sleep(3600)
    finally:
        await runner.cleanup()
