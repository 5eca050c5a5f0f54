"""The pure parts of the APIRule wiring: which watch events enqueue which APIRules, the controller's
settings from the environment, and the status / Event decisions of the worker."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informers.store import Stores
from tasks.apigateway import status as st
from tasks.apigateway import watches
from tasks.apigateway.controller import ControllerSettings, controller
from tasks.apigateway.watches import (
    APIGATEWAYS,
    APIRULES,
    RATELIMITS,
    REGISTRATIONS,
    map_apigateway,
    map_apirule,
    map_config,
    map_envoy_filter,
    map_gateway,
    map_namespace,
    map_network_policy,
    map_owned,
    map_ratelimit,
    map_service,
    owner_of,
)
from watchers.engine import WatchEvent
from workers.controller import Key


def apirule(name: str, namespace: str = "shop", generation: int = 1, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "hosts": [name], "gateway": "kyma-system/kyma-gateway",
        "rules": [{"path": "/*", "methods": ["GET"], "noAuth": True}],
    }
    body.update(spec)
    return {"apiVersion": "gateway.kyma-project.io/v2", "kind": "APIRule",
            "metadata": {"name": name, "namespace": namespace, "generation": generation, "resourceVersion": "1"},
            "spec": body}


def obj(kind: str, name: str, namespace: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}, **fields}


def event(type_: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> WatchEvent:
    return WatchEvent(type_, new, old, "local")


def keys(pairs: Any) -> list[str]:
    return sorted(key.ref for controller, key in pairs if controller == "apirule")


@pytest.fixture
def stores() -> Stores:
    """A cache with three APIRules fed through the APIRule map function (as the engine does)."""
    stores = Stores()
    for reg in REGISTRATIONS:
        stores.add(reg.name)
    rules = [
        apirule("spec-level", service={"name": "orders", "port": 80}),
        apirule("rule-level", rules=[{"path": "/a", "methods": ["GET"], "noAuth": True,
                                      "service": {"name": "orders", "namespace": "shop", "port": 80}}]),
        apirule("other-ns", namespace="team", service={"name": "orders", "port": 80},
                gateway="team/own-gateway"),
    ]
    for rule in rules:
        stores.store(APIRULES).apply("ADDED", rule)
        list(map_apirule(event("ADDED", rule), stores))
    return stores


def test_apirule_events_that_enqueue(stores: Stores) -> None:
    rule = apirule("x")
    assert keys(map_apirule(event("ADDED", rule), stores)) == ["shop/x"]
    assert keys(map_apirule(event("DELETED", rule, rule), stores)) == ["shop/x"]
    status_only = copy.deepcopy(rule)
    status_only["status"] = {"state": "Ready"}
    status_only["metadata"]["resourceVersion"] = "2"
    assert keys(map_apirule(event("MODIFIED", status_only, rule), stores)) == []
    finalizer = copy.deepcopy(rule)
    finalizer["metadata"]["finalizers"] = ["gateway.kyma-project.io/subresources"]
    assert keys(map_apirule(event("MODIFIED", finalizer, rule), stores)) == []
    changed = apirule("x", generation=2)
    assert keys(map_apirule(event("MODIFIED", changed, rule), stores)) == ["shop/x"]
    annotated = copy.deepcopy(rule)
    annotated["metadata"]["annotations"] = {"gateway.kyma-project.io/original-version": "v1beta1"}
    assert keys(map_apirule(event("MODIFIED", annotated, rule), stores)) == ["shop/x"]
    other = copy.deepcopy(rule)
    other["metadata"]["annotations"] = {"unrelated": "x"}
    assert keys(map_apirule(event("MODIFIED", other, rule), stores)) == []
    deleting = copy.deepcopy(rule)
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert keys(map_apirule(event("MODIFIED", deleting, rule), stores)) == ["shop/x"]


@pytest.mark.parametrize("spec", [
    {"rules": 3.5}, {"rules": [7, "x"]}, {"service": "orders"}, {"hosts": {"a": 1}},
    {"rules": [{"path": 1, "methods": "GET", "service": ["orders"]}]}, {"gateway": ["kyma-system/kyma-gateway"]},
])
def test_malformed_apirules_are_still_enqueued(stores: Stores, spec: dict[str, Any]) -> None:
    """The issue: the map function raised on ``spec.rules: 3.5`` and dropped the event; the key must be
    enqueued so that the reconcile writes an Error status."""
    rule = apirule("broken", **spec)
    assert keys(map_apirule(event("ADDED", rule), stores)) == ["shop/broken"]
    changed = apirule("broken", generation=2, **spec)
    assert keys(map_apirule(event("MODIFIED", changed, rule), stores)) == ["shop/broken"]
    not_a_spec = {**rule, "spec": "nonsense"}
    assert keys(map_apirule(event("ADDED", not_a_spec), stores)) == ["shop/broken"]


def test_service_maps_to_every_apirule_referencing_it_spec_or_rule_level(stores: Stores) -> None:
    svc = obj("Service", "orders", "shop", spec={"selector": {"app": "orders"}})
    assert keys(map_service(event("ADDED", svc), stores)) == ["shop/rule-level", "shop/spec-level"]
    moved = copy.deepcopy(svc)
    moved["spec"]["selector"] = {"app": "orders-v2"}
    assert keys(map_service(event("MODIFIED", moved, svc), stores)) == ["shop/rule-level", "shop/spec-level"]
    assert keys(map_service(event("DELETED", svc, svc), stores)) == ["shop/rule-level", "shop/spec-level"]
    same = copy.deepcopy(svc)
    same["metadata"]["resourceVersion"] = "9"
    assert keys(map_service(event("MODIFIED", same, svc), stores)) == []
    assert keys(map_service(event("ADDED", obj("Service", "orders", "team", spec={})), stores)) == ["team/other-ns"]
    assert keys(map_service(event("ADDED", obj("Service", "unused", "shop", spec={})), stores)) == []


def test_the_index_follows_apirule_changes_and_deletions(stores: Stores) -> None:
    svc = obj("Service", "catalog", "shop", spec={})
    assert keys(map_service(event("ADDED", svc), stores)) == []
    old = apirule("spec-level", service={"name": "orders", "port": 80})
    new = apirule("spec-level", generation=2, service={"name": "catalog", "port": 80})
    list(map_apirule(event("MODIFIED", new, old), stores))
    assert keys(map_service(event("ADDED", svc), stores)) == ["shop/spec-level"]
    orders = obj("Service", "orders", "shop", spec={})
    assert keys(map_service(event("ADDED", orders), stores)) == ["shop/rule-level"]
    list(map_apirule(event("DELETED", new, new), stores))
    assert keys(map_service(event("ADDED", svc), stores)) == []


def test_status_and_finalizer_events_do_not_parse_the_apirule_again(stores: Stores,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = watches.dependencies
    monkeypatch.setattr(watches, "dependencies", lambda rule: parsed.append(rule["metadata"]["name"]) or real(rule))
    old = apirule("spec-level", service={"name": "orders", "port": 80})
    status = copy.deepcopy(old)
    status["status"] = {"state": "Ready"}
    status["metadata"].update(resourceVersion="2", finalizers=["gateway.kyma-project.io/subresources"])
    list(map_apirule(event("MODIFIED", status, old), stores))
    assert parsed == []  # spec, apiVersion and annotations as before: the index stands
    svc = obj("Service", "orders", "shop", spec={})
    assert keys(map_service(event("ADDED", svc), stores)) == ["shop/rule-level", "shop/spec-level"]
    annotated = copy.deepcopy(status)
    annotated["metadata"]["annotations"] = {"gateway.kyma-project.io/original-version": "v1beta1"}
    moved = copy.deepcopy(status)
    moved["spec"]["service"] = {"name": "catalog", "port": 80}
    list(map_apirule(event("MODIFIED", annotated, status), stores))
    list(map_apirule(event("MODIFIED", moved, annotated), stores))
    list(map_apirule(event("ADDED", moved), stores))  # a resync's ADDED: parsed (no old object to compare)
    assert parsed == ["spec-level"] * 3
    assert keys(map_service(event("ADDED", svc), stores)) == ["shop/rule-level"]


def test_a_namespace_granting_or_withdrawing_its_permission_enqueues_the_apirules_using_it(stores: Stores) -> None:
    foreign = apirule("foreign", service={"name": "istiod", "namespace": "istio-system", "port": 1})
    stores.store(APIRULES).apply("ADDED", foreign)
    list(map_apirule(event("ADDED", foreign), stores))
    annotation = "gateway.kyma-project.io/allow-apirules-from"
    bare = {"kind": "Namespace", "metadata": {"name": "istio-system", "resourceVersion": "1"}}
    granted = copy.deepcopy(bare)
    granted["metadata"]["annotations"] = {annotation: "shop"}
    assert keys(map_namespace(event("MODIFIED", granted, bare), stores)) == ["shop/foreign"]
    assert keys(map_namespace(event("MODIFIED", bare, granted), stores)) == ["shop/foreign"]
    assert keys(map_namespace(event("ADDED", bare), stores)) == ["shop/foreign"]
    relabelled = copy.deepcopy(granted)
    relabelled["metadata"]["labels"] = {"x": "y"}
    assert keys(map_namespace(event("MODIFIED", relabelled, granted), stores)) == []  # permission unchanged
    shop = {"kind": "Namespace", "metadata": {"name": "shop", "annotations": {annotation: "*"}}}
    assert keys(map_namespace(event("ADDED", shop), stores)) == []  # own namespaces need no permission


def test_config_map_and_default_gateway_enqueue_every_apirule(stores: Stores) -> None:
    everything = ["shop/rule-level", "shop/spec-level", "team/other-ns"]
    config = obj("ConfigMap", "api-gateway-config", "kyma-system", data={"api-gateway-config": "jwtHandler: istio"})
    assert keys(map_config(event("ADDED", config), stores)) == everything
    same = copy.deepcopy(config)
    same["metadata"]["labels"] = {"x": "y"}
    assert keys(map_config(event("MODIFIED", same, config), stores)) == []
    assert keys(map_config(event("DELETED", config, config), stores)) == everything
    gateway = obj("Gateway", "kyma-gateway", "kyma-system", spec={"servers": []})
    assert keys(map_gateway(event("ADDED", gateway), stores)) == everything
    own = obj("Gateway", "own-gateway", "team", spec={"servers": []})
    assert keys(map_gateway(event("ADDED", own), stores)) == ["team/other-ns"]


def test_owned_objects_changed_by_someone_else_enqueue_their_owner(stores: Stores) -> None:
    labels = {"apirule.gateway.kyma-project.io/name": "orders", "apirule.gateway.kyma-project.io/namespace": "shop"}
    vs = obj("VirtualService", "orders-abcde", "shop", spec={"hosts": ["a"]})
    vs["metadata"]["labels"] = labels
    assert keys(map_owned(event("ADDED", vs), stores)) == []
    edited = copy.deepcopy(vs)
    edited["spec"]["hosts"] = ["b"]
    assert keys(map_owned(event("MODIFIED", edited, vs), stores)) == ["shop/orders"]
    touched = copy.deepcopy(vs)
    touched["metadata"]["annotations"] = {"x": "y"}
    assert keys(map_owned(event("MODIFIED", touched, vs), stores)) == []
    assert keys(map_owned(event("DELETED", vs, vs), stores)) == ["shop/orders"]


@pytest.mark.parametrize(("labels", "owner"), [
    ({"apirule.gateway.kyma-project.io/name": "a.b", "apirule.gateway.kyma-project.io/namespace": "ns"},
     ("ns", "a.b")),
    ({"apirule.gateway.kyma-project.io/v1beta1": "my.rule.ns"}, ("ns", "my.rule")),
    ({"apirule.gateway.kyma-project.io/name": "only-name"}, None),
    ({}, None),
])
def test_owner_from_labels(labels: dict[str, str], owner: tuple[str, str] | None) -> None:
    assert owner_of({"metadata": {"labels": labels}}) == owner


def test_registrations_feed_the_three_controllers() -> None:
    names = [r.name for r in REGISTRATIONS]
    assert len(names) == len(set(names)) == 13
    fed = {c for r in REGISTRATIONS for c in r.controllers}
    assert fed == {"apirule", "apigateway", "ratelimit"}
    assert sum("apirule" in r.controllers for r in REGISTRATIONS) == 9
    assert Key("local", "shop", "x").encode() == "local/shop/x"


def test_settings_from_environment() -> None:
    default = ControllerSettings.from_env({})
    assert (default.plan.reconciliation_interval, default.plan.error_retry_interval) == (1800.0, 60.0)
    assert (default.resync_interval, default.error_retry_cap) == (1800.0, 300.0)
    fast = ControllerSettings.from_env({"RECONCILERY_APIRULE_ERROR_RETRY_SECONDS": "1",
                                        "RECONCILERY_APIRULE_RECONCILIATION_SECONDS": "5",
                                        "RECONCILERY_APIRULE_RESYNC_SECONDS": "600"})
    assert (fast.plan.error_retry_interval, fast.plan.reconciliation_interval, fast.resync_interval) == (1, 5, 600)
    assert ControllerSettings.from_env({"RECONCILERY_APIRULE_ERROR_RETRY_SECONDS": "900"}).error_retry_cap == 900
    with pytest.raises(ValueError, match="RECONCILERY_APIRULE_RESYNC_SECONDS"):
        ControllerSettings.from_env({"RECONCILERY_APIRULE_RESYNC_SECONDS": "soon"})
    built = controller()  # the registration, built from this process's settings on the registry's first use
    assert built.name == "apirule" and built.queue == "apigateway" and built.list_keys is not None


@pytest.mark.parametrize(("status", "event"), [
    (st.ready(), ("Normal", "Reconciled")),
    (st.attribute_error("spec", "x"), ("Warning", "ValidationFailed")),
    (st.apply_failed({"VirtualService": ["boom"]}), ("Warning", "ApplyFailed")),
    (st.missing_dependency("virtualservices.networking.istio.io"), ("Warning", "Warning")),
])
def test_event_per_state(status: st.Status, event: tuple[str, str]) -> None:
    assert st.event_for(status) == event


# --- APIGateway and RateLimit watches -------------------------------------------------------------


def cr(name: str, created: str, state: str | None = None, deleting: bool = False, generation: int = 1) -> dict:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created, "generation": generation,
                            "resourceVersion": "1"}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"kind": "APIGateway", "metadata": meta, **({"status": {"state": state}} if state else {})}


def rl(name: str, namespace: str = "shop", generation: int = 1) -> dict:
    return {"kind": "RateLimit", "metadata": {"name": name, "namespace": namespace, "generation": generation,
                                              "resourceVersion": "1"}, "spec": {}}


def pairs(found: Any) -> list[str]:
    return sorted(f"{controller}:{key.ref}" for controller, key in found)


def test_apigateway_and_ratelimit_events(stores: Stores) -> None:
    old, young = cr("old", "2024-01-01T00:00:00Z", "Ready"), cr("young", "2024-02-01T00:00:00Z")
    for obj in (old, young):
        stores.store(APIGATEWAYS).apply("ADDED", obj)
    for obj in (rl("a"), rl("b"), rl("c", "team")):
        stores.store(RATELIMITS).apply("ADDED", obj)
    # a CR added: every CR (the oldest may change) and every RateLimit
    assert pairs(map_apigateway(event("ADDED", young), stores)) == [
        "apigateway:old", "apigateway:young", "ratelimit:shop/a", "ratelimit:shop/b", "ratelimit:team/c"]
    # status only: the RateLimits (they wait for Ready), not the CR
    waiting = cr("old", "2024-01-01T00:00:00Z", "Warning")
    assert pairs(map_apigateway(event("MODIFIED", waiting, old), stores)) == [
        "ratelimit:shop/a", "ratelimit:shop/b", "ratelimit:team/c"]
    assert pairs(map_apigateway(event("MODIFIED", cr("old", "2024-01-01T00:00:00Z", "Ready", generation=2), old),
                                stores)) == ["apigateway:old"]
    # a RateLimit: the RateLimits of its namespace; deleted → the CRs being deleted too
    assert pairs(map_ratelimit(event("ADDED", rl("a")), stores)) == ["ratelimit:shop/a", "ratelimit:shop/b"]
    stores.store(APIGATEWAYS).apply("MODIFIED", cr("old", "2024-01-01T00:00:00Z", "Warning", deleting=True))
    assert pairs(map_ratelimit(event("DELETED", rl("a"), rl("a")), stores)) == [
        "apigateway:old", "ratelimit:shop/a", "ratelimit:shop/b"]
    assert keys(map_apirule(event("DELETED", apirule("x"), apirule("x")), stores)) == ["shop/x"]
    assert "apigateway:old" in pairs(map_apirule(event("DELETED", apirule("x"), apirule("x")), stores))
    # an owned EnvoyFilter deleted or changed → its RateLimit; added → nothing
    ef = {"kind": "EnvoyFilter", "metadata": {"name": "a", "namespace": "shop", "resourceVersion": "1",
                                              "ownerReferences": [{"kind": "RateLimit", "name": "a"}]}, "spec": {}}
    assert pairs(map_envoy_filter(event("ADDED", ef), stores)) == []
    assert pairs(map_envoy_filter(event("DELETED", ef, ef), stores)) == ["ratelimit:shop/a"]


def test_ingress_service_and_kyma_gateway_enqueue_the_oldest_apigateway(stores: Stores) -> None:
    stores.store(APIGATEWAYS).apply("ADDED", cr("old", "2024-01-01T00:00:00Z"))
    stores.store(APIGATEWAYS).apply("ADDED", cr("young", "2024-02-01T00:00:00Z"))
    svc = obj("Service", "istio-ingressgateway", "istio-system", spec={"type": "LoadBalancer"})
    with_lb = {**svc, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}
    assert pairs(map_service(event("MODIFIED", with_lb, svc), stores)) == ["apigateway:old"]
    gateway = obj("Gateway", "kyma-gateway", "kyma-system", spec={"servers": []})
    assert "apigateway:old" in pairs(map_gateway(event("ADDED", gateway), stores))


def test_the_modules_network_policy_changed_or_deleted_enqueues_its_apigateway(stores: Stores) -> None:
    from tasks.apigateway.operator.resources import network_policy

    policy = {**network_policy("default"), "metadata": {**network_policy("default")["metadata"],
                                                        "resourceVersion": "1"}}
    assert pairs(map_network_policy(event("ADDED", policy), stores)) == []  # our own create
    assert pairs(map_network_policy(event("MODIFIED", policy, policy), stores)) == []  # status / metadata only
    opened = {**policy, "spec": {**policy["spec"], "ingress": []}}
    assert pairs(map_network_policy(event("MODIFIED", opened, policy), stores)) == ["apigateway:default"]
    assert pairs(map_network_policy(event("DELETED", policy, policy), stores)) == ["apigateway:default"]
    unlabelled = {**policy, "metadata": {"name": "x", "namespace": "kyma-system", "resourceVersion": "1"}}
    assert pairs(map_network_policy(event("DELETED", unlabelled, unlabelled), stores)) == []


def test_the_migration_interval_setting() -> None:
    assert ControllerSettings.from_env({}).plan.migration_interval == 60.0
    fast = ControllerSettings.from_env({"RECONCILERY_APIRULE_MIGRATION_SECONDS": "2"})
    assert fast.plan.migration_interval == 2.0
