"""Issue 30, the API Gateway side: the v1beta1 APIRule admission decision and endpoint (api-gateway 3.4.0's
``internal/webhook/gateway/v1beta1``), the webhook request metrics of the one review skeleton, the
object-modified predicate, and the APIRules-by-state counts of the watcher."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import ClientSession
from prometheus_client import REGISTRY

from informers.store import Stores
from tasks.apigateway import watches
from tasks.apigateway.status import object_modified, state_label
from tasks.apigateway.v1beta1.admission import NOT_SUPPORTED, PATH, decide
from tasks.apigateway.watches import StateCounts
from tasks.apigateway.webhook import conversion_app, v1beta1_webhook_configuration
from watchers.engine import WatchEvent
from webhooks import server
from webhooks.review import answer_code

ROOT = Path(__file__).resolve().parents[3]


# ---- the decision (pure) -------------------------------------------------------------------------------


@pytest.mark.parametrize(("operation", "access", "allowed", "code", "counted"), [
    ("CREATE", False, False, 403, "create"),
    ("UPDATE", False, False, 403, "update"),
    ("DELETE", False, False, 403, "delete"),
    ("CREATE", True, True, 200, "create"),
    ("UPDATE", True, True, 200, "update"),
    ("DELETE", True, True, 200, "delete"),
    ("CONNECT", False, True, 200, None),  # controller-runtime's validator does not validate CONNECT
    ("PATCH", False, False, 400, None),  # no such admission operation: Errored(400)
    (None, True, False, 400, None),
    ({"op": "CREATE"}, True, False, 400, None),
])
def test_v1beta1_decision(operation: Any, access: bool, allowed: bool, code: int, counted: str | None) -> None:
    verdict = decide(operation, access)
    assert (verdict.allowed, verdict.code, verdict.counted) == (allowed, code, counted)
    response = verdict.response()
    assert response["allowed"] is allowed and response["status"]["code"] == code
    if code == 403:
        assert response["status"]["message"] == "v1beta1 APIRule version is no longer supported, please use v2 instead"
        assert response["status"]["reason"] == "Forbidden"
    if code == 400:
        assert response["status"]["message"].startswith("unknown operation")


# ---- the endpoint: counters and the skeleton's metrics --------------------------------------------------


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels or None) or 0.0


def admission_review(operation: str, uid: str = "u-1") -> dict[str, Any]:
    obj = {"apiVersion": "gateway.kyma-project.io/v1beta1", "kind": "APIRule",
           "metadata": {"name": "r", "namespace": "shop"}, "spec": {"host": "h"}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": operation, "object": obj, "oldObject": obj,
                        "kind": {"group": "gateway.kyma-project.io", "version": "v1beta1", "kind": "APIRule"}}}


def post_all(access: Any, bodies: list[tuple[str, bytes]]) -> list[tuple[int, dict[str, Any]]]:
    """POST each ``(path, body)`` to :func:`conversion_app` over plain HTTP on loopback."""
    async def run() -> list[tuple[int, dict[str, Any]]]:
        runner, port = await server.listen(conversion_app(access), "127.0.0.1", 0)
        try:
            async with ClientSession() as session:
                out = []
                for path, body in bodies:
                    async with session.post(f"http://127.0.0.1:{port}{path}", data=body,
                                            headers={"Content-Type": "application/json"}) as resp:
                        out.append((resp.status, json.loads(await resp.read())))
                return out
        finally:
            await runner.cleanup()

    return asyncio.run(run())


def test_the_v1beta1_endpoint_counts_every_request_and_refuses_without_access() -> None:
    names = {op: f"api_gateway_apirule_v1beta1_{op}_actions_total" for op in ("create", "update", "delete")}
    before = {op: sample(name) for op, name in names.items()}
    refused = sample("reconcilery_webhook_requests_total", webhook="apirule-v1beta1", code="403")
    allowed = sample("reconcilery_webhook_requests_total", webhook="apirule-v1beta1", code="200")
    malformed = sample("reconcilery_webhook_requests_total", webhook="apirule-v1beta1", code="400")
    timed = sample("reconcilery_webhook_request_seconds_count", webhook="apirule-v1beta1")

    denied = post_all(False, [(PATH, json.dumps(admission_review(op, f"u-{op}")).encode())
                              for op in ("CREATE", "UPDATE", "DELETE")] + [(PATH, b"{not json")])
    (ok,) = post_all(lambda: True, [(PATH, json.dumps(admission_review("CREATE", "u-ok")).encode())])

    for (status, answer), op in zip(denied, ("CREATE", "UPDATE", "DELETE"), strict=False):
        assert status == 200 and answer["response"]["uid"] == f"u-{op}"
        assert answer["response"]["allowed"] is False
        assert answer["response"]["status"]["message"] == NOT_SUPPORTED
    assert denied[3][0] == 400 and denied[3][1]["kind"] == "AdmissionReview"
    assert ok[0] == 200 and ok[1]["response"] == {"uid": "u-ok", "allowed": True, "status": {"metadata": {},
                                                                                              "code": 200}}
    # every request is counted, refused or not (the original increments before deciding)
    assert {op: sample(name) - before[op] for op, name in names.items()} == {"create": 2, "update": 1, "delete": 1}
    assert sample("reconcilery_webhook_requests_total", webhook="apirule-v1beta1", code="403") - refused == 3
    assert sample("reconcilery_webhook_requests_total", webhook="apirule-v1beta1", code="200") - allowed == 1
    assert sample("reconcilery_webhook_requests_total", webhook="apirule-v1beta1", code="400") - malformed == 1
    assert sample("reconcilery_webhook_request_seconds_count", webhook="apirule-v1beta1") - timed == 5


def test_an_access_check_that_fails_refuses_and_conversion_counts_under_its_name() -> None:
    def broken() -> bool:
        raise RuntimeError("configmap unreadable")

    converted = sample("reconcilery_webhook_requests_total", webhook="apirule-conversion", code="200")
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "c-1", "desiredAPIVersion": "gateway.kyma-project.io/v2alpha1", "objects": []}}
    (refused, conversion) = post_all(broken, [(PATH, json.dumps(admission_review("UPDATE")).encode()),
                                              ("/convert", json.dumps(review).encode())])
    assert refused[1]["response"]["allowed"] is False and refused[1]["response"]["status"]["code"] == 403
    assert conversion[0] == 200 and conversion[1]["response"]["result"]["status"] == "Success"
    assert sample("reconcilery_webhook_requests_total", webhook="apirule-conversion", code="200") - converted == 1


@pytest.mark.parametrize(("status", "body", "code"), [
    (200, {"response": {"allowed": True}}, "200"),
    (200, {"response": {"allowed": False, "status": {"code": 403}}}, "403"),
    (200, {"response": {"result": {"status": "Failure", "code": 500}}}, "500"),
    (200, {"response": {"allowed": False, "status": {"code": "999; drop"}}}, "200"),  # not a code: the HTTP one
    (200, {"response": {"allowed": False, "status": {"code": 70000}}}, "200"),
    (413, {"response": {"status": {"code": 413}}}, "413"),
    (429, {}, "429"),
])
def test_the_code_label_is_bounded(status: int, body: dict[str, Any], code: str) -> None:
    assert answer_code(status, body) == code


# ---- deploy/ and the configuration up registers ---------------------------------------------------------


def test_deploy_carries_the_originals_validating_webhook_configuration() -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy/apigateway/webhook.yaml").read_text()) if d]
    (vwc,) = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    (service,) = [d for d in docs if d["kind"] == "Service"]
    ref = vwc["webhooks"][0]["clientConfig"]["service"]
    assert vwc == v1beta1_webhook_configuration()
    assert (ref["name"], ref["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
    assert ref["port"] in {p["port"] for p in service["spec"]["ports"]} and ref["path"] == PATH
    (hook,) = vwc["webhooks"]
    assert (hook["failurePolicy"], hook["sideEffects"], hook["matchPolicy"]) == ("Fail", "None", "Exact")
    assert "timeoutSeconds" not in hook and "namespaceSelector" not in hook  # the original's: defaults


# ---- api_gateway_api_rule_object_modified_errors_total: which failures count -----------------------------


MODIFIED = ('Operation cannot be fulfilled on apirules.gateway.kyma-project.io "r": the object has been modified; '
            "please apply your changes to the latest version and try again")


@pytest.mark.parametrize(("status", "reason", "message", "kind", "counted"), [
    (409, "Conflict", MODIFIED, "apirules", True),
    (409, "Conflict", MODIFIED.replace("apirules.gateway", "virtualservices.networking"), "virtualservices", False),
    (409, "AlreadyExists", 'apirules.gateway.kyma-project.io "r" already exists', "apirules", False),
    (409, "Conflict", "Precondition failed: UID in precondition", "apirules", False),
    (422, "Invalid", MODIFIED, "apirules", False),
])
def test_object_modified_counts_only_conflicts_on_the_apirule(status: int, reason: str, message: str, kind: str,
                                                             counted: bool) -> None:
    assert object_modified(status, reason, message, {"kind": kind, "name": "r"}) is counted


# ---- reconcilery_apigateway_apirules{state} -----------------------------------------------------------


def rule(name: str, state: Any = None, namespace: str = "shop") -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace}}
    if state is not None:
        obj["status"] = {"state": state}
    return obj


@pytest.mark.parametrize(("state", "label"), [
    (None, "None"), ("", "None"), ("Ready", "Ready"), ("Error", "Error"), ("Warning", "Warning"),
    ("Processing", "Processing"), ("Deleting", "Deleting"), ("OK", "Other"), ("x" * 10_000, "Other"),
    (["Ready"], "Other"),
])
def test_state_label_is_bounded(state: Any, label: str) -> None:
    assert state_label(rule("r", state)) == label
    assert state_label({"status": "Ready"}) == "None"


def test_state_counts_follow_adds_changes_resyncs_and_deletes() -> None:
    counts = StateCounts()
    counts.update(rule("a"))
    counts.update(rule("b", "Ready"))
    counts.update(rule("a", "Error"))
    counts.update(rule("a", "Error"))  # a resync's ADDED again: no change
    counts.update(rule("b", "Ready"))
    counts.update(rule("c", "Ready", namespace="other"))
    assert {s: counts.count(s) for s in ("None", "Ready", "Error")} == {"None": 0, "Ready": 2, "Error": 1}
    counts.update(rule("b", "Ready"), deleted=True)
    counts.update(rule("zzz", "Ready"), deleted=True)  # never seen: nothing to forget
    assert {s: counts.count(s) for s in ("None", "Ready", "Error")} == {"None": 0, "Ready": 1, "Error": 1}
    counts.rebuild([rule("a", "Warning")])
    assert [counts.count(s) for s in ("Ready", "Error", "Warning")] == [0, 0, 1]


def test_the_watchers_map_function_exports_apirules_by_state() -> None:
    stores = Stores()
    stores.add(watches.APIRULES)
    before = {s: sample("reconcilery_apigateway_apirules", state=s) for s in ("Ready", "Error", "None")}

    for type_, obj, old in (("ADDED", rule("a"), None), ("MODIFIED", rule("a", "Ready"), rule("a")),
                            ("ADDED", rule("b", "Error"), None), ("DELETED", rule("b", "Error"), rule("b", "Error"))):
        list(watches.map_apirule(WatchEvent(type_, obj, old, "local"), stores))
    after = {s: sample("reconcilery_apigateway_apirules", state=s) - before[s] for s in before}
    assert after == {"Ready": 1, "Error": 0, "None": 0}
    del stores  # a dropped cache drops out of the gauge
    gc.collect()
    assert sample("reconcilery_apigateway_apirules", state="Ready") == before["Ready"]
