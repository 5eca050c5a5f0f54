"""The KCP Scope, Kyma activation and SkrStatus plans (pure), table-driven from the notes and the cases
tests/integration/cloud/test_kcp.py drives through the controllers."""

from __future__ import annotations

from typing import Any

import pytest

from kube.toolkit import Action, Outcome
from tasks.cloud import names
from tasks.cloud.kcp import kyma_plan, scope_plan
from tasks.cloud.skr import skrstatus_plan
from tests.unit.cloud.outcomes import refuse

NOW = "2026-01-01T12:00:00Z"
LABELS = {"kyma-project.io/global-account-id": "ga", "kyma-project.io/subaccount-id": "sa",
          "kyma-project.io/shoot-name": "c-1", "kyma-project.io/region": "eu-central-1",
          "kyma-project.io/broker-plan-name": "aws"}
GC = {"metadata": {"name": "k1", "namespace": "kcp-system", "labels": LABELS}}
SHOOT = {"metadata": {"name": "c-1", "namespace": "garden-kyma"}, "spec": {"region": "eu-central-1"}}


def t(seconds: float) -> float:
    return seconds


def scope(labels: dict | None = None, status: dict | None = None, created: str = "2026-01-01T00:00:00Z",
          plan: str = "aws") -> dict[str, Any]:
    return {"metadata": {"name": "k1", "namespace": "kcp-system", "resourceVersion": "7", "creationTimestamp": created,
                         "finalizers": ["other", names.FINALIZER],
                         "labels": {names.LABEL_KYMA_NAME: "k1", **LABELS, names.LABEL_BROKER_PLAN: plan,
                                    **(labels or {})}},
            "spec": {"kymaName": "k1", "provider": "aws", "region": "eu-central-1", "shootName": "c-1"},
            "status": dict(status or {})}


# -- build ------------------------------------------------------------------------------------------------

def test_needs_build_when_missing_a_label_missing_or_differing_or_incomplete() -> None:
    assert scope_plan.needs_build(None, GC, False)
    assert not scope_plan.needs_build(scope(), GC, False)
    assert scope_plan.needs_build(scope(), GC, True)
    without = scope()
    del without["metadata"]["labels"]["kyma-project.io/region"]
    assert scope_plan.needs_build(without, GC, False)
    assert scope_plan.needs_build(scope({"kyma-project.io/region": "us-east-1"}), GC, False)
    no_kyma = scope()
    del no_kyma["metadata"]["labels"][names.LABEL_KYMA_NAME]
    assert scope_plan.needs_build(no_kyma, GC, False)


def test_scope_write_creates_or_replaces_under_the_read_version_keeping_labels_and_finalizers() -> None:
    info = {"accountId": "123"}
    [created] = scope_plan.scope_write("k1", "kcp-system", GC, SHOOT, "aws", info, None).writes
    assert isinstance(created, Action) and created.verb == "create" and created.kind == "Scope"
    assert created.object["metadata"]["finalizers"] == [names.FINALIZER]
    assert created.object["spec"]["scope"] == {"aws": info} and "resourceVersion" not in created.object["metadata"]
    existing = scope({"team": "x"})
    [replaced] = scope_plan.scope_write("k1", "kcp-system", GC, SHOOT, "aws", info, existing).writes
    assert isinstance(replaced, Action)
    assert replaced.verb == "update" and replaced.object["metadata"]["resourceVersion"] == "7"
    assert replaced.object["metadata"]["finalizers"] == ["other", names.FINALIZER]
    assert replaced.object["metadata"]["labels"]["team"] == "x"


# -- the kyma network --------------------------------------------------------------------------------------

def test_the_kyma_network_is_created_then_waited_for_until_ready() -> None:
    ref = {"aws": {"vpc": "v"}}
    missing = scope_plan.plan_network(scope(), None, ref, t)
    assert missing is not None and missing.requeue_after == 1
    [create] = missing.writes
    assert isinstance(create, Action) and (create.verb, create.kind) == ("create", "Network")
    assert create.object["metadata"]["name"] == "k1--kyma" and create.object["spec"] == {
        "scope": {"name": "k1"}, "type": "kyma", "network": {"reference": ref}}
    pending = scope_plan.plan_network(scope(), {"status": {"conditions": []}}, ref, t)
    assert pending is not None and pending.writes == () and pending.requeue_after == 1
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert scope_plan.plan_network(scope(), ready, ref, t) is None


# -- exposed data ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("flag", "plan", "read_time", "due"), [
    (True, "aws", None, True),
    (True, "aws", "2026-01-01T11:30:00Z", False),
    (True, "aws", "2026-01-01T11:00:00Z", True),
    (True, "aws", "2026-01-01T10:00:00Z", True),
    (True, "aws", "not a time", True),
    (True, "trial", None, False),
    (False, "aws", None, False),
])
def test_exposed_data_is_read_at_most_hourly_and_never_on_trial(flag: bool, plan: str, read_time: str | None,
                                                                 due: bool) -> None:
    status = {"exposedData": {"readTime": read_time}} if read_time else {}
    assert scope_plan.exposed_data_due(scope(plan=plan, status=status), flag, NOW, t) is due


def test_exposed_data_interval_is_scaled() -> None:
    status = {"exposedData": {"readTime": "2026-01-01T11:59:00Z"}}
    assert scope_plan.exposed_data_due(scope(status=status), True, NOW, lambda s: s / 100)


@pytest.mark.parametrize(("namespace", "configmap", "expected"), [
    (None, None, (True, {"cloud.natGatewayIps": "1.2.3.4, 5.6.7.8"}, None)),
    ({}, None, (False, {"cloud.natGatewayIps": "1.2.3.4, 5.6.7.8"}, None)),
    ({}, {"data": {"other": "x", "cloud.natGatewayIps": "1.2.3.4"}},
     (False, None, {"data": {"cloud.natGatewayIps": "1.2.3.4, 5.6.7.8"}})),
    ({}, {"data": {"cloud.natGatewayIps": "1.2.3.4, 5.6.7.8"}}, (False, None, None)),
])
def test_kyma_info_writes(namespace: Any, configmap: Any, expected: tuple) -> None:
    w = kyma_info(scope_plan.kyma_info_writes(namespace, configmap, ["1.2.3.4", "5.6.7.8"]))
    assert (w["create_namespace"], (w["create"] or {}).get("data"), w["patch"]) == expected
    if w["create"] is not None:
        assert w["create"]["metadata"] == {"name": "kyma-info", "namespace": "kyma-system"}


def kyma_info(outcome: Outcome) -> dict[str, Any]:
    """The kyma-info writes of ``outcome``: the Namespace created, the ConfigMap created or patched."""
    writes = [w for w in outcome.writes if isinstance(w, Action)]
    return {"create_namespace": any(w.verb == "create" and w.kind == "Namespace" for w in writes),
            "create": next((w.object for w in writes if w.verb == "create" and w.kind == "ConfigMap"), None),
            "patch": next((dict(w.body or {}) for w in writes if w.verb == "patch"), None)}


def test_kyma_info_of_no_ips_is_an_empty_value() -> None:
    assert kyma_info(scope_plan.kyma_info_writes({}, {"data": {"cloud.natGatewayIps": "1.2.3.4"}}, []))["patch"] == {
        "data": {"cloud.natGatewayIps": ""}}


def test_a_kyma_system_namespace_created_meanwhile_is_fine() -> None:
    outcome = scope_plan.kyma_info_writes(None, None, ["1.2.3.4"])
    assert refuse(outcome, outcome.writes[0], "exists", status=409) is None
    assert (refuse(outcome, outcome.writes[1], "exists", status=409) or Outcome()).error


# -- ready -------------------------------------------------------------------------------------------------

def test_ready_with_the_published_exposed_data_in_one_write() -> None:
    step = scope_plan.plan_ready(scope(), NOW, t, ["1.2.3.4"])
    assert step.status is not None and step.status["state"] == "Ready"
    assert step.status["exposedData"] == {"natGatewayIps": ["1.2.3.4"], "readTime": NOW}
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in step.status["conditions"]] == [
        ("Ready", "True", "Ready", "Ready")]
    assert step.requeue_after == scope_plan.RESYNC and step.event is None


def test_ready_again_writes_nothing_and_a_failed_exposed_data_comes_back_in_a_minute() -> None:
    first = scope_plan.plan_ready(scope(), NOW, t)
    assert first.status is not None and "exposedData" not in first.status
    ready = scope(status=first.status)
    again = scope_plan.plan_ready(ready, "2026-01-01T12:30:00Z", t)
    assert again.status is None and again.requeue_after == 1800
    assert scope_plan.plan_ready(ready, NOW, t, retry=True).requeue_after == 60


# -- the runtime is gone ------------------------------------------------------------------------------------

class Gone:
    """The gone plan's writes as the tests name them."""

    def __init__(self, outcome: Outcome) -> None:
        writes = [w for w in outcome.writes if isinstance(w, Action)]
        self.requeue_after = outcome.requeue_after
        self.delete_network = any(w.verb == "delete" and w.kind == "Network" and w.name == "k1--kyma" for w in writes)
        self.create_nuke = next((w.object for w in writes if w.verb == "create" and w.kind == "Nuke"), None)
        self.delete_nuke = any(w.verb == "delete" and w.kind == "Nuke" for w in writes)
        order = [(w.verb, w.kind) for w in writes if w.kind == "Scope"]
        assert order in ([], [("remove_finalizer", "Scope"), ("delete", "Scope")]), order
        self.release = bool(order)


def test_gone_creates_the_nuke_then_waits_for_it_then_releases() -> None:
    create = Gone(scope_plan.plan_gone(scope(), None, True, t))
    assert create.delete_network and create.requeue_after == 1 and not create.release
    assert create.create_nuke == {"metadata": {"name": "k1", "namespace": "kcp-system",
                                               "labels": {names.LABEL_KYMA_NAME: "k1"}},
                                  "spec": {"scope": {"name": "k1"}}}
    nuke = {"metadata": {"creationTimestamp": "2026-01-01T06:00:00Z"}, "status": {"state": "Processing"}}
    waiting = Gone(scope_plan.plan_gone(scope(), nuke, True, t))
    assert (waiting.create_nuke, waiting.delete_nuke, waiting.requeue_after, waiting.release) == (None, False, 1, False)
    done = {**nuke, "status": {"state": "Ready"}}
    assert Gone(scope_plan.plan_gone(scope(), done, True, t)).release


def test_gone_deletes_a_finished_nuke_of_an_earlier_runtime_of_the_name() -> None:
    old = {"metadata": {"creationTimestamp": "2025-12-01T00:00:00Z"}, "status": {"state": "Ready"}}
    gone = Gone(scope_plan.plan_gone(scope(), old, True, t))
    assert gone.delete_nuke and gone.requeue_after == 1 and not gone.release


@pytest.mark.parametrize(("enabled", "plan"), [(False, "aws"), (True, "trial")])
def test_no_nuke_when_disabled_or_trial(enabled: bool, plan: str) -> None:
    assert not scope_plan.nukes(scope(plan=plan), enabled)
    gone = Gone(scope_plan.plan_gone(scope(plan=plan), None, enabled, t))
    assert gone.release and gone.delete_network and gone.create_nuke is None


# -- Kyma activation ----------------------------------------------------------------------------------------

def kyma(*modules: dict) -> dict[str, Any]:
    return {"metadata": {"name": "k1"}, "status": {"modules": list(modules)}}


@pytest.mark.parametrize(("cr", "scope_found", "active", "state"), [
    (kyma({"name": "cloud-manager", "state": "Ready"}), True, True, "Ready"),
    (kyma({"name": "cloud-manager", "state": "Error"}), True, True, "Error"),
    (kyma({"name": "cloud-manager"}), True, True, "Unknown"),
    (kyma({"name": "cloud-manager", "state": "Ready"}), False, False, "Ready"),
    (kyma({"name": "btp-operator", "state": "Ready"}, "not-a-module"), True, False, "NotPresent"),
    (kyma(), True, False, "NotPresent"),
    (None, True, False, "NotPresent"),
])
def test_kyma_activation(cr: Any, scope_found: bool, active: bool, state: str) -> None:
    assert kyma_plan.plan(cr, {} if scope_found else None) == kyma_plan.Activation(active, state)


# -- SkrStatus ----------------------------------------------------------------------------------------------

HANDLES = [{"title": "Installer", "ok": True, "outcomes": ["skr/x: unchanged"]}]


def test_skrstatus_created_with_identity_connections_and_handles() -> None:
    [write] = skrstatus_plan.plan("kcp-system", "k1", scope(), None, HANDLES, NOW).writes
    assert isinstance(write, Action) and write.verb == "create" and write.kind == "SkrStatus"
    assert write.object["metadata"] == {"name": "k1", "namespace": "kcp-system",
                                        "labels": {names.LABEL_KYMA_NAME: "k1"}}
    spec = write.object["spec"]
    assert (spec["kymaName"], spec["provider"], spec["brokerPlan"], spec["globalAccount"], spec["subAccount"],
            spec["region"], spec["shootName"]) == ("k1", "aws", "aws", "ga", "sa", "eu-central-1", "c-1")
    assert (spec["pastConnections"], spec["averageIntervalSeconds"], spec["conditions"]) == ([NOW], 0, HANDLES)


def test_skrstatus_replaced_keeps_the_last_ten_connections_and_their_average() -> None:
    past = [f"2026-01-01T11:{m:02d}:00Z" for m in range(50, 60)]
    current = {"metadata": {"resourceVersion": "9"}, "spec": {"pastConnections": [*past, "garbage"]}}
    [write] = skrstatus_plan.plan("kcp-system", "k1", None, current, [], NOW).writes
    assert isinstance(write, Action)
    assert write.verb == "update" and write.object["metadata"]["resourceVersion"] == "9"
    spec = write.object["spec"]
    assert spec["pastConnections"] == [*past[1:], NOW] and spec["averageIntervalSeconds"] == 60
    assert (spec["provider"], spec["brokerPlan"]) == ("", "")
