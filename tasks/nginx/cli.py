"""``reconcilery render nginx``: the servers every (NGINX Plus host, upstream) should hold, from files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
import yaml

from tasks.nginx.settings import EdgeNames, SettingsError


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def load_objects(files: list[str]) -> list[dict[str, Any]]:
    """Every YAML/JSON document of ``files`` (``-`` = stdin; a directory = its *.yaml/*.yml/*.json).

    Raises ``ValueError`` naming the file for unreadable input or a document that is not an object.
    """
    paths: list[str] = []
    for f in files:
        p = Path(f)
        if f != "-" and p.is_dir():
            paths += sorted(str(c) for c in p.iterdir() if c.suffix in (".yaml", ".yml", ".json"))
        else:
            paths.append(f)
    docs: list[dict[str, Any]] = []
    for f in paths:
        try:
            text = sys.stdin.read() if f == "-" else Path(f).read_text()
            loaded = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {f}: {exc}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"{f} is not valid YAML: {exc}") from None
        for i, d in enumerate(loaded):
            if not isinstance(d, dict):
                raise ValueError(f"{f}: document {i + 1} is not a Kubernetes object")
        docs += loaded
    return docs


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
    except ValueError as exc:
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
