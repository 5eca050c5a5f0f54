"""Commands of the Snatch domain: ``reconcilery render snatch`` and ``reconcilery webhook``."""

from __future__ import annotations

import logging

import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.snatch.certs import ensure_dev_certs
from tasks.snatch.mutate import DEFAULT_POOL
from tasks.snatch.render import render as render_pods
from webhooks.certificates import CertificateError


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def render(
    files: list[str] = typer.Option(..., "-f", "--filename",
                                    help="YAML/JSON with Pods, Namespaces and Nodes (repeatable, '-' = stdin)."),
    kyma_worker_pool_name: str = typer.Option(DEFAULT_POOL, "--kyma-worker-pool-name",
                                              help="The Kyma worker pool the injected affinity prefers."),
    output: Output = OUTPUT,
) -> None:
    """Print the Pods as the Snatch webhook would admit them: a row per Pod (NAMESPACE NAME DECISION
    MESSAGE), or with ``-o yaml`` the Pods as a YAML stream, each after a comment with the decision
    (``-o json``: an array of the Pods). Namespaces and Nodes of the input are the cluster context."""
    try:
        objects = load_objects(files)
    except ManifestError as exc:
        _fail(str(exc))
        return
    rendered = render_pods(objects, kyma_worker_pool_name)
    if not rendered:
        typer.echo("# no Pods in the input", err=True)
    rows = [(*r.ref.split("/", 1), r.decision.reason.value, r.decision.message) for r in rendered]
    echo(Listing([r.pod for r in rendered], ("NAMESPACE", "NAME", "DECISION", "MESSAGE"), rows,
                 comments=[f"{r.ref}: {r.decision.reason.value}: {r.decision.message}" for r in rendered]), output)


def webhook(
    cert_dir: str = typer.Option("/tmp/k8s-webhook-server/serving-certs", "--cert-dir",
                                 help="Directory with tls.crt, tls.key and ca.crt (a mounted Secret)."),
    kyma_worker_pool_name: str = typer.Option(DEFAULT_POOL, "--kyma-worker-pool-name",
                                              help="The Kyma worker pool name."),
    port: int = typer.Option(9443, "--port", help="HTTPS port of the admission endpoint."),
    health_port: int = typer.Option(8081, "--health-port", help="Port of /healthz and /readyz (HTTP)."),
    metrics_port: int = typer.Option(8080, "--metrics-port", help="Port of /metrics (HTTP); -1 disables."),
    host: str = typer.Option("0.0.0.0", "--host", help="Listen address."),
    kubeconfig: str = typer.Option("", "--kubeconfig", envvar="RECONCILERY_KUBECONFIG",
                                   help="kubeconfig (default: in-cluster, else ~/.kube/config)."),
    webhook_config_name: str = typer.Option("kim-snatch-mutating-webhook-configuration", "--webhook-cfg-name",
                                            help="MutatingWebhookConfiguration whose caBundle is kept in sync "
                                                 "('' disables the sync enqueue)."),
    node_check_interval: float = typer.Option(10.0, "--node-check-interval",
                                              help="Seconds between Kyma pool node checks."),
    namespace_resync: float = typer.Option(30.0, "--namespace-resync",
                                           help="Seconds between full namespace cache refreshes."),
    dev_state_dir: str = typer.Option("", "--dev-state-dir",
                                      help="Generate a dev CA and serving certificate under this directory "
                                           "and serve them (overrides --cert-dir)."),
    log_level: str = typer.Option("INFO", "--log-level", "-l"),
) -> None:
    """Run the Snatch mutating admission webhook until SIGTERM/SIGINT."""
    # deferred: every CLI command imports this module; only this one needs aiohttp and the webhook stack
    from tasks.snatch.webhook import serve

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if dev_state_dir:
        dev = ensure_dev_certs(dev_state_dir)
        cert_dir = str(dev.cert_dir)
        typer.echo(f"dev certificates in {cert_dir} (CA: {dev.ca_path})", err=True)
    try:
        serve(cert_dir, kyma_worker_pool_name, port, health_port, metrics_port, kubeconfig or None, host,
              node_check_interval=node_check_interval, namespace_resync=namespace_resync,
              webhook_config_name=webhook_config_name or None)
    except CertificateError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"error: cannot listen: {exc}", err=True)
        raise typer.Exit(1) from None
