"""The reconcile toolkit's pure parts: conditions, status patches, steps, actions, metrics."""

from __future__ import annotations

import datetime as dt

import pytest
from prometheus_client import CollectorRegistry, Counter

from kube.toolkit import (
    Action,
    Event,
    Failure,
    Outcome,
    Refusal,
    conditions,
    counter,
    deleting,
    gauge,
    has_finalizer,
    histogram,
    now_rfc3339,
    status_changed,
    status_patch,
)
from workers.controller import ResultKind

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def test_now_rfc3339_is_utc_seconds() -> None:
    moment = dt.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert now_rfc3339(moment) == "2026-03-04T03:06:07Z"
    assert now_rfc3339().endswith("Z") and len(now_rfc3339()) == 20


@pytest.mark.parametrize(("status", "text"), [(True, "True"), (False, "False"), ("Unknown", "Unknown")])
def test_condition_shape(status: bool | str, text: str) -> None:
    cond = conditions.condition("Ready", status, "R", "m", T0, observed_generation=3)
    assert cond == {"type": "Ready", "status": text, "reason": "R", "message": "m", "lastTransitionTime": T0,
                    "observedGeneration": 3}


def test_set_condition_keeps_time_while_status_holds_and_replaces_in_place() -> None:
    first = [conditions.condition("A", True, "x", "", T0), conditions.condition("B", True, "y", "", T0)]
    same_status = conditions.set_condition(first, conditions.condition("A", True, "z", "new", T1))
    assert [c["type"] for c in same_status] == ["A", "B"]
    assert same_status[0]["lastTransitionTime"] == T0 and same_status[0]["reason"] == "z"
    flipped = conditions.set_condition(first, conditions.condition("A", False, "z", "", T1))
    assert flipped[0]["lastTransitionTime"] == T1
    added = conditions.set_condition(first, conditions.condition("C", True, "w", "", T1))
    assert [c["type"] for c in added] == ["A", "B", "C"]


def test_exclusive_find_remove_same() -> None:
    old = [conditions.condition("Ready", True, "Ready", "", T0), conditions.condition("Error", True, "E", "", T0)]
    only = conditions.set_exclusive(old, conditions.condition("Ready", True, "Ready", "again", T1))
    assert len(only) == 1 and only[0]["lastTransitionTime"] == T0
    assert conditions.find(old, "Error") is old[1] and conditions.find(old, "X") is None
    assert conditions.is_true(old, "Ready") and not conditions.is_true(old, "X")
    assert conditions.remove(old, "Error") == old[:1]
    moved = [dict(old[1], lastTransitionTime=T1), old[0]]
    assert conditions.same(old, moved) and not conditions.same(old, old[:1])


def test_status_patch_only_what_differs() -> None:
    current = {"state": "Ready", "id": "a", "conditions": [conditions.condition("Ready", True, "R", "", T0)]}
    assert status_patch(current, {"state": "Ready", "id": None if False else "a"}) is None
    assert status_patch(current, {"conditions": [conditions.condition("Ready", True, "R", "", T1)]}) is None
    assert status_patch(current, {"state": "Error", "id": None, "gone": None}) == {"state": "Error", "id": None}
    assert status_patch(None, {"state": "Ready"}) == {"state": "Ready"}


@pytest.mark.parametrize(("step", "outcome", "after"), [
    (Outcome(), ResultKind.SUCCESS, None),
    (Outcome(requeue_after=5), ResultKind.REQUEUE_AFTER, 5.0),
    (Outcome(requeue_after=5, error="boom"), ResultKind.ERROR, None),
])
def test_step_as_result(step: Outcome, outcome: ResultKind, after: float | None) -> None:
    result = step.as_result()
    assert result.outcome is outcome and result.requeue_after == after


def test_action_describe() -> None:
    create = Action("create", "VirtualService", {"metadata": {"namespace": "shop", "generateName": "orders-"}})
    assert create.describe() == "create VirtualService shop/orders-" and create.name == ""
    delete = Action("delete", "Secret", {"metadata": {"name": "s"}})
    assert delete.describe() == "delete Secret /s" and delete.namespace == ""
    assert Event("Warning", "R", "m").type == "Warning"


def test_metrics_registered_once_through_public_api() -> None:
    registry = CollectorRegistry()
    first = counter("toolkit_test_things", "Things.", ["kind"], registry=registry)
    assert counter("toolkit_test_things", "Things.", ["kind"], registry=registry) is first
    assert isinstance(first, Counter)
    first.labels("a").inc()
    assert registry.get_sample_value("toolkit_test_things_total", {"kind": "a"}) == 1.0
    with pytest.raises(ValueError, match="defined again"):
        counter("toolkit_test_things", "Things.", ["other"], registry=registry)
    with pytest.raises(ValueError, match="defined again"):
        gauge("toolkit_test_things", "Things.", ["kind"], registry=registry)
    hist = histogram("toolkit_test_seconds", "Seconds.", buckets=[0.1, 1.0], registry=registry)
    hist.observe(0.5)
    assert registry.get_sample_value("toolkit_test_seconds_bucket", {"le": "1.0"}) == 1.0


@pytest.mark.parametrize(("status", "kind"), [(0, "retry"), (500, "retry"), (503, "retry"), (429, "throttled"),
                                              (404, "not_found"), (400, "refused"), (403, "refused"),
                                              (409, "refused"), (422, "refused")])
def test_one_classification_of_http_failures(status: int, kind: str) -> None:
    failure = Failure.of_http(status, "words", code="Code")
    assert failure.kind == kind and failure.message == "words" and str(failure) == "words"
    assert failure.retryable is (kind in ("retry", "throttled")) and failure.not_found is (kind == "not_found")


def test_kube_errors_are_refusals_of_the_same_protocol() -> None:
    from kube.errors import error_for

    err = error_for(422, b'{"kind":"Status","reason":"Invalid","message":"bad name"}', "x")
    assert isinstance(err, Refusal) and err.failure == Failure("refused", 422, "Invalid", "bad name", str(err))
    assert error_for(503, b"").failure.retryable


def test_the_pure_predicates() -> None:
    obj = {"metadata": {"finalizers": ["a/b"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert has_finalizer(obj, "a/b") and not has_finalizer({}, "a/b") and deleting(obj) and not deleting({})
    ready = {"state": "Ready", "conditions": [{"type": "Ready", "status": "True", "reason": "R", "message": "m",
                                               "lastTransitionTime": "t1"}]}
    same = {**ready, "conditions": [{**ready["conditions"][0], "lastTransitionTime": "t2"}]}  # type: ignore[dict-item]
    assert not status_changed(ready, same) and status_changed(ready, {"state": "Error"})
    assert not status_changed(ready, {"state": "Ready", "lastProcessedTime": "now"}, ignore=("lastProcessedTime",))
