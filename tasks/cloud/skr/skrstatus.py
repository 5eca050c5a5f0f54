"""Saving ``SkrStatus`` (KCP, same name as the Kyma, in ``kcp-system``) after a connect.

After ``pkg/skr/runtime`` (the SkrStatus saver): the runtime's identity from the Scope, the connection
times (the last 10) and their average interval, one condition per handle (installer manifests,
readiness, each SKR kind's reconciler) with its outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube import Kube
from kube.clock import now_rfc3339
from tasks.cloud import names
from tasks.cloud.rotation import past_connections

__all__ = ["save"]


def save(kcp: Kube, namespace: str, kyma: str, scope: Mapping[str, Any] | None,
         handles: list[dict[str, Any]], now: str = "") -> dict[str, Any]:
    """Create or replace the SkrStatus of ``kyma``; ``handles`` are ``{title, ok, outcomes, ...}``."""
    now = now or now_rfc3339()
    labels = ((scope or {}).get("metadata") or {}).get("labels") or {}
    spec_scope = (scope or {}).get("spec") or {}
    current = kcp.get(names.SKR_STATUS, kyma, namespace)
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
            "conditions": handles,
        },
    }
    if current is None:
        return kcp.create(names.SKR_STATUS, body)
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    return kcp.replace(names.SKR_STATUS, body)
