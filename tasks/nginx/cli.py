"""``reconcilery render nginx``: the servers every (NGINX Plus host, upstream) should hold, from files."""

from __future__ import annotations

import typer
import yaml

from kube.manifests import ManifestError, load_objects
from tasks.nginx.settings import EdgeNames, SettingsError


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def render(
    files: list[str] = typer.Option(..., "-f", "--filename",
                                    help="YAML/JSON with Services, Nodes and the nkl-config ConfigMap "
                                         "(repeatable, '-' = stdin, a directory = its YAML files)."),
) -> None:
    """Print one YAML document per (NGINX Plus host, upstream): ``{host, upstream, protocol, servers}``,
    servers sorted, as the NGINX edge controller would make them. Names (namespaces, ConfigMap, port
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
        return
    typer.echo(yaml.safe_dump_all(docs, sort_keys=False).rstrip("\n"))
