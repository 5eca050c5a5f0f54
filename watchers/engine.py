"""The watch engine: list + watch per registration, informer caches, events mapped to workqueue keys.

One thread per :class:`WatchRegistration` does what client-go's reflector does:

- list (paged), replace the cache, hand each difference to the map function, then watch from the
  list's resourceVersion with ``allowWatchBookmarks=true`` and a random ``timeoutSeconds``;
- resume from the last resourceVersion seen (events and BOOKMARKs) when a watch ends or breaks;
- relist on 410 Gone (an ERROR event or a 410 answer) and emit the differences between the cache
  and the new list as events, so nothing is lost (objects gone during the gap become DELETED);
- reconnect with capped backoff (0.8 s doubling to 30 s); the backoff is reset only by a successful
  list or by a watch that stayed healthy (``healthy_after`` seconds, or ended by the server), so a
  server that accepts watches and drops them at once is retried ever more slowly;
- a watch silent for ``silence_timeout`` seconds (no event, no bookmark: the API server sends
  bookmarks about once a minute) is dropped and resumed from its resourceVersion, as kopf does: a
  half-open connection is not trusted for longer than that;
- a kind that is not served (CRD deleted) counts as an empty list, retried with the same backoff.

Map functions turn a :class:`WatchEvent` into ``(controller, Key)`` pairs; their errors are logged
with the object and counted, never kill the thread. Keys go to the workqueue in batches (the
``enqueue_many`` callable, ``WorkQueue.add_batch``): the initial list and each chunk of a watch
stream are one round trip per batch. A failing enqueue is retried until it succeeds or the engine
stops (the next start's initial list enqueues everything again). :meth:`WatchManager.resync_all`
enqueues every cached object again (after Redis restarted or lost its data).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import urllib3

from kube import ApiError, Gone, Kube, Resource, ResourceMissing, client_for, object_ref
from watchers import metrics
from watchers.cache import RawEvent, Store, Stores, relist_events, resource_version
from workers.controller import LOCAL_CLUSTER, Key

log = logging.getLogger(__name__)

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")
#: Enqueue failures a retry cannot fix (unknown controller, bad key): logged and dropped, so a
#: programming error never blocks a watch; anything else (Redis unreachable) is retried.
PERMANENT_ENQUEUE_ERRORS = (KeyError, ValueError, TypeError, AttributeError)


@dataclass(frozen=True)
class WatchEvent:
    """One change of a watched object.

    Attributes:
        type: ``"ADDED"``, ``"MODIFIED"`` or ``"DELETED"``.
        object: the object now (for DELETED: its last state).
        old: the cached object before this event (``None`` for ADDED or an unknown object).
        cluster: name of the cluster the object lives in (``"local"``, an SKR id).
    """

    type: str
    object: dict[str, Any]
    old: dict[str, Any] | None
    cluster: str


MapEvent = Callable[[WatchEvent, Stores], Iterable[tuple[str, Key]]]
Enqueue = Callable[[str, Key], object]
EnqueueMany = Callable[[Sequence[tuple[str, Key]]], object]


@dataclass(frozen=True)
class WatchRegistration:
    """What to watch and how its events become workqueue keys.

    Attributes:
        name: unique name in the process; the ``registration`` metric label and the name other
            map functions use in ``stores.list(name)``.
        resource: the kind to watch.
        namespace: one namespace, or ``None`` for all.
        label_selector: server-side label filter (``"app=x,tier!=db"``), or ``None``.
        map_event: ``(event, stores) -> iterable of (controller name, Key)``.
        controllers: the controllers ``map_event`` can produce keys for; ``reconcilery watch
            --controllers`` runs the registrations that feed the listed ones.
        field_selector: server-side field filter, or ``None``.
    """

    name: str
    resource: Resource
    namespace: str | None
    label_selector: str | None
    map_event: MapEvent
    controllers: tuple[str, ...] = ()
    field_selector: str | None = None


def select_registrations(registrations: Sequence[WatchRegistration],
                         controllers: Sequence[str] | None) -> list[WatchRegistration]:
    """The registrations feeding any of ``controllers`` (all when ``controllers`` is ``None``).

    A registration without declared ``controllers`` is only selected when no filter is given.
    """
    if controllers is None:
        return list(registrations)
    wanted = set(controllers)
    return [r for r in registrations if wanted.intersection(r.controllers)]


def parse_watch_line(line: bytes | str) -> tuple[str, dict[str, Any]]:
    """``(type, object)`` of one line of a watch stream. Raises ``ValueError`` on a malformed line."""
    event = json.loads(line)
    if not isinstance(event, dict) or not isinstance(event.get("type"), str) \
            or not isinstance(event.get("object"), dict):
        raise ValueError(f"not a watch event: {str(line)[:200]}")
    return event["type"], event["object"]


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


class _Stopped(Exception):
    pass


class RegistrationWatcher:
    """The list + watch loop of one registration, in its own daemon thread.

    Args:
        registration: what to watch.
        kube: the cluster's client.
        store: this registration's cache; ``stores``: every cache of the process (for map functions).
        enqueue: ``(controller, key)``, the workqueue's ``add``.
        cluster: the cluster's name, copied into events.
        watch_timeout: ``(low, high)`` seconds; each watch asks the server for a uniform random
            ``timeoutSeconds`` in this range (client-go: 5-10 min) so watches do not end together.
        backoff: reconnect delays.
        silence_timeout: seconds without a byte from an open watch after which it is dropped and
            resumed (kopf's lesson: about 70 s, just over the API server's bookmark period).
        enqueue_many: ``[(controller, key), ...]``, the workqueue's ``add_batch`` (default: one
            ``enqueue`` call per key).
        healthy_after: seconds a watch must stay open before its reconnect backoff is reset.
    """

    def __init__(self, registration: WatchRegistration, kube: Kube, store: Store, stores: Stores,
                 enqueue: Enqueue, cluster: str = LOCAL_CLUSTER,
                 watch_timeout: tuple[float, float] = (300.0, 600.0),
                 backoff: ReconnectBackoff | None = None, silence_timeout: float = 70.0,
                 enqueue_many: EnqueueMany | None = None, healthy_after: float = 30.0) -> None:
        self.registration = registration
        self.kube = kube
        self.store = store
        self.stores = stores
        self.enqueue = enqueue
        self.enqueue_many = enqueue_many
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
        self._thread = threading.Thread(target=self._run, name=f"watch-{registration.name}", daemon=True)
        self._log_ref = f"registration={registration.name} resource={registration.resource} cluster={cluster}"

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
        metrics.WATCH_LAST_EVENT.labels(self.registration.name).set(time.time())

    # ---- loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                delay = self._step()
                if delay and self._stop.wait(delay):
                    break
        except _Stopped:
            pass
        log.info("watch stopped %s", self._log_ref)

    def _step(self) -> float:
        """One list (if needed) + watch; the seconds to wait before the next step."""
        reg = self.registration
        try:
            if not self.resource_version:
                self._list()
            self._watch()
            return 0.0
        except _Stopped:
            raise
        except Gone as exc:
            log.info("watch expired, relisting %s rv=%s: %s", self._log_ref, self.resource_version, exc.message)
            metrics.WATCH_RESTARTS.labels(reg.name, "gone").inc()
            self.resource_version = ""
            return 0.0
        except ResourceMissing as exc:
            if self._stop.is_set():
                raise _Stopped from None
            metrics.WATCH_RESTARTS.labels(reg.name, "missing").inc()
            self._kind_missing(exc)
            return self.backoff.next()
        except Exception as exc:  # a watch thread must not die; log and retry
            if self._stop.is_set():
                raise _Stopped from None
            opened, self._watch_opened = self._watch_opened, None
            if opened is not None and time.monotonic() - opened >= self.healthy_after:
                self.backoff.reset()  # it broke after a healthy while: not a failing server
            delay = self.backoff.next()
            silent = isinstance(exc, urllib3.exceptions.ReadTimeoutError) or "timed out" in str(exc)
            metrics.WATCH_RESTARTS.labels(reg.name, "silent" if silent else "error").inc()
            if silent:  # no byte for silence_timeout: resume at once from the resourceVersion
                log.info("watch silent for %.0fs, resuming %s rv=%s", self.silence_timeout, self._log_ref,
                         self.resource_version)
                return 0.0
            expected = (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError)
            log.log(logging.WARNING if isinstance(exc, expected) else logging.ERROR,
                    "watch failed %s rv=%s retry_in=%.1fs error=%r", self._log_ref, self.resource_version,
                    delay, exc, exc_info=not isinstance(exc, expected))
            return delay

    def _sleep(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise _Stopped

    def _list(self) -> None:
        reg = self.registration
        items, version = self.kube.list_with_version(reg.resource, reg.namespace, reg.label_selector,
                                                     reg.field_selector)
        if self._lists:
            metrics.WATCH_RELISTS.labels(reg.name).inc()
        self._lists += 1
        self._apply_list(items)
        self.resource_version = version
        self.backoff.reset()
        self._touch()
        self.listed.set()
        log.info("listed %s objects=%d rv=%s", self._log_ref, len(items), version)

    def _kind_missing(self, exc: ResourceMissing) -> None:
        """The kind is not served: the cache empties (DELETED for each object) and the watch is
        ready, so a missing optional CRD never blocks readiness."""
        log.warning("kind not served %s: %s", self._log_ref, exc.message)
        self._apply_list([])
        self.resource_version = ""
        self._touch()
        self.listed.set()

    def _apply_list(self, items: list[dict[str, Any]]) -> None:
        changes = relist_events(self.store.snapshot(), items)
        self.store.replace(items)
        metrics.WATCH_STORE_OBJECTS.labels(self.registration.name).set(len(items))
        keys: list[tuple[str, Key]] = []
        for change in changes:
            keys += self._map(change)
        self._enqueue_all(keys)

    def resync(self) -> int:
        """Enqueue the keys of every cached object again (as ``ADDED`` events: the object is new to
        a workqueue that lost its state); returns how many keys were mapped."""
        keys: list[tuple[str, Key]] = []
        for obj in self.store.list():
            keys += self._map(("ADDED", obj, None))
        metrics.WATCH_RESYNCS.labels(self.registration.name).inc()
        self._enqueue_all(keys)
        return len(keys)

    def _watch(self) -> None:
        reg = self.registration
        timeout = int(random.uniform(*self.watch_timeout))
        query: list[tuple[str, str | int | bool]] = [
            ("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", max(1, timeout)),
            ("resourceVersion", self.resource_version),
        ]
        if reg.label_selector:
            query.append(("labelSelector", reg.label_selector))
        if reg.field_selector:
            query.append(("fieldSelector", reg.field_selector))
        path = reg.resource.path(reg.namespace)
        response = self.kube.open("GET", path, query, timeout=(self.kube.timeout, self.silence_timeout))
        with self._response_lock:
            self._response = response
        started, events, complete = time.monotonic(), 0, False
        self._watch_opened = started
        try:
            if self._stop.is_set():
                raise _Stopped
            self._touch()
            buffer = bytearray()
            for chunk in response.stream(amt=None, decode_content=True):
                keys: list[tuple[str, Key]] = []
                try:
                    for line in split_lines(buffer, chunk):
                        keys += self._handle_line(line)
                        events += 1
                finally:  # what the chunk mapped before an ERROR line still goes out
                    self._enqueue_all(keys)
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
            raise _Stopped
        if events == 0 and time.monotonic() - started < 1.0:
            # A server that ends watches at once would make us spin: treat it as an error.
            raise ApiError(0, "WatchClosed", "watch closed immediately")
        metrics.WATCH_RESTARTS.labels(reg.name, "timeout").inc()
        log.debug("watch ended %s rv=%s events=%d", self._log_ref, self.resource_version, events)

    def _handle_line(self, line: bytes) -> list[tuple[str, Key]]:
        """Apply one watch line to the cache; the keys its event maps to."""
        type_, obj = parse_watch_line(line)
        reg = self.registration
        if type_ == "ERROR":
            code = int(obj.get("code") or 0)
            message = str(obj.get("message") or "")
            if code == 410:
                raise Gone(410, str(obj.get("reason") or "Expired"), message, obj)
            raise ApiError(code, str(obj.get("reason") or "WatchError"), message, obj)
        self._touch()
        version = resource_version(obj)
        if type_ == "BOOKMARK":
            metrics.WATCH_EVENTS.labels(reg.name, "BOOKMARK").inc()
            if version:
                self.resource_version = version
            return []
        if type_ not in EVENT_TYPES:
            log.warning("unknown watch event type %s %s", type_, self._log_ref)
            return []
        obj.setdefault("apiVersion", reg.resource.api_version)
        obj.setdefault("kind", reg.resource.kind)
        old = self.store.apply(type_, obj)
        metrics.WATCH_STORE_OBJECTS.labels(reg.name).set(len(self.store))
        if version:
            self.resource_version = version
        return self._map((type_, obj, old))

    def _map(self, change: RawEvent) -> list[tuple[str, Key]]:
        reg = self.registration
        type_, obj, old = change
        metrics.WATCH_EVENTS.labels(reg.name, type_).inc()
        event = WatchEvent(type_, obj, old, self.cluster)
        try:
            return list(reg.map_event(event, self.stores))
        except Exception:  # one bad object must not stop the watch
            metrics.WATCH_MAP_ERRORS.labels(reg.name).inc()
            log.exception("map failed %s event=%s object=%s", self._log_ref, type_, object_ref(obj))
            return []

    def _enqueue_all(self, keys: Sequence[tuple[str, Key]]) -> None:
        """Enqueue mapped keys: one batch when the workqueue takes batches, retried like a key."""
        if not keys:
            return
        if self.enqueue_many is None or len(keys) == 1:
            for controller, key in keys:
                self._enqueue(controller, key)
            return
        backoff = ReconnectBackoff(self.backoff.base, self.backoff.cap)
        while True:
            try:
                self.enqueue_many(keys)
            except PERMANENT_ENQUEUE_ERRORS:  # one bad pair refuses the batch: find it key by key
                for controller, key in keys:
                    self._enqueue(controller, key)
                return
            except Exception as exc:  # Redis down: keep the keys, retry
                metrics.WATCH_ENQUEUE_ERRORS.labels(self.registration.name).inc()
                delay = backoff.next()
                log.warning("enqueue failed %s keys=%d retry_in=%.1fs error=%s", self._log_ref, len(keys),
                            delay, exc)
                self._sleep(delay)
                continue
            counts: dict[str, int] = {}
            for controller, _ in keys:
                counts[controller] = counts.get(controller, 0) + 1
            for controller, n in counts.items():
                metrics.WATCH_ENQUEUED.labels(self.registration.name, controller).inc(n)
            return

    def _enqueue(self, controller: str, key: Key) -> None:
        backoff = ReconnectBackoff(self.backoff.base, self.backoff.cap)
        while True:
            try:
                self.enqueue(controller, key)
                metrics.WATCH_ENQUEUED.labels(self.registration.name, controller).inc()
                return
            except PERMANENT_ENQUEUE_ERRORS as exc:  # e.g. a controller not registered here: a bug
                metrics.WATCH_ENQUEUE_ERRORS.labels(self.registration.name).inc()
                log.error("enqueue refused %s controller=%s key=%s error=%r (key dropped)",
                          self._log_ref, controller, key, exc)
                return
            except Exception as exc:  # Redis down: keep the key, retry
                metrics.WATCH_ENQUEUE_ERRORS.labels(self.registration.name).inc()
                delay = backoff.next()
                log.warning("enqueue failed %s controller=%s key=%s retry_in=%.1fs error=%s",
                            self._log_ref, controller, key, delay, exc)
                self._sleep(delay)


def _shutdown(response: urllib3.BaseHTTPResponse) -> None:
    """Break a response another thread is reading: shut the socket down (close alone does not
    wake a blocked ``recv``)."""
    with contextlib.suppress(Exception):  # already released or closed
        response.shutdown()
    with contextlib.suppress(Exception):
        response.close()


class WatchManager:
    """Runs a :class:`RegistrationWatcher` per registration against one cluster.

    Args:
        registrations: what to watch (names unique).
        enqueue: ``(controller, key)``; the workqueue's ``add``.
        cluster: the cluster name (``"local"``).
        kube: the cluster's client (default :func:`kube.client_for` of ``cluster``).
        watch_timeout: ``(low, high)`` seconds for each watch's ``timeoutSeconds``.
        backoff_base, backoff_cap: reconnect backoff in seconds.
        silence_timeout, enqueue_many, healthy_after: see :class:`RegistrationWatcher`.

    Raises ``ValueError`` for duplicate registration names.
    """

    def __init__(self, registrations: Sequence[WatchRegistration], enqueue: Enqueue,
                 cluster: str = LOCAL_CLUSTER, kube: Kube | None = None,
                 watch_timeout: tuple[float, float] = (300.0, 600.0),
                 backoff_base: float = 0.8, backoff_cap: float = 30.0, silence_timeout: float = 70.0,
                 enqueue_many: EnqueueMany | None = None, healthy_after: float = 30.0) -> None:
        self.cluster = cluster
        self.kube = kube or client_for(cluster)
        self.stores = Stores()
        self.watchers = [
            RegistrationWatcher(reg, self.kube, self.stores.add(reg.name), self.stores, enqueue, cluster,
                                watch_timeout, ReconnectBackoff(backoff_base, backoff_cap), silence_timeout,
                                enqueue_many, healthy_after)
            for reg in registrations
        ]
        self._started = False

    def start(self) -> WatchManager:
        """Start every watch thread (once); returns ``self``."""
        if not self._started:
            self._started = True
            for watcher in self.watchers:
                watcher.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every thread, closing open watches; waits up to ``timeout`` seconds in total."""
        for watcher in self.watchers:
            watcher.stop()
        deadline = time.monotonic() + timeout
        for watcher in self.watchers:
            if self._started:
                watcher.join(max(0.0, deadline - time.monotonic()))

    def resync_all(self) -> int:
        """Enqueue the keys of every cached object of every registration again (after Redis lost its
        state; the caches are current, so no relist is needed). Returns how many keys were mapped."""
        return sum(w.resync() for w in self.watchers if w.listed.is_set())

    def ready(self) -> bool:
        """Whether every registration finished its initial list."""
        return all(w.listed.is_set() for w in self.watchers)

    def wait_ready(self, timeout: float) -> bool:
        """Block until :meth:`ready` or ``timeout`` seconds; whether it became ready."""
        deadline = time.monotonic() + timeout
        return all(w.listed.wait(max(0.0, deadline - time.monotonic())) for w in self.watchers)

    def alive(self, max_silence_s: float) -> bool:
        """Whether every watch thread runs and saw an event, a bookmark, a list or a (re)started
        watch within the last ``max_silence_s`` seconds."""
        now = time.monotonic()
        return all(w.running and now - w.last_activity <= max_silence_s for w in self.watchers)

    def status(self) -> list[dict[str, Any]]:
        """Per registration: name, listed, running, seconds since activity, resourceVersion, objects."""
        now = time.monotonic()
        return [
            {"registration": w.registration.name, "listed": w.listed.is_set(), "running": w.running,
             "silent_s": round(now - w.last_activity, 1), "resource_version": w.resource_version,
             "objects": len(w.store)}
            for w in self.watchers
        ]

    def __enter__(self) -> WatchManager:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __iter__(self) -> Iterator[RegistrationWatcher]:
        return iter(self.watchers)


__all__ = [
    "EnqueueMany",
    "MapEvent",
    "ReconnectBackoff",
    "RegistrationWatcher",
    "Stores",
    "WatchEvent",
    "WatchManager",
    "WatchRegistration",
    "parse_watch_line",
    "select_registrations",
]
