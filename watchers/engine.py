"""The watch engine: list + watch per registration, informer caches, events mapped to workqueue keys.

One thread per :class:`WatchRegistration` does what client-go's reflector does (the loop is
:class:`informers.reflector.Reflector`, shared with the workers' read caches):

list (paged), watch with bookmarks, resume, relist on 410 with the differences as events, capped
reconnect backoff, silence timeout: the reflector's docstring has the details.

Map functions turn a :class:`WatchEvent` into ``(controller, Key)`` pairs; their errors are logged
with the object and counted, never kill the thread. Keys go to the workqueue in batches (the
``enqueue_many`` callable, ``WorkQueue.add_batch``): the initial list and each chunk of a watch
stream are one round trip per batch. A failing enqueue is retried until it succeeds or the engine
stops (the next start's initial list enqueues everything again). :meth:`WatchManager.resync_all`
enqueues every cached object again (after Redis restarted or lost its data).

A registration may also carry a :class:`Poll`: an input without a watch API (a mounted file) that
changes keys; its check runs in a second thread of the registration once the cache is listed, and
its pairs are enqueued like events' (same batching and retries).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from informers.reflector import EVENT_TYPES, ReconnectBackoff, Reflector, Stopped, parse_watch_line, split_lines
from informers.store import RawEvent, Store, Stores
from kube import Kube, Resource, client_for, object_ref
from kube.toolkit.metrics import Children
from watchers import metrics
from workers.controller import LOCAL_CLUSTER, Key

log = logging.getLogger(__name__)

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
class Poll:
    """An input of a registration that has no watch API (e.g. a mounted configuration file).

    Attributes:
        check: ``(stores) -> iterable of (controller name, Key)``, called every ``seconds`` once the
            registration's cache is listed; it keeps its own memory of what it saw (it returns the keys
            a change affects, nothing when unchanged). Its errors are logged and counted as map errors.
        seconds: the polling period.
    """

    check: Callable[[Stores], Iterable[tuple[str, Key]]]
    seconds: float = 5.0


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
        poll: an input polled besides the watch (:class:`Poll`), or ``None``.
        packed: keep the registration's cache packed (:class:`informers.store.Store`): a fraction of
            the memory, each object read decoded anew (a few microseconds). For kinds with many
            objects whose map functions read single objects; a map function that scans the whole
            cache on every event (``stores.list``) wants it unpacked (the default).
    """

    name: str
    resource: Resource
    namespace: str | None
    label_selector: str | None
    map_event: MapEvent
    controllers: tuple[str, ...] = ()
    field_selector: str | None = None
    poll: Poll | None = None
    packed: bool = False


def select_registrations(registrations: Sequence[WatchRegistration],
                         controllers: Sequence[str] | None) -> list[WatchRegistration]:
    """The registrations feeding any of ``controllers`` (all when ``controllers`` is ``None``).

    A registration without declared ``controllers`` is only selected when no filter is given.
    """
    if controllers is None:
        return list(registrations)
    wanted = set(controllers)
    return [r for r in registrations if wanted.intersection(r.controllers)]


class RegistrationWatcher(Reflector):
    """The list + watch loop of one registration (a :class:`informers.reflector.Reflector`), in its
    own daemon thread, mapping every change to workqueue keys.

    Args:
        registration: what to watch.
        kube: the cluster's client.
        store: this registration's cache; ``stores``: every cache of the process (for map functions).
        enqueue: ``(controller, key)``, the workqueue's ``add``.
        cluster: the cluster's name, copied into events.
        watch_timeout, backoff, silence_timeout, healthy_after: see :class:`Reflector`.
        enqueue_many: ``[(controller, key), ...]``, the workqueue's ``add_batch`` (default: one
            ``enqueue`` call per key).
    """

    def __init__(self, registration: WatchRegistration, kube: Kube, store: Store, stores: Stores,
                 enqueue: Enqueue, cluster: str = LOCAL_CLUSTER,
                 watch_timeout: tuple[float, float] = (300.0, 600.0),
                 backoff: ReconnectBackoff | None = None, silence_timeout: float = 70.0,
                 enqueue_many: EnqueueMany | None = None, healthy_after: float = 30.0) -> None:
        super().__init__(registration.name, registration.resource, registration.namespace,
                         registration.label_selector, registration.field_selector, kube, store, cluster,
                         watch_timeout, backoff, silence_timeout, healthy_after)
        self.registration = registration
        self.stores = stores
        self.enqueue = enqueue
        self.enqueue_many = enqueue_many
        self._event_counters = Children(metrics.WATCH_EVENTS, registration.name)
        self._enqueued_counters = Children(metrics.WATCH_ENQUEUED, registration.name)
        poll = registration.poll
        self._poll_thread = (threading.Thread(target=self._poll_loop, args=(poll,), name=f"poll-{registration.name}",
                                              daemon=True) if poll is not None else None)

    def start(self) -> None:
        super().start()
        if self._poll_thread is not None:
            self._poll_thread.start()

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        super().join(timeout)
        if self._poll_thread is not None and self._poll_thread.is_alive():
            self._poll_thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _poll_loop(self, poll: Poll) -> None:
        """Run ``poll.check`` every ``poll.seconds`` while the cache is listed, until stopped."""
        try:
            while not self._stop.wait(poll.seconds):
                if not self.listed.is_set():
                    continue  # the initial list enqueues everything with the input as it is then
                try:
                    keys = list(poll.check(self.stores))
                except Exception:  # a failing check must not stop the poll
                    metrics.WATCH_MAP_ERRORS.labels(self.registration.name).inc()
                    log.exception("poll failed %s", self._log_ref)
                    continue
                self._enqueue_all(keys)
        except Stopped:  # stopped while an enqueue waited to retry
            pass

    # ---- the reflector's hooks -------------------------------------------------------------

    def on_list(self, changes: list[RawEvent]) -> None:
        keys: list[tuple[str, Key]] = []
        for change in changes:
            keys += self._map(change)
        self._enqueue_all(keys)

    def on_event(self, change: RawEvent) -> list[tuple[str, Key]]:
        return self._map(change)

    def on_chunk(self, items: Sequence[Any]) -> None:
        self._enqueue_all(items)

    def resync(self) -> int:
        """Enqueue the keys of every cached object again (as ``ADDED`` events: the object is new to
        a workqueue that lost its state); returns how many keys were mapped."""
        keys: list[tuple[str, Key]] = []
        for obj in self.store.list():
            keys += self._map(("ADDED", obj, None))
        metrics.WATCH_RESYNCS.labels(self.registration.name).inc()
        self._enqueue_all(keys)
        return len(keys)

    def _count_event(self, type_: str) -> None:
        self._event_counters(type_).inc()

    def _enqueued(self, controller: str) -> Any:
        return self._enqueued_counters(controller)

    def _map(self, change: RawEvent) -> list[tuple[str, Key]]:
        reg = self.registration
        type_, obj, old = change
        self._count_event(type_)
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
                self._enqueued(controller).inc(n)
            return

    def _enqueue(self, controller: str, key: Key) -> None:
        backoff = ReconnectBackoff(self.backoff.base, self.backoff.cap)
        while True:
            try:
                self.enqueue(controller, key)
                self._enqueued(controller).inc()
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
            RegistrationWatcher(reg, self.kube, self.stores.add(reg.name, reg.packed), self.stores, enqueue, cluster,
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
    "EVENT_TYPES",
    "EnqueueMany",
    "MapEvent",
    "Poll",
    "ReconnectBackoff",
    "RegistrationWatcher",
    "Stores",
    "WatchEvent",
    "WatchManager",
    "WatchRegistration",
    "parse_watch_line",
    "select_registrations",
    "split_lines",
]
