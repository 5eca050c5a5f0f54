"""``reconcilery render nginx``: the servers every (NGINX Plus host, upstream) should hold, from files."""

from __future__ import annotations

import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.nginx.settings import EdgeNames, SettingsError


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def render(
    files: list[str] = typer.Option(..., "-f", "--filename",
                                    help="YAML/JSON with Services, Nodes and the nkl-config ConfigMap "
                                         "(repeatable, '-' = stdin, a directory = its YAML files)."),
    output: Output = OUTPUT,
) -> None:
    """Print one row (HOST UPSTREAM PROTOCOL SERVERS) or, with ``-o yaml|json``, one document per
    (NGINX Plus host, upstream): ``{host, upstream, protocol, servers}``, servers sorted, as the NGINX
    edge controller would make them. Names (namespaces, ConfigMap, port
    prefix) come from the ``RECONCILERY_NGINX_*`` environment like the controller's."""
    from tasks.nginx.render import render as render_upstreams

    try:
        objects = load_objects(files)
    except ManifestError as exc:
        _fail(str(exc))
        return
    try:
        docs, problems = render_upstreams(objects, EdgeNames.from_env())
    except SettingsError as exc:
        _fail(str(exc))
        return
    for problem in problems:
        typer.echo(f"warning: {problem}", err=True)
    if not docs:
        typer.echo("# no (host, upstream) pairs: no hosts in the ConfigMap or no prefixed Service ports", err=True)
    rows = [(d["host"], d["upstream"], d["protocol"], ",".join(d["servers"]) or "<none>") for d in docs]
    echo(Listing(docs, ("HOST", "UPSTREAM", "PROTOCOL", "SERVERS"), rows), output)
