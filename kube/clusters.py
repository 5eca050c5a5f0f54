"""Clients of clusters: one shared :class:`~kube.client.Kube` per registered name, and short-lived ones.

``"local"`` is built on first use by :func:`kube.kubeconfig.local_api_client`; other long-lived
clusters are added by :func:`register`. Remote clusters reached through a kubeconfig Secret in the
local cluster (an SKR's ``kcp-system/kubeconfig-<kyma>``, the Garden's ``gardener-credentials``) get a
short-lived client from :func:`remote`, closed when the ``with`` block ends, as the original SKR
looper builds a manager per connect and throws it away.

Remote clusters are not trusted (an SKR's owner controls its API server): their clients read within
:func:`remote_read_limits` (objects, bytes, a total deadline per request) and one
:func:`connect_budget` of bytes held at once sized from the pod's memory, and follow no redirects.
"""

from __future__ import annotations

import contextvars
import heapq
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import urllib3
from kubernetes.client import ApiClient

from kube import audit, resources, settings
from kube.client import ByteBudget, Kube, ReadLimits
from kube.kubeconfig import (
    KubeconfigError,
    cached_api_client,
    from_kubeconfig_dict,
    local_api_client,
    parse_kubeconfig,
    secret_value,
)

LOCAL = "local"

_lock = threading.Lock()
_clients: dict[str, Kube] = {}


def register(name: str, api_client: ApiClient) -> Kube:
    """Make ``api_client`` the client of cluster ``name`` (replacing and closing an older one)."""
    kube = Kube(api_client, cluster=name)
    with _lock:
        old = _clients.get(name)
        _clients[name] = kube
    if old is not None and old.api_client is not api_client:
        old.close()
    return kube


def unregister(name: str) -> None:
    """Forget cluster ``name`` and close its client (no-op if unknown)."""
    with _lock:
        old = _clients.pop(name, None)
    if old is not None:
        old.close()


def registered(name: str) -> bool:
    """Whether a client for ``name`` exists (``local`` counts once built)."""
    with _lock:
        return name in _clients


def client_for(cluster: str = LOCAL) -> Kube:
    """The :class:`Kube` of ``cluster``. ``"local"`` is built on first use from
    ``$RECONCILERY_KUBECONFIG`` / in-cluster / default kubeconfig. Raises ``KeyError`` for a cluster
    never registered, ``kubernetes.config.ConfigException`` when no local config is usable."""
    with _lock:
        kube = _clients.get(cluster)
        if kube is not None:
            return kube
        if cluster != LOCAL:
            raise KeyError(f"no client for cluster {cluster!r}: register it with kube.clusters.register")
        kube = _clients[cluster] = Kube(_cheap_liveness(local_api_client()), cluster=LOCAL)
        return kube


def reset() -> None:
    """Close and forget every client (tests; a process whose kubeconfig changed)."""
    with _lock:
        old = list(_clients.values())
        _clients.clear()
    for kube in old:
        kube.close()


def remote_read_limits() -> ReadLimits:
    """The read limits of remote (untrusted) clusters, from the kube settings
    (``RECONCILERY_REMOTE_LIST_PAGE_SIZE``, ``_MAX_OBJECTS``, ``_MAX_BYTES``). The one place these
    settings are read."""
    s = settings.current()
    return ReadLimits(page_size=s.remote_list_page_size, max_objects=s.remote_list_max_objects,
                      max_bytes=s.remote_list_max_bytes)


#: Decoded JSON takes about 3.8x its raw bytes in CPython (issue 27): a budget of raw bytes counts 4x.
DECODED_FACTOR = 4
#: Where the cgroup declares the container's memory limit (v2, then v1).
CGROUP_MEMORY_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def pod_memory_bytes(files: tuple[str, ...] = CGROUP_MEMORY_FILES) -> int:
    """The container's memory limit in bytes: the first cgroup file of ``files`` that holds a number
    (``max`` or cgroup v1's near-2^63 "unlimited" count as none), else the setting
    ``RECONCILERY_REMOTE_MEMORY_BYTES``."""
    for path in files:
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except (OSError, ValueError):
            continue
        if text.isdigit() and 0 < int(text) < 2**50:
            return int(text)
    return settings.current().remote_memory_bytes


def connect_budget(memory: int | None = None) -> ByteBudget:
    """A new :class:`~kube.client.ByteBudget` for one connect to a remote cluster:
    ``RECONCILERY_REMOTE_CONNECT_BUDGET_BYTES`` when set, else ``memory`` (default
    :func:`pod_memory_bytes`) ``* REMOTE_MEMORY_SHARE / (REMOTE_CONNECTS * DECODED_FACTOR)``:
    512 Mi, 0.5 and 8 connects give 8 MiB of raw JSON per connect."""
    s = settings.current()
    if s.remote_connect_budget_bytes:
        return ByteBudget(s.remote_connect_budget_bytes)
    memory = pod_memory_bytes() if memory is None else memory
    return ByteBudget(int(memory * s.remote_memory_share) // (s.remote_connects * DECODED_FACTOR))


#: Monotonic deadline of the request this thread is sending through a :class:`RemoteKube` (None: none).
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("remote_request_deadline", default=None)


class _Watchdog:
    """One thread per process that shuts sockets down at their deadlines: :meth:`arm` registers
    ``(deadline, socket)`` and returns a handle, :meth:`disarm` forgets it. (A ``threading.Timer`` per
    request started a thread per request: ~0.3 ms of CPU each, 20-30 per SKR connect.)"""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, socket.socket] = {}  # disarming drops the socket at once
        self._seq = 0
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, sock: socket.socket) -> int:
        """Shut ``sock`` down (both ways) at monotonic ``deadline`` unless disarmed first; returns the handle."""
        with self._cond:
            self._seq += 1
            handle = self._seq
            heapq.heappush(self._heap, (deadline, handle))
            self._armed[handle] = sock
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="kube-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0][1] == handle:
                self._cond.notify()  # the new deadline is the earliest: wake up sooner
        return handle

    def disarm(self, handle: int) -> None:
        """Forget ``handle`` (its socket is not cut)."""
        with self._cond:
            self._armed.pop(handle, None)

    def _run(self) -> None:
        while True:
            due: list[socket.socket] = []
            with self._cond:
                now = time.monotonic()
                while self._heap and (self._heap[0][0] <= now or self._heap[0][1] not in self._armed):
                    _, handle = heapq.heappop(self._heap)
                    sock = self._armed.pop(handle, None)
                    if sock is not None:
                        due.append(sock)
                if not due:
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
            for sock in due:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


_watchdog = _Watchdog()


def _native_poll() -> Any:
    """``select.poll`` as the OS gives it, also in a gevent-patched process: gevent's poll object costs
    ~25 us per call (watchers and a hub switch) where a 0-timeout poll of one descriptor never blocks."""
    global _poll
    if _poll is None:
        _poll = select.poll
        with suppress(ImportError):
            from gevent import monkey

            if monkey.is_module_patched("select"):
                _poll = monkey.get_original("select", "poll")
    return _poll


_poll: Any = None


class _LivenessMixin:
    """An urllib3 connection whose idle-connection check before reuse (``is_connected``: is the socket
    readable, i.e. closed by the server or sent something unasked?) polls the descriptor with the OS's
    poll, as urllib3 does unpatched (every pooled request makes this check)."""

    sock: socket.socket | None

    @property
    def is_connected(self) -> bool:
        sock = self.sock
        if sock is None:
            return False
        poller = _native_poll()()
        poller.register(sock.fileno(), select.POLLIN)
        return not poller.poll(0)


def _pool_classes(mixin: type) -> dict[str, type[urllib3.HTTPConnectionPool]]:
    """urllib3's pool classes by scheme (a ``PoolManager``'s ``pool_classes_by_scheme``) whose
    connections have ``mixin`` before urllib3's own connection class (urllib3's ``ConnectionCls`` hook)."""
    name = mixin.__name__.strip("_").removesuffix("Mixin")
    pools: dict[str, type[urllib3.HTTPConnectionPool]] = {}
    for scheme, pool, connection in (("http", urllib3.HTTPConnectionPool, urllib3.connection.HTTPConnection),
                                     ("https", urllib3.HTTPSConnectionPool, urllib3.connection.HTTPSConnection)):
        cls = type(f"_{name}{connection.__name__}", (mixin, connection), {"__module__": __name__})
        pools[scheme] = type(f"_{name}{pool.__name__}", (pool,), {"ConnectionCls": cls, "__module__": __name__})
    return pools


def _cheap_liveness(api_client: ApiClient) -> ApiClient:
    """``api_client``'s pools check a pooled connection with :class:`_LivenessMixin`; returns it."""
    api_client.rest_client.pool_manager.pool_classes_by_scheme = dict(_LIVENESS_POOLS)
    return api_client


class _DeadlineMixin(_LivenessMixin):
    """An urllib3 connection whose status line and headers must arrive before the request's deadline:
    the process's watchdog shuts the socket down at the deadline (per-read timeouts alone let a server
    trickle header lines forever)."""

    sock: socket.socket | None

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        deadline = _deadline.get()
        if deadline is None or self.sock is None:
            return super().getresponse(*args, **kwargs)  # type: ignore[misc]
        handle = _watchdog.arm(deadline, self.sock)
        try:
            return super().getresponse(*args, **kwargs)  # type: ignore[misc]
        finally:
            _watchdog.disarm(handle)


_LIVENESS_POOLS = _pool_classes(_LivenessMixin)
_DEADLINE_POOLS = _pool_classes(_DeadlineMixin)


def _no_redirects(api_client: ApiClient) -> None:
    """Make ``api_client`` answer a 3xx as it is (an :class:`~kube.errors.ApiError`) instead of
    following it, and never retry: a remote API server must not send our requests, credentials
    included, elsewhere (:class:`RemoteKube` asks urllib3 for neither on each request; this covers any
    other use of the client's pools). Its connections also cut a response whose headers do not arrive
    within the request's deadline."""
    pool = api_client.rest_client.pool_manager
    pool.pool_classes_by_scheme = dict(_DEADLINE_POOLS)
    follow = pool.urlopen
    if getattr(follow, "no_redirects", False):
        return

    def urlopen(method: str, url: str, redirect: bool = True, **kw: Any) -> Any:
        kw["retries"] = False  # no retry may follow a redirect either
        return follow(method, url, redirect=False, **kw)

    urlopen.no_redirects = True  # type: ignore[attr-defined]
    pool.urlopen = urlopen  # type: ignore[method-assign]


class RemoteKube(Kube):
    """A :class:`Kube` of another cluster (from a kubeconfig Secret): bounded by ``limits`` (default
    :func:`remote_read_limits`) and by ``budget`` (default a new :func:`connect_budget`: one per
    client, and a client lives for one connect), its ``timeout`` the total deadline of each request,
    no redirects followed. Its calls are recorded by :mod:`kube.audit` as made to that cluster, so the RBAC check
    of deploy/ leaves them out (they are governed by the other cluster's RBAC for the kubeconfig's
    user)."""

    _redirects: dict[str, Any] = {"redirect": False, "retries": False}

    def __init__(self, api_client: ApiClient, cluster: str = "local", timeout: float = 30.0,
                 limits: ReadLimits | None = None, budget: ByteBudget | None = None) -> None:
        super().__init__(api_client, cluster, timeout, limits or remote_read_limits(),
                         budget if budget is not None else connect_budget())
        _no_redirects(api_client)

    def open(self, *args: Any, **kwargs: Any) -> Any:
        token = _deadline.set(time.monotonic() + self.timeout)
        try:
            with audit.on_cluster(self.cluster):
                return super().open(*args, **kwargs)
        finally:
            _deadline.reset(token)


def client_from_secret(local: Kube, namespace: str, name: str, key: str = "config", cluster: str = "",
                       timeout: float = 30.0) -> tuple[Kube, dict]:
    """A new :class:`Kube` for the cluster whose kubeconfig is in Secret ``namespace/name`` (key
    ``key``) of ``local``, and the parsed kubeconfig. The caller closes it (see :func:`remote`).

    Raises :class:`~kube.kubeconfig.KubeconfigError` when the Secret, the key or a usable kubeconfig is
    missing, :class:`~kube.errors.ApiError` when the Secret cannot be read.
    """
    kube, config = _from_secret(local, namespace, name, key, cluster, timeout, parse=True)
    assert config is not None
    return kube, config


def _from_secret(local: Kube, namespace: str, name: str, key: str, cluster: str, timeout: float,
                 parse: bool) -> tuple[Kube, dict | None]:
    """:func:`client_from_secret`; without ``parse`` the kubeconfig is not parsed again while the
    Configuration built from this version of the Secret is cached (the parsed dict is then ``None``)."""
    secret = local.get(resources.SECRET, name, namespace)
    if secret is None:
        raise KubeconfigError(f"Secret {namespace}/{name} not found")
    meta = secret.get("metadata") or {}
    version = (meta.get("uid"), meta.get("resourceVersion"), key) if meta.get("resourceVersion") else None
    if not parse and version is not None:
        cached = cached_api_client(version)
        if cached is not None:
            return RemoteKube(cached, cluster=cluster or name, timeout=timeout), None
    config = parse_kubeconfig(secret_value(secret, key))
    return RemoteKube(from_kubeconfig_dict(config, cache_key=version), cluster=cluster or name, timeout=timeout), config


@contextmanager
def remote(local: Kube, namespace: str, name: str, key: str = "config", cluster: str = "",
           timeout: float = 30.0) -> Iterator[Kube]:
    """A short-lived client of the cluster whose kubeconfig is in Secret ``namespace/name``.

    ``with remote(kcp, "kcp-system", f"kubeconfig-{kyma}", cluster=kyma, timeout=10) as skr: ...``
    builds the client, yields it and closes its connection pool when the block ends, whatever happens.
    ``timeout`` bounds connect and each read of a request (seconds). Raises as :func:`client_from_secret`.
    """
    kube, _ = _from_secret(local, namespace, name, key, cluster, timeout, parse=False)
    try:
        yield kube
    finally:
        kube.close()
