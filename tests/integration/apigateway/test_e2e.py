"""End to end: dev API server → ``reconcilery watch`` → Redis workqueue → two ``reconcilery worker``
processes → dev API server. Create, change a rule, change a referenced Service's selector, fix a
broken APIRule, delete."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kube import resources
from tasks.apigateway import controller
from tests.fixtures.platform import Platform
from tests.fixtures.processes import wait_for
from tests.integration.apigateway.conftest import AGW, example

pytestmark = pytest.mark.integration

FAST = {
    "RECONCILERY_APIRULE_ERROR_RETRY_SECONDS": "1",
    "RECONCILERY_APIRULE_ERROR_RETRY_CAP_SECONDS": "2",
    "RECONCILERY_APIRULE_RECONCILIATION_SECONDS": "600",
}


def status_of(agw: AGW, name: str) -> dict[str, Any]:
    rule = agw.get(name)
    return (rule or {}).get("status") or {}


def settled(agw: AGW, name: str, state: str) -> bool:
    """The APIRule's status says ``state`` for its current generation."""
    rule = agw.get(name)
    if rule is None:
        return False
    status = rule.get("status") or {}
    return status.get("state") == state and status.get("observedGeneration") == rule["metadata"]["generation"]


def test_pipeline_create_change_service_fix_delete(agw: AGW, platform: Callable[..., Platform]) -> None:
    plat = platform(domains="tasks.apigateway.controller", controllers="apirule", workers=2,
                    queues="apigateway", **FAST)
    try:
        agw.create(example("orders"))
        agw.create(example("broken"))
        wait_for(lambda: settled(agw, "orders", "Ready"), timeout=20, message="orders Ready")
        wait_for(lambda: settled(agw, "broken", "Error"), timeout=20, message="broken Error")
        assert status_of(agw, "broken")["description"].startswith("Validation errors: Attribute ")
        assert agw.get("orders")["metadata"]["finalizers"] == ["gateway.kyma-project.io/subresources"]  # type: ignore[index]
        owned = agw.owned("orders")
        assert [len(owned[k]) for k in ("VirtualService", "AuthorizationPolicy", "RequestAuthentication")] == [1, 3, 1]
        assert [e["reason"] for e in agw.events("orders")] == ["Reconciled"]

        # change a rule: /health also answers HEAD
        rule = agw.get("orders")
        assert rule is not None
        rule["spec"]["rules"][0]["methods"] = ["GET", "HEAD"]
        rule = agw.kube.replace(controller.APIRULE, rule)

        def vs_has_head() -> bool:
            (vs,) = agw.owned("orders")["VirtualService"]
            return any(r["match"][0]["method"]["regex"] == "^(GET|HEAD)$" for r in vs["spec"]["http"])

        wait_for(vs_has_head, timeout=20, message="VirtualService updated")
        wait_for(lambda: settled(agw, "orders", "Ready"), timeout=20, message="orders Ready after change")

        # change the referenced Service's selector: the policies follow (a Service event, no APIRule change)
        service = agw.kube.get(resources.SERVICE, "orders", "shop")
        assert service is not None
        service["spec"]["selector"] = {"app": "orders", "tier": "backend", "track": "canary"}
        agw.kube.replace(resources.SERVICE, service)

        def policies_follow() -> bool:
            policies = agw.owned("orders")["AuthorizationPolicy"]
            return len(policies) == 3 and all(
                p["spec"]["selector"]["matchLabels"].get("track") == "canary" for p in policies)

        wait_for(policies_follow, timeout=20, message="AuthorizationPolicies follow the Service selector")

        # fix the broken one
        broken = example("broken")
        current = agw.get("broken")
        assert current is not None
        current["spec"]["rules"] = [broken["spec"]["rules"][0],
                                    {"path": "/reports", "methods": ["GET"], "noAuth": True,
                                     "service": {"name": "catalog", "port": 9090}}]
        agw.kube.replace(controller.APIRULE, current)
        wait_for(lambda: settled(agw, "broken", "Ready"), timeout=20, message="broken fixed → Ready")
        assert sorted(e["reason"] for e in agw.events("broken")) == ["Reconciled", "ValidationFailed"]

        # delete: owned objects go, then the finalizer, then the APIRule
        agw.kube.delete(controller.APIRULE, "orders", "shop")
        wait_for(lambda: agw.get("orders") is None, timeout=20, message="orders deleted")
        owned = agw.owned("orders")
        assert all(not objs for objs in owned.values())
        assert len(agw.owned("broken")["VirtualService"]) == 1
    except Exception:
        print(plat.logs())
        raise
