"""``reconcilery render apirules|ratelimit|apigateway -f FILE ...``: the API Gateway reconciles without a cluster.

``render ratelimit`` and ``render apigateway`` are described at :func:`render_ratelimits` and
:func:`render_apigateways`; ``render apirules [--diff]``:

Reads YAML or JSON documents (``-`` = stdin; ``kind: List`` documents are expanded). APIRules of every
served version (v1beta1 included, through its ``istio`` or ``ory`` processor) are rendered in input order;
every other document is the cluster state the reconcile may look up. For each
APIRule the documents are the desired objects in processor order, then the APIRule with the status
(and finalizer) the controller would write. With ``--diff``: one document per APIRule with its status
and the create / update / delete actions against the owned objects in the input.
Each command prints one table row per rendered object by default, and its documents with ``-o yaml``
(a YAML stream) or ``-o json`` (:mod:`kube.printers`).
Exit 0 when every APIRule was rendered (an ``Error`` status is a result), 2 for unreadable input.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import typer

from kube.manifests import ManifestError, load_objects
from kube.printers import OUTPUT, Listing, Output, echo
from tasks.apigateway import model
from tasks.apigateway.operator import resources as res
from tasks.apigateway.operator.plan import OperatorPolicy, OperatorState
from tasks.apigateway.operator.plan import plan as operator_plan
from tasks.apigateway.plan import Plan, RulePolicy, plan
from tasks.apigateway.ratelimit.model import RateLimit
from tasks.apigateway.ratelimit.plan import RateLimitState, desired_envoy_filter
from tasks.apigateway.ratelimit.plan import plan as ratelimit_plan
from tasks.apigateway.state import ClusterState


def is_apirule(doc: dict[str, Any]) -> bool:
    return doc.get("kind") == model.KIND and str(doc.get("apiVersion", "")).startswith(model.GROUP + "/")


def written_apirule(apirule: dict[str, Any], result: Plan) -> dict[str, Any]:
    """The APIRule as the controller leaves it: status replaced, finalizer added or released, the
    ``migration-step`` annotation advanced (or removed)."""
    obj = copy.deepcopy(apirule)
    meta = obj.setdefault("metadata", {})
    if result.annotations and not result.failed:
        annotations = {**(meta.get("annotations") or {}), **result.annotations}
        meta["annotations"] = {k: v for k, v in annotations.items() if v is not None}
        if not meta["annotations"]:
            del meta["annotations"]
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


def _meta(obj: dict[str, Any]) -> tuple[str, str]:
    """``(namespace, name)`` as ``render`` names an object (``default`` namespace when none)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name", ""))


def _message(status: dict[str, Any] | None) -> str:
    """The first line of a status description, for a table's MESSAGE column."""
    return (str((status or {}).get("description") or "").splitlines() or [""])[0]


def _kinds(objects: Any) -> str:
    """``VirtualService, AuthorizationPolicy x2``: the kinds of ``objects`` in order, counted."""
    counts: dict[str, int] = {}
    for obj in objects:
        counts[str(obj.get("kind"))] = counts.get(str(obj.get("kind")), 0) + 1
    return ", ".join(k if n == 1 else f"{k} x{n}" for k, n in counts.items()) or "-"


def _actions(docs: list[dict[str, Any]]) -> str:
    """``create VirtualService, AuthorizationPolicy x2; update VirtualService``: the kinds per verb."""
    verbs: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        verbs.setdefault(str(doc["verb"]), []).append(doc)
    return "; ".join(f"{verb} {_kinds(of)}" for verb, of in verbs.items()) or "-"


def render_documents(docs: list[dict[str, Any]], diff: bool = False, settings: RulePolicy | None = None) -> Listing:
    """What ``render apirules`` prints for already-read ``docs`` (APIRules rendered, the rest is state):
    one row per APIRule (NAMESPACE NAME STATUS OBJECTS MESSAGE; with ``diff``: ACTIONS for OBJECTS).

    Default settings are the controller's, with v1beta1 access allowed (a dry run shows what the
    v1beta1 processors would write)."""
    settings = settings or RulePolicy(v1beta1_access=True)
    state = ClusterState.from_manifests(d for d in docs if not is_apirule(d))
    out: list[dict[str, Any]] = []
    rows: list[tuple[str, ...]] = []
    for apirule in (d for d in docs if is_apirule(d)):
        result = plan(apirule, state, settings)
        written = written_apirule(apirule, result)
        status = written.get("status")
        namespace, name = _meta(apirule)
        state_ = str((status or {}).get("state") or "-")
        message = _message(status)
        if result.migration_step:  # the Ory → Istio migration step this reconcile runs
            message = f"{message} (migration step {result.migration_step})"
        if diff:
            actions = [_action_doc(a) for a in result.actions]
            entry = {"apirule": f"{namespace}/{name}", "pipeline": result.pipeline, "status": status,
                     "actions": actions}
            if result.migration_step:
                entry["migrationStep"] = result.migration_step
            out.append(entry)
            rows.append((namespace, name, state_, _actions(actions), message))
        else:
            out.extend(result.desired)
            out.append(written)
            rows.append((namespace, name, state_, _kinds(result.desired), message))
    columns = ("NAMESPACE", "NAME", "STATUS", "ACTIONS" if diff else "OBJECTS", "MESSAGE")
    return Listing(out, columns, rows)


def _load(files: list[str]) -> list[dict[str, Any]]:
    try:
        return load_objects(files)
    except ManifestError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


FILES = typer.Option(..., "-f", "--filename", help="YAML/JSON manifests; '-' reads stdin.")
V1BETA1 = typer.Option(True, "--v1beta1-access/--no-v1beta1-access",
                       help="Render as if v1beta1 APIRules are allowed (RECONCILERY_APIRULE_V1BETA1_ACCESS).")
CROSS_NAMESPACE = typer.Option(
    False, "--allow-cross-namespace-services",
    help="Render as if an APIRule may name a Service of any namespace (RECONCILERY_APIRULE_ALLOW_CROSS_NAMESPACE_"
         "SERVICES); without it, a Namespace of the input must allow the APIRule's (annotation "
         "gateway.kyma-project.io/allow-apirules-from).")


def render(
    files: list[str] = FILES,
    diff: bool = typer.Option(False, "--diff", help="Print create/update/delete actions instead of objects."),
    v1beta1_access: bool = V1BETA1,
    cross_namespace: bool = CROSS_NAMESPACE,
    output: Output = OUTPUT,
) -> None:
    """Render APIRules into the Istio objects and status the controller would write (no cluster needed)."""
    docs = _load(files)
    if not any(is_apirule(d) for d in docs):
        typer.echo("note: no APIRule (gateway.kyma-project.io) in the input, nothing to render", err=True)
    echo(render_documents(docs, diff=diff, settings=RulePolicy(
        v1beta1_access=v1beta1_access, allow_cross_namespace_services=cross_namespace)), output)


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


def _patched(obj: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    """``obj``'s status with the merge ``patch`` of an Outcome applied (``None`` values remove keys)."""
    status = dict(obj.get("status") or {}) if isinstance(obj.get("status"), dict) else {}
    status.update(patch or {})
    return {k: v for k, v in status.items() if v is not None}


def render_ratelimits(docs: list[dict[str, Any]]) -> Listing:
    """What ``render ratelimit`` prints: per RateLimit its EnvoyFilter (when valid), then the RateLimit
    with the status the controller writes; a row per RateLimit (NAMESPACE NAME STATUS ENVOYFILTER
    MESSAGE). The rest of ``docs`` is the cluster: APIGateway CRs, Pods,
    the other RateLimits, existing EnvoyFilters, CRDs (when any CRD is given, the EnvoyFilter CRD must be)."""
    def ns(d: dict[str, Any]) -> str:
        return str((d.get("metadata") or {}).get("namespace") or "default")

    ratelimits = [d for d in docs if _kind_is(d, model.RATELIMIT)]
    out: list[dict[str, Any]] = []
    rows: list[tuple[str, ...]] = []
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
        status = _patched(rl, ratelimit_plan(rl, state).status)
        desired = desired_envoy_filter(RateLimit.parse(rl)) if status.get("state") == "Ready" else None
        if desired is not None:
            out.append(desired)
        out.append(_with_status(rl, status))
        rows.append((namespace, name, str(status.get("state") or "-"),
                     _meta(desired)[1] if desired is not None else "-", _message(status)))
    return Listing(out, ("NAMESPACE", "NAME", "STATUS", "ENVOYFILTER", "MESSAGE"), rows)


def render_ratelimit(files: list[str] = FILES, output: Output = OUTPUT) -> None:
    """Render RateLimits into the EnvoyFilter and status the controller would write (no cluster needed)."""
    docs = _load(files)
    if not any(_kind_is(d, model.RATELIMIT) for d in docs):
        typer.echo("note: no RateLimit (gateway.kyma-project.io) in the input, nothing to render", err=True)
    echo(render_ratelimits(docs), output)


# --- APIGateway -----------------------------------------------------------------------------------


def render_apigateways(docs: list[dict[str, Any]], v1beta1_access: bool = True) -> Listing:
    """What ``render apigateway`` prints: per APIGateway CR the objects it manages (created or updated;
    generated Secret data shown as ``<generated>``) and the objects it deletes as ``kind: Deleted``
    entries, then the CR with its finalizers and status; a row per CR (NAME STATUS OBJECTS DELETED
    MESSAGE, the middle two counted). The rest of ``docs`` is the cluster:
    ``kube-system/shoot-info``, the ingress gateway Service, APIRules, VirtualServices, Ory Rules,
    RateLimits, Nodes (none: a production-sized cluster), CRDs (Gardener's turn on the Gardener path) and
    the managed objects as they are."""
    def key(d: dict[str, Any]) -> tuple[str, str, str]:
        meta = d.get("metadata") or {}
        return str(d.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))

    gateways = [d for d in docs if _kind_is(d, model.APIGATEWAY)]
    by_key = {key(d): d for d in docs}
    managed_keys = {*res.network_policy_refs(), *res.kyma_gateway_refs(), *res.oathkeeper_refs(),
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
        nodes=tuple(d for d in docs if d.get("kind") == "Node") or None,  # none given: sized as production
    )
    settings = OperatorPolicy(v1beta1_access=v1beta1_access, oathkeeper_ready_seconds=0)
    out: list[dict[str, Any]] = []
    rows: list[tuple[str, ...]] = []
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
        deleted = sum(op.verb == "delete" for op in result.ops)
        applied = sum(op.verb != "delete" and op.obj is not None for op in result.ops)
        rows.append((_meta(gateway)[1], str((status or {}).get("state") or "-"), str(applied), str(deleted),
                     _message(status)))
    return Listing(out, ("NAME", "STATUS", "OBJECTS", "DELETED", "MESSAGE"), rows)


def render_apigateway(files: list[str] = FILES, v1beta1_access: bool = V1BETA1, output: Output = OUTPUT) -> None:
    """Render APIGateway CRs into the objects and status the controller would write (no cluster needed)."""
    docs = _load(files)
    if not any(_kind_is(d, model.APIGATEWAY) for d in docs):
        typer.echo("note: no APIGateway (operator.kyma-project.io) in the input, nothing to render", err=True)
    echo(render_apigateways(docs, v1beta1_access), output)
