"""The ``nginx-upstream`` controller: one workqueue key per (NGINX Plus host, upstream).

Key: ``Key(cluster="local", namespace=<host base URL>, name="<protocol>:<upstream>")`` (see
:func:`key_for`), so each host is synced independently and in parallel. A change of every upstream
(a Node, the settings) enqueues a host's shard keys instead (``name="*<i>/<n>"``, :func:`host_keys`,
:func:`sync_host`): each syncs its shard of the host's upstreams as their own keys would. A reconcile is
level-triggered, as the seed's Synchronizer is not (it replayed events):

1. read the running modes' inputs through the domain's reader (:mod:`tasks.nginx.reads`: the
   worker process's informers, the API server until they are synced): ``nkl`` the settings
   ConfigMap and the watched namespace's Services, ``nlk`` its configuration (ConfigMap or file),
   every namespace's Services and EndpointSlices; both the Nodes. A host no mode lists is left
   alone. The ``sync_delay`` below also covers the informers' lag behind the watcher that enqueued
   the key (milliseconds);
2. :func:`tasks.nginx.plan.plan_upstream` -> the desired addresses of this upstream (``[]`` when no
   Service names it any more: the upstream is emptied);
3. record the (host, upstream) in the ownership ConfigMap before the first write
   (:mod:`tasks.nginx.ownership`), so the resync can empty it once no Service names it, even after
   a restart; drop the record once such an upstream is empty;
4. ``GET`` the upstream's servers on the host, :func:`tasks.nginx.diff.diff`, then
   :func:`tasks.nginx.plan.sync_outcome`'s POST / DELETE / PATCH calls, carried out by
   :func:`kube.toolkit.execute` (no Kubernetes object: only the calls). Every change is attempted (up
   to :data:`tasks.nginx.plan.CHAINED` failed ones) and any failure fails the reconcile (retried with
   backoff); the errors of the NGINX Plus client are classified through :class:`kube.refusal.Failure`.

Timing as the seed's Synchronizer: a fresh enqueue waits 250-750 ms (``sync_delay``), failures back
off from 2 s doubling to 60 s, and retries never stop (the original dropped an event after 5).
An upstream missing on a host (``404 UpstreamNotFound``) is an error: logged with the host and the
upstream, reported in ``reconcilery_nginx_upstream_missing`` (:mod:`tasks.nginx.missing`) and retried.
A host answering 401 (the NGINXaaS API key missing or wrong) is reported once per host and process
(log and a Warning Event) and retried with the same backoff.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import structlog

from informers.reader import Reader
from kube import ApiError, Kube, client_for, resources
from kube.refusal import Failure
from kube.toolkit.execute import Executed, execute
from kube.toolkit.metrics import counter, gauge, histogram
from tasks.nginx import ownership
from tasks.nginx import settings as edge_settings
from tasks.nginx.diff import ServerChanges, diff, diff_known
from tasks.nginx.insync import HostSync
from tasks.nginx.missing import ERROR_LABELS, MISSING
from tasks.nginx.plan import (
    ClusterState,
    UpstreamPlan,
    desired_upstreams,
    parse_config,
    parse_owners,
    plan_host,
    plan_upstream,
    recorded_owner,
    stops,
    sync_failure,
    sync_outcome,
)
from tasks.nginx.plus_client import PlusClient, PlusError
from tasks.nginx.reads import ENDPOINTSLICE, READS
from tasks.nginx.settings import (
    NLK_CONFIG_KEY,
    ConfigError,
    EdgeNames,
    ModeConfig,
    TLSMode,
    nlk_document,
    tls_material,
)
from tasks.nginx.synclock import SYNC_LOCKS, Lease, View
from tasks.nginx.translate import SERVICE_NAME_LABEL, ServiceProblem, UpstreamRef
from workers.controller import LOCAL_CLUSTER, Backoff, Controller, Key, Result, ResultKind, registry

log = structlog.get_logger("tasks.nginx")

CONTROLLER_NAME = "nginx-upstream"
QUEUE = "nginx"


def edge_names() -> EdgeNames:
    """Where this process's edge reads its inputs (``RECONCILERY_NGINX_*``, read on first use)."""
    return edge_settings.current().names


UPSTREAM_MISSING_TOTAL = counter(
    "reconcilery_nginx_upstream_missing_errors_total",
    "Syncs that failed because the upstream is not declared on the NGINX Plus host (the first 50 upstreams "
    "a process counts per host by name, later ones as upstream=\"_other\").", ["host", "upstream"])
SYNC_ERRORS = counter(
    "reconcilery_nginx_sync_errors_total",
    "Failed syncs by reason (settings, unreachable, unauthorized, upstream_missing, api).", ["host", "reason"])
SERVER_CHANGES = counter(
    "reconcilery_nginx_server_changes_total", "Servers added, deleted or updated on NGINX Plus hosts.",
    ["host", "action"])
API_REQUESTS = counter(
    "reconcilery_nginx_api_requests_total", "Requests sent to NGINX Plus hosts.", ["host"])
#: Buckets of one upstream sync to one host: 1 ms (a converged upstream, one GET) to 10 s (the client's
#: read timeout; hundreds of server changes).
SYNC_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SYNC_SECONDS = histogram(
    "reconcilery_nginx_sync_seconds",
    "Seconds of one upstream sync to one NGINX Plus host (cluster read, GET servers, the changes).",
    ["host"], buckets=SYNC_BUCKETS)
PLUS_ERRORS = counter(
    "reconcilery_nginx_plus_errors_total",
    "NGINX Plus API error answers by HTTP status code; code=unreachable when no answer came.", ["host", "code"])
HOST_IN_SYNC = gauge(
    "reconcilery_nginx_host_in_sync",
    "1 while the last sync of every upstream on the NGINX Plus host succeeded (as this process saw), else 0.",
    ["host"])
#: The per-process map behind ``reconcilery_nginx_host_in_sync``.
HOSTS_IN_SYNC = HostSync()


def _synced(host: str, upstream: UpstreamRef, ok: bool) -> None:
    """Record the end of a sync of ``upstream`` to ``host`` in ``reconcilery_nginx_host_in_sync``."""
    if ok:
        HOSTS_IN_SYNC.succeeded(host, str(upstream))
    else:
        HOSTS_IN_SYNC.failed(host, str(upstream))
    # read at scrape time: a remembered failure expires (insync.EXPIRE) without another sync here
    HOST_IN_SYNC.labels(host).set_function(functools.partial(_in_sync, host))


def _in_sync(host: str) -> float:
    return 1.0 if HOSTS_IN_SYNC.in_sync(host) else 0.0


def key_for(host: str, upstream: UpstreamRef) -> Key:
    """The workqueue key of ``upstream`` on the host whose API base URL is ``host``."""
    return Key(LOCAL_CLUSTER, host, str(upstream))


def keys_for(hosts: Iterator[str] | tuple[str, ...] | list[str], upstreams: Any) -> list[tuple[str, Key]]:
    """``(controller name, key)`` for every host x upstream, as the watchers enqueue them."""
    refs = sorted(set(upstreams))
    return [(CONTROLLER_NAME, key_for(host, ref)) for host in hosts for ref in refs]


@dataclass
class SyncReport:
    """What one sync did.

    Attributes:
        desired: the servers the upstream should hold.
        changes: the server changes the diff called for.
        requests: HTTP requests sent to the host.
        error: the changes that failed (``"<op> <server>: <error>"`` joined by ``"; "``) when every
            change was attempted; ``""`` when none failed.
        stopped: the failure that ended the sync before it was done (reading the servers, or a call
            that :func:`tasks.nginx.plan.stops` it); ``None`` otherwise.
        skipped: why nothing was done (the host is not configured); ``""`` otherwise.
        busy: nothing was done because another sync of the upstream held its lock (:mod:`tasks.nginx.synclock`).
        error_answers: the host's error answers by HTTP status (``"unreachable"``: no answer).
        view: the servers the sync left on the host (:mod:`tasks.nginx.synclock`), ``None`` when unknown.
    """

    host: str
    upstream: UpstreamRef
    desired: list[str] = field(default_factory=list)
    changes: ServerChanges = field(default_factory=ServerChanges)
    requests: int = 0
    error: str = ""
    stopped: Failure | None = None
    skipped: str = ""
    busy: bool = False
    error_answers: dict[str, int] = field(default_factory=dict)
    view: View | None = None


def _configmap(reader: Reader, names: EdgeNames) -> dict[str, Any] | None:
    return reader.get(resources.CONFIGMAP, names.configmap, names.namespace)


def _services(reader: Reader, names: EdgeNames) -> list[dict[str, Any]]:
    return reader.list(resources.SERVICE, names.watched_namespace)


def _nodes(reader: Reader) -> list[dict[str, Any]]:
    return reader.list(resources.NODE)


@functools.lru_cache(maxsize=4)
def _parse_nlk(text: str) -> Mapping[str, Any]:
    return nlk_document({NLK_CONFIG_KEY: text})


def read_nlk_file(path: str) -> Mapping[str, Any]:
    """The original's ``config.yaml`` at ``path`` as a mapping, read on every call (the original read it
    once at start), parsed once per content. The content decides, not the modification time, as the
    watcher's poll (:class:`tasks.nginx.watches.NlkFilePoll`): a kubelet swaps a mounted ConfigMap's symlink,
    and an edit within the mtime granularity still counts. Raises :class:`ConfigError` when it cannot be
    read or is not a YAML mapping."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise ConfigError([f"cannot read {path}: {reason}"], where="nlk config file") from None
    return _parse_nlk(text)


def _nlk_config(reader: Reader, names: EdgeNames) -> Mapping[str, Any] | None:
    if names.nlk_config_file:
        return read_nlk_file(names.nlk_config_file)
    configmap = reader.get(resources.CONFIGMAP, names.nlk_configmap, names.nlk_namespace)
    return None if configmap is None else (configmap.get("data") or {})


def read_state(reader: Reader, names: EdgeNames) -> ClusterState:
    """What the running modes read (:class:`~tasks.nginx.plan.ClusterState`) through the domain's
    reader (:data:`tasks.nginx.reads.READS`: the worker process's informers, or GETs and LISTs
    without them). Raises :class:`ConfigError` when the ``nlk`` configuration file cannot be read."""
    config = (_configmap(reader, names) or {}).get("data") if names.nkl else None
    services = _services(reader, names) if names.nkl else []
    if not names.nlk:
        return ClusterState(config, services, _nodes(reader))
    record = reader.get(resources.CONFIGMAP, names.owned_configmap, names.owned_namespace) or {}
    return ClusterState(config, services, _nodes(reader), _nlk_config(reader, names),
                        reader.list(resources.SERVICE),
                        reader.list(ENDPOINTSLICE, label_selector=SERVICE_NAME_LABEL),
                        parse_owners(record.get("data")))


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
            state = read_state(READS.reader(kube), names)
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


#: The value of ``X-NLK-Version`` sent to the ``nlk`` mode's hosts (the original sends its own version).
def nlk_version() -> str:
    """This package's version (``X-NLK-Version``); ``""`` when it is not installed."""
    try:
        return version("reconcilery")
    except PackageNotFoundError:
        return ""


_unverified_lock = threading.Lock()
_unverified_hosts: set[str] = set()


def _warn_unverified(host: str) -> None:
    """Warn once per host and process that the NGINXaaS API key goes to ``host`` without the server's
    certificate verified (``tls-mode`` ``no-tls`` / ``skip-verify-tls``, or any mode over ``http://``,
    in plain text): whoever answers in its place receives the key (the original sends it silently)."""
    with _unverified_lock:
        if host in _unverified_hosts:
            return
        _unverified_hosts.add(host)
    log.warning("the NGINXaaS API key is sent without TLS verification: use tls-mode ca-tls", host=host,
                plain_http=host.startswith("http://"))


def plus_client_for(kube: Kube, host: str, settings: ModeConfig, names: EdgeNames, nlk: bool = False) -> PlusClient:
    """A client for ``host`` with the settings' TLS mode (reads the Secrets it needs). ``nlk``: the
    host is one of the ``nlk`` mode's, so requests carry ``X-NLK-Version`` and, when
    ``NGINXAAS_DATAPLANE_API_KEY`` is set, ``Authorization: ApiKey <base64 key>``."""
    needed = {n for n in (settings.ca_certificate if settings.tls_mode.needs_ca else "",
                          settings.client_certificate if settings.tls_mode.needs_client_cert else "") if n}
    reader = READS.reader(kube)
    secrets = {name: reader.get(resources.SECRET, name, names.namespace) for name in needed}
    if not nlk:
        return PlusClient(host, tls_material(settings, secrets))
    if edge_settings.current().api_key and (settings.tls_mode is TLSMode.NO_TLS or host.startswith("http://")):
        _warn_unverified(host)
    return PlusClient(host, tls_material(settings, secrets), api_key=edge_settings.current().api_key,
                      nlk_version=nlk_version())


def sync_upstream(kube: Kube, host: str, upstream: UpstreamRef, names: EdgeNames | None = None,
                  started: float | None = None) -> SyncReport:
    """Make ``upstream`` on ``host`` hold exactly the servers the running modes call for.

    ``started`` (``time.monotonic()``, default now): cluster state read at or after this instant is
    good enough (see :class:`StateReads`). The (host, upstream) is recorded as owned before the
    first request that may write (:mod:`tasks.nginx.ownership`) and forgotten once no Service names
    it and it has been emptied. The changes are :func:`tasks.nginx.plan.sync_outcome`'s calls, made by
    :func:`kube.toolkit.execute`.

    A failure talking to the host is in the report: ``stopped`` (the sync ended there) or ``error``
    (single changes failed, after every change was attempted). Raises :class:`ConfigError` (invalid
    configuration or TLS Secrets) and ``kube.ApiError`` (the cluster reads and the ownership record).
    """
    report = SyncReport(host, upstream)
    names = names or edge_names()
    stamp = SYNC_LOCKS.now()
    planned = _planned(kube, names, host, upstream, max(time.monotonic(), started or 0.0))
    if planned is None:
        report.skipped = "host not in nginx-hosts"
        return report
    taken = time.monotonic()
    held = SYNC_LOCKS.acquire_many(host, [upstream]).get(upstream)
    if held is None:
        report.busy = True
        return report
    lease = Lease(SYNC_LOCKS, host, [upstream], held.token, taken)
    try:
        if held.stamp >= stamp:  # synced by another key since this read began: read again
            planned = _planned(kube, names, host, upstream, time.monotonic())
            if planned is None:
                report.skipped = "host not in nginx-hosts"
                return report
        plan, client = planned
        report = _sync_planned(kube, names, host, upstream, plan, ownership.recorded(kube, names, host, upstream),
                               client, held.view, lease, stamp)
        return report
    finally:
        SYNC_LOCKS.release_many(host, [upstream], held.token, {upstream: report.view} if report.view else None)


def _planned(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef, not_before: float
             ) -> tuple[UpstreamPlan, PlusClient] | None:
    """The plan of ``upstream`` on ``host`` from a cluster read that began at or after ``not_before`` and a
    client for the host; ``None`` when no running mode lists the host."""
    state = STATE_READS.get(kube, names, not_before=not_before)
    config = parse_config(state, names)
    settings = config.settings_for(host)
    if settings is None:
        return None
    _apply_log_level(settings)
    plan = plan_upstream(state, config, names, host, upstream)
    fresh = _fresh_slices(kube, state, plan.owner) if config.nlk and plan.owner else None
    if fresh is not None:
        state = dataclasses.replace(state, slices=fresh)
        plan = plan_upstream(state, config, names, host, upstream)
    for problem in plan.problems if _enabled(30) else ():
        log.warning("service port skipped or defaulted", problem=problem)
    _record_service_problems(kube, state, plan.service_problems)
    return plan, plus_client_for(kube, host, settings, names, nlk=config.api_key_for(host))


def _fresh_slices(kube: Kube, state: ClusterState, owner: str) -> list[Mapping[str, Any]] | None:
    """``state``'s EndpointSlices with those of the ClusterIP Service ``owner`` (``namespace/name``) as the API
    server has them now, when the process's informer holds others (``None``: it is up to date, or the
    Service takes no servers from slices).

    The watcher enqueues an upstream's key on a slice write it saw; the worker's informer has its own
    watch, which may see the write later than the jitter (250-750 ms) lasts on a loaded machine (a slice
    of 1,000 endpoints is ~150 KB of JSON): reading the informer then would sync the servers of before the
    write and nothing would enqueue the key again until the resync (measured: 1 in ~400 slice writes at
    load 8-12, on one host or both). One LIST of the Service's own slices per sync closes it."""
    namespace, _, name = owner.partition("/")
    service = next((s for s in state.nlk_services if (s.get("metadata") or {}).get("namespace") == namespace
                    and (s.get("metadata") or {}).get("name") == name), None)
    if service is None or (service.get("spec") or {}).get("type", "ClusterIP") != "ClusterIP":
        return None

    def ours(endpoint_slice: Mapping[str, Any]) -> bool:
        meta = endpoint_slice.get("metadata") or {}
        return meta.get("namespace") == namespace and (meta.get("labels") or {}).get(SERVICE_NAME_LABEL) == name

    def versions(slices: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
        metas = [s.get("metadata") or {} for s in slices]
        return {(str(m.get("uid", "")), str(m.get("resourceVersion", ""))) for m in metas}

    direct = kube.list(ENDPOINTSLICE, namespace=namespace, label_selector=f"{SERVICE_NAME_LABEL}={name}")
    if versions(s for s in state.slices if ours(s)) == versions(direct):
        return None
    return [*(s for s in state.slices if not ours(s)), *direct]


def _sync_planned(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef, plan: UpstreamPlan,
                  recorded: str | None, client: PlusClient, known: View | None = None, lease: Lease | None = None,
                  stamp: float = 0.0) -> SyncReport:
    """The part of a sync that talks to the host, for a planned upstream (``recorded``: its owner in the
    ownership record, ``None`` when not recorded); ``client`` may be shared by the syncs of one host
    (the report counts this sync's requests and error answers only).

    ``known``: the servers the previous sync left (:mod:`tasks.nginx.synclock`), used instead of ``GET
    .../servers`` for a recorded upstream; when a write made from it gets an error answer (an id that is
    no longer there: the host was restarted or changed by hand), the servers are read and diffed again.
    ``lease``: the sync lock, checked before every write. ``stamp``: Redis' time before this sync's
    cluster read (when a ``GET`` made now verified the servers); the report's ``view`` is what the sync
    left, for the next one (``None`` when any change failed)."""
    report = SyncReport(host, upstream, desired=plan.desired)
    requests_before, errors_before = client.requests_made, dict(client.error_answers)
    client.guard = functools.partial(lease.check, upstream) if lease is not None else None
    view = known if plan.named and recorded == plan.owner else None  # recorded as planned: no record to write
    try:
        if view is not None:
            done, left = _write(client, host, upstream, report, None, view.servers)
            if left is not None or (done.refused is not None and stops(done.refused[1])):
                report.view = View(view.verified, left) if left is not None else None
                return _synced_report(kube, names, host, upstream, plan, recorded, report, done)
            # an error answer to a write made from the view (a stale id): read the servers, diff again
            report.changes = ServerChanges()
        try:
            current = client.list_servers(upstream.protocol, upstream.name)
        except PlusError as exc:
            report.stopped = exc.failure
            return report
        if recorded is None and ((current and not plan.adopts) or not plan.named):
            # never ours: an upstream only nlk Services name that holds servers the edge did not write
            # (configured by hand) is left alone; one no Service names is not the edge's to empty
            if current and plan.named:
                report.skipped = "upstream holds servers the edge did not write: left alone"
                log.warning("upstream not taken over", host=host, upstream=str(upstream), servers=len(current))
            else:
                report.skipped = "not the edge's"
            return report
        if plan.named and recorded != plan.owner:
            ownership.record(kube, names, host, upstream, plan.owner)
        servers = _plain(current)
        done, left = _write(client, host, upstream, report, current, servers)
        if left is not None and servers is not None and stamp:
            report.view = View(stamp, left)
    finally:
        client.guard = None
        report.requests = client.requests_made - requests_before
        report.error_answers = {code: n - errors_before.get(code, 0) for code, n in client.error_answers.items()
                                if n > errors_before.get(code, 0)}
        API_REQUESTS.labels(host).inc(report.requests)
        for code, count in report.error_answers.items():
            PLUS_ERRORS.labels(host, code).inc(count)
    return _synced_report(kube, names, host, upstream, plan, recorded, report, done)


def _plain(current: list[dict[str, Any]]) -> dict[int, str] | None:
    """``{id: address}`` of servers read from the host when each is one this controller could have left
    (an ``id`` and a ``server``, not resolved from a name): the start of a view; ``None`` otherwise."""
    out: dict[int, str] = {}
    for server in current:
        ident, address = server.get("id"), server.get("server")
        if not isinstance(ident, int) or not isinstance(address, str) or "service" in server or "parent" in server:
            return None
        out[ident] = address
    return out


def _write(client: PlusClient, host: str, upstream: UpstreamRef, report: SyncReport,
           current: list[dict[str, Any]] | None, start: Mapping[int, str] | None
           ) -> tuple[Executed, dict[int, str] | None]:
    """Diff ``current`` (server objects read; ``None``: those of a view, ``start``) against ``report.desired``
    and make the changes; returns what :func:`execute` did and the servers the upstream holds afterwards
    (``{id: address}`` from ``start``, ``current``'s; ``None`` when any change failed or ``start`` is)."""
    report.changes = (diff(upstream.protocol, current, report.desired) if current is not None
                      else diff_known(upstream.protocol, start or {}, report.desired))
    done = execute(sync_outcome(host, upstream, report.changes), clients={"": client})
    if done.refused is not None or start is None:
        return done, None
    return done, _left(start, report.changes, done.answers)


def _left(current: Mapping[int, str], changes: ServerChanges, answers: tuple[Any, ...]) -> dict[int, str] | None:
    """The servers ``{id: address}`` after ``changes`` were made with ``answers`` (the created server
    objects of the adds); ``None`` when any change failed or an answer is not what NGINX Plus sends."""
    left = dict(current)
    ordered = changes.ordered
    if len(answers) != len(ordered):
        return None
    for change, answer in zip(ordered, answers, strict=True):
        if isinstance(answer, Failure):
            return None
        if change.op == "add":
            ident = answer.get("id") if isinstance(answer, dict) else None
            if not isinstance(ident, int):
                return None
            left[ident] = change.server
        elif change.op == "update" and change.server_id is not None:
            left[change.server_id] = change.server
        elif change.server_id is not None:
            left.pop(change.server_id, None)
    return left


def _synced_report(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef, plan: UpstreamPlan,
                   recorded: str | None, report: SyncReport, done: Executed) -> SyncReport:
    """``report`` completed from what :func:`execute` did (``stopped``, ``error``), the ownership record
    dropped for an upstream no Service names any more once it is emptied."""
    if done.refused is not None and stops(done.refused[1]):
        report.stopped = done.refused[1]
        return report
    report.error = done.outcome.error or ""
    if not plan.named and recorded is not None and not report.error:
        ownership.forget(kube, names, host, upstream)
    _accepted(host)
    return report


#: The name of a host's key (``Key("local", <host>, "*")``): sync every upstream on the host; a shard
#: of it is ``"*<i>/<n>"`` (the upstreams whose :func:`shard_of` is ``i`` of ``n``).
HOST_KEY = "*"
#: Shard keys a change of every upstream enqueues per host: each gets its own jitter, so the syncs are
#: spread over the jitter window and the worker threads (as per-upstream keys were) while a Node
#: change costs ``HOST_SHARDS`` keys per host instead of one per upstream.
HOST_SHARDS = 8
#: Seconds a shard key waits for the upstreams whose lock another key holds (polling every
#: ``BUSY_POLL``) before it requeues itself; seconds an upstream's key waits before it tries again.
BUSY_WAIT, BUSY_POLL, BUSY_REQUEUE = 5.0, 0.05, 0.25
#: Upstreams a shard locks (and releases) in one Redis round trip, then syncs one after the other.
LOCK_BATCH = 64


def shard_of(upstream: UpstreamRef, shards: int) -> int:
    """The shard (``0 .. shards-1``) of ``upstream``: a stable hash of ``protocol:name``."""
    return zlib.crc32(str(upstream).encode()) % shards


def host_key(host: str, shard: int | None = None, shards: int = HOST_SHARDS) -> Key:
    """The key that syncs every upstream on ``host`` in one reconcile (``shard``: those of that shard
    of ``shards``); what a Node change enqueues."""
    return Key(LOCAL_CLUSTER, host, HOST_KEY if shard is None else f"{HOST_KEY}{shard}/{shards}")


def host_keys(host: str, shards: int = HOST_SHARDS) -> list[Key]:
    """The shard keys of ``host`` that together sync every upstream on it."""
    return [host_key(host, i, shards) for i in range(shards)]


def parse_host_key(name: str) -> tuple[int, int] | None:
    """``(shard, shards)`` of a host key's name (``(0, 1)`` for ``"*"``); ``None`` when it is not one.
    Raises ``ValueError`` for a malformed shard."""
    if not name.startswith(HOST_KEY):
        return None
    if name == HOST_KEY:
        return 0, 1
    shard, sep, shards = name[len(HOST_KEY):].partition("/")
    if not sep or not shard.isdigit() or not shards.isdigit() or not int(shard) < int(shards) <= 1024:
        raise ValueError(f"expected *<shard>/<shards>, got {name!r}")
    return int(shard), int(shards)


def sync_host(kube: Kube, host: str, names: EdgeNames | None = None, started: float | None = None,
              shard: tuple[int, int] = (0, 1)) -> Iterator[tuple[SyncReport, float]]:
    """Sync every upstream on ``host``: those a mode listing it names and those recorded as the edge's
    on it (emptied when no Service names them any more). Yields ``(report, seconds)`` per upstream.

    What a Node change (or a settings change) calls for: every upstream on the host, from one state
    read and one translation (:func:`tasks.nginx.plan.plan_host`), one after the other over one
    client (keep-alive connection), so a host sees one sync at a time however many upstreams change
    (the jitter's purpose: no thrashing of the host). Each upstream is synced as
    :func:`sync_upstream` does. The host stops being tried once it does not answer (or rejects the
    API key): the rest would fail the same way. ``shard`` ``(i, n)``: only the upstreams whose
    :func:`shard_of` is ``i`` (default: all). Raises as :func:`sync_upstream`.
    """
    names = names or edge_names()
    stamp = SYNC_LOCKS.now()
    state = STATE_READS.get(kube, names, not_before=max(time.monotonic(), started or 0.0))
    config = parse_config(state, names)
    settings = config.settings_for(host)
    if settings is None:
        return
    _apply_log_level(settings)
    records = ownership.data(kube, names)
    def selected(ref: UpstreamRef) -> bool:
        return shard[1] <= 1 or shard_of(ref, shard[1]) == shard[0]

    owned = [ref for ref in ownership.owned_on(kube, names, host) if selected(ref)]
    plan = plan_host(state, config, names, host, also=owned, select=selected)
    for problem in plan.problems if _enabled(30) else ():
        log.warning("service port skipped or defaulted", problem=problem)
    _record_service_problems(kube, state, plan.service_problems)
    client = plus_client_for(kube, host, settings, names, nlk=config.api_key_for(host))
    todo = list(plan.upstreams.items())
    give_up = time.monotonic() + BUSY_WAIT
    while todo:
        busy = []
        for start in range(0, len(todo), LOCK_BATCH):
            batch = todo[start:start + LOCK_BATCH]
            taken = time.monotonic()
            held = SYNC_LOCKS.acquire_many(host, [ref for ref, _ in batch])
            busy += [(ref, p) for ref, p in batch if ref not in held]  # their own keys sync them: after the rest
            reports: list[tuple[SyncReport, float]] = []
            lease = Lease(SYNC_LOCKS, host, held, next(iter(held.values())).token, taken) if held else None
            try:
                for upstream, upstream_plan in batch:
                    if upstream not in held:
                        continue
                    began = time.perf_counter()
                    recorded = recorded_owner(records, host, upstream)
                    if held[upstream][1] >= stamp:  # synced by another key since this read began: read again
                        fresh = _planned(kube, names, host, upstream, time.monotonic())
                        if fresh is None:
                            return
                        upstream_plan, recorded = fresh[0], ownership.recorded(kube, names, host, upstream)
                    report = _sync_planned(kube, names, host, upstream, upstream_plan, recorded, client,
                                           held[upstream].view, lease, stamp)
                    reports.append((report, time.perf_counter() - began))
                    if report.stopped is not None and sync_failure(host, upstream, report.stopped)[0] in (
                            "unreachable", "unauthorized"):
                        break
            finally:
                if held:
                    views = {r.upstream: r.view for r, _ in reports if r.view is not None}
                    SYNC_LOCKS.release_many(host, list(held), next(iter(held.values())).token, views)
            yield from reports
            if reports and reports[-1][0].stopped is not None and sync_failure(
                    host, reports[-1][0].upstream, reports[-1][0].stopped)[0] in ("unreachable", "unauthorized"):
                return
        if busy and time.monotonic() >= give_up:
            for upstream, _ in busy:
                yield SyncReport(host, upstream, busy=True), 0.0
            return
        if busy:
            time.sleep(BUSY_POLL)
        todo = busy


_reported_lock = threading.Lock()
_reported_services: set[tuple[str, str, str, str]] = set()
_unauthorized_hosts: set[str] = set()


def _record_service_problems(kube: Kube, state: ClusterState, problems: list[ServiceProblem]) -> None:
    """A Warning Event on each Service with a problem (``ExternalName``), once per Service version
    and process: the Service is not retried, the Event says what to change."""
    for problem in problems:
        service = next((s for s in state.nlk_services if (s.get("metadata") or {}).get("namespace") == problem.namespace
                        and (s.get("metadata") or {}).get("name") == problem.name), None)
        if service is None:
            continue
        mark = (problem.namespace, problem.name, str((service.get("metadata") or {}).get("uid", "")), problem.message)
        with _reported_lock:
            if mark in _reported_services:
                continue
            _reported_services.add(mark)
        log.warning("service not synced", service=f"{problem.namespace}/{problem.name}", reason=problem.reason,
                    message=problem.message)
        kube.emit_event({"apiVersion": "v1", "kind": "Service", **service}, problem.reason, problem.message,
                        "Warning")


def _unauthorized(kube: Kube, names: EdgeNames, host: str, status: int) -> None:
    """Report a host that rejected the API key: once per host and process (a log line and a Warning
    Event on the ``nlk`` ConfigMap, or on the ownership ConfigMap when the configuration is a file).
    Retries continue with the controller's backoff (2 s doubling to 60 s) without repeating it."""
    with _reported_lock:
        if host in _unauthorized_hosts:
            return
        _unauthorized_hosts.add(host)
    key_set = bool(edge_settings.current().api_key)
    message = (f"NGINX Plus host {host} answered {status}: the API key "
               + ("(NGINXAAS_DATAPLANE_API_KEY) was rejected" if key_set else
                  "is missing: set NGINXAAS_DATAPLANE_API_KEY")
               + "; retrying with backoff")
    log.error("NGINX Plus host rejected the API key", host=host, status=status, api_key_set=key_set)
    involved = None
    reader = READS.reader(kube)
    try:
        if names.nlk and not names.nlk_config_file:
            involved = reader.get(resources.CONFIGMAP, names.nlk_configmap, names.nlk_namespace)
        involved = involved or reader.get(resources.CONFIGMAP, names.owned_configmap, names.owned_namespace)
    except ApiError as exc:  # the log line above is the report; the Event is a courtesy
        log.warning("no object to record the API key Event on", error=str(exc))
    if involved is not None:
        kube.emit_event({"apiVersion": "v1", "kind": "ConfigMap", **involved}, "NginxPlusUnauthorized",
                        message, "Warning")


def _accepted(host: str) -> None:
    with _reported_lock:
        if host not in _unauthorized_hosts:
            return
        _unauthorized_hosts.discard(host)
    log.info("NGINX Plus host accepts the API key again", host=host)


_LOG_LEVEL = {"level": 30}


def _apply_log_level(settings: ModeConfig) -> None:
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
    if key.name.startswith(HOST_KEY):
        try:
            shard = parse_host_key(key.name) or (0, 1)
        except ValueError as exc:
            return Result.terminal(f"bad nginx-upstream key {key}: {exc}")
        return _reconcile_host(key, names, kube or client_for(key.cluster), shard)
    try:
        upstream = UpstreamRef.parse(key.name)
    except ValueError as exc:
        return Result.terminal(f"bad nginx-upstream key {key}: {exc}")
    kube = kube or client_for(key.cluster)
    started = time.perf_counter()
    try:
        report = sync_upstream(kube, host, upstream, names, started=time.monotonic())
    except ConfigError as exc:
        SYNC_ERRORS.labels(host, "settings").inc()
        _synced(host, upstream, ok=False)
        log.error("nginx edge settings invalid", error=str(exc))
        return Result.terminal(str(exc))
    except BaseException:
        _synced(host, upstream, ok=False)
        raise
    if report.busy:  # a shard key of the host is syncing it: this key again after it
        return Result.requeue(BUSY_REQUEUE)
    if not report.skipped or report.requests:
        SYNC_SECONDS.labels(host).observe(time.perf_counter() - started)
    result = _result(kube, names, host, upstream, report, started)
    _synced(host, upstream, ok=result.outcome is ResultKind.SUCCESS)
    return result


def _reconcile_host(key: Key, names: EdgeNames, kube: Kube, shard: tuple[int, int]) -> Result:
    """Reconcile a host's key (:func:`sync_host`): every upstream's metrics and logs as its own key's
    reconcile; the key fails (and is retried whole, a converged upstream costing one GET) when any
    upstream's sync failed."""
    host = key.namespace
    failed: list[str] = []
    synced = busy = 0
    try:
        for report, seconds in sync_host(kube, host, names, started=time.monotonic(), shard=shard):
            if report.busy:
                busy += 1
                continue
            synced += 1
            SYNC_SECONDS.labels(host).observe(seconds)
            result = _result(kube, names, host, report.upstream, report, time.perf_counter() - seconds)
            ok = result.outcome is ResultKind.SUCCESS
            _synced(host, report.upstream, ok)
            if not ok:
                failed.append(f"{report.upstream}: {result.message}")
    except ConfigError as exc:
        SYNC_ERRORS.labels(host, "settings").inc()
        HOST_IN_SYNC.labels(host).set(0)
        log.error("nginx edge settings invalid", error=str(exc))
        return Result.terminal(str(exc))
    if failed:
        return Result.error(f"{len(failed)} of {synced} upstreams on {host} failed: " + "; ".join(failed[:5]))
    if busy:  # other keys held them for BUSY_WAIT seconds: this shard again, shortly
        return Result.requeue(1.0)
    return Result.done()


def _result(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef, report: SyncReport,
            started: float) -> Result:
    """The metrics, logs and :class:`Result` of a sync's ``report``."""
    if report.stopped is not None:
        return _stopped(kube, names, host, upstream, report.stopped)
    MISSING.found(host, str(upstream))
    for op, count in report.changes.summary().items():
        if count:
            SERVER_CHANGES.labels(host, op).inc(count)
    if report.error:
        SYNC_ERRORS.labels(host, "api").inc()
        log.error("some server changes failed", host=host, upstream=str(upstream), failures=report.error)
        return Result.error(report.error)
    if report.changes and _enabled(20):
        log.info("upstream synced", host=host, upstream=str(upstream), **report.changes.summary(),
                 servers=len(report.desired), requests=report.requests,
                 seconds=round(time.perf_counter() - started, 4))
    elif report.skipped and _enabled(10):
        log.debug("upstream not synced", host=host, upstream=str(upstream), reason=report.skipped)
    return Result.done()


def _stopped(kube: Kube, names: EdgeNames, host: str, upstream: UpstreamRef, failure: Failure) -> Result:
    """The metrics, logs and result of a sync that stopped on ``failure``
    (:func:`tasks.nginx.plan.sync_failure`); the key is retried with the controller's backoff."""
    reason, message = sync_failure(host, upstream, failure)
    SYNC_ERRORS.labels(host, reason).inc()
    if reason == "upstream_missing":
        MISSING.missing(host, str(upstream))
        UPSTREAM_MISSING_TOTAL.labels(host, ERROR_LABELS.label(host, str(upstream))).inc()
        log.error("upstream missing on NGINX Plus host: declare it with a zone in nginx.conf",
                  host=host, upstream=str(upstream), error=str(failure))
    elif reason == "unauthorized":
        _unauthorized(kube, names, host, failure.status)
    elif reason == "unreachable":
        if _enabled(30):
            log.warning("NGINX Plus host unreachable", host=host, upstream=str(upstream), error=str(failure))
    else:
        log.error("NGINX Plus API failed", host=host, upstream=str(upstream), error=str(failure))
    return Result.error(message)


def desired_keys(kube: Kube, names: EdgeNames | None = None) -> list[Key]:
    """Every (host, upstream) key the running modes call for, plus the owned (recorded) ones of
    configured hosts that no Service names any more (their reconcile empties them); ``[]`` when the
    settings are invalid (logged)."""
    names = names or edge_names()
    try:
        state = read_state(READS.reader(kube), names)
        config = parse_config(state, names)
    except ConfigError as exc:
        log.error("nginx edge settings invalid; nothing to resync", error=str(exc))
        return []
    desired, _ = desired_upstreams(state, config, names)
    keys = {key_for(host, ref) for host, refs in desired.items() for ref in refs}
    keys |= {key_for(host, ref) for host, ref in ownership.owned(kube, names) if host in desired}
    return sorted(keys)


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
