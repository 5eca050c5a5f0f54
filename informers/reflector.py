"""The reflector: list + watch of one kind into a :class:`~informers.store.Store`, as client-go's.

One daemon thread per :class:`Reflector`:

- list (paged), replace the store, hand the differences to :meth:`Reflector.on_list`, then watch
  from the list's resourceVersion with ``allowWatchBookmarks=true`` and a random ``timeoutSeconds``;
- resume from the last resourceVersion seen (events and BOOKMARKs) when a watch ends or breaks;
- relist on 410 Gone (an ERROR event or a 410 answer); the differences between the store and the
  new list are handed on as events, so nothing is lost (objects gone during the gap become DELETED);
- reconnect with capped backoff (0.8 s doubling to 30 s); the backoff is reset only by a successful
  list or by a watch that stayed healthy (``healthy_after`` seconds, or ended by the server), so a
  server that accepts watches and drops them at once is retried ever more slowly;
- a watch silent for ``silence_timeout`` seconds (no event, no bookmark: the API server sends
  bookmarks about once a minute) is dropped and resumed from its resourceVersion, as kopf does: a
  half-open connection is not trusted for longer than that;
- a kind that is not served (CRD deleted) counts as an empty list, retried with the same backoff.

Subclasses decide what an event means: the watch engine (:mod:`watchers.engine`) maps events to
workqueue keys; the workers' informers (:mod:`informers.informer`) only keep the store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import urllib3

from informers import metrics
from informers.store import RawEvent, Store, object_key, relist_events, resource_version
from kube import ApiError, Gone, Kube, Resource, ResourceMissing

log = logging.getLogger(__name__)

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")


def parse_watch_line(line: bytes | str) -> tuple[str, dict[str, Any]]:
    """``(type, object)`` of one line of a watch stream. Raises ``ValueError`` on a malformed line."""
    type_, obj, _ = _parse_event(line)
    return type_, obj


def _parse_event(line: bytes | str) -> tuple[str, dict[str, Any], int]:
    """``(type, object, top-level fields)`` of a watch line (see :func:`parse_watch_line`)."""
    event = json.loads(line)
    if not isinstance(event, dict) or not isinstance(event.get("type"), str) \
            or not isinstance(event.get("object"), dict):
        raise ValueError(f"not a watch event: {str(line)[:200]}")
    return event["type"], event["object"], len(event)


def object_text(line: bytes, type_: str, fields: int) -> bytes | None:
    """The JSON text of a watch line's object, as the API server wrote it: ``line`` (parsed into ``fields``
    top-level fields, of type ``type_``) shaped ``{"type":"<type_>","object":<object>}`` as kube-apiserver
    writes a ``metav1.WatchEvent``; ``None`` for any other shape (the caller encodes the object itself).
    What a packed store keeps, without encoding the decoded object again."""
    prefix = b'{"type":"' + type_.encode() + b'","object":'
    if fields != 2 or not line.startswith(prefix) or not line.endswith(b"}}"):
        return None
    return line[len(prefix):-1]


def split_lines(buffer: bytearray, chunk: bytes) -> list[bytes]:
    """Append ``chunk`` to ``buffer`` and take out every complete (non-empty) line."""
    buffer.extend(chunk)
    lines: list[bytes] = []
    while (end := buffer.find(b"\n")) != -1:
        line = bytes(buffer[:end]).strip()
        del buffer[: end + 1]
        if line:
            lines.append(line)
    return lines


class ReconnectBackoff:
    """Delays between reconnects: ``base``, doubled each failure, capped at ``cap`` seconds
    (0.8, 1.6, 3.2, ... 30 as client-go's reflector); :meth:`reset` after a success."""

    def __init__(self, base: float = 0.8, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self._failures = 0

    def next(self) -> float:
        """The delay before the next attempt (seconds); counts one failure."""
        delay = min(self.cap, self.base * (2 ** min(self._failures, 32)))
        self._failures += 1
        return delay

    def reset(self) -> None:
        self._failures = 0


class Stopped(Exception):
    """Raised inside the reflector's thread once :meth:`Reflector.stop` was called."""


class _Readings:
    """What a reflector's gauges read at scrape time (``reconcilery_watch_last_event_timestamp_seconds``,
    ``reconcilery_watch_store_objects``): plain attributes the watch thread sets per line. It holds no
    reference to the reflector or its store, so a stopped reflector's last values stay, as a set gauge's
    would, until a reflector of the same name takes the series over."""

    __slots__ = ("last_event", "objects")

    def __init__(self) -> None:
        self.last_event = 0.0
        self.objects = 0

    def last_event_at(self) -> float:
        """Unix time of the last event, bookmark or list (0 before the first)."""
        return self.last_event

    def cached(self) -> float:
        """Objects in the store after the last list or event."""
        return float(self.objects)


class Reflector:
    """The list + watch loop of one kind (one namespace or all, optional selectors), in a daemon thread.

    Args:
        name: unique name in the process (metric label, thread name, logs).
        resource, namespace, label_selector, field_selector: what to list and watch.
        kube: the cluster's client; ``cluster``: its name (logs).
        store: the store this reflector keeps current.
        watch_timeout: ``(low, high)`` seconds; each watch asks the server for a uniform random
            ``timeoutSeconds`` in this range (client-go: 5-10 min) so watches do not end together.
        backoff: reconnect delays.
        silence_timeout: seconds without a byte from an open watch after which it is dropped and
            resumed (kopf's lesson: about 70 s, just over the API server's bookmark period).
        healthy_after: seconds a watch must stay open before its reconnect backoff is reset.
        transform: applied to every listed or watched object before it is stored (e.g.
            :func:`informers.store.compact`); ``None``: stored as decoded.

    Hooks for subclasses (called in the reflector's thread): :meth:`on_list` with the differences
    of a (re)list, :meth:`on_event` per watch event (returns items collected per chunk of the
    stream), :meth:`on_chunk` with those items once the chunk is applied. A subclass that only
    keeps the store sets :attr:`wants_events` to ``False``: then neither the differences of a list
    nor the previous object of an event are decoded, and :meth:`on_list` is not called.
    """

    #: Whether :meth:`on_list` and :meth:`on_event` need the differences and the previous objects.
    wants_events = True

    def __init__(self, name: str, resource: Resource, namespace: str | None, label_selector: str | None,
                 field_selector: str | None, kube: Kube, store: Store, cluster: str = "local",
                 watch_timeout: tuple[float, float] = (300.0, 600.0), backoff: ReconnectBackoff | None = None,
                 silence_timeout: float = 70.0, healthy_after: float = 30.0,
                 transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.name = name
        self.transform = transform
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.kube = kube
        self.store = store
        self.cluster = cluster
        self.watch_timeout = watch_timeout
        self.backoff = backoff or ReconnectBackoff()
        self.silence_timeout = silence_timeout
        self.healthy_after = healthy_after
        self._watch_opened: float | None = None
        self.resource_version = ""
        self.listed = threading.Event()
        self.last_activity = time.monotonic()
        self._stop = threading.Event()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._response_lock = threading.Lock()
        self._lists = 0
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)
        self._log_ref = f"registration={name} resource={resource} cluster={cluster}"
        # the gauges read these at scrape time: a watch line only notes them (a Gauge.set takes a lock)
        self._readings = _Readings()
        metrics.WATCH_LAST_EVENT.labels(name).set_function(self._readings.last_event_at)
        metrics.WATCH_STORE_OBJECTS.labels(name).set_function(self._readings.cached)

    # ---- hooks -----------------------------------------------------------------------------

    def on_list(self, changes: list[RawEvent]) -> None:
        """The differences a (re)list made to the store (default: nothing)."""

    def on_event(self, change: RawEvent) -> Sequence[Any]:
        """One watch event applied to the store; items for :meth:`on_chunk` (default: none)."""
        return ()

    def on_chunk(self, items: Sequence[Any]) -> None:
        """The items :meth:`on_event` returned for one chunk of the watch stream (default: nothing)."""

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end and break its open watch (returns at once; see :meth:`join`)."""
        self._stop.set()
        with self._response_lock:
            response = self._response
        if response is not None:
            _shutdown(response)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _touch(self) -> None:
        self.last_activity = time.monotonic()
        self._readings.last_event = time.time()

    def _sleep(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise Stopped

    # ---- loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                delay = self._step()
                if delay and self._stop.wait(delay):
                    break
        except Stopped:
            pass
        log.info("watch stopped %s", self._log_ref)

    def _step(self) -> float:
        """One list (if needed) + watch; the seconds to wait before the next step."""
        try:
            if not self.resource_version:
                self._list()
            self._watch()
            return 0.0
        except Stopped:
            raise
        except Gone as exc:
            log.info("watch expired, relisting %s rv=%s: %s", self._log_ref, self.resource_version, exc.message)
            metrics.WATCH_RESTARTS.labels(self.name, "gone").inc()
            self.resource_version = ""
            return 0.0
        except ResourceMissing as exc:
            if self._stop.is_set():
                raise Stopped from None
            metrics.WATCH_RESTARTS.labels(self.name, "missing").inc()
            self._kind_missing(exc)
            return self.backoff.next()
        except Exception as exc:  # a watch thread must not die; log and retry
            if self._stop.is_set():
                raise Stopped from None
            opened, self._watch_opened = self._watch_opened, None
            if opened is not None and time.monotonic() - opened >= self.healthy_after:
                self.backoff.reset()  # it broke after a healthy while: not a failing server
            delay = self.backoff.next()
            silent = isinstance(exc, urllib3.exceptions.ReadTimeoutError) or "timed out" in str(exc)
            metrics.WATCH_RESTARTS.labels(self.name, "silent" if silent else "error").inc()
            if silent:  # no byte for silence_timeout: resume at once from the resourceVersion
                log.info("watch silent for %.0fs, resuming %s rv=%s", self.silence_timeout, self._log_ref,
                         self.resource_version)
                return 0.0
            expected = (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError)
            log.log(logging.WARNING if isinstance(exc, expected) else logging.ERROR,
                    "watch failed %s rv=%s retry_in=%.1fs error=%r", self._log_ref, self.resource_version,
                    delay, exc, exc_info=not isinstance(exc, expected))
            return delay

    def _list(self) -> None:
        items, version = self.kube.list_with_version(self.resource, self.namespace, self.label_selector,
                                                     self.field_selector)
        if self._lists:
            metrics.WATCH_RELISTS.labels(self.name).inc()
        self._lists += 1
        self._apply_list(items, version)
        self.resource_version = version
        self.backoff.reset()
        self._touch()
        self.listed.set()
        log.info("listed %s objects=%d rv=%s", self._log_ref, len(items), version)

    def _kind_missing(self, exc: ResourceMissing) -> None:
        """The kind is not served: the store empties (DELETED for each object) and the reflector is
        synced, so a missing optional CRD never blocks readiness."""
        log.warning("kind not served %s: %s", self._log_ref, exc.message)
        self._apply_list([], "")
        self.resource_version = ""
        self._touch()
        self.listed.set()

    def _apply_list(self, items: list[dict[str, Any]], version: str = "") -> None:
        if self.transform is not None:
            items = [self.transform(item) for item in items]
        changes = relist_events(self.store.snapshot(), items) if self.wants_events else []
        self.store.replace(items, version)
        self._readings.objects = len(self.store)
        if self.wants_events:
            self.on_list(changes)

    def _watch(self) -> None:
        timeout = int(random.uniform(*self.watch_timeout))
        query: list[tuple[str, str | int | bool]] = [
            ("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", max(1, timeout)),
            ("resourceVersion", self.resource_version),
        ]
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        path = self.resource.path(self.namespace)
        response = self.kube.open("GET", path, query, timeout=(self.kube.timeout, self.silence_timeout))
        with self._response_lock:
            self._response = response
        started, events, complete = time.monotonic(), 0, False
        self._watch_opened = started
        try:
            if self._stop.is_set():
                raise Stopped
            self._touch()
            buffer = bytearray()
            for chunk in response.stream(amt=None, decode_content=True):
                items: list[Any] = []
                try:
                    for line in split_lines(buffer, chunk):
                        items += self._handle_line(line)
                        events += 1
                finally:  # what the chunk collected before an ERROR line still goes out
                    if items:
                        self.on_chunk(items)
            complete = True
            self._watch_opened = None
            self.backoff.reset()
        finally:
            with self._response_lock:
                self._response = None
            if complete:
                response.release_conn()
            else:  # half-read (410, stop, error): never back into the pool
                response.close()
        if self._stop.is_set():
            raise Stopped
        if events == 0 and time.monotonic() - started < 1.0:
            # A server that ends watches at once would make us spin: treat it as an error.
            raise ApiError(0, "WatchClosed", "watch closed immediately")
        metrics.WATCH_RESTARTS.labels(self.name, "timeout").inc()
        log.debug("watch ended %s rv=%s events=%d", self._log_ref, self.resource_version, events)

    def _handle_line(self, line: bytes) -> Sequence[Any]:
        """Apply one watch line to the store; what :meth:`on_event` collects for it."""
        type_, obj, fields = _parse_event(line)
        described = "apiVersion" in obj and "kind" in obj  # the line's object text is the whole object
        if type_ == "ERROR":
            code = int(obj.get("code") or 0)
            message = str(obj.get("message") or "")
            if code == 410:
                raise Gone(410, str(obj.get("reason") or "Expired"), message, obj)
            raise ApiError(code, str(obj.get("reason") or "WatchError"), message, obj)
        self._touch()
        version = resource_version(obj)
        if type_ == "BOOKMARK":
            metrics.WATCH_EVENTS.labels(self.name, "BOOKMARK").inc()
            if version:
                self.resource_version = version
            return ()
        if type_ not in EVENT_TYPES:
            log.warning("unknown watch event type %s %s", type_, self._log_ref)
            return ()
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        if self.transform is not None and type_ != "DELETED":
            current = None if self.store.packed else self.store.get(*object_key(obj))
            # the event of our own write, already stored from its answer: nothing to transform again
            obj = current if current is not None and version and resource_version(current) == version \
                else self.transform(obj)
        # a packed store keeps the object's text from the line: encoding the decoded object again is
        # the larger part of packing it
        text = object_text(line, type_, fields) if self.store.packed and self.transform is None and described \
            and type_ != "DELETED" else None
        old = self.store.apply(type_, obj, decode_old=self.wants_events, text=text)
        self._readings.objects = len(self.store)
        if version:
            self.resource_version = version
        return self.on_event((type_, obj, old))


def _shutdown(response: urllib3.BaseHTTPResponse) -> None:
    """Break a response another thread is reading: shut the socket down (close alone does not
    wake a blocked ``recv``)."""
    with contextlib.suppress(Exception):  # already released or closed
        response.shutdown()
    with contextlib.suppress(Exception):
        response.close()


__all__ = ["EVENT_TYPES", "ReconnectBackoff", "Reflector", "Stopped", "parse_watch_line", "split_lines"]
