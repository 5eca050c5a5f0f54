"""The ``reconcilery`` command line: the processes of a deployment, queue tools, render and ``up``.

Celery and the Redis client (about a second to import) are imported by the commands that run or read
the engine (``from workers.app import ...`` inside them), not at start: ``render``, the exec probes a
kubelet runs every few seconds, and ``--help`` start without them.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

import config
from kube.printers import OUTPUT, Listing, Output, echo
from reconcilery.probes import check_beat_lock, check_heartbeat, ping_redis
from reconcilery.probes import heartbeat_file as default_heartbeat_file
from watchers import settings as watch_settings
from watchers.leader import LeaderElectionConfig, default_namespace
from watchers.runner import LeadershipLost, run
from workers import domains
from workers import settings as engine_settings
from workers.controller import Key, import_installed, registry
from workers.domains import Domain
from workers.logs import configure_logging

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Kubernetes controllers as a distributed Celery task system.")
queue_app = typer.Typer(no_args_is_help=True, help="Inspect the Redis workqueue.")
render_app = typer.Typer(no_args_is_help=True,
                         help="Dry runs: print what a controller would write, without cluster or Redis.")
probe_app = typer.Typer(no_args_is_help=True, help="Exec probes for Kubernetes (exit 0 healthy, 1 not).")
app.add_typer(queue_app, name="queue")
app.add_typer(render_app, name="render")
app.add_typer(probe_app, name="probe")

err = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` in red on stderr and exit with ``code``."""
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def check_settings() -> None:
    """Import the domains this process runs and validate every setting they and the engine declare
    (:func:`config.validate`); on a bad value print one error naming the variable and exit 2."""
    from workers.app import load_domains, settings_of  # Celery

    try:
        modules = settings_of().domain_modules or domains.controller_modules()
    except config.SettingsError:  # still import the domains: the one message names every bad variable
        modules = domains.controller_modules()
    load_domains(modules)
    for module in ("watchers.settings", "reconcilery.settings"):
        importlib.import_module(module)
    try:
        config.validate()
    except config.SettingsError as exc:
        fail("invalid settings:\n" + "\n".join(f"  {problem}" for problem in exc.problems))


def _validating(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` run after :func:`check_settings` (for the processes domains add: webhook, skr-listener)."""
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        check_settings()
        return command(*args, **kwargs)

    return run


def _celery() -> Any:
    check_settings()
    from workers.app import app as celery_app  # Celery

    return celery_app


#: Celery pools a worker may run (eventlet is not installed; gevent is the cooperative one).
POOLS = ("threads", "gevent", "prefork", "solo")


def _gevent_patched() -> bool:
    """Whether this process's ``socket`` module is gevent's (patched before it was imported)."""
    if "gevent.monkey" not in sys.modules:
        return False
    from gevent import monkey

    return bool(monkey.is_module_patched("socket"))


@app.command()
def worker(
    queues: str = typer.Option("", "--queues", "-Q",
                               help="Comma-separated queues to consume (default: every installed domain's)."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", help="Reconciles run at once."),
    pool: str = typer.Option("threads", "--pool", "-P",
                             help="threads (I/O-bound reconciles), gevent (hundreds of SKR connects per process: "
                                  "the cloud-skr pool, docs/cloud.md), prefork or solo."),
    name: str = typer.Option("", "--name", "-n", help="Celery node name (default: celery@HOST)."),
    loglevel: str = typer.Option("INFO", "--loglevel", "-l"),
) -> None:
    """Run a Celery worker process for the given queues (one pool per domain in a deployment).

    ``--pool gevent`` runs through the ``reconcilery`` command or ``python -m reconcilery``
    (:mod:`reconcilery.__main__`), which patch the standard library before anything is imported; any other
    way in is refused with exit 2 rather than run a half-patched process."""
    if pool not in POOLS:
        fail(f"unknown pool {pool!r}: expected one of {', '.join(POOLS)}")
    if pool == "gevent" and not _gevent_patched():
        fail("the gevent pool needs the standard library patched before anything is imported: "
             "run `reconcilery worker -P gevent` or `python -m reconcilery worker -P gevent`")
    celery_app = _celery()
    queues = queues or ",".join(q.name for q in celery_app.conf.task_queues)
    argv = ["worker", "-Q", queues, "-c", str(concurrency), "-P", pool, "-l", loglevel,
            "--without-gossip", "--without-mingle"]
    if celery_app.conf.worker_send_task_events:
        argv.append("-E")
    if name:
        argv += ["-n", name]
    celery_app.worker_main(argv=argv)


@app.command()
def beat(loglevel: str = typer.Option("INFO", "--loglevel", "-l")) -> None:
    """Run the scheduler for periodic resyncs (RedBeat: one active instance, others stand by).

    Its metrics are served on ``RECONCILERY_METRICS_PORT`` when set (docs/metrics.md)."""
    from workers.app import beat_schedule, serve_metrics, settings_of  # Celery

    celery_app = _celery()
    importlib.import_module("workers.beat")  # the scheduler's metrics are registered before the first scrape
    try:
        serve_metrics(settings_of(celery_app))
    except OSError as exc:
        fail(f"cannot serve metrics: {exc}")
    celery_app.conf.beat_schedule = beat_schedule()
    celery_app.Beat(loglevel=loglevel, scheduler="workers.beat:Scheduler").run()


def load_registrations() -> list[Any]:
    """Every installed domain's watch registrations (``RECONCILERY_WATCH_MODULES``: only those modules')."""
    from workers.app import settings_of  # Celery

    found: list[Any] = []
    configured = tuple(m.strip() for m in settings_of().watch_modules.split(",") if m.strip())
    for module in import_installed(configured or domains.watch_modules()):
        found.extend(module.registrations())
    return found


@app.command()
def watch(
    controllers: str = typer.Option("", "--controllers", help="Comma-separated controllers to feed (default: all)."),
    health_port: int = typer.Option(8081, "--health-port", help="Port of /readyz, /livez and /metrics (0: none)."),
    health_host: str = typer.Option("0.0.0.0", "--health-host"),
    leader_elect: bool | None = typer.Option(None, "--leader-elect/--no-leader-elect", show_default=False,
                                             help="Watch only while holding a coordination.k8s.io Lease (replicas > "
                                                  "1). Default: $RECONCILERY_LEADER_ELECT, else off."),
    lease_name: str = typer.Option("reconcilery-watch", "--lease-name"),
    lease_namespace: str = typer.Option("", "--lease-namespace",
                                        help="Default: $POD_NAMESPACE, else the service account's namespace."),
    lease_duration: float = typer.Option(15.0, "--lease-duration", help="Seconds (controller-runtime: 15)."),
    renew_deadline: float = typer.Option(10.0, "--renew-deadline", help="Seconds (controller-runtime: 10)."),
    retry_period: float = typer.Option(2.0, "--retry-period", help="Seconds (controller-runtime: 2)."),
) -> None:
    """Run the watchers: list + watch the cluster and enqueue keys for the controllers."""
    from workers.app import settings_of, workqueue  # Celery
    from workers.epoch import RedisEpoch  # the Redis client

    configure_logging("INFO")
    _celery()
    wanted = [c.strip() for c in controllers.split(",") if c.strip()] or None
    if leader_elect is None:
        leader_elect = watch_settings.current().leader_elect
    try:
        wq = workqueue()
        # its first check is the baseline; later ones tell a restart or a loss
        epoch = RedisEpoch(wq.redis, settings_of().lease_seconds)
        election = LeaderElectionConfig(lease_namespace or default_namespace(), lease_name,
                                        lease_duration=lease_duration, renew_deadline=renew_deadline,
                                        retry_period=retry_period) if leader_elect else None
        run(wanted, load_registrations(), wq.add, health_port or None, health_host=health_host,
            enqueue_many=wq.add_batch, redis_check=epoch.check,
            redis_check_interval=settings_of().redis_check_interval, leader_election=election)
    except ValueError as exc:
        fail(str(exc))
    except LeadershipLost as exc:
        fail(str(exc), 1)


@app.command()
def enqueue(
    controller: str = typer.Argument(..., help="Controller name (see `reconcilery queue status`)."),
    ref: str = typer.Argument(..., metavar="NAMESPACE/NAME", help="The object (NAME for cluster-scoped)."),
    cluster: str = typer.Option("local", "--cluster", help="Cluster the object belongs to."),
) -> None:
    """Enqueue one key for a controller, as a watch event would."""
    from workers.app import workqueue  # Celery

    _celery()
    try:
        key = Key.parse(ref, cluster)
        added = workqueue().add(controller, key)
    except (KeyError, ValueError) as exc:
        fail(str(exc.args[0] if exc.args else exc))
        return
    print(f"{controller} {key}: {'enqueued' if added else 'already waiting'}")


@queue_app.command("status")
def queue_status(output: Output = OUTPUT) -> None:
    """Per controller: waiting (of which resync), in progress, delayed, failing and parked keys (a row per
    controller; ``-o yaml|json``: a document per controller with those fields and ``parked_keys``); under
    the table, the parked keys by name (a fresh ``reconcilery enqueue`` of one un-parks it)."""
    from workers.app import workqueue  # Celery

    _celery()
    wq = workqueue()
    try:
        rows = [wq.status(c.name) for c in registry]
        parked = {r.controller: wq.parked(r.controller) for r in rows if r.parked}
    except Exception as exc:
        fail(f"cannot read the workqueue from Redis: {exc}")
        return
    docs = [{**asdict(r), "parked_keys": [str(k) for k, _ in parked.get(r.controller, [])]} for r in rows]
    echo(Listing(docs,
                 ("CONTROLLER", "QUEUE", "WAITING", "RESYNC", "IN PROGRESS", "DELAYED", "FAILING", "PARKED"),
                 [(r.controller, r.queue, *(str(v) for v in (r.waiting, r.resync, r.in_progress, r.delayed,
                                                             r.failing, r.parked))) for r in rows]), output)
    if output is Output.TABLE:
        for name, keys in parked.items():
            for key, _ in keys:
                print(f"parked: {name} {key}  (un-park: reconcilery enqueue {name} {key.ref} --cluster {key.cluster})")


@probe_app.command("worker")
def probe_worker(
    heartbeat_file: str = typer.Option("", "--heartbeat-file",
                                       help="Default: $RECONCILERY_HEARTBEAT_FILE, else /tmp/...heartbeat."),
    max_age: float = typer.Option(60.0, "--max-age", help="Seconds a heartbeat stays fresh."),
    ping: bool = typer.Option(False, "--ping", help="Also PING Redis (readiness)."),
) -> None:
    """Liveness/readiness of a worker: its heartbeat file is fresh (and Redis answers). One line out."""
    result = check_heartbeat(heartbeat_file or default_heartbeat_file(), max_age)
    if result.ok and ping:
        result = ping_redis(engine_settings.load().redis_url)
    print(result.message)
    raise typer.Exit(0 if result.ok else 1)


@probe_app.command("beat")
def probe_beat() -> None:
    """Health of the scheduler: an active beat holds RedBeat's lock in Redis. One line out."""
    result = check_beat_lock(engine_settings.load().redis_url)
    print(result.message)
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def up(
    apply: list[str] = typer.Option([], "--apply", help="Manifest file or folder to apply once ready (repeatable)."),
    examples: bool = typer.Option(False, "--examples", help="Also apply every installed domain's examples/ first."),
    kubeconfig: str = typer.Option("", "--kubeconfig", help="Use this cluster instead of the dev API server."),
    redis_url: str = typer.Option("", "--redis-url", help="Use this Redis instead of a local one."),
    state_dir: str = typer.Option(".reconcilery", "--state-dir", help="Receives kubeconfig, endpoints.json, logs."),
    once: bool = typer.Option(False, "--once", help="Exit once every applied object has settled."),
    timeout: float = typer.Option(180.0, "--timeout", help="Seconds --once waits before failing."),
    api_port: int = typer.Option(0, "--api-port", help="Port of the dev API server (0: any free port)."),
    flower_port: int | None = typer.Option(None, "--flower-port",
                                           help="Port of Flower (default 5555, or a free one if taken)."),
) -> None:
    """Start every component locally (dev API server, Redis, watchers, workers, beat, Flower, stand-ins)."""
    from reconcilery.up import UpOptions, run_up  # Celery, the Redis client, the local servers

    check_settings()

    code = run_up(UpOptions(kubeconfig=kubeconfig or None, redis_url=redis_url or None, apply=apply,
                            state_dir=Path(state_dir), once=once, timeout=timeout, api_port=api_port,
                            flower_port=flower_port, examples=examples))
    raise typer.Exit(code)


@app.command("compose-env")
def compose_env(
    path: str = typer.Option(".env", "--path", help="Where to write (compose reads .env beside docker-compose.yml)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing file (and its passwords)."),
) -> None:
    """Write the .env docker-compose.yml needs: its four passwords, random (mode 0600; never committed)."""
    from reconcilery.composeenv import PASSWORDS, EnvExists, write_env

    try:
        written = write_env(Path(path), force=force)
    except EnvExists as exc:
        fail(str(exc))
        return
    print(f"{written}: {', '.join(PASSWORDS)} (mode 0600); now: docker compose up -d")


def register_domain_commands(root: typer.Typer, render: typer.Typer, installed: Sequence[Domain]) -> None:
    """Add the commands of the ``installed`` domains (:class:`workers.domains.Command`): ``render`` kinds
    under ``render``, the others (processes) on ``root`` with their settings validated first
    (:func:`check_settings`). A command whose module is missing is skipped (domains land one by one)."""
    for domain in installed:
        try:
            commands = domain.all_commands()
        except (ModuleNotFoundError, AttributeError):
            commands = list(domain.commands)
        for command in commands:
            func: Callable[..., Any]
            if command.function is not None:
                func = command.function
            else:
                module, _, attr = command.target.partition(":")
                try:
                    func = getattr(importlib.import_module(module), attr)
                except (ModuleNotFoundError, AttributeError):
                    continue
            target = render if command.group == "render" else root
            target.command(command.name, help=command.help)(_validating(func) if command.process else func)


register_domain_commands(app, render_app, domains.installed())


def main() -> None:
    """Console script entry point."""
    app()


if __name__ == "__main__":
    main()
