"""The SkrStatus of one connect (pure; after ``pkg/skr/runtime``'s SkrStatus saver).

KCP object ``SkrStatus`` ``<kcp namespace>/<kyma>``: the runtime's identity from the Scope (provider,
region, shoot, broker plan, global account and subaccount labels), the connection times (the last 10,
``now`` appended) and their average interval in seconds, one condition per handle (installer
manifests, readiness, each SKR kind's reconciler: ``{title, ok, outcomes, ...}``). The time is an
input (``now``, RFC 3339), never read here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kube.toolkit.actions import Action
from kube.toolkit.outcome import Outcome
from tasks.cloud import names
from tasks.cloud.rotation import past_connections

__all__ = ["plan"]


def plan(namespace: str, kyma: str, scope: Mapping[str, Any] | None, current: Mapping[str, Any] | None,
         handles: Sequence[Mapping[str, Any]], now: str) -> Outcome:
    """The SkrStatus to write after a connect at ``now``, the Outcome's one write: ``create`` when
    ``current`` (as read) is ``None``, else an ``update`` (replace) under its ``resourceVersion``."""
    labels = ((scope or {}).get("metadata") or {}).get("labels") or {}
    spec_scope = (scope or {}).get("spec") or {}
    previous = [str(t) for t in ((current or {}).get("spec") or {}).get("pastConnections") or []]
    past, average = past_connections(previous, now)
    body: dict[str, Any] = {
        "metadata": {"name": kyma, "namespace": namespace, "labels": {names.LABEL_KYMA_NAME: kyma}},
        "spec": {
            "kymaName": kyma,
            "provider": str(spec_scope.get("provider") or ""),
            "brokerPlan": str(labels.get(names.LABEL_BROKER_PLAN) or ""),
            "globalAccount": str(labels.get(names.LABEL_GLOBAL_ACCOUNT) or ""),
            "subAccount": str(labels.get(names.LABEL_SUBACCOUNT) or ""),
            "region": str(spec_scope.get("region") or ""),
            "shootName": str(spec_scope.get("shootName") or ""),
            "pastConnections": past,
            "averageIntervalSeconds": average,
            "conditions": [dict(h) for h in handles],
        },
    }
    if current is None:
        return Outcome(writes=(Action.on("create", names.SKR_STATUS, body),))
    body["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
    return Outcome(writes=(Action.on("update", names.SKR_STATUS, body, actual=dict(current)),))
