"""Commands of the Cloud Resources domain: ``reconcilery render <kind>`` (a command per declared kind with a
render: :func:`commands`), and ``reconcilery skr-listener``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.cloud import names, registry, settings
from workers.domains import Command

_SCOPE: Any = typer.Option(..., "--scope", help="A KCP Scope manifest (as the Scope controller writes it).")


def _files(what: str) -> Any:
    """The repeatable ``-f/--filename`` option of a render command, ``what`` naming the manifests."""
    return typer.Option(..., "-f", "--filename", help=f"{what} (repeatable).")



def commands() -> list[Command]:
    """A ``render <command>`` per declared kind with a :class:`~tasks.cloud.registry.KindRender`."""
    return [Command(k.render.command, "", k.render.help, function=render_command(k.render))
            for k in registry.kinds() if k.render is not None]


def render_command(spec: registry.KindRender) -> Callable[..., None]:
    """The typer command of ``render <spec.command>``: ``-f`` manifests and ``--scope`` -> a row per object
    (NAME KIND [CIDR] STATUS OUTCOME PLAN), or with ``-o yaml|json`` one document each. Exits 1 when an
    object would end in Error, 2 on unreadable input."""

    def command(files: list[Path] = _files(spec.files), scope: Path = _SCOPE, output: Output = OUTPUT) -> None:
        the_scope, objects = _load(files, scope)
        docs = [d for d in objects if d.get("kind") in spec.kinds]
        problems = spec.problems(the_scope, docs) if spec.problems is not None else _not_objects(docs)
        _exit_on_problems(problems)
        rendered = spec.run(the_scope, docs, settings.current())
        _show([r.as_dict() for r in rendered], rendered, f"PLAN ({_provider(the_scope)})", output,
              cidrs=[r.cidr or "-" for r in rendered] if spec.cidr else None)

    command.__doc__ = spec.help
    return command


def listener(
    host: str = typer.Option("0.0.0.0", "--host"),
    port: int = typer.Option(8083, "--port", help="The original's SKR_RUNTIME_NOTIFICATION_LISTENER_ADDR port."),
) -> None:
    """Run the runtime-watcher listener: SKR events connect their SKR sooner (rate-limited per SKR)."""
    from tasks.cloud.skr.listener import Listener, ListenerTLS, notify_connect
    from webhooks.certificates import CertificateError
    from webhooks.serving import run
    from workers.controller import import_installed
    from workers.logs import configure_logging

    configure_logging("INFO")
    import_installed(("tasks.cloud.controller",))  # the sweep and connect controllers
    s = settings.current()
    tls: ListenerTLS | None = None
    if s.listener_cert_file or s.listener_key_file or s.listener_client_ca_file:
        missing = [f"RECONCILERY_CLOUD_{name.upper()}" for name in
                   ("listener_cert_file", "listener_key_file", "listener_client_ca_file") if not getattr(s, name)]
        if missing:
            typer.echo(f"error: mTLS of the skr-listener needs {', '.join(missing)}", err=True)
            raise typer.Exit(2)
        tls = ListenerTLS.from_settings(s)
    if tls is None:
        typer.echo("warning: no RECONCILERY_CLOUD_LISTENER_CERT_FILE: probes only, every event is answered 401",
                   err=True)
    server = Listener(notify_connect, host, port, tls=tls, max_connections=s.listener_max_connections,
                      timeout=s.listener_request_timeout)
    try:
        run(server, stopping="skr-listener stopping",
            started=lambda: typer.echo(f"skr-listener on {server.url}/v2/cloud-manager/event"))
    except (CertificateError, OSError) as exc:
        typer.echo(f"error: skr-listener cannot start: {exc}", err=True)
        raise typer.Exit(2) from None


def _load(files: list[Path], scope: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The one Scope of ``scope`` and the objects of ``files``; exits 2 on unreadable input or not exactly one
    Scope."""
    try:
        scopes = [d for d in load_objects([scope]) if d.get("kind") == "Scope"]
        objects = load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if len(scopes) != 1:
        typer.echo(f"error: {scope} must hold exactly one Scope, found {len(scopes)}", err=True)
        raise typer.Exit(2)
    return scopes[0], objects


def _not_objects(docs: list[dict[str, Any]]) -> list[str]:
    """A problem per metadata/spec/status of ``docs`` that is set but not an object."""
    def name(d: dict[str, Any]) -> str:
        meta = d.get("metadata")
        return str(meta.get("name", "?")) if isinstance(meta, dict) else "?"

    return [f"{d.get('kind')} {name(d)}: {part} must be an object"
            for d in docs for part in ("metadata", "spec", "status")
            if not isinstance(d.get(part) if d.get(part) is not None else {}, dict)]


def _exit_on_problems(problems: list[str]) -> None:
    """Print each problem to stderr and exit 2 when there is any."""
    if problems:
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)


def _provider(scope: dict[str, Any]) -> str:
    """The Scope's provider, upper case (``?`` when unset), for the PLAN column header."""
    return str((scope.get("spec") or {}).get("provider") or "?").upper()


def _show(docs: list[dict[str, Any]], rendered: Sequence[Any], plan_header: str, output: Output,
          cidrs: list[str] | None = None) -> None:
    """Print a row per rendered object (NAME KIND [CIDR] STATUS OUTCOME PLAN), or ``docs`` with
    ``-o yaml|json``; exits 1 when any would end in Error."""
    header = ("NAME", "KIND", *(("CIDR",) if cidrs is not None else ()), "STATUS", "OUTCOME", plan_header)
    rows = [(r.name, r.kind, *((cidrs[i],) if cidrs is not None else ()), r.state, r.outcome,
             "\n".join(r.plan) or "-") for i, r in enumerate(rendered)]
    echo(Listing(docs, header, rows), output)
    if any(r.state == names.STATE_ERROR for r in rendered):
        raise typer.Exit(1)
