"""``reconcilery up``: every component of Reconcilery on one machine.

Starts, in order: the dev Kubernetes API server (unless a kubeconfig is given) and a local Redis
(unless a URL is given); each installed domain's local part (:class:`workers.domains.Local`, found
through the domains' plug-in registrations: CRDs, in-process webhooks, the stand-ins the examples talk
to); then the processes of a deployment: the watchers, one worker per queue that has controllers, beat
and Flower. Manifests given with ``--apply`` are applied once everything is ready; the summary shows
each domain's rows. ``up`` names no domain.

Every process serves Prometheus metrics on a free loopback port, listed in ``endpoints.json`` under
``"metrics"`` (process name -> URL) and in the endpoints table: the watchers on their health port, each
worker pool and beat on ``RECONCILERY_METRICS_PORT``, Flower on its own ``/metrics``, and ``up``'s own
process, which hosts the domains' in-process webhooks (:func:`metrics_urls`).

Settings reach the children through their spawn environment (the run's cluster, Redis and what each
domain's local part adds, :attr:`workers.domains.LocalRun.env`); ``up`` never changes ``os.environ``.
Its own process is handed the local cluster's client (registered as ``local`` in :mod:`kube.clusters`)
and a workqueue on the run's Redis (provided to :func:`workers.workqueue.current`) explicitly. The
domains' local parts live in the embedded distribution (:mod:`localrun`); without it ``up`` says how
to get it, and against ``--kubeconfig`` runs without them.

Lifecycle (:mod:`reconcilery.supervisor`): Ctrl-C, SIGTERM and SIGHUP stop every child and server
the same way; children also die with ``up`` when it is SIGKILLed (parent-death signal). A taken
default port (Flower's 5555) is replaced by a free one, and a domain's stand-in (NGINX Plus) is only
started where nothing listens yet; both are said in one line naming the port and its holder.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kube import Kube, clusters
from kube.kubeconfig import from_kubeconfig
from kube.manifests import ManifestError, load_objects
from reconcilery.localredis import LocalRedis
from reconcilery.manifests import Discovery, apply
from reconcilery.supervisor import (
    StopRequested,
    Supervisor,
    choose_port,
    listening,
    port_holder,
    signals_deferred,
    stop_signals,
)
from workers import domains
from workers import workqueue as workqueues
from workers.app import WORKERS_READY, load_domains
from workers.app import workqueue as app_workqueue
from workers.controller import registry
from workers.domains import Local, LocalRun, Row
from workers.workqueue import WorkQueue

ROOT = Path(__file__).resolve().parents[1]

console = Console()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics_urls(ports: dict[str, int], host: str = "127.0.0.1") -> dict[str, str]:
    """``{process: "http://host:port/metrics"}`` for ``{process: port}``, in the given order (pure)."""
    return {name: f"http://{host}:{port}/metrics" for name, port in ports.items()}


def endpoint_rows(endpoints: dict[str, Any]) -> list[tuple[str, str]]:
    """The rows of ``up``'s endpoints table (pure): one per endpoint, a list joined by commas, a mapping
    one row per entry (``metrics watch``), passwords redacted; after Flower, its task list
    (``flower tasks``: ``reconcile[<controller>] <key>`` per reconcile)."""
    rows: list[tuple[str, str]] = []
    for k, v in endpoints.items():
        if isinstance(v, dict):
            rows += [(f"{k} {name}", _redacted(str(url))) for name, url in v.items()]
        elif isinstance(v, list):
            rows.append((k, ", ".join(str(item) for item in v)))
        else:
            rows.append((k, _redacted(str(v))))
        if k == "flower":
            rows.append(("flower tasks", f"{v}/tasks"))
    return rows


def _redacted(url: str) -> str:
    """``url`` with its password shown as ``***`` (the console and the summary never print it)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass
class UpOptions:
    """Options of ``reconcilery up`` (see the CLI for their meaning)."""

    kubeconfig: str | None = None
    redis_url: str | None = None
    apply: list[str] = field(default_factory=list)
    state_dir: Path = Path(".reconcilery")
    once: bool = False
    timeout: float = 180.0
    api_port: int = 0
    #: ``None``: :data:`DEFAULT_FLOWER_PORT`, or a free port when that one is taken.
    flower_port: int | None = None
    concurrency: int = 4
    #: Apply every installed domain's examples (:attr:`workers.domains.Domain.examples`) before ``apply``.
    examples: bool = False


DEFAULT_FLOWER_PORT = 5555
#: Said when ``up`` needs the embedded default (distribution reconcilery-embedded) and it is missing.
EMBEDDED_MISSING = ("{what} is not installed: pip install 'reconcilery[embedded]' for the embedded default, "
                    "or pass --kubeconfig to use a real cluster")
#: Said (once) when ``--kubeconfig`` runs without the embedded distribution: no domain's local part.
LOCALS_MISSING = ("[yellow]![/yellow] the domains' local parts ({names}: stand-ins, CRDs, summary rows) are not "
                  "installed: pip install 'reconcilery\\[embedded]'")


class LocalRuntime:
    """The running components; :meth:`stop` stops every process and server it started."""

    def __init__(self, options: UpOptions) -> None:
        self.o = options
        self.state_dir = options.state_dir.resolve()
        self.logs = self.state_dir / "logs"
        self.endpoints: dict[str, Any] = {}
        self.supervisor = Supervisor(self.logs, cwd=ROOT)
        self._stops: list[Callable[[], None]] = []
        self.kubeconfig = ""
        #: the children's environment on top of this process's (which ``up`` never changes)
        self.env: dict[str, str] = {}
        self.devapi: Any = None  # the dev API server (None with --kubeconfig)
        self.local: Kube | None = None  # this process's client of the local cluster
        self.wq: WorkQueue | None = None  # this process's workqueue on the run's Redis
        #: what each domain's local part sees of this run (documents, applied objects, env, endpoints)
        self.run = LocalRun(self.state_dir, "", None, self._kube, lambda line: console.print(line, soft_wrap=True),
                            self._spawn, self._stops.append, _port_taken, workqueue=self._workqueue, env=self.env,
                            endpoints=self.endpoints)
        self.applied = self.run.applied
        self.documents = self.run.documents
        self.locals: list[Local] = []  # one per installed domain with a local part, in domain order
        #: Prometheus endpoints of the run: process name -> port (endpoints.json's "metrics")
        self.metrics_ports: dict[str, int] = {}

    # -- start ---------------------------------------------------------------------------------------

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        paths = [*self.example_paths(), *self.o.apply] if self.o.examples else list(self.o.apply)
        self.documents[:] = load_objects(paths, recursive=True, required=("apiVersion", "kind"))
        self._start_kubernetes()
        self._start_redis()
        self.run.kubeconfig, self.run.devapi = self.kubeconfig, self.devapi
        if self.devapi is not None:
            self._apply_namespaces()
        self.load_locals()
        for local in self.locals:
            local.start()
        self._start_processes()
        self._serve_own_metrics()
        self._write_endpoints()

    def _start_kubernetes(self) -> None:
        if self.o.kubeconfig:
            self.kubeconfig = str(Path(self.o.kubeconfig).resolve())
            cfg = yaml.safe_load(Path(self.kubeconfig).read_text())
            self.endpoints["kubernetes"] = cfg["clusters"][0]["cluster"]["server"]
        else:
            try:
                from kubedev import DevAPIServer  # the embedded distribution: absent from the runtime image
            except ImportError:
                raise RuntimeError(EMBEDDED_MISSING.format(what="the dev Kubernetes API server")) from None

            server = DevAPIServer(port=self.o.api_port).start()
            self._stops.append(server.stop)
            self.devapi = server
            self.kubeconfig = str(self.state_dir / "kubeconfig")
            server.write_kubeconfig(self.kubeconfig)
            self.endpoints["kubernetes"] = server.url
            console.print(f"[green]✓[/green] dev Kubernetes API server at {server.url}")
        self.env["RECONCILERY_KUBECONFIG"] = self.kubeconfig
        # this process's own code (the domains' local parts, in-process webhooks) reaches it as "local"
        self.local = clusters.register(clusters.LOCAL, from_kubeconfig(self.kubeconfig))
        self._stops.append(lambda: clusters.unregister(clusters.LOCAL))

    def _start_redis(self) -> None:
        if self.o.redis_url:
            url = self.o.redis_url
        else:
            redis_dir = self.state_dir / "redis"
            # a password of its own: every process of the run gets it through RECONCILERY_REDIS_URL, nothing
            # else on this host reaches the queues (the run's endpoints.json holds it, readable by its owner)
            server = LocalRedis(_free_port(), workdir=str(redis_dir), password=secrets.token_hex(16),
                                die_with_parent=True).start()
            self._stops.append(server.stop)
            url = server.url
            console.print(f"[green]✓[/green] Redis at {_redacted(url)}")
        self.endpoints["redis"] = url
        self.env["RECONCILERY_REDIS_URL"] = url
        self.wq = WorkQueue.from_url(url)
        # this process's own code enqueues on it too (workers.workqueue.current())
        workqueues.provide(self._workqueue)
        self._stops.append(lambda: workqueues.provide(app_workqueue))

    def _kube(self) -> Kube:
        """The client of the local cluster (once :meth:`start` started or found it)."""
        if self.local is None:
            raise RuntimeError("the local cluster is not started yet")
        return self.local

    def _workqueue(self) -> WorkQueue:
        """The workqueue on the run's Redis (once :meth:`start` started or found it)."""
        if self.wq is None:
            raise RuntimeError("the run's Redis is not started yet")
        return self.wq

    def example_paths(self) -> list[str]:
        """The example folders every installed domain declares that exist in this checkout."""
        found = [ROOT / e for d in domains.installed() for e in d.examples]
        for missing in (p for p in found if not p.is_dir()):
            console.print(f"[yellow]![/yellow] examples {missing} not found (installed without a checkout?)")
        return [str(p) for p in found if p.is_dir()]

    def load_locals(self) -> list[Local]:
        """Build the local part of every installed domain that declares one (:mod:`workers.domains`); one
        whose module is not installed (the embedded distribution is missing) is left out, said once."""
        self.locals.clear()
        missing: list[str] = []
        for domain in (d for d in domains.installed() if d.local):
            try:
                self.locals.append(domains.resolve(domain.local)(self.run))
            except ModuleNotFoundError as exc:
                if exc.name is None or not domain.local.startswith(exc.name):
                    raise  # a module missing inside an installed local part is a real error
                missing.append(domain.name)
        if missing:
            console.print(LOCALS_MISSING.format(names=", ".join(missing)), soft_wrap=True)
        return self.locals

    def _apply_namespaces(self) -> None:
        """The applied Namespaces first, with their labels: the domains' webhooks and caches (a namespace
        cache) see them from their start."""
        kube = self._kube()
        discovery = Discovery(kube)
        for doc in self.documents:
            if doc.get("apiVersion") == "v1" and doc.get("kind") == "Namespace":
                apply(kube, discovery, json.loads(json.dumps(doc)))

    def _spawn(self, name: str, args: list[str], extra_env: dict[str, str] | None = None) -> None:
        """Start the supervised child ``name`` with this run's environment (and ``extra_env``)."""
        self.supervisor.spawn(name, args, {**os.environ, **self.env, **(extra_env or {})})

    def _start_processes(self) -> None:
        load_domains()
        cli = [sys.executable, "-m", "reconcilery.cli"]
        health = _free_port()
        self.metrics_ports["watch"] = health  # the watchers serve /metrics beside /readyz
        self._spawn("watch", [*cli, "watch", "--health-port", str(health), "--health-host", "127.0.0.1"])
        queues = sorted({c.queue for c in registry})
        for q in queues:
            self._spawn(f"worker-{q}", [*cli, "worker", "-Q", q, "-c", str(self.o.concurrency), "-n", f"{q}@%h"],
                        self._metrics_env(f"worker-{q}"))
        self._spawn("beat", [*cli, "beat"], self._metrics_env("beat"))
        flower = choose_port("Flower", self.o.flower_port or DEFAULT_FLOWER_PORT, self.o.flower_port is not None)
        if flower.note:
            console.print(f"[yellow]![/yellow] {flower.note}", soft_wrap=True)
        self._spawn("flower", [sys.executable, "-m", "celery", "-A", "workers.app", "flower",
                               f"--port={flower.port}", "--address=127.0.0.1"],
                    {"FLOWER_UNAUTHENTICATED_API": "true"})
        self.metrics_ports["flower"] = flower.port  # Flower's own flower_* metrics
        self.endpoints["flower"] = f"http://127.0.0.1:{flower.port}"
        self.endpoints["watch_health"] = f"http://127.0.0.1:{health}"
        self._wait_ready(len(queues), health)
        console.print(f"[green]✓[/green] watchers, {len(queues)} worker pools ({', '.join(queues)}), beat, Flower")

    def _metrics_env(self, name: str) -> dict[str, str]:
        """The environment that makes child ``name`` serve its metrics on a free loopback port (kept
        across its restarts: the supervisor starts it again with the same environment)."""
        self.metrics_ports[name] = _free_port()
        return {"RECONCILERY_METRICS_PORT": str(self.metrics_ports[name]),
                "RECONCILERY_METRICS_BIND_ADDRESS": "127.0.0.1"}

    def _serve_own_metrics(self) -> None:
        """This process's metrics (the in-process webhooks' and conversion's) on a free loopback port."""
        from prometheus_client import start_http_server

        server, thread = start_http_server(0, addr="127.0.0.1")
        self.metrics_ports["up"] = int(server.server_port)

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(5)

        self._stops.append(stop)
        self.endpoints["metrics"] = metrics_urls(self.metrics_ports)

    def _wait_ready(self, workers: int, health_port: int) -> None:
        r = self._workqueue().redis
        r.delete(WORKERS_READY)  # stale pids of an earlier run on an external Redis
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self._check_children()
            with contextlib.suppress(requests.RequestException):
                if (r.scard(WORKERS_READY) >= workers
                        and requests.get(f"http://127.0.0.1:{health_port}/readyz", timeout=1).ok):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"components not ready after 60 s; see {self.logs}")

    def _check_children(self) -> None:
        self.supervisor.check()

    def _write_endpoints(self) -> None:
        path = self.state_dir / "endpoints.json"
        path.touch(mode=0o600)
        path.chmod(0o600)  # the Redis URL carries the run's password
        path.write_text(json.dumps(self.endpoints, indent=2) + "\n")

    # -- apply and settle ----------------------------------------------------------------------------

    def apply_manifests(self) -> int:
        """Apply ``--apply`` documents in order; returns how many failed (each failure is printed)."""
        kube = self._kube()
        discovery = Discovery(kube)
        discoveries: dict[int, Discovery] = {}

        def apply_one(target: Any, doc: dict[str, Any]) -> dict[str, Any]:
            return apply(target, discoveries.setdefault(id(target), Discovery(target)), doc)

        failed = sum(local.apply_before(apply_one) for local in self.locals)
        for doc in self.documents:
            ref = f"{doc['kind']} {doc.get('metadata', {}).get('namespace', '')}/{doc['metadata'].get('name')}"
            try:
                self.applied.append(apply(kube, discovery, json.loads(json.dumps(doc))))
            except Exception as exc:
                failed += 1
                console.print(f"[red]✗[/red] {ref}: {exc}")
        failed += sum(local.apply_after(apply_one) for local in self.locals)
        self._write_endpoints()
        console.print(f"[green]✓[/green] applied {len(self.applied)} objects"
                      + (f", [red]{failed} failed[/red]" if failed else ""))
        return failed

    def settled(self) -> bool:
        """No controller has work due within 2 s and every domain's applied objects are settled."""
        wq = self._workqueue()
        busy = {name for local in self.locals for name in local.always_busy}
        for c in registry:
            if c.name in busy:
                continue
            s = wq.status(c.name)
            due = wq.next_due(c.name)
            if s.waiting or s.in_progress or (due is not None and due < 2):
                return False
        return all(local.settled() for local in self.locals)

    def wait_settled(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        stable = 0
        while time.monotonic() < deadline:
            self._check_children()
            stable = stable + 1 if self.settled() else 0
            if stable >= 3:
                return True
            time.sleep(0.5)
        return False

    def summary_rows(self) -> list[Row]:
        """(kind, object, state, detail): every domain's rows, in domain order."""
        return [row for local in self.locals for row in local.rows()]

    def print_summary(self) -> None:
        table = Table("kind", "object", "state", "detail", title="Reconcilery", show_lines=False)
        for row in self.summary_rows():
            color = {"Ready": "green", "Error": "red", "Warning": "yellow"}.get(row[2], "")
            table.add_row(row[0], row[1], f"[{color}]{row[2]}[/{color}]" if color else row[2], row[3][:100])
        console.print(table)
        ep = Table("endpoint", "value", title="endpoints.json")
        for name, value in endpoint_rows(self.endpoints):
            ep.add_row(escape(name), escape(value))
        console.print(ep)
        for local in self.locals:
            for line in local.hints():
                console.print(line, soft_wrap=True)

    # -- stop ----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every child process (SIGTERM, then SIGKILL after 10 s in total) and every server, in
        reverse. Ctrl-C, SIGTERM and SIGHUP arriving meanwhile are ignored: the stop always ends."""
        with signals_deferred():
            self.supervisor.stop()
            for stop in reversed(self._stops):
                with contextlib.suppress(Exception):
                    stop()


def _port_taken(host: str, port: int) -> str | None:
    """Who listens on ``host:port`` (``None``: nobody)."""
    return port_holder(port) if listening(host, port) else None


def run_up(options: UpOptions) -> int:
    """Run until Ctrl-C, SIGTERM or SIGHUP (or, with ``--once``, until settled); returns the exit code:
    0 when stopped by a signal while running, ``128 + signal`` when one interrupts ``--once``."""
    runtime = LocalRuntime(options)
    with stop_signals():
        return _run(runtime, options)


def _run(runtime: LocalRuntime, options: UpOptions) -> int:
    try:
        runtime.start()
        failed = runtime.apply_manifests() if runtime.documents else 0
        if options.once:
            ok = runtime.wait_settled(options.timeout)
            runtime.print_summary()
            if not ok:
                console.print(f"[red]not settled within {options.timeout:.0f} s[/red]; logs in {runtime.logs}")
                return 1
            return 1 if failed else 0
        runtime.print_summary()
        console.print("running; Ctrl-C (or SIGTERM, SIGHUP) stops every process")
        while True:
            runtime._check_children()
            time.sleep(1)
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, StopRequested) else 2
        console.print(f"stopping ({'Ctrl-C' if signum == 2 else signal.Signals(signum).name})")
        return 128 + signum if options.once else 0
    except (ManifestError, RuntimeError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return 2
    finally:
        runtime.stop()
