"""Domains as plug-ins: what a domain hands the engine in one registration, and how processes find them.

A domain package declares one :class:`Domain` and exposes it through the entry point group
``reconcilery.domains`` (``pyproject.toml``, ``[project.entry-points."reconcilery.domains"]``). The
worker, the watcher, the webhook process and ``reconcilery up`` read :func:`installed` and import the
modules each one needs; none of them names a domain. A domain whose package is not installed (an
optional one: its entry point's module is missing) is skipped; an error inside an installed domain is
raised.

Loading the entry point imports only the domain's declaration (module names as strings), so finding
the domains costs no domain import; each process then imports what it runs:

- ``controllers``: modules that register controllers in :data:`workers.controller.registry` on import;
- ``watches``: modules whose ``registrations()`` answers their watches (:class:`watchers.engine.WatchRegistration`);
- ``webhooks``: modules that register listeners with :mod:`webhooks` on import;
- ``local``: ``"module:attr"`` of a :class:`Local` subclass, the domain's part of ``reconcilery up``
  (CRDs, stand-ins, summary rows); it lives in the embedded distribution (``localrun.<domain>``), not
  in the domain's package, so the runtime image never carries it;
- ``examples``: folders of example manifests ``reconcilery up --examples`` applies;
- ``commands``: the domain's CLI commands (:class:`Command`: ``reconcilery render <kind>``, a process).

Lower layer: imports no domain and no process (``tests/unit/test_layers.py`` keeps it so).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

log = logging.getLogger("reconcilery.domains")

#: The entry point group a domain registers its :class:`Domain` in.
GROUP = "reconcilery.domains"

#: ``(kind, object, state, detail)``: one row of ``reconcilery up``'s summary table.
Row = tuple[str, str, str, str]
#: ``apply(cluster client, document) -> the stored object`` (``reconcilery up``'s server-side apply).
Apply = Callable[[Any, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Command:
    """One CLI command a domain adds to ``reconcilery``.

    Attributes:
        name: the command's name (``apirules``).
        target: ``"module:attr"`` of the typer command function (imported when the CLI starts).
        help: the one-line help text.
        group: ``"render"`` (``reconcilery render <name>``) or ``""`` (a top-level command).
        process: a long-running process: the CLI validates every setting before it runs.
        function: the command function itself (instead of ``target``), for commands a domain builds
            from its own registry (:attr:`Domain.command_source`).
    """

    name: str
    target: str
    help: str
    group: str = "render"
    process: bool = False
    function: Callable[..., Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Domain:
    """One domain's registration: every module the engine's processes import for it, by name.

    Attributes:
        name: the domain's name (``apigateway``); unique among installed domains.
        controllers: modules that register the domain's controllers when imported.
        watches: modules whose ``registrations()`` the watcher runs.
        webhooks: modules that register webhook listeners (:func:`webhooks.register`) when imported.
        queues: the Celery queues of its controllers (one pool each).
        local: ``"module:attr"`` of the domain's :class:`Local` (``""``: nothing to do locally), a module of
            the embedded distribution (``localrun.<name>``): ``up`` without it runs no local part.
        examples: folders of example manifests, relative to the checkout (``reconcilery up --examples``).
        commands: the domain's CLI commands.
        command_source: ``"module:attr"`` of a function answering more commands, built when the CLI
            starts (Cloud Resources: a ``render`` command per declared kind); ``""``: none.
    """

    name: str
    controllers: tuple[str, ...] = ()
    watches: tuple[str, ...] = ()
    webhooks: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    local: str = ""
    examples: tuple[str, ...] = ()
    commands: tuple[Command, ...] = ()
    command_source: str = ""

    def all_commands(self) -> list[Command]:
        """:attr:`commands` and those of :attr:`command_source` (imports its module). Raises what the
        source raises."""
        extra = list(resolve(self.command_source)()) if self.command_source else []
        return [*self.commands, *extra]

    @classmethod
    def conventional(cls, name: str, local_class: str, commands: tuple[Command, ...] = ()) -> Domain:
        """A domain laid out by the convention: ``tasks.<name>.controller`` and ``.watches``, one queue
        ``<name>``, ``examples/<name>``, and ``localrun.<name>:<local_class>`` (the embedded distribution)."""
        return cls(name=name, controllers=(f"tasks.{name}.controller",), watches=(f"tasks.{name}.watches",),
                   queues=(name,), examples=(f"examples/{name}",), local=f"localrun.{name}:{local_class}",
                   commands=commands)


_lock = threading.Lock()
_installed: list[Domain] | None = None


def _load(entry: EntryPoint) -> Domain | None:
    try:
        domain = entry.load()
    except ModuleNotFoundError as exc:
        # the entry point's own package is missing (an optional domain not installed): skip it;
        # a module missing inside an installed domain is a real error
        if exc.name is not None and entry.module.startswith(exc.name):
            log.info("domain not installed, skipped name=%s module=%s", entry.name, entry.module)
            return None
        raise
    if not isinstance(domain, Domain):
        raise TypeError(f"entry point {GROUP}:{entry.name} = {entry.value} is not a workers.domains.Domain")
    return domain


def discover(entries: Iterable[EntryPoint] | None = None) -> list[Domain]:
    """The domains of ``entries`` (default: the ``reconcilery.domains`` entry points installed), sorted by
    name; a domain whose package is missing is skipped. Raises ``TypeError`` when an entry point is not a
    :class:`Domain`, ``ValueError`` when two domains share a name."""
    found: dict[str, Domain] = {}
    for entry in entry_points(group=GROUP) if entries is None else entries:
        domain = _load(entry)
        if domain is None:
            continue
        if domain.name in found and found[domain.name] != domain:
            raise ValueError(f"two installed domains are named {domain.name!r}")
        found[domain.name] = domain
    if entries is None and not found:
        log.warning("no domain installed: the entry point group %s is empty (is the project pip-installed?)", GROUP)
    return [found[name] for name in sorted(found)]


def installed() -> list[Domain]:
    """The installed domains (:func:`discover`, once per process; :func:`reset` forgets them)."""
    global _installed
    with _lock:
        if _installed is None:
            _installed = discover()
        return list(_installed)


def reset(domains: Sequence[Domain] | None = None) -> None:
    """Forget the discovered domains (``None``), or use ``domains`` instead of the entry points (tests)."""
    global _installed
    with _lock:
        _installed = None if domains is None else list(domains)


def controller_modules() -> tuple[str, ...]:
    """Every installed domain's controller modules, in domain order."""
    return tuple(m for d in installed() for m in d.controllers)


def watch_modules() -> tuple[str, ...]:
    """Every installed domain's watch registration modules."""
    return tuple(m for d in installed() for m in d.watches)


def webhook_modules() -> tuple[str, ...]:
    """Every installed domain's webhook listener modules."""
    return tuple(m for d in installed() for m in d.webhooks)


def queues() -> tuple[str, ...]:
    """Every installed domain's Celery queues, without repeats."""
    return tuple(dict.fromkeys(q for d in installed() for q in d.queues))


def resolve(ref: str) -> Any:
    """The object ``"module:attr"`` names (imports the module). Raises ``ValueError`` on a malformed ref."""
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"expected module:attr, got {ref!r}")
    return getattr(importlib.import_module(module), attr)


# ---- reconcilery up ----------------------------------------------------------------------------


def _no_workqueue() -> Any:
    raise RuntimeError("this run has no workqueue (LocalRun built without one)")


@dataclass
class LocalRun:
    """What ``reconcilery up`` hands each domain's :class:`Local`: the run's cluster, Redis, documents
    and the ways to add processes, servers and endpoints to it.

    Settings reach the processes ``up`` starts through :attr:`env` (their spawn environment) only: no
    part of ``up`` changes ``os.environ``; what runs in ``up``'s own process is handed its cluster
    (:attr:`kube`), workqueue (:attr:`workqueue`) and endpoints explicitly.

    Attributes:
        state_dir: the run's folder (kubeconfig, logs, endpoints.json).
        kubeconfig: path of the local cluster's kubeconfig.
        devapi: the dev API server (``kubedev.DevAPIServer``); ``None`` with ``--kubeconfig``.
        kube: ``() -> kube.Kube`` of the local cluster.
        workqueue: ``() -> workers.workqueue.WorkQueue`` on the run's Redis (valid once ``up`` started it).
        documents: the ``--apply`` documents still to apply to the local cluster (a domain may take
            the ones meant for other clusters out, as Cloud Resources does for SKRs and the Garden).
        applied: the objects applied to the local cluster so far (what the API server stored).
        env: environment added to every process ``up`` starts (a domain's stand-ins' URLs); never this
            process's (:meth:`default_env`).
        endpoints: what ``endpoints.json`` lists.
        log: prints one line for people (rich console markup).
        spawn: ``(name, argv)`` starts a supervised child process with :attr:`env`.
        on_stop: registers a callable ``up`` runs at its stop (reverse order).
        port_taken: ``(host, port)`` -> who listens there (``"pid 1234 (nginx)"``), ``None`` when free.
    """

    state_dir: Path
    kubeconfig: str
    devapi: Any
    kube: Callable[[], Any]
    log: Callable[[str], None]
    spawn: Callable[[str, list[str]], None]
    on_stop: Callable[[Callable[[], None]], None]
    port_taken: Callable[[str, int], str | None]
    workqueue: Callable[[], Any] = _no_workqueue
    documents: list[dict[str, Any]] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    endpoints: dict[str, Any] = field(default_factory=dict)

    def default_env(self, name: str, value: str) -> str:
        """Set ``name`` for the processes ``up`` starts (:attr:`env`): the value it has in ``up``'s own
        environment, else ``value`` (a local run's default the user may override). Returns it."""
        self.env[name] = os.environ.get(name, value)
        return self.env[name]

    @property
    def dev(self) -> bool:
        """Whether ``up`` runs the dev API server (``False``: a real cluster via ``--kubeconfig``)."""
        return self.devapi is not None


class Local:
    """A domain's part of ``reconcilery up``; every hook does nothing by default.

    ``up`` builds one per installed domain with the :class:`LocalRun` and calls, in domain order:
    :meth:`start` before the processes start, :meth:`apply_before` and :meth:`apply_after` around
    the local cluster's documents, :meth:`rows` and :meth:`settled` for the summary and ``--once``.
    """

    #: Controllers never idle (``up --once`` does not wait for their queues to drain).
    always_busy: tuple[str, ...] = ()

    def __init__(self, run: LocalRun) -> None:
        self.run = run

    def start(self) -> None:
        """Install CRDs, start stand-ins and in-process webhooks (before the worker processes)."""

    def apply_before(self, apply: Apply) -> int:
        """Apply documents that must exist before the local cluster's; returns how many failed."""
        return 0

    def apply_after(self, apply: Apply) -> int:
        """Apply documents that need the local cluster's first; returns how many failed."""
        return 0

    def rows(self) -> list[Row]:
        """The domain's summary rows."""
        return []

    def settled(self) -> bool:
        """Whether what this domain applied has reached a final state (beyond its queues draining)."""
        return True

    def hints(self) -> list[str]:
        """Lines printed under the summary (e.g. a kubectl command)."""
        return []
