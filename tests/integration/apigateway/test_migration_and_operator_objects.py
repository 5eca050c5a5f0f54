"""Against the dev API server, in-process reconciles (the ``agw`` fixture):

- the example v1beta1 APIRule mid-migration (``examples/apigateway/35-migration.yaml``): a validation
  error stops it where it is; fixed, it switches the VirtualService, then deletes the Ory Rule and drops
  the annotation;
- the APIGateway's NetworkPolicy on enable, after drift and on disable; Oathkeeper's HPA, maester
  PeerAuthentication and Rule CRD as written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import config
from kube import Resource, resources
from tasks.apigateway import controller, reads
from tasks.apigateway.operator import controller as operator
from tasks.apigateway.operator import resources as res
from tests.integration.apigateway.conftest import AGW, ROOT, documents
from workers.controller import Key, ResultKind

pytestmark = pytest.mark.integration

STEP = "gateway.kyma-project.io/migration-step"
OATHKEEPER_PRINCIPAL = "cluster.local/ns/kyma-system/sa/oathkeeper-maester-account"
ORY_RULE = controller.OWNED["Rule"]


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """v1beta1 access allowed (migrations run, Oathkeeper installed), no wait between steps or for Pods."""
    for name, value in (("RECONCILERY_APIRULE_V1BETA1_ACCESS", "allow"), ("RECONCILERY_APIRULE_MIGRATION_SECONDS", "0"),
                        ("RECONCILERY_APIGATEWAY_OATHKEEPER_READY_SECONDS", "0")):
        monkeypatch.setenv(name, value)
    config.reset()
    yield
    monkeypatch.undo()
    config.reset()


def rule_annotations(agw: AGW) -> dict[str, str]:
    rule = agw.get("catalog-legacy")
    assert rule is not None
    return dict(rule["metadata"].get("annotations") or {})


def routes(agw: AGW) -> list[str]:
    (vs,) = agw.owned("catalog-legacy")["VirtualService"]
    return [r["route"][0]["destination"]["host"] for r in vs["spec"]["http"]]


def principals(agw: AGW) -> set[str]:
    return {p for ap in agw.owned("catalog-legacy")["AuthorizationPolicy"] for r in ap["spec"]["rules"]
            for f in r.get("from", []) for p in f["source"].get("principals", [])}


def test_the_example_migration_stops_on_error_then_finishes(agw: AGW, allowed: None) -> None:
    ory_rule, virtual_service, apirule = documents(ROOT / "examples/apigateway/35-migration.yaml")
    agw.create(ory_rule)
    agw.create(virtual_service)
    broken = {**apirule, "spec": {**apirule["spec"], "service": {"name": "gone", "port": 9090}}}
    agw.create(broken)
    key = Key("local", "shop", "catalog-legacy")

    failed = controller.reconcile(key)
    assert failed.outcome is ResultKind.ERROR
    rule = agw.get("catalog-legacy")
    assert rule is not None and rule["status"]["state"] == "Error"
    assert rule_annotations(agw)[STEP] == "apply-istio-authorization"  # not advanced
    assert "ory-oathkeeper-proxy.kyma-system.svc.cluster.local" in routes(agw)
    assert len(agw.kube.list(ORY_RULE, "shop")) == 1

    rule["spec"]["service"] = apirule["spec"]["service"]
    agw.kube.replace(controller.APIRULE, rule)
    switched = controller.reconcile(key)
    assert switched.outcome is ResultKind.REQUEUE_AFTER and switched.requeue_after == 0  # the migration interval
    assert rule_annotations(agw)[STEP] == "vs-switch-to-service"
    assert "reconcilery.kyma-project.io/migration-step-at" in rule_annotations(agw)
    assert routes(agw) == ["catalog.shop.svc.cluster.local", "catalog.shop.svc.cluster.local"]
    assert OATHKEEPER_PRINCIPAL in principals(agw)  # Oathkeeper still admitted while the Ory Rule exists
    assert len(agw.kube.list(ORY_RULE, "shop")) == 1

    done = controller.reconcile(key)
    assert done.outcome is ResultKind.REQUEUE_AFTER and done.requeue_after == 1800
    assert not {STEP, "reconcilery.kyma-project.io/migration-step-at"} & set(rule_annotations(agw))
    assert agw.kube.list(ORY_RULE, "shop") == []
    assert principals(agw) == {"cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"}
    assert len(agw.owned("catalog-legacy")["RequestAuthentication"]) == 1
    assert agw.get("catalog-legacy")["status"]["state"] == "Ready"  # type: ignore[index]


def _get(agw: AGW, kind: str, name: str, namespace: str | None = res.NAMESPACE) -> dict[str, Any] | None:
    resource: Resource = res.RESOURCES[kind]
    return agw.kube.get(resource, name, namespace)


def test_network_policy_and_oathkeeper_objects(agw: AGW, allowed: None) -> None:
    for i in range(3):  # a production-sized cluster: 12 CPUs, 48 Gi
        agw.kube.create(resources.NODE, {"metadata": {"name": f"node-{i}"},
                                         "status": {"capacity": {"cpu": "4", "memory": "16Gi"}}})
    agw.kube.create(reads.APIGATEWAY, {"apiVersion": "operator.kyma-project.io/v1alpha1", "kind": "APIGateway",
                                       "metadata": {"name": "default"}, "spec": {"networkPoliciesEnabled": True}})
    key = Key("local", "", "default")
    assert operator.reconcile(key).outcome is ResultKind.REQUEUE_AFTER
    assert reads.apigateway(agw.kube, "default")["status"]["state"] == "Ready"  # type: ignore[index]

    policy = _get(agw, "NetworkPolicy", res.NETWORK_POLICY[1])
    assert policy is not None
    assert policy["metadata"]["labels"]["api-gateway.kyma-project.io/managed-by"] == "default"
    assert policy["spec"] == res.network_policy("default")["spec"]

    hpa = _get(agw, "HorizontalPodAutoscaler", "ory-oathkeeper")
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 10)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ory-oathkeeper"}
    assert hpa["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    pa = _get(agw, "PeerAuthentication", "ory-oathkeeper-maester-metrics")
    assert pa is not None and pa["spec"]["portLevelMtls"] == {"8080": {"mode": "PERMISSIVE"}}
    assert _get(agw, "Service", "ory-oathkeeper-maester-metrics") is not None
    assert _get(agw, "ServiceAccount", "ory-oathkeeper") is not None
    crd = _get(agw, "CustomResourceDefinition", "rules.oathkeeper.ory.sh", None)
    assert crd is not None and crd["metadata"]["labels"]["kyma-project.io/module"] == "api-gateway"

    # a second reconcile writes nothing (the API server's defaults are no drift)
    written = (("NetworkPolicy", res.NETWORK_POLICY[1], res.NAMESPACE),
               ("HorizontalPodAutoscaler", "ory-oathkeeper", res.NAMESPACE),
               ("PeerAuthentication", "ory-oathkeeper-maester-metrics", res.NAMESPACE),
               ("CustomResourceDefinition", "rules.oathkeeper.ory.sh", None))

    def versions() -> list[str]:
        return [str((_get(agw, *ref) or {}).get("metadata", {}).get("resourceVersion")) for ref in written]

    before = versions()
    current = reads.apigateway(agw.kube, "default")
    assert current is not None
    second, _ = operator.reconcile_object(agw.kube, current, [current])
    assert [op.describe() for op in second.ops] == [] and versions() == before

    # drift: someone opens the module up; the next reconcile (the watch enqueues it) restores the policy
    policy["spec"]["ingress"] = []
    agw.kube.replace(res.NETWORK_POLICY_RESOURCE, policy)
    operator.reconcile(key)
    repaired = _get(agw, "NetworkPolicy", res.NETWORK_POLICY[1])
    assert repaired is not None and repaired["spec"] == res.network_policy("default")["spec"]

    gateway = reads.apigateway(agw.kube, "default")
    assert gateway is not None
    gateway["spec"]["networkPoliciesEnabled"] = False
    agw.kube.replace(reads.APIGATEWAY, gateway)
    operator.reconcile(key)
    assert _get(agw, "NetworkPolicy", res.NETWORK_POLICY[1]) is None
