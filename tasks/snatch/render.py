"""``reconcilery render snatch``: Pods as the webhook would admit them, given Namespaces and Nodes (pure).

The cluster context comes from the same input: the pool node check looks at the given Nodes, the
namespace check at the given Namespaces (a Pod whose Namespace is not in the input is unknown and
stays unchanged, as in the webhook).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.snatch.mutate import (
    POOL_LABEL,
    ClusterContext,
    Decision,
    MalformedReview,
    Reason,
    admission_review,
    apply_patch,
    decide,
    parse_review,
)


@dataclass(frozen=True)
class Rendered:
    """One admitted Pod: the object after the patch and the decision that produced it."""

    pod: dict[str, Any]
    decision: Decision

    @property
    def ref(self) -> str:
        meta = self.pod.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name') or meta.get('generateName') or '?'}"


def flatten(objects: Iterable[Any]) -> list[dict[str, Any]]:
    """Objects with ``kind: List`` (and ``*List``) expanded into their items; non-objects dropped."""
    out: list[dict[str, Any]] = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            out.extend(flatten(obj["items"]))
        else:
            out.append(obj)
    return out


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def render(objects: Iterable[Any], pool: str) -> list[Rendered]:
    """Every Pod of ``objects`` after admission by a webhook for ``pool``, in input order.

    Pods without ``metadata.namespace`` are in ``default``, as ``kubectl apply`` would put them.
    """
    items = flatten(objects)
    pool_present = any(o.get("kind") == "Node" and _labels(o).get(POOL_LABEL) == pool for o in items)
    namespaces = {(o.get("metadata") or {}).get("name"): _labels(o) for o in items if o.get("kind") == "Namespace"}
    rendered: list[Rendered] = []
    for obj in items:
        if obj.get("kind") != "Pod":
            continue
        pod = dict(obj)
        meta = pod.get("metadata")
        if isinstance(meta, dict) and not meta.get("namespace"):
            pod["metadata"] = {**meta, "namespace": "default"}
        try:
            request = parse_review(admission_review(pod), content_type=None)
        except MalformedReview as exc:  # pragma: no cover - admission_review always builds a valid review
            rendered.append(Rendered(pod, Decision(Reason.MALFORMED_POD, exc.message)))
            continue
        ctx = ClusterContext(pool, pool_present, namespaces.get(request.namespace))
        decision = decide(request, ctx)
        rendered.append(Rendered(apply_patch(pod, decision.patch), decision))
    return rendered
