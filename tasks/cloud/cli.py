"""Commands of the Cloud Resources domain: ``reconcilery render iprange``, ``render vpcpeering``,
``render redisinstance`` and ``reconcilery skr-listener``."""

from __future__ import annotations

import signal
import ssl
import threading
from pathlib import Path
from typing import Any

import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.cloud import names
from tasks.cloud.render import render_ipranges, render_peerings, shape_errors


def render(
    files: list[Path] = typer.Option(..., "-f", "--filename", help="SKR or KCP IpRange manifests (repeatable)."),
    scope: Path = typer.Option(..., "--scope", help="A KCP Scope manifest (as the Scope controller writes it)."),
    output: Output = OUTPUT,
) -> None:
    """IpRanges with a Scope -> the CIDR (given or allocated), its ranges, the validation outcome and the
    provider plan (AWS: a subnet per zone; GCP: the global address and PSA; Azure: the ``--cm`` VNet):
    a row per IpRange (NAME KIND CIDR STATUS OUTCOME PLAN), or with ``-o yaml|json`` one document each.

    Exits 1 when an IpRange would end in Error, 2 on unreadable input or fields of the wrong type."""
    try:
        scopes = [d for d in load_objects([scope]) if d.get("kind") == "Scope"]
        objects = load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if len(scopes) != 1:
        typer.echo(f"error: {scope} must hold exactly one Scope, found {len(scopes)}", err=True)
        raise typer.Exit(2)
    ipranges = [d for d in objects if d.get("kind") == "IpRange"]
    problems = shape_errors(scopes[0], ipranges)
    if problems:
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)
    rendered = render_ipranges(scopes[0], ipranges)
    provider = str((scopes[0].get("spec") or {}).get("provider") or "?")
    rows = [(r.name, r.kind, r.cidr or "-", r.state, r.outcome, "\n".join(r.plan) or "-") for r in rendered]
    echo(Listing([r.as_dict() for r in rendered],
                 ("NAME", "KIND", "CIDR", "STATUS", "OUTCOME", f"PLAN ({provider.upper()})"), rows), output)
    if any(r.state == names.STATE_ERROR for r in rendered):
        raise typer.Exit(1)


def render_vpcpeering(
    files: list[Path] = typer.Option(..., "-f", "--filename", help="SKR AwsVpcPeering / GcpVpcPeering / "
                                                                     "AzureVpcPeering manifests (repeatable)."),
    scope: Path = typer.Option(..., "--scope", help="A KCP Scope manifest (as the Scope controller writes it)."),
    output: Output = OUTPUT,
) -> None:
    """SKR VPC peerings with a Scope -> the KCP remote Network and VpcPeering the SKR loop would create and
    the provider's steps (AWS: the connection, its acceptance, the routes per strategy): a row per peering
    (NAME KIND STATUS OUTCOME PLAN), or with ``-o yaml|json`` one document each with the KCP objects.

    Exits 1 when a peering would end in Error, 2 on unreadable input."""
    try:
        scopes = [d for d in load_objects([scope]) if d.get("kind") == "Scope"]
        objects = load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if len(scopes) != 1:
        typer.echo(f"error: {scope} must hold exactly one Scope, found {len(scopes)}", err=True)
        raise typer.Exit(2)
    kinds = {res.kind for res in names.SKR_VPC_PEERINGS.values()}
    peerings = [d for d in objects if d.get("kind") in kinds]
    problems = [f"{d.get('kind')} {(d.get('metadata') or {}).get('name', '?')}: {part} must be an object"
                for d in peerings for part in ("metadata", "spec", "status")
                if not isinstance(d.get(part) if d.get(part) is not None else {}, dict)]
    if problems:
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)
    rendered = render_peerings(scopes[0], peerings)
    provider = str((scopes[0].get("spec") or {}).get("provider") or "?")
    rows = [(r.name, r.kind, r.state, r.outcome, "\n".join(r.plan) or "-") for r in rendered]
    echo(Listing([r.as_dict() for r in rendered], ("NAME", "KIND", "STATUS", "OUTCOME", f"PLAN ({provider.upper()})"),
                 rows), output)
    if any(r.state == names.STATE_ERROR for r in rendered):
        raise typer.Exit(1)


def render_redisinstance(
    files: list[Path] = typer.Option(..., "-f", "--filename", help="SKR AwsRedisInstance / GcpRedisInstance / "
                                                                     "AzureRedisInstance manifests (repeatable)."),
    scope: Path = typer.Option(..., "--scope", help="A KCP Scope manifest (as the Scope controller writes it)."),
    output: Output = OUTPUT,
) -> None:
    """SKR Redis instances with a Scope -> the tier's machine shape, the KCP RedisInstance the SKR loop would
    create and the provider's pieces (AWS: subnet, parameter and security groups, token, replication group;
    GCP: the Memorystore instance; Azure: cache, private endpoint, DNS zone group), then the Secret: a row
    per instance (NAME KIND STATUS OUTCOME PLAN), or with ``-o yaml|json`` one document each.

    Exits 1 when an instance would end in Error, 2 on unreadable input."""
    from tasks.cloud import settings
    from tasks.cloud.render_redis import render_redis
    from tasks.cloud.skr.redisinstance_plan import KINDS

    try:
        scopes = [d for d in load_objects([scope]) if d.get("kind") == "Scope"]
        objects = load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if len(scopes) != 1:
        typer.echo(f"error: {scope} must hold exactly one Scope, found {len(scopes)}", err=True)
        raise typer.Exit(2)
    kinds = {res.kind for res in KINDS.values()}
    instances = [d for d in objects if d.get("kind") in kinds]
    problems = [f"{d.get('kind')} {(d.get('metadata') or {}).get('name', '?')}: {part} must be an object"
                for d in instances for part in ("metadata", "spec", "status")
                if not isinstance(d.get(part) if d.get(part) is not None else {}, dict)]
    if problems:
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)
    rendered = render_redis(scopes[0], instances, settings.current().redis_instance_tier_machine_types)
    provider = str((scopes[0].get("spec") or {}).get("provider") or "?")
    rows = [(r.name, r.kind, r.state, r.outcome, "\n".join(r.plan) or "-") for r in rendered]
    echo(Listing([r.as_dict() for r in rendered], ("NAME", "KIND", "STATUS", "OUTCOME", f"PLAN ({provider.upper()})"),
                 rows), output)
    if any(r.state == names.STATE_ERROR for r in rendered):
        raise typer.Exit(1)


def listener(
    host: str = typer.Option("0.0.0.0", "--host"),
    port: int = typer.Option(8083, "--port", help="The original's SKR_RUNTIME_NOTIFICATION_LISTENER_ADDR port."),
) -> None:
    """Run the runtime-watcher listener: SKR events connect their SKR sooner (rate-limited per SKR)."""
    from tasks.cloud import settings
    from tasks.cloud.notify import Listener, ListenerTLS, notify_connect
    from workers.controller import import_installed
    from workers.logs import configure_logging

    configure_logging("INFO")
    import_installed(("tasks.cloud.controller",))  # the sweep and connect controllers
    stop = threading.Event()

    def _stop(*_: Any) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    s = settings.current()
    tls: ListenerTLS | None = None
    if s.listener_cert_file or s.listener_key_file or s.listener_client_ca_file:
        missing = [f"RECONCILERY_CLOUD_{name.upper()}" for name in
                   ("listener_cert_file", "listener_key_file", "listener_client_ca_file") if not getattr(s, name)]
        if missing:
            typer.echo(f"error: mTLS of the skr-listener needs {', '.join(missing)}", err=True)
            raise typer.Exit(2)
        tls = ListenerTLS(s.listener_cert_file, s.listener_key_file, s.listener_client_ca_file, s.listener_trust_xfcc)
    try:
        server = Listener(notify_connect, host, port, tls=tls, max_connections=s.listener_max_connections,
                          timeout=s.listener_request_timeout).start()
    except (ssl.SSLError, OSError) as exc:
        typer.echo(f"error: skr-listener cannot start: {exc}", err=True)
        raise typer.Exit(2) from None
    if tls is None:
        typer.echo("warning: no RECONCILERY_CLOUD_LISTENER_CERT_FILE: probes only, every event is answered 401",
                   err=True)
    typer.echo(f"skr-listener on {server.url}/v2/cloud-manager/event")
    stop.wait()
    server.stop()
