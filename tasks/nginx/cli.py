"""``reconcilery render nginx``: the servers every (NGINX Plus host, upstream) should hold, from files."""

from __future__ import annotations

from dataclasses import replace

import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.nginx.render import render as render_upstreams
from tasks.nginx.settings import NLK_CONFIG_KEY, ConfigError, EdgeNames, nlk_document


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def render(
    files: list[str] = typer.Option(..., "-f", "--filename",
                                    help="YAML/JSON with Services, Nodes and the nkl-config ConfigMap "
                                         "(repeatable, '-' = stdin, a directory = its YAML files)."),
    config_file: str = typer.Option("", "--config", metavar="FILE",
                                    help="The original's config.yaml (nginx-hosts, service-annotation-match, "
                                         "tls-mode, log-level): renders the nlk mode with it."),
    output: Output = OUTPUT,
) -> None:
    """Print one row (HOST UPSTREAM PROTOCOL SERVERS) or, with ``-o yaml|json``, one document per
    (NGINX Plus host, upstream): ``{host, upstream, protocol, servers}``, servers sorted, as the NGINX
    edge controller would make them. The modes and names (namespaces, ConfigMaps, port prefix) come
    from the ``RECONCILERY_NGINX_*`` environment like the controller's; ``--config`` adds the ``nlk``
    mode (Services of every namespace annotated ``nginx.com/nginxaas``, EndpointSlices, Nodes)."""
    try:
        objects = load_objects(files)
    except ManifestError as exc:
        _fail(str(exc))
        return
    names = EdgeNames.from_env()
    nlk_config = None
    try:
        if config_file:
            try:
                with open(config_file, encoding="utf-8") as handle:
                    nlk_config = nlk_document({NLK_CONFIG_KEY: handle.read()})
            except OSError as exc:
                _fail(f"--config {config_file}: {exc.strerror}")
                return
            names = replace(names, modes=tuple(dict.fromkeys((*names.modes, "nlk"))))
        docs, problems = render_upstreams(objects, names, nlk_config)
    except ConfigError as exc:
        _fail(str(exc))
        return
    for problem in problems:
        typer.echo(f"warning: {problem}", err=True)
    if not docs:
        typer.echo("# no (host, upstream) pairs: no hosts configured or no Service port names an upstream", err=True)
    rows = [(d["host"], d["upstream"], d["protocol"], ",".join(d["servers"]) or "<none>") for d in docs]
    echo(Listing(docs, ("HOST", "UPSTREAM", "PROTOCOL", "SERVERS"), rows), output)
