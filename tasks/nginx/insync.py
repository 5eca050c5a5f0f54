"""Which NGINX Plus hosts are in sync (pure, thread-safe): the state behind ``reconcilery_nginx_host_in_sync``.

A host is in sync while the last sync of every upstream on it succeeded: :meth:`HostSync.failed` puts
the upstream in the host's failing set, :meth:`HostSync.succeeded` takes it out, and the host is in
sync when its set is empty. The map is per process (each worker process reports what its own syncs
saw; Prometheus' ``min by (host)`` over the processes is the fleet's answer). A failure is remembered
for :data:`EXPIRE` seconds only: a failing upstream's retry (with backoff, at most 60 s apart) may run in
another worker process, which then holds the fresh failure, or the success this process never sees;
without the expiry this process would report the host out of sync for ever. The map is bounded:
:data:`MAX_HOSTS` hosts (the operator's configuration names them) and :data:`MAX_FAILING` upstreams
per host (upstream names come from Service port names). Past the bound a new failing upstream is not
remembered, but the host is already out of sync then (its set is full), and the upstream's retries
(every failure is retried with backoff, at most 60 s apart) add it again once there is room, so a
host never reads in sync for longer than one retry while an upstream on it still fails.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: Seconds a failure is remembered without a newer failure of the same upstream in this process (three
#: of the workqueue's longest retry intervals: a still-failing upstream is marked again by then).
EXPIRE = 180.0
#: Hosts remembered at most (the operator's ``nginx-hosts``; more than this is a configuration error).
MAX_HOSTS = 256
#: Failing upstreams remembered per host at most.
MAX_FAILING = 10_000


class HostSync:
    """Per-process map host -> the upstreams whose last sync to that host failed.

    ``failed`` / ``succeeded`` return whether the host is in sync afterwards (``True``: no
    remembered upstream of it is failing). Hosts past :data:`MAX_HOSTS` are not remembered and
    read as out of sync while they fail (``failed`` returns ``False``).
    """

    def __init__(self, max_hosts: int = MAX_HOSTS, max_failing: int = MAX_FAILING, expire: float = EXPIRE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._failing: dict[str, dict[str, float]] = {}  # host -> upstream -> when it failed
        self.max_hosts, self.max_failing, self.expire, self._clock = max_hosts, max_failing, expire, clock

    def _current(self, host: str) -> dict[str, float] | None:
        """``host``'s failing upstreams without the expired ones (under the lock)."""
        failing = self._failing.get(host)
        if failing:
            horizon = self._clock() - self.expire
            for upstream in [u for u, at in failing.items() if at < horizon]:
                del failing[upstream]
        return failing

    def failed(self, host: str, upstream: str) -> bool:
        """The last sync of ``upstream`` (``protocol:name``) to ``host`` failed; returns ``False``."""
        with self._lock:
            failing = self._current(host)
            if failing is None:
                if len(self._failing) >= self.max_hosts:
                    return False
                failing = self._failing[host] = {}
            if upstream in failing or len(failing) < self.max_failing:
                failing[upstream] = self._clock()
            return False

    def succeeded(self, host: str, upstream: str) -> bool:
        """The last sync of ``upstream`` to ``host`` succeeded; returns whether the host is in sync."""
        with self._lock:
            failing = self._current(host)
            if failing is None:
                return True
            failing.pop(upstream, None)
            return not failing

    def in_sync(self, host: str) -> bool:
        """Whether no remembered upstream of ``host`` is failing (failures older than ``expire`` forgotten)."""
        with self._lock:
            return not self._current(host)

    def failing(self, host: str) -> frozenset[str]:
        """The upstreams of ``host`` whose last sync failed (as remembered, within ``expire``)."""
        with self._lock:
            return frozenset(self._current(host) or ())
