"""The reconcile toolkit's writers against the dev API server: finalizers, status, Steps, actions."""

from __future__ import annotations

from typing import Any

import pytest

from kube import Conflict, Kube, Resource, resources
from kube.toolkit import (
    Action,
    Event,
    StatusWriter,
    Step,
    add_finalizer,
    apply_actions,
    carry_out,
    remove_finalizer,
    update_on_conflict,
    write_status,
)

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
    step = Step(status={"state": "Ready"}, event=Event("Normal", "Reconciled", "all good"), add_finalizer=FIN,
                requeue_after=30)
    written = carry_out(kube, widgets, obj, step)
    assert written is not None and written["status"] == {"state": "Ready"}
    assert written["metadata"]["finalizers"] == [FIN]
    assert events_of(kube, unique_ns, "w") == [("Normal", "Reconciled", "all good")]
    assert step.as_result().requeue_after == 30
    before = written["metadata"]["resourceVersion"]
    assert write_status(kube, widgets, written, None) is None  # nothing to write: no request
    assert kube.get(widgets, "w", unique_ns)["metadata"]["resourceVersion"] == before  # type: ignore[index]
    assert carry_out(kube, widgets, written, Step(remove_finalizer=FIN))["metadata"].get("finalizers") in (None, [])  # type: ignore[index]


def test_status_writer_writes_differences_and_warns_once(kube: Kube, widgets: Resource, unique_ns: str) -> None:
    writer = StatusWriter(kube, widgets, widget(kube, widgets, unique_ns), now=lambda: "2026-01-01T00:00:00Z")
    assert writer.patch(state="Creating", id="x") and not writer.patch(state="Creating")
    assert writer.fail("Invalid", "bad cidr") and not writer.fail("Invalid", "bad cidr")
    assert writer.state == "Error" and [c["type"] for c in writer.conditions] == ["Error"]
    assert writer.ready("fine", id=None) and writer.status.get("id") is None
    assert writer.without("Ready") and not writer.without("Ready")
    assert writer.writes == 4
    assert events_of(kube, unique_ns, "w") == [("Warning", "Invalid", "bad cidr")]


def test_apply_actions_in_order_stops_at_first_refusal(kube: Kube, unique_ns: str) -> None:
    seen: list[str] = []
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": unique_ns}}
    kinds = {"ConfigMap": resources.CONFIGMAP}
    ok = apply_actions(kube, [Action("create", "ConfigMap", cm)], kinds, written=lambda a: seen.append(a.verb))
    assert ok is None and seen == ["create"]
    actual = kube.get(resources.CONFIGMAP, "a", unique_ns)
    assert actual is not None
    refused = apply_actions(kube, [
        Action("update", "ConfigMap", {**actual, "data": {"k": "v"}}),
        Action("create", "ConfigMap", {**cm, "metadata": {"name": "Not_Valid", "namespace": unique_ns}}),
        Action("delete", "ConfigMap", cm),
    ], kinds)
    assert refused is not None and refused.action.verb == "create" and refused.status == 422
    assert str(refused).startswith(f"create ConfigMap {unique_ns}/Not_Valid: ")
    assert kube.get(resources.CONFIGMAP, "a", unique_ns) is not None  # the delete after it never ran
    with pytest.raises(Conflict):  # stale resourceVersion: not a refusal, the reconcile runs again
        apply_actions(kube, [Action("update", "ConfigMap", actual)], kinds)
    assert apply_actions(kube, [Action("delete", "ConfigMap", cm)] * 2, kinds) is None  # gone twice: done


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
