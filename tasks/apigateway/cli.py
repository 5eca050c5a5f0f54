"""``reconcilery render apirules -f FILE ... [--diff]``: the APIRule reconcile without a cluster.

Reads YAML or JSON documents (``-`` = stdin; ``kind: List`` documents are expanded). APIRules of every
served version (v1beta1 included, through its ``istio`` or ``ory`` processor) are rendered in input order;
every other document is the cluster state the reconcile may look up. For each
APIRule the output is a YAML stream of the desired objects in processor order, then the APIRule with
the status (and finalizer) the controller would write. With ``--diff``: one document per APIRule with
its status and the create / update / delete actions against the owned objects in the input.
Exit 0 when every APIRule was rendered (an ``Error`` status is a result), 2 for unreadable input.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import typer
import yaml

from kube.manifests import ManifestError, load_objects
from tasks.apigateway import model
from tasks.apigateway.reconcile_plan import Plan, Settings, plan
from tasks.apigateway.state import ClusterState


def is_apirule(doc: dict[str, Any]) -> bool:
    return doc.get("kind") == model.KIND and str(doc.get("apiVersion", "")).startswith(model.GROUP + "/")


def written_apirule(apirule: dict[str, Any], result: Plan) -> dict[str, Any]:
    """The APIRule as the controller leaves it: status replaced, finalizer added or released."""
    obj = copy.deepcopy(apirule)
    meta = obj.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if result.add_finalizer and model.FINALIZER not in finalizers:
        finalizers.append(model.FINALIZER)
    if result.remove_finalizer:
        finalizers = [f for f in finalizers if f != model.FINALIZER]
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    if result.status is not None:
        obj["status"] = result.status.to_dict()
        if result.v1beta1 is not None:  # the per-component v1beta1 status behind state/description
            obj["status"].update(result.v1beta1.to_dict())
    return obj


def _action_doc(action: Any) -> dict[str, Any]:
    meta = action.object.get("metadata") or {}
    doc: dict[str, Any] = {"verb": action.verb, "kind": action.kind, "namespace": action.namespace}
    if action.verb == "create":
        doc["generateName"] = meta.get("generateName", "")
        doc["object"] = action.object
    else:
        doc["name"] = action.name
    if action.verb == "update" and action.actual is not None:
        doc["patch"] = jsonpatch.make_patch(action.actual, action.object).patch
    return doc


def render_documents(docs: list[dict[str, Any]], diff: bool = False, settings: Settings | None = None) -> str:
    """The output of ``render`` for already-read ``docs`` (APIRules rendered, the rest is state).

    Default settings are the controller's, with v1beta1 access allowed (a dry run shows what the
    v1beta1 processors would write)."""
    settings = settings or Settings(v1beta1_access=True)
    state = ClusterState.from_manifests(d for d in docs if not is_apirule(d))
    out: list[dict[str, Any]] = []
    for apirule in (d for d in docs if is_apirule(d)):
        result = plan(apirule, state, settings)
        if diff:
            meta = apirule.get("metadata") or {}
            out.append(
                {
                    "apirule": f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}",
                    "pipeline": result.pipeline,
                    "status": written_apirule(apirule, result).get("status"),
                    "actions": [_action_doc(a) for a in result.actions],
                }
            )
        else:
            out.extend(result.desired)
            out.append(written_apirule(apirule, result))
    return yaml.safe_dump_all(out, sort_keys=False, default_flow_style=False, width=1000) if out else ""


def render(
    files: list[str] = typer.Option(..., "-f", "--filename", help="YAML/JSON manifests; '-' reads stdin."),
    diff: bool = typer.Option(False, "--diff", help="Print create/update/delete actions instead of objects."),
) -> None:
    """Render APIRules into the Istio objects and status the controller would write (no cluster needed)."""
    try:
        docs = load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if not any(is_apirule(d) for d in docs):
        typer.echo("note: no APIRule (gateway.kyma-project.io) in the input, nothing to render", err=True)
    typer.echo(render_documents(docs, diff=diff), nl=False)
