"""``reconcilery render apirules|ratelimit|apigateway -f FILE ...``: the API Gateway reconciles without a cluster.

``render ratelimit`` and ``render apigateway`` are described at :func:`render_ratelimits` and
:func:`render_apigateways`; ``render apirules [--diff]``:

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
from tasks.apigateway.operator import resources as res
from tasks.apigateway.operator.plan import OperatorState
from tasks.apigateway.operator.plan import Settings as OperatorSettings
from tasks.apigateway.operator.plan import plan as operator_plan
from tasks.apigateway.plan import Plan, Settings, plan
from tasks.apigateway.ratelimit.plan import RateLimitState
from tasks.apigateway.ratelimit.plan import plan as ratelimit_plan
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
    return _dump(out)


def _load(files: list[str]) -> list[dict[str, Any]]:
    try:
        return load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _dump(out: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(out, sort_keys=False, default_flow_style=False, width=1000) if out else ""


FILES = typer.Option(..., "-f", "--filename", help="YAML/JSON manifests; '-' reads stdin.")
V1BETA1 = typer.Option(True, "--v1beta1-access/--no-v1beta1-access",
                       help="Render as if v1beta1 APIRules are allowed (RECONCILERY_APIRULE_V1BETA1_ACCESS).")


def render(
    files: list[str] = FILES,
    diff: bool = typer.Option(False, "--diff", help="Print create/update/delete actions instead of objects."),
    v1beta1_access: bool = V1BETA1,
) -> None:
    """Render APIRules into the Istio objects and status the controller would write (no cluster needed)."""
    docs = _load(files)
    if not any(is_apirule(d) for d in docs):
        typer.echo("note: no APIRule (gateway.kyma-project.io) in the input, nothing to render", err=True)
    typer.echo(render_documents(docs, diff=diff, settings=Settings(v1beta1_access=v1beta1_access)), nl=False)


# --- RateLimit ------------------------------------------------------------------------------------


def _kind_is(doc: dict[str, Any], kind: model.Kind) -> bool:
    return doc.get("kind") == kind.kind and str(doc.get("apiVersion", "")).startswith(kind.group + "/")


def _crds(docs: list[dict[str, Any]]) -> frozenset[str] | None:
    names = {str((d.get("metadata") or {}).get("name")) for d in docs if d.get("kind") == "CustomResourceDefinition"}
    return frozenset(names) if names else None


def _with_status(obj: dict[str, Any], status: dict[str, Any] | None, finalizers: list[str] | None = None,
                 ) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    if finalizers is not None:
        meta = out.setdefault("metadata", {})
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
    if status is not None:
        out["status"] = status
    return out


def render_ratelimits(docs: list[dict[str, Any]]) -> str:
    """The output of ``render ratelimit``: per RateLimit its EnvoyFilter (when valid), then the RateLimit
    with the status the controller writes. The rest of ``docs`` is the cluster: APIGateway CRs, Pods,
    the other RateLimits, existing EnvoyFilters, CRDs (when any CRD is given, the EnvoyFilter CRD must be)."""
    def ns(d: dict[str, Any]) -> str:
        return str((d.get("metadata") or {}).get("namespace") or "default")

    ratelimits = [d for d in docs if _kind_is(d, model.RATELIMIT)]
    out: list[dict[str, Any]] = []
    for rl in ratelimits:
        name, namespace = str((rl.get("metadata") or {}).get("name")), ns(rl)
        rl = {**rl, "metadata": {**(rl.get("metadata") or {}), "namespace": namespace}}
        state = RateLimitState(
            crds=_crds(docs),
            apigateways=tuple(d for d in docs if _kind_is(d, model.APIGATEWAY)),
            pods=tuple({**d, "metadata": {**(d.get("metadata") or {}), "namespace": ns(d)}} for d in docs
                       if d.get("kind") == "Pod" and ns(d) == namespace),
            ratelimits=tuple(d for d in ratelimits if ns(d) == namespace),
            envoy_filter=next((d for d in docs if d.get("kind") == "EnvoyFilter" and ns(d) == namespace
                               and (d.get("metadata") or {}).get("name") == name), None),
        )
        result = ratelimit_plan(rl, state)
        if result.desired is not None:
            out.append(result.desired)
        out.append(_with_status(rl, result.status.to_dict()))
    return _dump(out)


def render_ratelimit(files: list[str] = FILES) -> None:
    """Render RateLimits into the EnvoyFilter and status the controller would write (no cluster needed)."""
    docs = _load(files)
    if not any(_kind_is(d, model.RATELIMIT) for d in docs):
        typer.echo("note: no RateLimit (gateway.kyma-project.io) in the input, nothing to render", err=True)
    typer.echo(render_ratelimits(docs), nl=False)


# --- APIGateway -----------------------------------------------------------------------------------


def render_apigateways(docs: list[dict[str, Any]], v1beta1_access: bool = True) -> str:
    """The output of ``render apigateway``: per APIGateway CR the objects it manages (created or updated;
    generated Secret data shown as ``<generated>``) and the objects it deletes as ``kind: Deleted``
    entries, then the CR with its finalizers and status. The rest of ``docs`` is the cluster:
    ``kube-system/shoot-info``, the ingress gateway Service, APIRules, VirtualServices, Ory Rules,
    RateLimits, Nodes, CRDs (Gardener's turn on the Gardener path) and the managed objects as they are."""
    def key(d: dict[str, Any]) -> tuple[str, str, str]:
        meta = d.get("metadata") or {}
        return str(d.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))

    gateways = [d for d in docs if _kind_is(d, model.APIGATEWAY)]
    by_key = {key(d): d for d in docs}
    managed_keys = {*res.kyma_gateway_refs(), *res.oathkeeper_refs(),
                    *(("ConfigMap", ns, name) for ns, name in res.LEGACY_UI_CONFIG_MAPS)}
    state = OperatorState(
        apigateways=tuple(gateways),
        crds=_crds(docs),
        shoot_info=by_key.get(("ConfigMap", *res.SHOOT_INFO)),
        ingress_service=by_key.get(("Service", *res.INGRESS_SERVICE)),
        managed={k: v for k, v in by_key.items() if k in managed_keys},
        apirules=tuple(d for d in docs if is_apirule(d)),
        virtual_services=tuple(d for d in docs if d.get("kind") == "VirtualService"),
        ory_rules=tuple(d for d in docs if _kind_is(d, model.ORY_RULE)),
        ratelimits=tuple(d for d in docs if _kind_is(d, model.RATELIMIT)),
        nodes=tuple(d for d in docs if d.get("kind") == "Node"),
    )
    settings = OperatorSettings(v1beta1_access=v1beta1_access, oathkeeper_ready_seconds=0)
    out: list[dict[str, Any]] = []
    for gateway in gateways:
        result = operator_plan(gateway, state, settings)
        for op in result.ops:
            if op.verb == "delete":
                out.append({"kind": "Deleted", "ref": "/".join(p for p in op.ref if p)})
            elif op.obj is not None:
                obj = copy.deepcopy(op.obj)
                if obj.get("data", 0) is None:
                    obj["data"] = "<generated>"
                out.append(obj)
        finalizers = [f for f in (gateway.get("metadata") or {}).get("finalizers") or [] if
                      f not in result.remove_finalizers]
        finalizers += [f for f in result.add_finalizers if f not in finalizers]
        status = result.status.body("") if result.status is not None else None
        if status is not None:
            for condition in status.get("conditions", []):
                condition.pop("lastTransitionTime", None)
        out.append(_with_status(gateway, status, finalizers))
    return _dump(out)


def render_apigateway(files: list[str] = FILES, v1beta1_access: bool = V1BETA1) -> None:
    """Render APIGateway CRs into the objects and status the controller would write (no cluster needed)."""
    docs = _load(files)
    if not any(_kind_is(d, model.APIGATEWAY) for d in docs):
        typer.echo("note: no APIGateway (operator.kyma-project.io) in the input, nothing to render", err=True)
    typer.echo(render_apigateways(docs, v1beta1_access), nl=False)
