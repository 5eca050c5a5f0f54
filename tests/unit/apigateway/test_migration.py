"""The zero-downtime v1beta1 (Ory) → v2 migration as plans: api-gateway's ``processors/migration`` tests and
its zero-downtime-migration scenarios (noAuth, noop, jwt, oauth2_introspection → v2) restated.

A v1beta1 APIRule reconciled by the ory handler left a VirtualService routing to Oathkeeper's proxy and an
Ory Rule; the user then applies the v2 APIRule (original-version ``v2``). While v1beta1 access is allowed and
Ory Rules are owned, each successful reconcile runs one step and records it in the ``migration-step``
annotation: the policies first (admitting Oathkeeper), then the VirtualService switch, then the Ory Rules go.
"""

from __future__ import annotations

import copy
import datetime
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

from kube.refusal import Failure
from tasks.apigateway import model
from tasks.apigateway import status as st
from tasks.apigateway.diff import Action
from tasks.apigateway.plan import Plan, RulePolicy, migration_step, plan
from tasks.apigateway.state import ClusterState

from .builders import ISSUER, apirule, cluster, jwt, rule

OWNER = {model.OWNER_NAME_LABEL: "orders", model.OWNER_NAMESPACE_LABEL: "shop"}
ALLOW = RulePolicy(v1beta1_access=True, reconciliation_interval=1800, migration_interval=60)
OATHKEEPER_HOST = "ory-oathkeeper-proxy.kyma-system.svc.cluster.local"
SERVICE_HOST = "orders.shop.svc.cluster.local"
STEP = model.MIGRATION_STEP_ANNOTATION
AT = model.MIGRATION_STEP_AT_ANNOTATION
GONE = {STEP: None, AT: None}


def ory_rule(name: str = "orders-abcde", labels: dict[str, str] | None = None) -> dict[str, Any]:
    """An Ory Rule the v1beta1 ory handler wrote (legacy owner label on older ones)."""
    return {"apiVersion": "oathkeeper.ory.sh/v1alpha1", "kind": "Rule",
            "metadata": {"name": name, "namespace": "shop", "labels": OWNER if labels is None else labels},
            "spec": {"match": {"url": "<http|https>://orders.local.kyma.dev/<.*>", "methods": ["GET"]},
                     "upstream": {"url": f"http://{SERVICE_HOST}:8080"}, "authorizer": {"handler": "allow"},
                     "authenticators": [{"handler": "noop"}]}}


def v1beta1_virtual_service() -> dict[str, Any]:
    """The ory handler's VirtualService: every secured path through Oathkeeper's proxy."""
    return {"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService",
            "metadata": {"name": "orders-vs1", "namespace": "shop", "labels": dict(OWNER), "resourceVersion": "7"},
            "spec": {"hosts": ["orders.local.kyma.dev"], "gateways": ["kyma-system/kyma-gateway"],
                     "http": [{"match": [{"uri": {"regex": "/.*"}}],
                               "route": [{"destination": {"host": OATHKEEPER_HOST, "port": {"number": 4455}}}]}]}}


def v1beta1_cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return cluster(ory_rule(), v1beta1_virtual_service(), *extra)


def migrating(*rules: dict[str, Any], step: str | None = None, **kwargs: Any) -> dict[str, Any]:
    annotations = {model.ORIGINAL_VERSION_ANNOTATION: "v2"}
    if step is not None:
        annotations[STEP] = step
    return apirule(*rules, annotations=annotations, **kwargs)


def kinds(p: Plan) -> list[str]:
    return [a.describe() for a in p.actions]


def policies(p: Plan) -> list[dict[str, Any]]:
    return [d for d in p.desired if d["kind"] == "AuthorizationPolicy"]


# --- the step sequence (annotation_test.go, processors_test.go "nextMigrationStep") -------------------------


@pytest.mark.parametrize(("annotation", "step"), [
    (None, "apply-istio-authorization"),
    ("apply-istio-authorization", "vs-switch-to-service"),
    ("vs-switch-to-service", "remove-ory-rule"),
    ("remove-ory-rule", "apply-istio-authorization"),  # never written; like any unknown value: start over
    ("nonsense", "apply-istio-authorization"),
])
def test_the_next_step_follows_the_annotation(annotation: str | None, step: str) -> None:
    assert migration_step(annotation) == step


# --- each step's objects -------------------------------------------------------------------------------------


def test_step_1_applies_istio_authorization_admitting_oathkeeper_and_keeps_the_route_and_the_ory_rule() -> None:
    result = plan(migrating(rule("/headers", ["GET"])), ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    assert result.status == st.ready() and result.migration_step == "apply-istio-authorization"
    assert [a.verb + " " + a.kind for a in result.actions] == ["create AuthorizationPolicy"]
    (policy,) = policies(result)
    (policy_rule,) = policy["spec"]["rules"]
    # two sources: Oathkeeper (traffic still routed through it) and the ingress gateway
    assert policy_rule["from"] == [{"source": {"principals": [model.OATHKEEPER_PRINCIPAL]}},
                                   {"source": {"principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}]
    # no hosts: Oathkeeper calls the Service by its cluster-local name
    assert policy_rule["to"] == [{"operation": {"methods": ["GET"], "paths": ["/headers"]}}]
    assert not any(d["kind"] == "VirtualService" for d in result.desired)
    assert result.annotations == {STEP: "apply-istio-authorization"}
    assert result.requeue_after == 60


def test_step_2_switches_the_virtual_service_to_the_service_still_admitting_oathkeeper() -> None:
    result = plan(migrating(rule("/headers", ["GET"]), step="apply-istio-authorization"),
                  ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    assert result.migration_step == "vs-switch-to-service"
    update = next(a for a in result.actions if a.kind == "VirtualService")
    assert update.verb == "update" and update.name == "orders-vs1"
    (route,) = update.object["spec"]["http"]
    assert route["route"][0]["destination"] == {"host": SERVICE_HOST, "port": {"number": 8080}}
    assert not any(a.kind == "Rule" for a in result.actions)
    (policy,) = policies(result)
    assert {"source": {"principals": [model.OATHKEEPER_PRINCIPAL]}} in policy["spec"]["rules"][0]["from"]
    assert result.annotations == {STEP: "vs-switch-to-service"} and result.requeue_after == 60


def test_step_3_deletes_the_ory_rules_first_drops_the_passthrough_and_the_annotation() -> None:
    legacy = ory_rule("orders-old", labels={model.LEGACY_OWNER_LABEL: "orders.shop"})
    # access_rule_deletion_test.go "should not delete Ory Rules not owned by the APIRule": one unlabelled,
    # of other APIRules (both label forms; one named orders but of namespace other), all in shop, same host
    foreign = [ory_rule("hand-written", labels={}),
               ory_rule("catalog-abcde", labels={model.OWNER_NAME_LABEL: "catalog",
                                                 model.OWNER_NAMESPACE_LABEL: "shop"}),
               ory_rule("catalog-old", labels={model.LEGACY_OWNER_LABEL: "catalog.shop"}),
               ory_rule("orders-elsewhere", labels={model.OWNER_NAME_LABEL: "orders",
                                                    model.OWNER_NAMESPACE_LABEL: "other"})]
    result = plan(migrating(rule("/headers", ["GET"]), step="vs-switch-to-service"),
                  ClusterState.from_manifests(v1beta1_cluster(legacy, *foreign)), ALLOW)
    assert result.migration_step == "remove-ory-rule"
    assert [a.describe() for a in result.actions[:2]] == ["delete Rule shop/orders-abcde",
                                                          "delete Rule shop/orders-old"]
    assert [a.describe() for a in result.actions if a.kind == "Rule"] == ["delete Rule shop/orders-abcde",
                                                                          "delete Rule shop/orders-old"]
    (policy,) = policies(result)
    assert policy["spec"]["rules"][0]["from"] == [{"source": {"principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}]
    assert policy["spec"]["rules"][0]["to"][0]["operation"]["hosts"] == ["orders.local.kyma.dev"]
    assert result.annotations == GONE
    assert result.requeue_after == 1800


def test_jwt_passthrough_requires_the_token_not_the_ingress_gateway_and_creates_the_request_authentication() -> None:
    result = plan(migrating(rule("/headers", ["GET"], jwt=jwt(scopes=["read"]))),
                  ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    assert sorted(a.verb + " " + a.kind for a in result.actions) == [
        "create AuthorizationPolicy", "create RequestAuthentication"]
    (policy,) = policies(result)
    for policy_rule in policy["spec"]["rules"]:  # one per scope claim key
        assert policy_rule["from"] == [{"source": {"requestPrincipals": [f"{ISSUER}/*"]}}]
        assert "hosts" not in policy_rule["to"][0]["operation"]
    final = plan(migrating(rule("/headers", ["GET"], jwt=jwt(scopes=["read"])), step="vs-switch-to-service"),
                 ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    assert policies(final)[0]["spec"]["rules"][0]["from"] == [
        {"source": {"requestPrincipals": [f"{ISSUER}/*"], "principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}]


def test_ext_auth_passthrough_keeps_the_custom_policy_hosts() -> None:
    ext = {"authorizers": ["oauth2-proxy"]}
    result = plan(migrating(rule("/headers", ["GET"], extAuth=ext)), ClusterState.from_manifests(v1beta1_cluster()),
                  ALLOW)
    custom, allow = policies(result)
    assert custom["spec"]["action"] == "CUSTOM"
    assert custom["spec"]["rules"][0]["to"][0]["operation"]["hosts"] == ["orders.local.kyma.dev"]
    assert allow["spec"]["rules"][0]["from"] == [{"source": {"principals": [model.OATHKEEPER_PRINCIPAL]}},
                                                 {"source": {"principals": [model.INGRESS_GATEWAY_PRINCIPAL]}}]
    assert "hosts" not in allow["spec"]["rules"][0]["to"][0]["operation"]


# --- steps are spaced by the migration interval ---------------------------------------------------------------


NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


def test_each_step_records_when_it_completed() -> None:
    obj = migrating(rule("/headers"))
    obj["metadata"]["resourceVersion"] = "41"
    result = plan(obj, ClusterState.from_manifests(v1beta1_cluster()), ALLOW, NOW)
    assert result.annotations == {STEP: "apply-istio-authorization", AT: "2026-03-01T12:00:00Z"}
    # the Outcome writes the step after every action, under the APIRule's resourceVersion, before the status
    *actions, annotate = result.outcome.writes
    assert [a.describe() for a in actions] == [a.describe() for a in result.actions]
    assert annotate.describe() == "patch APIRule shop/orders" and annotate.body == {
        "metadata": {"annotations": {STEP: "apply-istio-authorization", AT: "2026-03-01T12:00:00Z"},
                     "resourceVersion": "41"}}
    assert result.outcome.refused is not None  # a refused annotation fails the reconcile, no status
    assert result.outcome.refused(annotate, Failure.of_http(422, "no"), ()).status is None


@pytest.mark.parametrize(("completed", "seconds_ago", "runs", "requeue"), [
    ("apply-istio-authorization", 10, "apply-istio-authorization", 50),  # an event came early: hold
    ("apply-istio-authorization", 60, "vs-switch-to-service", 60),
    ("vs-switch-to-service", 59, "vs-switch-to-service", 1),
    ("vs-switch-to-service", 3600, "remove-ory-rule", 1800),
    ("vs-switch-to-service", -30, "remove-ory-rule", 1800),  # a clock in the future does not block forever
])
def test_the_next_step_waits_for_the_migration_interval(completed: str, seconds_ago: int, runs: str,
                                                        requeue: float) -> None:
    # our own VirtualService update of step 2 enqueues the APIRule at once (the owned-object watch): without
    # the wait the Ory Rules would go before Istio's proxies route to the Service
    at = (NOW - datetime.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = migrating(rule("/headers"), step=completed)
    obj["metadata"]["annotations"][AT] = at
    result = plan(obj, ClusterState.from_manifests(v1beta1_cluster()), ALLOW, NOW)
    assert result.migration_step == runs and result.requeue_after == requeue
    held = runs == completed
    assert (result.annotations == {}) is held
    assert any(a.kind == "Rule" for a in result.actions) is (runs == "remove-ory-rule")
    if completed == "vs-switch-to-service":  # holding re-applies step 2: the route stays on the Service
        assert any(d["kind"] == "VirtualService" for d in result.desired)


def test_a_migration_the_original_started_continues_without_a_recorded_time() -> None:
    result = plan(migrating(rule("/headers"), step="apply-istio-authorization"),
                  ClusterState.from_manifests(v1beta1_cluster()), ALLOW, NOW)
    assert result.migration_step == "vs-switch-to-service"


# --- errors stop the migration ----------------------------------------------------------------------------------


def test_a_validation_error_stops_the_migration_where_it_is() -> None:
    # the original's "migrationError" scenario: the v2 APIRule names a Service that does not exist
    result = plan(migrating(rule("/headers", ["GET"]), step="apply-istio-authorization",
                            service={"name": "missing", "port": 8080}),
                  ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    assert result.status is not None and result.status.state == "Error" and result.failed
    assert result.actions == () and result.annotations == {}
    assert result.requeue_after is None  # backoff, and the Ory Rule and the route through Oathkeeper stay


def test_a_refused_write_does_not_advance_the_annotation() -> None:
    result = plan(migrating(rule("/headers", ["GET"]), step="apply-istio-authorization"),
                  ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    failed = result.with_apply_errors({"VirtualService": ["admission webhook denied"]})
    assert failed.failed and failed.annotations == {}
    assert failed.status == st.Status("Error", "VirtualServiceErrors: admission webhook denied")


def test_a_missing_crd_keeps_the_migration_requeue() -> None:
    manifests = [*v1beta1_cluster(), *({"kind": "CustomResourceDefinition", "metadata": {"name": n}} for n in (
        "virtualservices.networking.istio.io", "authorizationpolicies.security.istio.io"))]
    result = plan(migrating(rule("/headers"), step="vs-switch-to-service"),
                  ClusterState.from_manifests(manifests), ALLOW)
    assert result.status is not None and result.status.state == "Warning"
    assert result.annotations == {} and result.requeue_after == 60


# --- when there is nothing to migrate ----------------------------------------------------------------------------


def test_without_v1beta1_access_the_ory_rules_go_at_once() -> None:
    result = plan(migrating(rule("/headers", ["GET"])), ClusterState.from_manifests(v1beta1_cluster()),
                  RulePolicy(v1beta1_access=False))
    assert result.migration_step is None and result.annotations == {}
    assert "delete Rule shop/orders-abcde" in kinds(result)
    assert any(a.kind == "VirtualService" and a.verb == "update" for a in result.actions)


def test_a_v1beta1_apirule_is_not_migrated() -> None:
    v1 = apirule(rule("/headers"), annotations={model.ORIGINAL_VERSION_ANNOTATION: "v1beta1"})
    result = plan(v1, ClusterState.from_manifests(v1beta1_cluster()), ALLOW)
    assert result.pipeline == "v1beta1" and result.migration_step is None and result.annotations == {}


def test_an_annotation_left_without_ory_rules_is_removed() -> None:
    # e.g. step 3 deleted the Ory Rules but the annotation write then failed (409): the original keeps the
    # annotation and requeues every minute forever; here the next reconcile removes it
    result = plan(migrating(rule("/headers"), step="vs-switch-to-service"), ClusterState.from_manifests(cluster()),
                  ALLOW)
    assert result.migration_step is None and result.annotations == GONE
    assert result.requeue_after == 1800


# --- end to end over the pure plans: no step leaves the workload unreachable ---------------------------------------


def _apply(objects: list[dict[str, Any]], actions: tuple[Action, ...], counter: itertools.count) -> list[dict]:
    out = [copy.deepcopy(o) for o in objects]

    def ref(o: dict[str, Any]) -> tuple[str, str, str]:
        return o["kind"], o["metadata"].get("namespace", ""), o["metadata"].get("name", "")

    for action in actions:
        if action.verb == "delete":
            out = [o for o in out if ref(o) != (action.kind, action.namespace, action.name)]
        elif action.verb == "update":
            out = [copy.deepcopy(action.object) if ref(o) == ref(action.object) else o for o in out]
        else:
            created = copy.deepcopy(action.object)
            created["metadata"]["name"] = created["metadata"].pop("generateName", "x-") + str(next(counter))
            out.append(created)
    return out


def _admitted(allow: list[dict[str, Any]], principal: str, host: str) -> bool:
    """Whether Istio's ALLOW policies admit a request from ``principal`` (mTLS identity) for ``host``
    (Host header), the request carrying a valid token: none at all admits everything; otherwise a rule
    whose ``from`` admits the principal (no ``principals`` = any; ``requestPrincipals`` met by the
    token) and whose ``to`` admits the host (no ``hosts`` = any)."""
    if not allow:
        return True
    for policy in allow:
        for r in policy["spec"]["rules"]:
            sources = [f["source"] for f in r.get("from", [])]
            operations = [t["operation"] for t in r.get("to", [])]
            if ((not sources or any(principal in s.get("principals", [principal]) for s in sources))
                    and (not operations or any(host in o.get("hosts", [host]) for o in operations))):
                return True
    return False


def _reachable(objects: list[dict[str, Any]]) -> bool:
    """A request from the ingress gateway reaches the workload: routed to Oathkeeper (an Ory Rule exists,
    and the ALLOW policies admit Oathkeeper calling the Service by its cluster-local name) or to the
    Service directly (the ingress gateway admitted for the APIRule's host)."""
    owned = [o for o in objects if (o["metadata"].get("labels") or {}).get(model.OWNER_NAME_LABEL) == "orders"]
    vs = next(o for o in owned if o["kind"] == "VirtualService")
    target = vs["spec"]["http"][0]["route"][0]["destination"]["host"]
    allow = [p for p in owned if p["kind"] == "AuthorizationPolicy" and p["spec"].get("action") is None]
    if target == OATHKEEPER_HOST:
        return any(o["kind"] == "Rule" for o in owned) and _admitted(allow, model.OATHKEEPER_PRINCIPAL,
                                                                      SERVICE_HOST)
    return target == SERVICE_HOST and _admitted(allow, model.INGRESS_GATEWAY_PRINCIPAL, "orders.local.kyma.dev")


def test_reachability_model_refuses_a_passthrough_restricted_to_the_external_host() -> None:
    # the check below could not fail if the model ignored hosts: Oathkeeper calls the cluster-local name
    policy = {"spec": {"rules": [{"from": [{"source": {"principals": [model.OATHKEEPER_PRINCIPAL]}}],
                                  "to": [{"operation": {"hosts": ["orders.local.kyma.dev"]}}]}]}}
    assert not _admitted([policy], model.OATHKEEPER_PRINCIPAL, SERVICE_HOST)
    assert not _admitted([policy], model.INGRESS_GATEWAY_PRINCIPAL, "orders.local.kyma.dev")
    assert _admitted([policy], model.OATHKEEPER_PRINCIPAL, "orders.local.kyma.dev")


@pytest.mark.parametrize("access", [{}, {"jwt": jwt(scopes=["read"])}, {"extAuth": {"authorizers": ["oauth2-proxy"]}}],
                         ids=["noAuth", "jwt", "extAuth"])
def test_the_whole_migration_keeps_the_workload_reachable_after_every_step(access: dict[str, Any]) -> None:
    objects = v1beta1_cluster()
    obj = migrating(rule("/headers", ["GET"], **access), rule("/anything", ["GET", "POST"], **access))
    counter = itertools.count()
    steps = []
    for _ in range(5):
        result = plan(obj, ClusterState.from_manifests(objects), ALLOW)
        assert result.status == st.ready()
        objects = _apply(objects, result.actions, counter)
        assert _reachable(objects), result.migration_step
        if result.migration_step is None:
            break
        steps.append(result.migration_step)
        annotations = {**obj["metadata"]["annotations"], **result.annotations}
        obj["metadata"]["annotations"] = {k: v for k, v in annotations.items() if v is not None}
    assert steps == ["apply-istio-authorization", "vs-switch-to-service", "remove-ory-rule"]
    assert STEP not in obj["metadata"]["annotations"]
    assert not any(o["kind"] == "Rule" for o in objects)
    # settled: the next reconcile is the plain v2 pipeline and changes nothing
    again = plan(obj, ClusterState.from_manifests(objects), ALLOW)
    assert again.migration_step is None and again.actions == () and again.annotations == {}


@settings(max_examples=150, deadline=None)
@given(step=st_.one_of(st_.none(), st_.sampled_from(["apply-istio-authorization", "vs-switch-to-service"]),
                       st_.text(max_size=40)),
       at=st_.one_of(st_.none(), st_.text(max_size=40), st_.datetimes(timezones=st_.just(datetime.UTC)).map(
           lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))))
def test_any_annotation_values_never_crash_the_plan(step: str | None, at: str | None) -> None:
    obj = migrating(rule("/headers"), step=step)
    if at is not None:
        obj["metadata"]["annotations"][AT] = at
    result = plan(obj, ClusterState.from_manifests(v1beta1_cluster()), ALLOW, NOW)
    assert result.status == st.ready() and result.migration_step in (
        "apply-istio-authorization", "vs-switch-to-service", "remove-ory-rule")
    assert result.requeue_after is not None and result.requeue_after >= 1
