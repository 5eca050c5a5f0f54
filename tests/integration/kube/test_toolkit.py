"""The reconcile toolkit's writers against the dev API server: finalizers, status, the executor."""

from __future__ import annotations

from typing import Any

import pytest

from kube import ApiError, Conflict, Kube, Resource, resources
from kube.toolkit import (
    Action,
    Call,
    Event,
    Failure,
    Outcome,
    Refusal,
    StatusWriter,
    add_finalizer,
    execute,
    remove_finalizer,
    update_on_conflict,
    write_status,
)
from workers.controller import ResultKind

pytestmark = pytest.mark.integration

FIN = "tests.reconcilery.io/finalizer"


def widget(kube: Kube, res: Resource, ns: str, name: str = "w") -> dict[str, Any]:
    return kube.create(res, {"apiVersion": f"{res.group}/{res.version}", "kind": res.kind,
                             "metadata": {"name": name, "namespace": ns}, "spec": {"size": 1}})


def events_of(kube: Kube, ns: str, name: str) -> list[tuple[str, str, str]]:
    return [(e["type"], e["reason"], e["message"]) for e in kube.list(resources.EVENT, ns)
            if e["involvedObject"]["name"] == name]


def test_finalizers_add_once_remove_with_legacy(kube: Kube, widgets: Resource, unique_ns: str) -> None:
    obj = widget(kube, widgets, unique_ns)
    added = add_finalizer(kube, widgets, obj, FIN)
    assert added["metadata"]["finalizers"] == [FIN]
    assert add_finalizer(kube, widgets, added, FIN) is added  # no request when present
    with pytest.raises(Conflict):  # stale resourceVersion
        add_finalizer(kube, widgets, obj, "other/finalizer")
    both = kube.patch(widgets, "w", {"metadata": {"finalizers": [FIN, "legacy/f", "keep/f"]}}, unique_ns)
    kept = remove_finalizer(kube, widgets, both, FIN, legacy=("legacy/f",))
    assert kept is not None and kept["metadata"]["finalizers"] == ["keep/f"]
    kube.delete(widgets, "w", unique_ns)
    deleting = kube.get(widgets, "w", unique_ns)
    assert deleting is not None and deleting["metadata"].get("deletionTimestamp")
    last = remove_finalizer(kube, widgets, deleting, "keep/f")  # the API server answers the last state
    assert last is not None and not last["metadata"].get("finalizers")
    assert kube.get(widgets, "w", unique_ns) is None  # ... and deletes the object
    assert remove_finalizer(kube, widgets, both, "keep/f") is None  # already gone: None, no error


def test_carry_out_writes_status_and_event_only_when_told(kube: Kube, widgets: Resource, unique_ns: str) -> None:
    obj = widget(kube, widgets, unique_ns)
    step = Outcome(status={"state": "Ready"}, event=Event("Normal", "Reconciled", "all good"), add_finalizer=FIN,
                requeue_after=30)
    written = execute(step, kube, widgets, obj).obj
    assert written is not None and written["status"] == {"state": "Ready"}
    assert written["metadata"]["finalizers"] == [FIN]
    assert events_of(kube, unique_ns, "w") == [("Normal", "Reconciled", "all good")]
    assert step.as_result().requeue_after == 30
    before = written["metadata"]["resourceVersion"]
    assert write_status(kube, widgets, written, None) is None  # nothing to write: no request
    assert kube.get(widgets, "w", unique_ns)["metadata"]["resourceVersion"] == before  # type: ignore[index]
    last = execute(Outcome(remove_finalizer=FIN), kube, widgets, written).obj
    assert last is not None and last["metadata"].get("finalizers") in (None, [])


def test_status_writer_writes_differences_and_warns_once(kube: Kube, widgets: Resource, unique_ns: str) -> None:
    writer = StatusWriter(kube, widgets, widget(kube, widgets, unique_ns), now=lambda: "2026-01-01T00:00:00Z")
    assert writer.patch(state="Creating", id="x") and not writer.patch(state="Creating")
    assert writer.fail("Invalid", "bad cidr") and not writer.fail("Invalid", "bad cidr")
    assert writer.state == "Error" and [c["type"] for c in writer.conditions] == ["Error"]
    assert writer.ready("fine", id=None) and writer.status.get("id") is None
    assert writer.without("Ready") and not writer.without("Ready")
    assert writer.writes == 4
    assert events_of(kube, unique_ns, "w") == [("Warning", "Invalid", "bad cidr")]


def test_execute_applies_actions_in_order_and_the_first_refused_one_stops_them(kube: Kube, unique_ns: str) -> None:
    seen: list[str] = []
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": unique_ns}}
    kinds = {"ConfigMap": resources.CONFIGMAP}
    made = execute(Outcome(writes=(Action("create", "ConfigMap", cm),)), kube, resources=kinds,
                   written=lambda w, _answer: seen.append(w.describe()))
    assert made.refused is None and seen == [f"create ConfigMap {unique_ns}/a"]
    actual = kube.get(resources.CONFIGMAP, "a", unique_ns)
    assert actual is not None
    bad = Action("create", "ConfigMap", {**cm, "metadata": {"name": "Not_Valid", "namespace": unique_ns}})
    stopped = execute(Outcome(writes=(
        Action("update", "ConfigMap", {**actual, "data": {"k": "v"}}), bad, Action("delete", "ConfigMap", cm),
    ), refused=lambda w, f, _answers: Outcome(error=f"{w.describe()}: {f.message}")), kube, resources=kinds)
    assert stopped.refused is not None and stopped.refused[0] is bad and stopped.refused[1].status == 422
    assert str(stopped.outcome.error).startswith(f"create ConfigMap {unique_ns}/Not_Valid: ")
    assert kube.get(resources.CONFIGMAP, "a", unique_ns) is not None  # the delete after it never ran
    with pytest.raises(Conflict):  # stale resourceVersion: not a refusal, the reconcile runs again
        execute(Outcome(writes=(Action("update", "ConfigMap", actual),)), kube, resources=kinds)
    twice = execute(Outcome(writes=(Action("delete", "ConfigMap", cm),) * 2), kube, resources=kinds)
    assert twice.refused is None and twice.answers == (None, None)  # gone twice: done


def test_a_patch_of_the_reconciled_object_is_made_under_its_resource_version_after_its_finalizer(
        kube: Kube, widgets: Resource, unique_ns: str) -> None:
    obj = widget(kube, widgets, unique_ns)
    meta = {"annotations": {"step": "1"}, "resourceVersion": obj["metadata"]["resourceVersion"]}
    done = execute(Outcome(add_finalizer=FIN, writes=(Action.named("patch", widgets, "w", unique_ns,
                                                                   body={"metadata": meta}),)), kube, widgets, obj)
    assert done.obj is not None and done.obj["metadata"]["annotations"] == {"step": "1"}
    assert done.obj["metadata"]["finalizers"] == [FIN]
    kube.patch(widgets, "w", {"spec": {"size": 2}}, unique_ns)  # changed by someone else since it was read
    stale = {"annotations": {"step": "2"}, "resourceVersion": done.obj["metadata"]["resourceVersion"]}
    with pytest.raises(Conflict):
        execute(Outcome(writes=(Action.named("patch", widgets, "w", unique_ns, body={"metadata": stale}),)),
                kube, widgets, done.obj)


def test_update_on_conflict_reads_again_after_a_409(kube: Kube, unique_ns: str) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": unique_ns},
          "data": {"n": "0"}}
    kube.create(resources.CONFIGMAP, cm)
    seen: list[str | None] = []

    def bump(obj: dict[str, Any] | None) -> dict[str, Any] | None:
        assert obj is not None
        seen.append(obj["data"]["n"])
        if len(seen) == 1:  # someone else writes between our read and our write: a 409, read again
            kube.replace(resources.CONFIGMAP, {**obj, "data": {"n": "other"}})
        return {**obj, "data": {"n": str(len(seen))}}

    written = update_on_conflict(kube, resources.CONFIGMAP, "b", bump, namespace=unique_ns)
    assert written is not None and written["data"] == {"n": "2"} and seen == ["0", "other"]
    assert update_on_conflict(kube, resources.CONFIGMAP, "b", lambda obj: None, namespace=unique_ns) is None
    missing: list[dict[str, Any] | None] = []
    assert update_on_conflict(kube, resources.CONFIGMAP, "gone", lambda o: missing.append(o), unique_ns) is None
    assert missing == [None]

    def always_stale(obj: dict[str, Any] | None) -> dict[str, Any] | None:
        assert obj is not None
        seen.append("stale")
        kube.replace(resources.CONFIGMAP, {**obj, "data": {"n": f"x{len(seen)}"}})
        return obj

    with pytest.raises(Conflict):
        update_on_conflict(kube, resources.CONFIGMAP, "b", always_stale, namespace=unique_ns, attempts=2)
    assert seen.count("stale") == 2


class _Refused(Refusal):
    """A provider client's error, classified the way its client layer would."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self._failure = failure

    @property
    def failure(self) -> Failure:
        return self._failure


class _Cloud:
    """A provider client whose answers the test decides: ``refuse`` maps a method to its failure."""

    def __init__(self, refuse: dict[str, Failure] | None = None) -> None:
        self.calls: list[str] = []
        self.refuse = refuse or {}

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(method)
            if method in self.refuse:
                raise _Refused(self.refuse[method])
            return {"id": f"{method}-{len(self.calls)}"}
        return call


def test_execute_makes_the_writes_in_order_then_the_status_once(kube: Kube, widgets: Resource,
                                                                 unique_ns: str) -> None:
    obj = widget(kube, widgets, unique_ns)
    cloud = _Cloud()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned", "namespace": unique_ns}}
    outcome = Outcome(add_finalizer=FIN, writes=(
        Action.named("label", widgets, "w", unique_ns, body={"id": "x"}),  # the object itself: its rv moves on
        Call("create_subnet", ("10.0.0.0/24",)),
        Action.on("create", resources.CONFIGMAP, cm),
        Call("tag", client="other"),
    ), then=lambda answers: Outcome(status={"subnet": answers[1]["id"], "state": "Ready"}, remove_finalizer=FIN))
    done = execute(outcome, kube, widgets, obj, clients={"": cloud, "other": cloud})
    assert cloud.calls == ["create_subnet", "tag"]
    assert kube.get(resources.CONFIGMAP, "owned", unique_ns) is not None
    assert done.obj is not None and done.obj["status"] == {"subnet": "create_subnet-1", "state": "Ready"}
    assert done.obj["metadata"]["labels"] == {"id": "x"} and not done.obj["metadata"].get("finalizers")
    assert done.refused is None and done.result.outcome is ResultKind.SUCCESS


def test_execute_stops_at_a_refused_call_and_answers_what_the_plan_says(kube: Kube, widgets: Resource,
                                                                        unique_ns: str) -> None:
    obj = widget(kube, widgets, unique_ns)
    bad = Failure("refused", 400, "InvalidParameter", "the CIDR is taken")
    cloud = _Cloud({"create": bad})
    seen: list[tuple[str, Failure, int]] = []

    def refused(write: Any, failure: Failure, answers: Any) -> Outcome:
        seen.append((write.kind, failure, len(answers)))
        return Outcome(status={"state": "Error", "message": failure.message}, requeue_after=60)

    outcome = Outcome(writes=(Call("prepare"), Call("create", kind="create"), Call("never")), refused=refused,
                      status={"state": "Ready"})
    done = execute(outcome, kube, widgets, obj, clients={"": cloud})
    assert cloud.calls == ["prepare", "create"] and seen == [("create", bad, 1)]
    assert done.obj is not None and done.obj["status"] == {"state": "Error", "message": "the CIDR is taken"}
    assert done.result.requeue_after == 60 and done.refused == (outcome.writes[1], bad)


def test_execute_defaults_transient_calls_to_their_delay_and_kube_refusals_raise(
        kube: Kube, widgets: Resource, unique_ns: str) -> None:
    obj = widget(kube, widgets, unique_ns)
    slow = _Cloud({"create": Failure("throttled", 429, delay=30)})
    done = execute(Outcome(writes=(Call("create"),), status={"state": "Ready"}), kube, widgets, obj,
                   clients={"": slow}, scale=lambda s: s / 10)
    assert done.result.outcome is ResultKind.REQUEUE_AFTER and done.result.requeue_after == 3
    assert done.obj is not None and not done.obj.get("status")  # a transient failure leaves the status
    broken = _Cloud({"create": Failure("refused", 400, message="no")})
    assert execute(Outcome(writes=(Call("create"),)), kube, widgets, obj,
                   clients={"": broken}).result.outcome is ResultKind.ERROR
    invalid = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_Valid", "namespace": unique_ns}}
    with pytest.raises(ApiError) as refused:
        execute(Outcome(writes=(Action.on("create", resources.CONFIGMAP, invalid),)), kube, widgets, obj)
    assert refused.value.failure.kind == "refused" and refused.value.failure.status == 422
    gone = Action.named("delete", resources.CONFIGMAP, "never-was", unique_ns)
    assert execute(Outcome(writes=(gone, gone)), kube, widgets, obj).refused is None  # a missing one is done
    ignored = execute(Outcome(writes=(Call("create"), Call("after")), refused=lambda *_: None), kube, widgets, obj,
                      clients={"": broken})
    assert broken.calls[-2:] == ["create", "after"] and ignored.result.outcome is ResultKind.SUCCESS
