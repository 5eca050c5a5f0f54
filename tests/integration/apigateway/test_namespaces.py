"""Issue 27 against the dev API server: an APIRule of ``shop`` naming a Service of ``istio-system``
writes nothing there until the Namespace allows ``shop``, and loses its policies there when the
Namespace withdraws the permission."""

from __future__ import annotations

import pytest

from kube import resources
from tasks.apigateway import controller
from tests.integration.apigateway.conftest import AGW, example
from workers.controller import Key, ResultKind

pytestmark = pytest.mark.integration

VICTIM = "istio-system"
ALLOW_APIRULES = "gateway.kyma-project.io/allow-apirules-from"  # tasks.apigateway.namespaces.ALLOW_APIRULES


def policies_in(agw: AGW, namespace: str) -> list[str]:
    return [f"{kind}/{o['metadata']['name']}"
            for kind in ("AuthorizationPolicy", "RequestAuthentication")
            for o in agw.kube.list(controller.OWNED[kind], namespace=namespace)]


def annotate(agw: AGW, value: str | None) -> None:
    ns = agw.kube.get(resources.NAMESPACE, VICTIM)
    assert ns is not None
    ns["metadata"].setdefault("annotations", {})
    if value is None:
        ns["metadata"]["annotations"].pop(ALLOW_APIRULES, None)
    else:
        ns["metadata"]["annotations"][ALLOW_APIRULES] = value
    agw.kube.replace(resources.NAMESPACE, ns)


def test_an_apirule_writes_into_another_namespace_only_while_it_allows_it(agw: AGW) -> None:
    agw.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "istiod", "namespace": VICTIM},
                "spec": {"selector": {"app": "istiod"}, "ports": [{"port": 15012}]}})
    attack = example("httpbin-public")
    attack["metadata"]["name"] = "sneaky"
    attack["spec"]["hosts"] = ["sneaky"]
    attack["spec"]["service"] = {"name": "istiod", "namespace": VICTIM, "port": 15012}
    agw.create(attack)
    key = Key("local", "shop", "sneaky")

    result = controller.reconcile(key)
    status = agw.get("sneaky")["status"]  # type: ignore[index]
    assert result.outcome is ResultKind.ERROR and status["state"] == "Error"
    assert f'Namespace "{VICTIM}" does not allow APIRules of namespace "shop"' in status["description"]
    assert policies_in(agw, VICTIM) == []
    read = controller.read_state(agw.kube, agw.get("sneaky"))  # type: ignore[arg-type]
    assert read.services == {} and read.pods == ()  # the other namespace's Services and Pods not even read
    assert set(read.namespaces) == {VICTIM}

    annotate(agw, "shop")
    assert controller.reconcile(key).outcome is ResultKind.REQUEUE_AFTER
    assert agw.get("sneaky")["status"]["state"] == "Ready"  # type: ignore[index]
    assert len(policies_in(agw, VICTIM)) == 1

    annotate(agw, None)  # withdrawn: the next reconcile removes what was written there
    assert controller.reconcile(key).outcome is ResultKind.ERROR
    assert agw.get("sneaky")["status"]["state"] == "Error"  # type: ignore[index]
    assert policies_in(agw, VICTIM) == []
