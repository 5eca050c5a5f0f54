"""Pod mutation of the Snatch webhook: AdmissionReview in, AdmissionReview response with a JSONPatch out.

Pure functions over plain dicts (no I/O). The behaviour follows KIM Snatch (kyma-project/kim-snatch,
``internal/webhook/v1/pod_webhook.go``) with the Reconcilery issue's stricter, non-intrusive rules:

- only Pods in namespaces labelled ``operator.kyma-project.io/managed-by: kyma`` (checked here from
  the namespace cache as well, not only by the webhook configuration's ``namespaceSelector``);
- only Pods not yet scheduled (no ``spec.nodeName``), only ``CREATE``, never in ``kube-system``;
- one ``preferredDuringSchedulingIgnoredDuringExecution`` term with weight 10 and
  ``worker.gardener.cloud/pool In [<pool>]`` is appended; existing affinity rules are kept and the
  term is never added twice (the original appends a second copy);
- with no node of the Kyma pool the Pod is left unchanged (the seed; the original adds a fallback
  annotation instead);
- anything unexpected in the Pod admits it unchanged with a reason; only a malformed AdmissionReview
  itself is an error (:class:`MalformedReview`, HTTP 400 at the server).
"""

from __future__ import annotations

import base64
import copy
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from webhooks import review
from webhooks.review import MalformedReview as MalformedReview  # raised by parse_review

#: Node label that Gardener sets to the worker pool name.
POOL_LABEL = "worker.gardener.cloud/pool"
#: Namespace label that marks Kyma-managed namespaces.
MANAGED_BY_LABEL = "operator.kyma-project.io/managed-by"
MANAGED_BY_VALUE = "kyma"
#: Weight of the injected preferred term (0 low .. 100 high), as the original.
TERM_WEIGHT = 10
#: Namespaces the webhook never mutates, as the original's ``omitted namespaces``.
OMITTED_NAMESPACES = frozenset({"kube-system"})
#: Default Kyma worker pool name (the Kyma default pool that always exists).
DEFAULT_POOL = "cpu-worker-0"

#: The reviews Snatch answers: ``admission.k8s.io/v1`` AdmissionReviews.
REVIEW = review.ADMISSION
ADMISSION_API_VERSION = REVIEW.api_versions[0]
ADMISSION_KIND = REVIEW.kind
#: Largest request body accepted (bytes).
MAX_BODY_BYTES = REVIEW.max_body_bytes

_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class Reason(enum.Enum):
    """Why a Pod was (not) mutated; the ``reason`` label of the admission metric."""

    MUTATED = "mutated"
    NO_POOL_NODE = "no_pool_node"
    NAMESPACE_UNKNOWN = "namespace_unknown"
    NAMESPACE_NOT_MANAGED = "namespace_not_managed"
    FORBIDDEN_NAMESPACE = "forbidden_namespace"
    ALREADY_SCHEDULED = "already_scheduled"
    TERM_PRESENT = "term_present"
    OPERATION_IGNORED = "operation_ignored"
    NOT_A_POD = "not_a_pod"
    MALFORMED_POD = "malformed_pod"


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``AdmissionReview.request`` the webhook uses.

    Attributes:
        uid: ``request.uid``, echoed in the response.
        api_version: the review's ``apiVersion`` (echoed).
        operation: ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT`` (``""`` if absent).
        kind: ``request.kind`` as ``{group, version, kind}`` (``{}`` if absent).
        namespace: the Pod's namespace: ``object.metadata.namespace``, else ``request.namespace``.
        name: the Pod's name (``metadata.name``, ``generateName`` or ``request.name``), for logs.
        object: ``request.object`` (any JSON value; the decision checks its shape).
    """

    uid: str
    api_version: str
    operation: str
    kind: Mapping[str, Any]
    namespace: str
    name: str
    object: Any


@dataclass(frozen=True)
class ClusterContext:
    """What the webhook knows about the cluster when it admits one Pod.

    Attributes:
        pool: the Kyma worker pool name (``--kyma-worker-pool-name``).
        pool_node_present: whether a Node labelled ``worker.gardener.cloud/pool=<pool>`` exists.
        namespace_labels: labels of the Pod's namespace; ``None`` when the namespace is unknown.
    """

    pool: str
    pool_node_present: bool
    namespace_labels: Mapping[str, str] | None


@dataclass(frozen=True)
class Decision:
    """The outcome for one Pod: ``patch`` is a list of RFC 6902 ops (empty: admit unchanged)."""

    reason: Reason
    message: str
    patch: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mutated(self) -> bool:
        return bool(self.patch)


def affinity_term(pool: str) -> dict[str, Any]:
    """The preferred scheduling term Snatch injects: weight 10, ``worker.gardener.cloud/pool In [pool]``."""
    return {
        "weight": TERM_WEIGHT,
        "preference": {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": [pool]}]},
    }


def _is_same_term(term: Any, pool: str) -> bool:
    """True when ``term`` already prefers exactly the Kyma pool (any weight): adding ours would duplicate it."""
    if not isinstance(term, Mapping):
        return False
    pref = term.get("preference")
    if not isinstance(pref, Mapping) or pref.get("matchFields"):
        return False
    exprs = pref.get("matchExpressions")
    if not isinstance(exprs, list) or len(exprs) != 1 or not isinstance(exprs[0], Mapping):
        return False
    expr = exprs[0]
    return expr.get("key") == POOL_LABEL and expr.get("operator") == "In" and expr.get("values") == [pool]


def is_managed(labels: Mapping[str, str] | None) -> bool:
    """Whether namespace ``labels`` carry ``operator.kyma-project.io/managed-by: kyma``."""
    return labels is not None and labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE


def affinity_patch(pod: Any, pool: str) -> Decision:
    """The JSONPatch that appends the Kyma pool term to ``pod`` (no namespace/cluster checks).

    Patch shapes follow the original's diff (see the notes §3.3): ``add`` of the deepest missing
    object, ``replace`` where the value is ``null``, ``add`` at ``.../<k>`` to append to an existing
    list. A Pod whose affinity fields have unexpected types is left unchanged (``MALFORMED_POD``).
    """
    if not isinstance(pod, Mapping):
        return Decision(Reason.MALFORMED_POD, "object is not a JSON object")
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return Decision(Reason.MALFORMED_POD, "spec is missing or not an object")
    if spec.get("nodeName"):
        return Decision(Reason.ALREADY_SCHEDULED, f"pod is already bound to node {spec.get('nodeName')!r}")
    term = affinity_term(pool)
    path = "/spec/affinity"
    if "affinity" not in spec or spec["affinity"] is None:
        op = "add" if "affinity" not in spec else "replace"
        value: Any = {"nodeAffinity": {_PREFERRED: [term]}}
        return _mutated(pool, [{"op": op, "path": path, "value": value}])
    affinity = spec["affinity"]
    if not isinstance(affinity, Mapping):
        return Decision(Reason.MALFORMED_POD, "spec.affinity is not an object")
    path += "/nodeAffinity"
    if "nodeAffinity" not in affinity or affinity["nodeAffinity"] is None:
        op = "add" if "nodeAffinity" not in affinity else "replace"
        return _mutated(pool, [{"op": op, "path": path, "value": {_PREFERRED: [term]}}])
    node_affinity = affinity["nodeAffinity"]
    if not isinstance(node_affinity, Mapping):
        return Decision(Reason.MALFORMED_POD, "spec.affinity.nodeAffinity is not an object")
    path += "/" + _PREFERRED
    if _PREFERRED not in node_affinity or node_affinity[_PREFERRED] is None:
        op = "add" if _PREFERRED not in node_affinity else "replace"
        return _mutated(pool, [{"op": op, "path": path, "value": [term]}])
    preferred = node_affinity[_PREFERRED]
    if not isinstance(preferred, list):
        return Decision(Reason.MALFORMED_POD, f"spec.affinity.nodeAffinity.{_PREFERRED} is not a list")
    if any(_is_same_term(t, pool) for t in preferred):
        return Decision(Reason.TERM_PRESENT, f"pod already prefers pool {pool!r}")
    return _mutated(pool, [{"op": "add", "path": f"{path}/{len(preferred)}", "value": term}])


def _mutated(pool: str, patch: list[dict[str, Any]]) -> Decision:
    return Decision(Reason.MUTATED, f"injecting node affinity for pool {pool!r}", patch)


def decide(request: AdmissionRequest, ctx: ClusterContext) -> Decision:
    """The decision for one admission request, checks in the order a reader expects them.

    Order: operation (CREATE only), kind (Pod), forbidden namespace, pool node present, namespace
    known and managed, then :func:`affinity_patch` (scheduled, malformed, duplicate term).
    """
    if request.operation != "CREATE":
        return Decision(Reason.OPERATION_IGNORED, f"operation {request.operation or '<none>'} is not mutated")
    kind = request.kind
    if kind and (kind.get("group", "") != "" or kind.get("kind") != "Pod"):
        return Decision(Reason.NOT_A_POD, f"kind {kind.get('group', '')}/{kind.get('kind')} is not a Pod")
    if isinstance(request.object, Mapping) and request.object.get("kind") not in (None, "Pod"):
        return Decision(Reason.NOT_A_POD, f"object kind {request.object.get('kind')!r} is not a Pod")
    if request.namespace in OMITTED_NAMESPACES:
        return Decision(Reason.FORBIDDEN_NAMESPACE, "omitting affinity injection: forbidden namespace")
    if not ctx.pool_node_present:
        return Decision(Reason.NO_POOL_NODE, f"no node labelled {POOL_LABEL}={ctx.pool}; pod left unchanged")
    if ctx.namespace_labels is None:
        return Decision(Reason.NAMESPACE_UNKNOWN, f"namespace {request.namespace!r} is unknown")
    if not is_managed(ctx.namespace_labels):
        return Decision(
            Reason.NAMESPACE_NOT_MANAGED,
            f"namespace {request.namespace!r} is not labelled {MANAGED_BY_LABEL}={MANAGED_BY_VALUE}",
        )
    return affinity_patch(request.object, ctx.pool)


def parse_review(body: bytes | str | Any, content_type: str | None = "application/json") -> AdmissionRequest:
    """Decode an AdmissionReview request body (:func:`webhooks.review.parse` with :data:`REVIEW`).

    ``body`` is the raw HTTP body (or an already decoded JSON value); ``content_type`` the request's
    header (``None`` skips the check). Raises :class:`MalformedReview` (status 400; 413 when the
    body exceeds :data:`MAX_BODY_BYTES`) for an empty body, a wrong content type, invalid JSON, a
    wrong ``apiVersion``/``kind``, or a missing ``request`` / ``request.uid``.
    """
    return admission_request(review.parse(body, REVIEW, content_type))


def admission_request(parsed: review.Review) -> AdmissionRequest:
    """The parts of a parsed AdmissionReview the decision uses."""
    request, uid = parsed.request, parsed.uid
    obj = request.get("object")
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    namespace = meta.get("namespace") or request.get("namespace") or ""
    name = meta.get("name") or meta.get("generateName") or request.get("name") or ""
    kind = request.get("kind")
    return AdmissionRequest(
        uid=uid,
        api_version=parsed.api_version,
        operation=str(request.get("operation") or ""),
        kind=kind if isinstance(kind, dict) else {},
        namespace=namespace if isinstance(namespace, str) else "",
        name=name if isinstance(name, str) else "",
        object=obj,
    )


def review_response(request: AdmissionRequest, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview answer for ``decision`` (:func:`decision_response` with the request's uid)."""
    return review.answer(review.Review(REVIEW, request.api_version, request.uid, {}), decision_response(decision))


def decision_response(decision: Decision) -> dict[str, Any]:
    """The ``response`` fields for ``decision``: always ``allowed: true`` (the webhook never blocks).

    ``patchType: JSONPatch`` and ``patch`` (base64 of the JSON op list) only when there are ops; the
    reason goes to ``status.message`` and to the ``snatch-reason`` audit annotation.
    """
    response: dict[str, Any] = {
        "allowed": True,
        "status": {"code": 200, "message": f"{decision.reason.value}: {decision.message}"},
        "auditAnnotations": {"snatch-reason": decision.reason.value},
    }
    if decision.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(decision.patch, separators=(",", ":")).encode()).decode()
    return response


def apply_patch(obj: Any, patch: list[dict[str, Any]]) -> Any:
    """``obj`` with the RFC 6902 ``patch`` applied (a deep copy; ``obj`` is not changed)."""
    if not patch:
        return copy.deepcopy(obj)
    return jsonpatch.apply_patch(obj, patch, in_place=False)


def admission_review(pod: Mapping[str, Any], uid: str = "00000000-0000-0000-0000-000000000000",
                     operation: str = "CREATE") -> dict[str, Any]:
    """An ``admission.k8s.io/v1`` AdmissionReview request for ``pod`` as the API server sends it (tests, bench)."""
    meta = pod.get("metadata") or {}
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": ADMISSION_KIND,
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": dict(pod),
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
