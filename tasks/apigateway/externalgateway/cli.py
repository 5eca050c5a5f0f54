"""``reconcilery render externalgateway -f FILE ...``: what the ``externalgateway`` controller generates
for ExternalGateways, without a cluster.

The input holds the ExternalGateways and the cluster they are reconciled against: their regions
ConfigMaps and CA Secrets, ``kube-system/shoot-info`` (Gardener's cluster domain), the Service
``istio-system/istio-ingressgateway`` (DNSEntry targets), CRDs (Gardener's DNSEntry and Certificate
CRDs turn the Gardener path on), other ExternalGateways and generated objects as they are. Per
ExternalGateway the generated objects are printed in the order they are written, then the
ExternalGateway with its finalizer and status (timestamps left out). Istio Gateways and Namespaces of
the input are the cluster's too (``externalDomain`` no other Gateway's host; a CA Secret of another
namespace used only where its Namespace allows it). One table row each: NAMESPACE
NAME STATUS OBJECTS MESSAGE; ``-o yaml|json`` print the documents. Exit 0 (an ``Error`` status is a
result), 2 for unreadable input.
"""

from __future__ import annotations

import copy
from typing import Any

import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.apigateway.externalgateway import model as m
from tasks.apigateway.externalgateway.plan import ExternalGatewayState, plan, refs

FILES = typer.Option(..., "-f", "--filename", help="YAML/JSON manifests; '-' reads stdin.")
_NOW = "1970-01-01T00:00:00Z"


def _meta(doc: dict[str, Any]) -> dict[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _ref(doc: dict[str, Any]) -> tuple[str, str, str]:
    return str(doc.get("kind")), str(_meta(doc).get("namespace") or "default"), str(_meta(doc).get("name"))


def is_external_gateway(doc: dict[str, Any]) -> bool:
    return doc.get("kind") == m.KIND.kind and str(doc.get("apiVersion", "")).startswith(m.KIND.group + "/")


def render_external_gateways(docs: list[dict[str, Any]]) -> Listing:
    """What ``render externalgateway`` prints for already-read ``docs`` (see the module doc)."""
    gateways = [{**d, "metadata": {**_meta(d), "namespace": _meta(d).get("namespace") or "default"}}
                for d in docs if is_external_gateway(d)]
    by_ref = {_ref(d): d for d in docs if not is_external_gateway(d)}
    namespaces = {str(_meta(d).get("name")): d for d in docs if d.get("kind") == "Namespace"}
    crds = frozenset(str(_meta(d).get("name")) for d in docs if d.get("kind") == "CustomResourceDefinition")
    out: list[dict[str, Any]] = []
    rows: list[tuple[str, ...]] = []
    for obj in gateways:
        eg = m.ExternalGateway.of(obj)
        state = ExternalGatewayState(
            crds=crds or None,
            shoot_info=by_ref.get(("ConfigMap", *m.SHOOT_INFO)),
            external_gateways=tuple(gateways),
            regions_config_map=by_ref.get(("ConfigMap", eg.namespace, eg.regions_config_map)),
            ca_secret=by_ref.get(("Secret", *eg.ca_secret)),
            ca_namespace=namespaces.get(eg.ca_secret[0]),
            gateways=tuple(d for d in docs if d.get("kind") == "Gateway"
                           and str(d.get("apiVersion", "")).startswith("networking.istio.io/")),
            ingress_service=by_ref.get(("Service", *m.INGRESS_SERVICE)),
            existing={ref: by_ref[ref] for ref in refs(eg) if ref in by_ref},
        )
        result = plan(obj, state, _NOW)
        out.extend(copy.deepcopy(list(result.desired)))
        shown = copy.deepcopy(obj)
        if result.outcome.add_finalizer:
            _meta(shown)["finalizers"] = [*eg.finalizers, result.outcome.add_finalizer]
        status = {"state": result.state, "description": result.description,
                  "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in result.conditions]}
        shown["status"] = status
        out.append(shown)
        objects = "\n".join(f"{k} {ns}/{name}" for k, ns, name in (_ref(d) for d in result.desired)) or "-"
        rows.append((eg.namespace, eg.name, result.state or "-", objects, result.description.splitlines()[0]
                     if result.description else ""))
    return Listing(out, ("NAMESPACE", "NAME", "STATUS", "OBJECTS", "MESSAGE"), rows)


def render(files: list[str] = FILES, output: Output = OUTPUT) -> None:
    """Render ExternalGateways into the objects and status the controller would write (no cluster needed)."""
    try:
        docs = load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if not any(is_external_gateway(d) for d in docs):
        typer.echo("note: no ExternalGateway (gateway.kyma-project.io) in the input, nothing to render", err=True)
    echo(render_external_gateways(docs), output)
