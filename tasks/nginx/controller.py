"""The ``nginx-upstream`` controller: one workqueue key per (NGINX Plus host, upstream).

Key: ``Key(cluster="local", namespace=<host base URL>, name="<protocol>:<upstream>")`` (see
:func:`key_for`), so each host is synced independently and in parallel. A reconcile is
level-triggered, as the seed's Synchronizer is not (it replayed events):

1. read the settings ConfigMap, the Services of the watched namespace and the Nodes from the worker
   process's informers (:mod:`informers.informer`; the API server until they are synced); a host
   no longer in ``nginx-hosts`` is left alone. The ``sync_delay`` below also covers the informers'
   lag behind the watcher that enqueued the key (milliseconds);
2. :func:`tasks.nginx.translate.translate` -> the desired addresses of this upstream (``[]`` when no
   Service names it any more: the upstream is emptied);
3. ``GET`` the upstream's servers on the host, :func:`tasks.nginx.diff.diff`, then POST / DELETE /
   PATCH; every action is attempted and any failure fails the reconcile (retried with backoff).

Timing as the seed's Synchronizer: a fresh enqueue waits 250-750 ms (``sync_delay``), failures back
off from 2 s doubling to 60 s, and retries never stop (the original dropped an event after 5).
An upstream missing on a host (``404 UpstreamNotFound``) is an error: logged with the host and the
upstream, counted in ``reconcilery_nginx_upstream_missing`` and retried.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import structlog

from informers import informer as informers
from kube import Kube, client_for, resources
from kube.toolkit.metrics import counter, gauge
from tasks.nginx import settings as edge_settings
from tasks.nginx.diff import Action, Plan, diff
from tasks.nginx.plus_client import PlusAPIError, PlusClient, PlusError, PlusUnreachable
from tasks.nginx.settings import EdgeNames, Settings, SettingsError, parse_settings, tls_material
from tasks.nginx.translate import Translation, UpstreamRef, translate
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, registry

log = structlog.get_logger("tasks.nginx")

CONTROLLER_NAME = "nginx-upstream"
QUEUE = "nginx"


def edge_names() -> EdgeNames:
    """Where this process's edge reads its inputs (``RECONCILERY_NGINX_*``, read on first use)."""
    return edge_settings.current().names


UPSTREAM_MISSING = gauge(
    "reconcilery_nginx_upstream_missing",
    "1 while the upstream named by a Service port is not declared (with a zone) on the NGINX Plus host.",
    ["host", "upstream"])
UPSTREAM_MISSING_TOTAL = counter(
    "reconcilery_nginx_upstream_missing_errors_total",
    "Syncs that failed because the upstream is not declared on the NGINX Plus host.", ["host", "upstream"])
SYNC_ERRORS = counter(
    "reconcilery_nginx_sync_errors_total",
    "Failed syncs by reason (settings, unreachable, upstream_missing, api).", ["host", "reason"])
SERVER_CHANGES = counter(
    "reconcilery_nginx_server_changes_total", "Servers added, deleted or updated on NGINX Plus hosts.",
    ["host", "action"])
API_REQUESTS = counter(
    "reconcilery_nginx_api_requests_total", "Requests sent to NGINX Plus hosts.", ["host"])


def key_for(host: str, upstream: UpstreamRef) -> Key:
    """The workqueue key of ``upstream`` on the host whose API base URL is ``host``."""
    return Key(LOCAL_CLUSTER, host, str(upstream))


def keys_for(hosts: Iterator[str] | tuple[str, ...] | list[str], upstreams: Any) -> list[tuple[str, Key]]:
    """``(controller name, key)`` for every host x upstream, as the watchers enqueue them."""
    refs = sorted(set(upstreams))
    return [(CONTROLLER_NAME, key_for(host, ref)) for host in hosts for ref in refs]


@dataclass
class SyncReport:
    """What one sync did: the plan, the requests sent to the host, failures of single actions."""

    host: str
    upstream: UpstreamRef
    desired: list[str] = field(default_factory=list)
    plan: Plan = field(default_factory=Plan)
    requests: int = 0
    failures: list[str] = field(default_factory=list)
    skipped: str = ""


class UpstreamMissing(PlusError):
    """The host has no (zone) upstream of that name and protocol."""


def _configmap(kube: Kube, names: EdgeNames) -> dict[str, Any] | None:
    return informers.get(kube, resources.CONFIGMAP, names.configmap, names.namespace,
                         watch_namespace=names.namespace)


def _services(kube: Kube, names: EdgeNames) -> list[dict[str, Any]]:
    return informers.list_objects(kube, resources.SERVICE, names.watched_namespace,
                                  watch_namespace=names.watched_namespace)


def _nodes(kube: Kube) -> list[dict[str, Any]]:
    return informers.list_objects(kube, resources.NODE)


def read_settings(kube: Kube, names: EdgeNames) -> Settings:
    """The settings ConfigMap, parsed (defaults when it does not exist). Raises :class:`SettingsError`."""
    return parse_settings((_configmap(kube, names) or {}).get("data"))


@dataclass(frozen=True)
class ClusterState:
    """What a sync reads from Kubernetes: the ConfigMap's ``data`` (``None``: no ConfigMap), the
    watched namespace's Services and all Nodes."""

    config: dict[str, Any] | None
    services: list[dict[str, Any]]
    nodes: list[dict[str, Any]]


def read_state(kube: Kube, names: EdgeNames) -> ClusterState:
    """The ConfigMap, the watched namespace's Services and every Node: from the worker process's
    informers (:mod:`informers.informer`; the ConfigMap and Services through one informer of their
    namespace each), or one GET and two LISTs without them. Objects are shared: read-only."""
    return ClusterState((_configmap(kube, names) or {}).get("data"), _services(kube, names), _nodes(kube))


class StateReads:
    """Single-flight reads of :class:`ClusterState`, shared by the reconciles of one process.

    A Node change enqueues every (host, upstream) key at once and each would read the same state.
    A reconcile may use a read that *started after the reconcile itself started*: such a read sees
    every change made before the key was dequeued, so sharing it keeps the sync level-triggered
    (reads that started earlier are never reused). Nothing is kept longer than that.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[float, object, ClusterState] | None = None
        self._inflight: tuple[float, object, Future[ClusterState]] | None = None
        self.reads = 0

    def get(self, kube: Kube, names: EdgeNames, not_before: float) -> ClusterState:
        """A state read that started at or after ``not_before`` (a ``time.monotonic()`` value)."""
        ident = (id(kube), names)
        with self._lock:
            if self._last and self._last[1] == ident and self._last[0] >= not_before:
                return self._last[2]
            inflight = self._inflight
            if inflight and inflight[1] == ident and inflight[0] >= not_before:
                future = inflight[2]
            else:
                future = Future()
                started = time.monotonic()
                self._inflight = (started, ident, future)
                inflight = None
        if inflight is not None:
            return future.result()
        try:
            state = read_state(kube, names)
        except BaseException as exc:
            future.set_exception(exc)
            with self._lock:
                if self._inflight and self._inflight[2] is future:
                    self._inflight = None
            raise
        future.set_result(state)
        with self._lock:
            self.reads += 1
            if self._last is None or self._last[0] <= started:
                self._last = (started, ident, state)
            if self._inflight and self._inflight[2] is future:
                self._inflight = None
        return state


STATE_READS = StateReads()


def read_translation(kube: Kube, names: EdgeNames, only: UpstreamRef | None = None) -> Translation:
    """Translate the watched namespace's Services and all Nodes (informers, see :func:`read_state`),
    for every upstream or ``only``."""
    return translate(_services(kube, names), _nodes(kube), names, only)


def plus_client_for(kube: Kube, host: str, settings: Settings, names: EdgeNames) -> PlusClient:
    """A client for ``host`` with the settings' TLS mode (reads the Secrets it needs)."""
    needed = {n for n in (settings.ca_certificate if settings.tls_mode.needs_ca else "",
                          settings.client_certificate if settings.tls_mode.needs_client_cert else "") if n}
    secrets = {name: kube.get(resources.SECRET, name, names.namespace) for name in needed}
    return PlusClient(host, tls_material(settings, secrets))


def apply_plan(client: PlusClient, upstream: UpstreamRef, plan: Plan) -> list[str]:
    """Run every action of ``plan`` (adds, deletes, updates); returns the failures as text.

    A DELETE of a server already gone (``404 UpstreamServerNotFound``) counts as done.
    """
    failures: list[str] = []
    for action in plan.actions:
        try:
            _apply(client, upstream, action)
        except PlusAPIError as exc:
            if action.op == "delete" and exc.code == "UpstreamServerNotFound":
                continue
            if exc.code == "UpstreamNotFound":
                raise UpstreamMissing(str(exc)) from None
            failures.append(f"{action.op} {action.server}: {exc}")
        except PlusUnreachable:
            raise
    return failures


def _apply(client: PlusClient, upstream: UpstreamRef, action: Action) -> None:
    if action.op == "add":
        client.add_server(upstream.protocol, upstream.name, dict(action.body or {}))
    elif action.op == "delete":
        assert action.server_id is not None
        client.delete_server(upstream.protocol, upstream.name, action.server_id)
    else:
        assert action.server_id is not None
        client.update_server(upstream.protocol, upstream.name, action.server_id, dict(action.body or {}))


def sync_upstream(kube: Kube, host: str, upstream: UpstreamRef, names: EdgeNames | None = None,
                  started: float | None = None) -> SyncReport:
    """Make ``upstream`` on ``host`` hold exactly the servers the Services and Nodes call for.

    ``started`` (``time.monotonic()``, default now): cluster state read at or after this instant is
    good enough (see :class:`StateReads`).

    Raises :class:`SettingsError` (invalid ConfigMap or TLS Secrets), :class:`UpstreamMissing`,
    :class:`PlusUnreachable`, :class:`PlusError`, ``kube.ApiError``. Failures of single actions are
    returned in ``SyncReport.failures`` after every action was attempted.
    """
    report = SyncReport(host, upstream)
    names = names or edge_names()
    state = STATE_READS.get(kube, names, not_before=time.monotonic() if started is None else started)
    settings = parse_settings(state.config)
    _apply_log_level(settings)
    if host not in settings.hosts:
        report.skipped = "host not in nginx-hosts"
        return report
    translation = translate(state.services, state.nodes, names, upstream)
    for problem in translation.problems if _enabled(30) else ():
        log.warning("service port skipped or defaulted", problem=problem)
    report.desired = translation.upstreams.get(upstream, [])
    client = plus_client_for(kube, host, settings, names)
    try:
        try:
            current = client.list_servers(upstream.protocol, upstream.name)
        except PlusAPIError as exc:
            if exc.code == "UpstreamNotFound":
                raise UpstreamMissing(str(exc)) from None
            raise
        report.plan = diff(upstream.protocol, current, report.desired)
        report.failures = apply_plan(client, upstream, report.plan)
    finally:
        report.requests = client.requests_made
        API_REQUESTS.labels(host).inc(client.requests_made)
    return report


_LOG_LEVEL = {"level": 30}


def _apply_log_level(settings: Settings) -> None:
    """``log-level`` applies live to this domain's info/debug/warning lines (see :func:`_enabled`);
    errors are always logged."""
    _LOG_LEVEL["level"] = settings.python_log_level


def _enabled(level: int) -> bool:
    return level >= _LOG_LEVEL["level"]


def reconcile(key: Key, names: EdgeNames | None = None, kube: Kube | None = None) -> Result:
    """Sync one (host, upstream) key; the ``nginx-upstream`` controller's reconcile.

    Returns ``Result.done()`` on success (or when the host is no longer configured),
    ``Result.error(...)`` for anything a retry may fix (host down, upstream missing, an action
    failed, Kubernetes API errors), ``Result.terminal(...)`` for an invalid key or invalid settings
    (a change of the ConfigMap enqueues every key again).
    """
    names = names or edge_names()
    host = key.namespace
    try:
        upstream = UpstreamRef.parse(key.name)
    except ValueError as exc:
        return Result.terminal(f"bad nginx-upstream key {key}: {exc}")
    kube = kube or client_for(key.cluster)
    started = time.perf_counter()
    try:
        report = sync_upstream(kube, host, upstream, names, started=time.monotonic())
    except SettingsError as exc:
        SYNC_ERRORS.labels(host, "settings").inc()
        log.error("nginx edge settings invalid", configmap=f"{names.namespace}/{names.configmap}",
                  error=str(exc))
        return Result.terminal(str(exc))
    except UpstreamMissing as exc:
        UPSTREAM_MISSING.labels(host, str(upstream)).set(1)
        UPSTREAM_MISSING_TOTAL.labels(host, str(upstream)).inc()
        SYNC_ERRORS.labels(host, "upstream_missing").inc()
        log.error("upstream missing on NGINX Plus host: declare it with a zone in nginx.conf",
                  host=host, upstream=str(upstream), error=str(exc))
        return Result.error(f"upstream {upstream} missing on {host}")
    except PlusUnreachable as exc:
        SYNC_ERRORS.labels(host, "unreachable").inc()
        if _enabled(30):
            log.warning("NGINX Plus host unreachable", host=host, upstream=str(upstream), error=str(exc))
        return Result.error(str(exc))
    except PlusError as exc:
        SYNC_ERRORS.labels(host, "api").inc()
        log.error("NGINX Plus API failed", host=host, upstream=str(upstream), error=str(exc))
        return Result.error(str(exc))
    UPSTREAM_MISSING.labels(host, str(upstream)).set(0)
    for op, count in report.plan.summary().items():
        if count:
            SERVER_CHANGES.labels(host, op).inc(count)
    if report.failures:
        SYNC_ERRORS.labels(host, "api").inc()
        log.error("some server changes failed", host=host, upstream=str(upstream), failures=report.failures)
        return Result.error("; ".join(report.failures))
    if report.plan and _enabled(20):
        log.info("upstream synced", host=host, upstream=str(upstream), **report.plan.summary(),
                 servers=len(report.desired), requests=report.requests,
                 seconds=round(time.perf_counter() - started, 4))
    elif report.skipped and _enabled(10):
        log.debug("upstream not synced", host=host, upstream=str(upstream), reason=report.skipped)
    return Result.done()


def desired_keys(kube: Kube, names: EdgeNames | None = None) -> list[Key]:
    """Every (host, upstream) key the current ConfigMap and Services call for; ``[]`` when the settings
    are invalid (logged)."""
    names = names or edge_names()
    try:
        settings = read_settings(kube, names)
    except SettingsError as exc:
        log.error("nginx edge settings invalid; nothing to resync", error=str(exc))
        return []
    translation = read_translation(kube, names)
    return [key for _, key in keys_for(settings.hosts, translation.upstreams)]


def list_keys() -> list[Key]:
    """The resync's keys (local cluster)."""
    return desired_keys(client_for(LOCAL_CLUSTER))


@registry.register
def controller() -> Controller:
    """The registration; its resync interval (``RECONCILERY_NGINX_RESYNC_SECONDS``, 300 s) repairs drift on
    the hosts, e.g. an NGINX Plus restarted without a ``state`` file. Built on the registry's first use."""
    return Controller(
        name=CONTROLLER_NAME,
        queue=QUEUE,
        reconcile=reconcile,
        backoff=Backoff(base=2.0, cap=60.0),
        resync_interval=edge_settings.current().resync_seconds,
        list_keys=list_keys,
        sync_delay=(0.25, 0.75),
    )
