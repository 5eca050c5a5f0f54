"""The APIGateway CR: the oldest CR wins, finalizers, the Kyma Gateway (local and Gardener), Oathkeeper
with its PodAntiAffinity and readiness, deletion blocked by APIRules / Ory Rules / RateLimits /
VirtualServices on the kyma-gateway; arbitrary JSON in the spec never raises."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.refusal import Failure
from kube.toolkit.outcome import Event
from tasks.apigateway.operator import resources as res
from tasks.apigateway.operator.model import oldest_apigateway
from tasks.apigateway.operator.plan import (
    FINALIZER,
    KYMA_GATEWAY_FINALIZER,
    OperatorPolicy,
    OperatorState,
    OperatorStatus,
    evaluation_cluster,
    plan,
    quantity,
)

from .fuzz import json_values

NOW = datetime.datetime(2025, 1, 1, 12, 0, tzinfo=datetime.UTC)
ISTIO = frozenset({"gateways.networking.istio.io", "virtualservices.networking.istio.io"})
GARDENER = ISTIO | {"dnsentries.dns.gardener.cloud", "certificates.cert.gardener.cloud"}


def apigateway(name: str = "default", created: str = "2024-01-01T00:00:00Z", finalizers: list[str] | None = None,
               deleting: bool = False, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "creationTimestamp": created, "generation": 1,
                            "finalizers": finalizers if finalizers is not None else [FINALIZER, KYMA_GATEWAY_FINALIZER]}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T11:00:00Z"
    return {"apiVersion": "operator.kyma-project.io/v1alpha1", "kind": "APIGateway", "metadata": meta,
            "spec": {"enableKymaGateway": True, **spec}}


def state(*gateways: dict[str, Any], **fields: Any) -> OperatorState:
    return OperatorState(apigateways=gateways or (apigateway(),), crds=fields.pop("crds", ISTIO), now=NOW, **fields)


def obj(kind: str, namespace: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": name}, **fields}


def verbs(p: Any) -> list[str]:
    return [op.describe() for op in p.ops]


NO_WAIT = OperatorPolicy(oathkeeper_ready_seconds=0)


def test_oldest_wins_ties_go_to_the_later_one() -> None:
    a, b, c = (apigateway("a", "2024-01-02T00:00:00Z"), apigateway("b", "2024-01-01T00:00:00Z"),
               apigateway("c", "2024-01-01T00:00:00Z"))
    assert oldest_apigateway([a, b, c])["metadata"]["name"] == "c"  # type: ignore[index]
    result = plan(a, state(a, b, c))
    assert result.status == OperatorStatus("Warning", "stopped APIGateway CR reconciliation: only APIGateway CR c "
                                                      "reconciles the module", "OlderCRExists")
    assert result.ops == () and not result.failed and result.outcome.requeue_after is None
    assert result.status.condition("t")["message"] == ("API Gateway CR is not the oldest one and does not represent "
                                                       "the module state")


def test_local_kyma_gateway_and_finalizers() -> None:
    cr = apigateway(finalizers=[])
    result = plan(cr, state(cr), NO_WAIT)
    assert result.add_finalizers == (FINALIZER, KYMA_GATEWAY_FINALIZER)
    assert FINALIZER == "gateways.operator.kyma-project.io/api-gateway-reconciliation"
    assert verbs(result) == ["create Secret istio-system/kyma-gateway-certs", "create VirtualService "
                             "istio-system/istio-healthz", "create Gateway kyma-system/kyma-gateway"]
    gateway = result.desired[-1]
    assert gateway["spec"]["servers"] == [
        {"port": {"number": 443, "name": "https", "protocol": "HTTPS"},
         "tls": {"mode": "SIMPLE", "credentialName": "kyma-gateway-certs"}, "hosts": ["*.local.kyma.dev"]},
        {"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "tls": {"httpsRedirect": True},
         "hosts": ["*.local.kyma.dev"]}]
    assert gateway["metadata"]["labels"]["kyma-project.io/module"] == "api-gateway"
    healthz = result.desired[1]
    assert healthz["spec"]["hosts"] == ["healthz.local.kyma.dev"]
    assert healthz["spec"]["http"][0]["route"][0]["destination"] == {
        "port": {"number": 15021}, "host": "istio-ingressgateway.istio-system.svc.cluster.local"}
    assert result.status == OperatorStatus("Ready", "Successfully reconciled", "ReconcileSucceeded")
    assert result.outcome.requeue_after == 36000.0


def test_the_outcome_adds_finalizers_first_writes_the_status_once_and_a_refused_write_is_the_error() -> None:
    cr = apigateway(finalizers=[])
    outcome = plan(cr, state(cr), NO_WAIT).outcome
    assert [w.describe() for w in outcome.writes][:2] == ["add_finalizer APIGateway /default"] * 2
    assert outcome.status is not None and outcome.status["state"] == "Ready"
    assert outcome.status["conditions"][0]["lastTransitionTime"] == "2025-01-01T12:00:00Z"
    assert outcome.event == Event("Normal", "ReconcileSucceeded", "Successfully reconciled")
    done = {**cr, "status": {**outcome.status, "conditions": [{**outcome.status["conditions"][0],
                                                               "lastTransitionTime": "2024-12-01T00:00:00Z"}]}}
    again = plan(done, state(done), NO_WAIT).outcome
    assert again.status is None and again.event is None  # condition times aside, it says the same already
    assert outcome.refused is not None
    write = outcome.writes[2]
    stopped = outcome.refused(write, Failure.of_http(422, "denied"), (None, None))
    error = "create Secret istio-system/kyma-gateway-certs: denied"
    assert stopped.error == error and stopped.writes == ()
    assert stopped.status is not None and stopped.status["state"] == "Error"
    assert stopped.status["conditions"][0]["message"] == f"Reconciliation failed: {error}"
    assert stopped.event == Event("Warning", "ReconcileFailed", "Error during reconciliation")
    assert outcome.refused(outcome.writes[0], Failure.of_http(500, "down"), ()).status is None


def test_nothing_to_write_when_everything_is_in_place() -> None:
    cr = apigateway()
    first = plan(cr, state(cr), NO_WAIT)
    managed = {res.ref(d): {**copy.deepcopy(d), "data": {"tls.crt": "x"}} if d["kind"] == "Secret" else
               copy.deepcopy(d) for d in first.desired}
    assert plan(cr, state(cr, managed=managed), NO_WAIT).ops == ()
    edited = copy.deepcopy(managed)
    edited[("Gateway", "kyma-system", "kyma-gateway")]["spec"]["servers"][0]["hosts"] = ["*.other"]
    assert verbs(plan(cr, state(cr, managed=edited), NO_WAIT)) == ["update Gateway kyma-system/kyma-gateway"]


def test_gardener_domain_certificate_and_dns_entry() -> None:
    cr = apigateway()
    shoot = {"data": {"domain": "c1.kyma.example.com"}}
    ingress = {"spec": {"ipFamilies": ["IPv4", "IPv6"]},
               "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example.com"}]}}}
    result = plan(cr, state(cr, crds=GARDENER, shoot_info=shoot, ingress_service=ingress), NO_WAIT)
    assert verbs(result)[:2] == ["create DNSEntry kyma-system/kyma-gateway",
                                 "create Certificate istio-system/kyma-tls-cert"]
    dns, cert = result.desired[:2]
    assert dns["spec"] == {"dnsName": "*.c1.kyma.example.com", "ttl": 600, "targets": ["1.2.3.4", "lb.example.com"]}
    assert dns["metadata"]["annotations"]["dns.gardener.cloud/class"] == "garden"
    assert dns["metadata"]["annotations"]["dns.gardener.cloud/ip-stack"] == "dual-stack"
    assert cert["spec"]["commonName"] == "*.c1.kyma.example.com" and cert["spec"]["secretName"] == "kyma-gateway-certs"
    assert cert["spec"]["issuerRef"] == {"name": "garden"} and cert["spec"]["privateKey"] == {"size": 4096}
    no_lb = plan(cr, state(cr, crds=GARDENER, shoot_info=shoot, ingress_service={"spec": {}}), NO_WAIT)
    assert no_lb.status is not None and no_lb.status.state == "Error" and no_lb.failed
    assert no_lb.status.description == "Error during Kyma Gateway reconciliation"
    assert "no ingress exists for istio-system/istio-ingressgateway" in no_lb.status.condition("t")["message"]
    # a shoot domain without Gardener's CRDs: a self-signed Secret for that domain
    plain = plan(cr, state(cr, shoot_info=shoot), NO_WAIT)
    assert verbs(plain)[0] == "create Secret istio-system/kyma-gateway-certs"
    assert plain.desired[-1]["spec"]["servers"][0]["hosts"] == ["*.c1.kyma.example.com"]


def test_missing_dependency() -> None:
    result = plan(apigateway(), state(crds=frozenset({"gateways.networking.istio.io"})))
    assert result.status == OperatorStatus("Error", "CRD virtualservices.networking.istio.io is not present. Make sure "
                                                    "to install required dependencies for the component",
                                           "DependenciesMissing")
    assert result.failed


APIRULE = {"kind": "APIRule", "metadata": {"namespace": "shop", "name": "orders"},
           "spec": {"gateway": "kyma-system/kyma-gateway"}}


@pytest.mark.parametrize(("blockers", "what", "names"), [
    ({"apirules": (APIRULE,)}, "APIRule(s)", "shop/orders"),
    ({"ory_rules": tuple(obj("Rule", "shop", f"r{i}") for i in range(7))}, "ORY Oathkeeper Rule(s)",
     "shop/r0, shop/r1, shop/r2, shop/r3, shop/r4"),
    ({"ratelimits": (obj("RateLimit", "shop", "rl"),)}, "RateLimit(s)", "shop/rl"),
])
def test_deletion_blocked_by_apirules_ory_rules_and_ratelimits(blockers: dict[str, Any], what: str,
                                                               names: str) -> None:
    cr = apigateway(deleting=True)
    result = plan(cr, state(cr, **blockers))
    assert result.status == OperatorStatus(
        "Warning", f"There are {what} that block the deletion of API-Gateway CR. Please take a look at "
                   "kyma-system/api-gateway-controller-manager logs to see more information about the warning",
        "DeletionBlockedExistingResources", f": {names}")
    assert result.failed and result.ops == () and result.remove_finalizers == ()
    assert len(result.blocking) == sum(len(v) for v in blockers.values())  # every one is logged
    assert result.status.condition("t")["message"] == (
        f"API Gateway deletion blocked because of the existing custom resources: {names}")


def test_kyma_gateway_deletion_blocked_by_virtual_services() -> None:
    cr = apigateway(deleting=True)
    users = (obj("VirtualService", "shop", "orders-x", spec={"gateways": ["kyma-system/kyma-gateway"]}),
             obj("VirtualService", "istio-system", "istio-healthz", spec={"gateways": ["kyma-system/kyma-gateway"]}),
             obj("VirtualService", "shop", "other", spec={"gateways": ["shop/own"]}))
    result = plan(cr, state(cr, virtual_services=users))
    assert result.status == OperatorStatus(
        "Warning", "There are custom resources that block the deletion of Kyma Gateway. Please take a look at "
                   "kyma-system/api-gateway-controller-manager logs to see more information about the warning",
        "KymaGatewayDeletionBlocked", ": orders-x")
    assert result.blocking == ("shop/orders-x",) and result.failed


def test_disabling_the_kyma_gateway_is_blocked_then_deletes() -> None:
    cr = apigateway(enableKymaGateway=False)
    managed = {("Gateway", "kyma-system", "kyma-gateway"): {}, ("Secret", "istio-system", "kyma-gateway-certs"): {},
               ("VirtualService", "istio-system", "istio-healthz"): {}}
    blocked = plan(cr, state(cr, managed=managed, apirules=(APIRULE,)), NO_WAIT)
    assert blocked.status is not None and blocked.status.reason == "KymaGatewayDeletionBlocked"
    freed = plan(cr, state(cr, managed=managed), NO_WAIT)
    assert verbs(freed) == ["delete Gateway kyma-system/kyma-gateway",
                            "delete VirtualService istio-system/istio-healthz",
                            "delete Secret istio-system/kyma-gateway-certs"]
    assert freed.remove_finalizers == (KYMA_GATEWAY_FINALIZER,)
    assert freed.status is not None and freed.status.state == "Ready"


def test_deletion_removes_everything_and_both_finalizers() -> None:
    cr = apigateway(deleting=True)
    managed = {("Gateway", "kyma-system", "kyma-gateway"): {}, ("Deployment", "kyma-system", "ory-oathkeeper"): {}}
    result = plan(cr, state(cr, managed=managed), OperatorPolicy(v1beta1_access=True))
    assert verbs(result) == ["delete Gateway kyma-system/kyma-gateway",
                             "delete Deployment kyma-system/ory-oathkeeper"]
    assert result.remove_finalizers == (FINALIZER, KYMA_GATEWAY_FINALIZER) and result.status is None


def test_oathkeeper_objects_and_pod_anti_affinity() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    nodes = tuple({"status": {"capacity": {"cpu": "4", "memory": "16Gi"}}} for _ in range(3))
    result = plan(cr, state(cr, nodes=nodes), OperatorPolicy(v1beta1_access=True, oathkeeper_ready_seconds=0))
    assert [op.describe() for op in result.ops] == [  # the original's order (oathkeeper.Reconcile)
        "create CustomResourceDefinition rules.oathkeeper.ory.sh",
        "create PeerAuthentication kyma-system/ory-oathkeeper-maester-metrics",
        "create ServiceAccount kyma-system/oathkeeper-maester-account", "create ClusterRole oathkeeper-maester-role",
        "create ClusterRoleBinding oathkeeper-maester-role-binding",
        "create Secret kyma-system/ory-oathkeeper-jwks-secret",
        "create ConfigMap kyma-system/ory-oathkeeper-config",
        "create HorizontalPodAutoscaler kyma-system/ory-oathkeeper",
        "create ServiceAccount kyma-system/ory-oathkeeper",
        "create Service kyma-system/ory-oathkeeper-api", "create Service kyma-system/ory-oathkeeper-maester-metrics",
        "create Service kyma-system/ory-oathkeeper-proxy", "create Deployment kyma-system/ory-oathkeeper",
        "create PodDisruptionBudget kyma-system/ory-oathkeeper"]
    deployment = next(d for d in result.desired if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 3  # 12 CPUs, 48 Gi: a production cluster
    terms = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    assert [(t["weight"], t["podAffinityTerm"]["topologyKey"]) for t in terms] == [
        (100, "kubernetes.io/hostname"), (100, "topology.kubernetes.io/zone")]
    assert all(t["podAffinityTerm"]["labelSelector"] == {"matchLabels": {"app.kubernetes.io/name": "oathkeeper"}}
               for t in terms)
    small = plan(cr, state(cr, nodes=nodes[:1]), OperatorPolicy(v1beta1_access=True, oathkeeper_ready_seconds=0))
    assert next(d for d in small.desired if d["kind"] == "Deployment")["spec"]["replicas"] == 1


def test_oathkeeper_readiness_waits_then_fails() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    allowed = OperatorPolicy(v1beta1_access=True, oathkeeper_ready_seconds=120)
    first = plan(cr, state(cr), allowed)
    assert first.status is not None and first.status.state == "Processing" and first.outcome.requeue_after == 2.0
    key = ("Deployment", "kyma-system", "ory-oathkeeper")
    young = {key: {"metadata": {"creationTimestamp": "2025-01-01T11:59:00Z"}, "spec": {"replicas": 1}}}
    assert plan(cr, state(cr, managed=young), allowed).status.state == "Processing"  # type: ignore[union-attr]
    old = {key: {"metadata": {"creationTimestamp": "2025-01-01T11:50:00Z"}, "spec": {"replicas": 1}}}
    failed = plan(cr, state(cr, managed=old), allowed)
    assert failed.status == OperatorStatus("Error", "Oathkeeper did not start successfully",
                                           "OathkeeperReconcileFailed")
    ready = {key: {**old[key], "status": {"conditions": [{"type": "Available", "status": "True"}]}}}
    assert plan(cr, state(cr, managed=ready), allowed).status.state == "Ready"  # type: ignore[union-attr]


def test_oathkeeper_removed_without_v1beta1_access_once_no_rules_remain() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    managed = {("Deployment", "kyma-system", "ory-oathkeeper"): {}, ("ClusterRole", "", "oathkeeper-maester-role"): {}}
    kept = plan(cr, state(cr, managed=managed, ory_rules=(obj("Rule", "shop", "r"),)))
    assert kept.ops == ()
    removed = plan(cr, state(cr, managed=managed))
    assert verbs(removed) == ["delete Deployment kyma-system/ory-oathkeeper",
                              "delete ClusterRole oathkeeper-maester-role"]


def test_quantities() -> None:
    assert [quantity(q) for q in ("4", "3800m", "16Gi", "1k", "x")] == pytest.approx([4, 3.8, 16 * 2**30, 1000, 0])
    big = {"status": {"capacity": {"cpu": "8", "memory": "32Gi"}}}
    assert evaluation_cluster(()) and not evaluation_cluster((big,))


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(["spec", "enableKymaGateway", "networkPoliciesEnabled"]), value=json_values)
def test_any_json_value_in_the_spec(field: str, value: Any) -> None:
    cr = apigateway()
    if field == "spec":
        cr["spec"] = value
    else:
        cr["spec"][field] = value
    result = plan(cr, state(cr), NO_WAIT)  # never raises
    wrong = value is not None and (not isinstance(value, dict) if field == "spec" else not isinstance(value, bool))
    if wrong:
        assert result.status is not None and result.status.state == "Error" and result.failed
        attribute = ".spec" if field == "spec" else f".spec.{field}"
        assert f"'{attribute}'" in result.status.description


# --- Oathkeeper: HPA, maester PeerAuthentication, the rest of §7 -------------------------------------------------

PRODUCTION = tuple({"status": {"capacity": {"cpu": "4", "memory": "16Gi"}}} for _ in range(3))
EVALUATION = ({"status": {"capacity": {"cpu": "2", "memory": "8Gi"}}},)
OATHKEEPER_ON = OperatorPolicy(v1beta1_access=True, oathkeeper_ready_seconds=0)


def test_the_hpa_scales_oathkeeper_between_3_and_10_replicas_at_80_percent_cpu() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    result = plan(cr, state(cr, nodes=PRODUCTION), OATHKEEPER_ON)
    hpa = next(d for d in result.desired if d["kind"] == "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert (hpa["metadata"]["namespace"], hpa["metadata"]["name"]) == ("kyma-system", "ory-oathkeeper")
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ory-oathkeeper"},
        "minReplicas": 3, "maxReplicas": 10,
        "metrics": [{"type": "Resource",
                     "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}
    assert hpa["metadata"]["labels"]["app.kubernetes.io/name"] == "oathkeeper"


def test_the_hpas_replicas_are_kept_and_evaluation_clusters_run_one_replica_without_hpa() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    scaled = {("Deployment", "kyma-system", "ory-oathkeeper"): {"spec": {"replicas": 7}}}
    production = plan(cr, state(cr, nodes=PRODUCTION, managed=scaled), OATHKEEPER_ON)
    deployment = next(d for d in production.desired if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 7  # what the HPA chose, not reset to 3
    hpa = ("HorizontalPodAutoscaler", "kyma-system", "ory-oathkeeper")
    small = plan(cr, state(cr, nodes=EVALUATION, managed={hpa: {"spec": {}}}), OATHKEEPER_ON)
    assert "delete HorizontalPodAutoscaler kyma-system/ory-oathkeeper" in verbs(small)
    assert not any(d["kind"] == "HorizontalPodAutoscaler" for d in small.desired)
    assert next(d for d in small.desired if d["kind"] == "Deployment")["spec"]["replicas"] == 1


def test_the_maester_peer_authentication_and_metrics_service() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    result = plan(cr, state(cr, nodes=PRODUCTION), OATHKEEPER_ON)
    pa = next(d for d in result.desired if d["kind"] == "PeerAuthentication")
    assert pa["apiVersion"] == "security.istio.io/v1beta1"
    assert pa["metadata"]["name"] == "ory-oathkeeper-maester-metrics"
    assert pa["spec"] == {"selector": {"matchLabels": {"app.kubernetes.io/instance": "ory",
                                                       "app.kubernetes.io/name": "oathkeeper"}},
                          "portLevelMtls": {"8080": {"mode": "PERMISSIVE"}}}
    metrics = next(d for d in result.desired if d["kind"] == "Service"
                   and d["metadata"]["name"] == "ory-oathkeeper-maester-metrics")
    assert metrics["spec"]["ports"] == [{"name": "http-metrics", "port": 8080, "protocol": "TCP", "targetPort": 8080}]
    assert metrics["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    crd = next(d for d in result.desired if d["kind"] == "CustomResourceDefinition")
    assert crd["spec"]["group"] == "oathkeeper.ory.sh" and crd["spec"]["names"]["plural"] == "rules"


def test_everything_oathkeeper_goes_without_v1beta1_access_the_crd_last() -> None:
    cr = apigateway(enableKymaGateway=False, finalizers=[FINALIZER])
    managed = {ref: {} for ref in res.oathkeeper_refs()}
    removed = plan(cr, state(cr, managed=managed))
    assert verbs(removed)[0] == "delete PodDisruptionBudget kyma-system/ory-oathkeeper"
    assert verbs(removed)[-1] == "delete CustomResourceDefinition rules.oathkeeper.ory.sh"
    assert {op.ref for op in removed.ops} == set(res.oathkeeper_refs())
    assert {"delete HorizontalPodAutoscaler kyma-system/ory-oathkeeper",
            "delete PeerAuthentication kyma-system/ory-oathkeeper-maester-metrics",
            "delete ServiceAccount kyma-system/ory-oathkeeper"} <= set(verbs(removed))


# --- NetworkPolicies -------------------------------------------------------------------------------------------------

POLICY = ("NetworkPolicy", "kyma-system", "kyma-project.io--api-gateway-allow")


def test_network_policy_created_when_enabled_with_the_originals_rules() -> None:
    result = plan(apigateway(networkPoliciesEnabled=True), state(), NO_WAIT)
    assert verbs(result)[0] == "create NetworkPolicy kyma-system/kyma-project.io--api-gateway-allow"
    policy = result.desired[0]
    assert policy["metadata"]["labels"]["api-gateway.kyma-project.io/managed-by"] == "default"
    assert policy["metadata"]["labels"]["kyma-project.io/module"] == "api-gateway"
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": {"kyma-project.io/module": "api-gateway"}}
    assert spec["policyTypes"] == ["Egress", "Ingress"]
    assert [[p["port"] for p in rule["ports"]] for rule in spec["egress"]] == [[443], [53, 53], [8053, 8053], [53, 53]]
    assert [[p["port"] for p in rule["ports"]] for rule in spec["ingress"]] == [[9443], [8080]]
    assert result.status is not None and result.status.state == "Ready"


def test_network_policy_left_alone_in_place_patched_on_drift_and_deleted_when_disabled() -> None:
    desired = res.network_policy("default")
    in_place = {POLICY: {**copy.deepcopy(desired), "metadata": {**desired["metadata"], "resourceVersion": "4"}}}
    assert not any(op.kind == "NetworkPolicy" for op in plan(apigateway(networkPoliciesEnabled=True),
                                                             state(managed=in_place), NO_WAIT).ops)
    drifted = copy.deepcopy(in_place)
    drifted[POLICY]["spec"]["ingress"] = []  # someone opened the module up
    repaired = plan(apigateway(networkPoliciesEnabled=True), state(managed=drifted), NO_WAIT)
    (op,) = [op for op in repaired.ops if op.kind == "NetworkPolicy"]
    assert op.verb == "update" and op.object["spec"] == desired["spec"]
    assert op.object["metadata"]["resourceVersion"] == "4"
    for cr in (apigateway(networkPoliciesEnabled=False), apigateway(), apigateway(networkPoliciesEnabled=True,
                                                                                    deleting=True)):
        disabled = plan(cr, state(cr, managed=in_place), NO_WAIT)
        assert "delete NetworkPolicy kyma-system/kyma-project.io--api-gateway-allow" in verbs(disabled)


def test_network_policy_is_written_even_when_dependencies_are_missing() -> None:
    result = plan(apigateway(networkPoliciesEnabled=True), state(crds=frozenset()), NO_WAIT)
    assert result.failed and result.status is not None and result.status.reason == "DependenciesMissing"
    assert verbs(result) == ["create NetworkPolicy kyma-system/kyma-project.io--api-gateway-allow"]


def test_a_younger_cr_writes_no_network_policy() -> None:
    older, younger = apigateway("old"), apigateway("young", created="2025-01-01T00:00:00Z",
                                                   networkPoliciesEnabled=True)
    result = plan(younger, state(older, younger), NO_WAIT)
    assert result.ops == () and result.status is not None and result.status.reason == "OlderCRExists"
