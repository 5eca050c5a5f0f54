"""Plan (pure): the running modes' settings and cluster objects -> what each (host, upstream) should hold.

Both eras run from one controller (:class:`~tasks.nginx.settings.EdgeNames` ``modes``): the ``nkl``
mode (the seed: Services of one namespace, ``nkl-`` ports, NodePort) and the ``nlk`` mode
(nginx/nginx-loadbalancer-kubernetes v1.2: annotated Services of every namespace, ``http-``/
``stream-`` ports, NodePort / LoadBalancer / ClusterIP through EndpointSlices). Each mode has its
own NGINX Plus hosts; an upstream on a host listed by both modes holds the union of both modes'
servers. The reconcile (:mod:`tasks.nginx.controller`) and ``reconcilery render nginx``
(:mod:`tasks.nginx.render`) both plan through here, so a dry run and a sync cannot disagree.

The writes (:func:`sync_outcome`): the :func:`~tasks.nginx.diff.diff` of an upstream's servers as one
:class:`~kube.toolkit.outcome.Outcome` of NGINX Plus calls, and what a refused call means
(:func:`stops`, :func:`sync_failure`); the reconcile carries it out with :func:`kube.toolkit.execute`.

Ownership (:func:`record_key`, :func:`parse_owned`): every (host, upstream) the edge has written to
is recorded in a ConfigMap in the cluster, one data key each, so an upstream no Service names any
more is emptied by the resync even when the Service went away while nothing watched.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from kube.refusal import Failure
from kube.toolkit.actions import Call, Write
from kube.toolkit.outcome import Outcome
from tasks.nginx.diff import ServerChange, ServerChanges
from tasks.nginx.settings import EdgeNames, ModeConfig, nlk_document, parse_nlk_settings, parse_settings
from tasks.nginx.translate import (
    ServiceProblem,
    Translation,
    UpstreamRef,
    services_by_port_name,
    translate,
    translate_nlk,
)


class ServiceIndexes:
    """The last few :func:`~tasks.nginx.translate.services_by_port_name` indexes of a process, by the
    identity of the Service objects they were built from (thread-safe, at most ``size`` kept).

    A Node change syncs every upstream, each from its own state read; the reads return the informer's
    same (read-only) objects while no Service changed, so the index of 1,000 Services is built once
    instead of once per reconcile (5 ms each). Keeping the objects referenced keeps their ids unique.
    """

    def __init__(self, size: int = 4) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._kept: OrderedDict[tuple[str, tuple[int, ...]], tuple[Sequence[Mapping[str, Any]],
                                                                   dict[str, list[Mapping[str, Any]]]]] = OrderedDict()
        self.built = 0

    def index(self, services: Sequence[Mapping[str, Any]], prefix: str) -> dict[str, list[Mapping[str, Any]]]:
        """``{upstream name: [Service, ...]}`` of ``services`` (see ``services_by_port_name``)."""
        key = (prefix, tuple(map(id, services)))
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept[1]
        index = services_by_port_name(services, prefix)  # two threads may both build it: same result
        with self._lock:
            self.built += 1
            self._kept[key] = (list(services), index)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return index


#: The process's :class:`ServiceIndexes`.
NKL_INDEXES = ServiceIndexes()


@dataclass(frozen=True)
class ClusterState:
    """What a sync reads: the ``nkl`` ConfigMap's ``data`` (``None``: none), the watched namespace's
    Services and all Nodes; for the ``nlk`` mode its configuration mapping (``None``: none), the
    Services of every namespace and the EndpointSlices of every namespace, and each upstream's recorded
    owning Service (:func:`parse_owners`). Objects are shared: read-only."""

    config: Mapping[str, Any] | None
    services: Sequence[Mapping[str, Any]]
    nodes: Sequence[Mapping[str, Any]]
    nlk_config: Mapping[str, Any] | None = None
    nlk_services: Sequence[Mapping[str, Any]] = ()
    slices: Sequence[Mapping[str, Any]] = ()
    owners: Mapping[UpstreamRef, str] = field(default_factory=dict)
    def nkl_services_named(self, name: str, names: EdgeNames) -> Sequence[Mapping[str, Any]]:
        """The ``nkl`` Services with a port named ``names.port_prefix + name``
        (:func:`~tasks.nginx.translate.services_by_port_name`, built once per set of Service objects:
        :data:`NKL_INDEXES`)."""
        return NKL_INDEXES.index(self.services, names.port_prefix).get(name, ())



@dataclass(frozen=True)
class EdgeConfig:
    """The parsed settings of the running modes (``None`` for a mode that does not run)."""

    nkl: ModeConfig | None = None
    nlk: ModeConfig | None = None

    @property
    def hosts(self) -> list[str]:
        """Every configured host, ``nkl`` hosts first, each once."""
        out: list[str] = []
        for settings in (self.nkl, self.nlk):
            for host in settings.hosts if settings else ():
                if host not in out:
                    out.append(host)
        return out

    def settings_for(self, host: str) -> ModeConfig | None:
        """The settings the client of ``host`` uses (TLS mode, log level): the ``nkl`` ConfigMap's
        when it lists the host, else the ``nlk`` configuration's; ``None`` when no mode lists it."""
        for settings in (self.nkl, self.nlk):
            if settings and host in settings.hosts:
                return settings
        return None

    def api_key_for(self, host: str) -> bool:
        """Whether ``host`` gets the NGINXaaS API key: only hosts of the ``nlk`` configuration (the key
        is NGINXaaS's; other hosts never see it)."""
        return bool(self.nlk and host in self.nlk.hosts)


def parse_config(state: ClusterState, names: EdgeNames) -> EdgeConfig:
    """The running modes' settings from ``state``. Raises
    :class:`~tasks.nginx.settings.ConfigError` when a running mode's configuration is invalid."""
    nkl = parse_settings(state.config) if names.nkl else None
    nlk = None
    if names.nlk:
        where = names.nlk_config_file or f"ConfigMap {names.nlk_namespace}/{names.nlk_configmap}"
        nlk = parse_nlk_settings(nlk_document(state.nlk_config), where=where)
    return EdgeConfig(nkl, nlk)


@dataclass
class UpstreamPlan:
    """What one (host, upstream) should hold.

    Attributes:
        desired: the servers (sorted).
        named: whether a Service of a mode listing the host names the upstream (an upstream no
            longer named is emptied and dropped from the ownership record).
        problems: human text about skipped or defaulted ports (logs).
        service_problems: problems to record as Events on Services.
        owner: ``namespace/name`` of the Service the ``nlk`` mode takes the upstream's servers from
            (``""``: none, or the ``nkl`` mode only).
        adopts: whether the edge may take the upstream over when it holds servers it did not write:
            when the ``nkl`` mode names it (the administrator's watched namespace opted it in, as the
            original), not when only ``nlk`` Services of any namespace name it.
    """

    desired: list[str] = field(default_factory=list)
    named: bool = False
    owner: str = ""
    adopts: bool = False
    problems: list[str] = field(default_factory=list)
    service_problems: list[ServiceProblem] = field(default_factory=list)


def translations(state: ClusterState, config: EdgeConfig, names: EdgeNames, only: UpstreamRef | None = None
                 ) -> tuple[Translation | None, Translation | None, list[ServiceProblem]]:
    """``(nkl translation, nlk translation, Service problems)`` of the running modes (``None`` for a
    mode that does not run)."""
    services = state.services if only is None else state.nkl_services_named(only.name, names)
    nkl = translate(services, state.nodes, names, only) if config.nkl else None
    allowed = frozenset(names.nlk_allowed_namespaces) or None
    nlk, events = (translate_nlk(state.nlk_services, state.slices, state.nodes, config.nlk.annotation_match, only,
                                 state.owners, allowed) if config.nlk else (None, []))
    return nkl, nlk, events


def plan_upstream(state: ClusterState, config: EdgeConfig, names: EdgeNames, host: str,
                  upstream: UpstreamRef) -> UpstreamPlan:
    """The :class:`UpstreamPlan` of ``upstream`` on ``host``: the union of the servers every mode
    listing ``host`` wants."""
    return _plan_of(translations(state, config, names, upstream), config, host, upstream)


def _plan_of(translated: tuple[Translation | None, Translation | None, list[ServiceProblem]], config: EdgeConfig,
             host: str, upstream: UpstreamRef, problems: bool = True) -> UpstreamPlan:
    """:func:`plan_upstream` over translations already made (``problems``: copy their problems in)."""
    nkl, nlk, events = translated
    plan = UpstreamPlan()
    found: list[list[str]] = []
    for settings, translation in ((config.nkl, nkl), (config.nlk, nlk)):
        if settings is None or translation is None or host not in settings.hosts:
            continue
        if problems:
            plan.problems += translation.problems
        if upstream in translation.upstreams:
            plan.named = True
            plan.adopts = plan.adopts or settings is config.nkl
            found.append(translation.upstreams[upstream])
        plan.owner = plan.owner or translation.owners.get(upstream, "")
    if problems and config.nlk and host in config.nlk.hosts:
        plan.service_problems = events
    # one mode's servers are sorted and unique already (a translation's); both modes': their union
    plan.desired = list(found[0]) if len(found) == 1 else sorted({a for servers in found for a in servers})
    return plan


@dataclass
class HostPlan:
    """What every upstream of one host should hold (:func:`plan_host`).

    Attributes:
        upstreams: the :class:`UpstreamPlan` of every upstream a mode listing the host names, and of
            every one asked for (``also``: e.g. recorded ones no Service names any more, which are
            emptied), sorted; each without problems (they are the host's, below).
        problems: human text about skipped or defaulted ports (logs), once for the host.
        service_problems: problems to record as Events on Services (``nlk`` hosts).
    """

    upstreams: dict[UpstreamRef, UpstreamPlan] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    service_problems: list[ServiceProblem] = field(default_factory=list)


class Translations:
    """The last few full :func:`translations` of a process, by the identity of the objects they were
    translated from (thread-safe, at most ``size`` kept).

    A Node change enqueues :data:`~tasks.nginx.controller.HOST_SHARDS` shard keys per host, each of which
    plans every upstream of its shard from a state read; the reads return the informers' same (read-only)
    objects while nothing changed, so the 1,000 Services x 100 nodes are translated once per process
    instead of once per shard key and host (32 times: a third of a Node change's worker CPU). A kept
    translation is used only when the Service, Node and EndpointSlice objects are the same objects,
    and the parsed configuration, the names and the recorded owners are equal; keeping the objects
    referenced keeps their ids unique. Memory: a translation of 1,000 upstreams x 100 servers is ~100,000
    short strings (~8 MB); two are kept (the current state and the one before it, which shards that
    started earlier still use).
    """

    def __init__(self, size: int = 2) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._kept: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Any, tuple[
            Translation | None, Translation | None, list[ServiceProblem]]]] = OrderedDict()
        #: keys being translated by a thread now -> set when it is done (the others wait for it)
        self._making: dict[tuple[Any, ...], threading.Event] = {}
        self.built = 0

    def get(self, state: ClusterState, config: EdgeConfig, names: EdgeNames
            ) -> tuple[Translation | None, Translation | None, list[ServiceProblem]]:
        """:func:`translations` of ``state`` (every upstream), kept or made. Threads that ask for the same
        translation at once wait for the first one's (a Node change's shard keys start together: each
        process's threads would otherwise all translate the same 1,000 Services x 100 nodes)."""
        objects = (state.services, state.nodes, state.nlk_services, state.slices)
        key = (names, config, *(tuple(map(id, seq)) for seq in objects))
        owners = dict(state.owners)
        while True:
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None and kept[1] == owners:
                    self._kept.move_to_end(key)
                    return kept[2]
                making = self._making.get(key)
                if making is None:
                    self._making[key] = threading.Event()
                    break
            making.wait(60.0)  # then look again: kept (same owners), or make it here
        try:
            translated = translations(state, config, names)
            with self._lock:
                self.built += 1
                self._kept[key] = (tuple(list(seq) for seq in objects), owners, translated)
                self._kept.move_to_end(key)
                while len(self._kept) > self._size:
                    self._kept.popitem(last=False)
        finally:
            with self._lock:
                self._making.pop(key).set()
        return translated


#: Sort key of :class:`~tasks.nginx.translate.UpstreamRef` s in their dataclass order (protocol, name).
ORDER = attrgetter("protocol", "name")

#: The process's :class:`Translations`.
TRANSLATIONS = Translations()


def plan_host(state: ClusterState, config: EdgeConfig, names: EdgeNames, host: str,
              also: Sequence[UpstreamRef] = (), select: Callable[[UpstreamRef], bool] | None = None) -> HostPlan:
    """The plan of every upstream on ``host`` from one translation of the running modes: each
    :class:`UpstreamPlan` is what :func:`plan_upstream` gives for it (problems aside), in one pass
    over the Services instead of one per upstream (a Node change concerns every upstream).
    ``select``: plan only the upstreams it accepts (a shard key's); the translation is the process's
    (:data:`TRANSLATIONS`), shared by the shard keys of every host."""
    translated = TRANSLATIONS.get(state, config, names)
    nkl, nlk, events = translated
    out = HostPlan()
    refs: set[UpstreamRef] = set(also)
    for settings, translation in ((config.nkl, nkl), (config.nlk, nlk)):
        if settings is None or translation is None or host not in settings.hosts:
            continue
        refs.update(translation.upstreams)
        out.problems += translation.problems
    if config.nlk and host in config.nlk.hosts:
        out.service_problems = events
    chosen = refs if select is None else {ref for ref in refs if select(ref)}
    out.upstreams = {ref: _plan_of(translated, config, host, ref, problems=False)
                     for ref in sorted(chosen, key=ORDER)}  # the dataclass' order, without its slow __lt__
    return out


def desired_upstreams(state: ClusterState, config: EdgeConfig, names: EdgeNames
                      ) -> tuple[dict[str, dict[UpstreamRef, list[str]]], list[str]]:
    """``({host: {upstream: servers}}, problems)`` for every configured host (hosts in
    :attr:`EdgeConfig.hosts` order, upstreams sorted): what ``render`` prints and the resync enqueues."""
    nkl, nlk, _ = translations(state, config, names)
    out: dict[str, dict[UpstreamRef, list[str]]] = {}
    for host in config.hosts:
        merged: dict[UpstreamRef, set[str]] = {}
        for settings, translation in ((config.nkl, nkl), (config.nlk, nlk)):
            if settings is None or translation is None or host not in settings.hosts:
                continue
            for ref, servers in translation.upstreams.items():
                merged.setdefault(ref, set()).update(servers)
        out[host] = {ref: sorted(servers) for ref, servers in sorted(merged.items())}
    problems = [p for t in (nkl, nlk) if t is not None for p in t.problems]
    return out, problems


# ---- the writes of one sync ------------------------------------------------------------------------

#: NGINX Plus' error code for an upstream it does not declare (:class:`~tasks.nginx.plus_client.UpstreamMissing`).
UPSTREAM_NOT_FOUND = "UpstreamNotFound"
#: NGINX Plus' error code for a server id it does not hold.
SERVER_NOT_FOUND = "UpstreamServerNotFound"
def _call(upstream: UpstreamRef, change: ServerChange) -> Call:
    """The NGINX Plus client call that makes ``change`` (:class:`~tasks.nginx.plus_client.PlusClient`)."""
    if change.op == "add":
        return Call("add_server", (upstream.protocol, upstream.name, dict(change.body or {})), kind="add")
    if change.op == "delete":
        return Call("delete_server", (upstream.protocol, upstream.name, change.server_id), {"remaining": False},
                    kind="delete")
    return Call("update_server", (upstream.protocol, upstream.name, change.server_id, dict(change.body or {})),
                kind="update")


def stops(failure: Failure) -> bool:
    """Whether a refused call ends the sync: the upstream is missing, or no API answer came (the host is
    unreachable, or did not answer in the API's terms). Other error answers fail only their change."""
    return failure.status == 0 or failure.code == UPSTREAM_NOT_FOUND


def sync_failure(host: str, upstream: UpstreamRef, failure: Failure) -> tuple[str, str]:
    """``(reason, message)`` of a sync that stopped on ``failure`` (reading the servers or at a call that
    :func:`stops`): ``reason`` is the ``reconcilery_nginx_sync_errors_total`` label (``upstream_missing``,
    ``unauthorized``, ``unreachable``, ``api``), ``message`` the reconcile's error."""
    if failure.code == UPSTREAM_NOT_FOUND:
        return "upstream_missing", f"upstream {upstream} missing on {host}"
    if failure.status in (401, 403):
        return "unauthorized", f"{host}: API key rejected ({failure.status})"
    if failure.kind == "retry" and failure.status == 0:
        return "unreachable", str(failure)
    return "api", str(failure)


def sync_outcome(host: str, upstream: UpstreamRef, changes: ServerChanges) -> Outcome:
    """The :class:`~kube.toolkit.outcome.Outcome` that makes ``changes`` to ``upstream`` on ``host``: one
    call of the host's :class:`~tasks.nginx.plus_client.PlusClient` (the executor's client ``""``) per
    change, in order (``add_server``, ``delete_server``, ``update_server``). No Kubernetes object: no
    status, Event or finalizer.

    A refused call (:attr:`~kube.toolkit.outcome.Outcome.refused`, by its :class:`~kube.refusal.Failure`):

    - a delete of a server already gone (``404 UpstreamServerNotFound``) is done;
    - one that :func:`stops` ends the sync with :func:`sync_failure`'s message;
    - any other fails its change only: the next change is made all the same (the refusal is that call's
      answer), and the Outcome's ``error`` lists every failed change, ``"<op> <server>: <error>"`` joined
      by ``"; "``.
    """
    ordered = tuple(changes.ordered)

    def refused(write: Write, failure: Failure, answers: Sequence[Any]) -> Outcome | None:
        return Outcome(error=sync_failure(host, upstream, failure)[1]) if stops(failure) else None

    def then(answers: Sequence[Any]) -> Outcome:
        failed = [f"{change.op} {change.server}: {answer}" for change, answer in zip(ordered, answers, strict=True)
                  if isinstance(answer, Failure) and not (change.op == "delete" and answer.code == SERVER_NOT_FOUND)]
        return Outcome(error="; ".join(failed) or None)

    return Outcome(writes=tuple(_call(upstream, change) for change in ordered), refused=refused, then=then)


# ---- ownership record ------------------------------------------------------------------------------

_KEY_SAFE = re.compile(r"[^-._a-zA-Z0-9]")


def record_key(host: str, upstream: UpstreamRef) -> str:
    """The ConfigMap data key recording that the edge owns ``upstream`` on ``host``:
    ``<12 hex of the host>.<protocol>.<upstream>`` (characters a ConfigMap key cannot hold become
    ``_``; a hash of the exact name keeps such keys apart). At most 253 characters."""
    digest = hashlib.sha256(host.encode()).hexdigest()[:12]
    name = upstream.name
    safe = _KEY_SAFE.sub("_", name)
    if safe != name or len(safe) > 200:
        safe = f"{safe[:180]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return f"{digest}.{upstream.protocol}.{safe}"


def record_value(host: str, upstream: UpstreamRef, owner: str = "") -> str:
    """The recorded value: ``{"host": ..., "upstream": "protocol:name"}`` as JSON, with ``"owner":
    "namespace/name"`` of the Service the upstream's servers come from (the ``nlk`` mode)."""
    return json.dumps({"host": host, "upstream": str(upstream), **({"owner": owner} if owner else {})},
                      sort_keys=True)


def recorded_owner(data: Mapping[str, Any] | None, host: str, upstream: UpstreamRef) -> str | None:
    """The owner recorded for ``upstream`` on ``host`` (``""``: recorded without one), ``None`` when
    the pair is not recorded (or its entry does not parse)."""
    raw = (data or {}).get(record_key(host, upstream))
    if raw is None:
        return None
    try:
        return str(json.loads(str(raw)).get("owner") or "")
    except (ValueError, AttributeError):
        return None


def parse_owners(data: Mapping[str, Any] | None) -> dict[UpstreamRef, str]:
    """Each upstream's recorded owning Service (``namespace/name``; the first found over its hosts)."""
    owners: dict[UpstreamRef, str] = {}
    for host, upstream in sorted(parse_owned(data), key=lambda pair: (pair[0], str(pair[1]))):
        owner = recorded_owner(data, host, upstream)
        if owner and upstream not in owners:
            owners[upstream] = owner
    return owners


def parse_owned(data: Mapping[str, Any] | None, host: str | None = None) -> set[tuple[str, UpstreamRef]]:
    """The ``(host, upstream)`` pairs an ownership ConfigMap's ``data`` records (``host``: only that
    host's, whose keys start with its digest: a shard key of one host parses a quarter of a 4-host
    record); entries that do not parse (edited by hand) are skipped."""
    owned: set[tuple[str, UpstreamRef]] = set()
    prefix = record_key(host, UpstreamRef("http", "_")).partition(".")[0] + "." if host is not None else ""
    for key, raw in (data or {}).items():
        if not key.startswith(prefix):
            continue
        try:
            value = json.loads(str(raw))
            host, upstream = str(value["host"]), UpstreamRef.parse(str(value["upstream"]))
        except (ValueError, KeyError, TypeError):
            continue
        if record_key(host, upstream) == key:
            owned.add((host, upstream))
    return owned
