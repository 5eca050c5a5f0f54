"""The CloudResources module CR plan, table-driven from the notes (pkg/skr/cloudresources), pure."""

from __future__ import annotations

from typing import Any

from tasks.cloud import names
from tasks.cloud.skr.cloudresources_plan import Seen, plan

NOW = "2026-01-01T00:00:00Z"


def t(seconds: float) -> float:
    return seconds


def instance(name: str = "default", served: str = "", finalizer: bool = False, deleting: bool = False) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": "kyma-system",
                            "finalizers": [names.FINALIZER] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "status": {"served": served} if served else {}}


def deleted_crds(outcome: Any) -> tuple[str, ...]:
    """The CRDs the outcome deletes (before its finalizer goes: every write precedes the removal)."""
    return tuple(w.name for w in outcome.writes if w.verb == "delete" and w.kind == "CustomResourceDefinition")


def conds(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions") or []]


def test_the_first_instance_becomes_served_then_ready_with_the_finalizer() -> None:
    first = instance()
    decided = plan(Seen(first, [first]), t, NOW)
    assert decided.status == {"served": "True"} and decided.requeue_after == 0
    served = instance(served="True")
    decided = plan(Seen(served, [served]), t, NOW)
    assert decided.add_finalizer == names.FINALIZER
    assert decided.status is not None and decided.status["state"] == "Ready"
    assert conds(decided) == [("Ready", "Ready", "Ready")]


def test_a_second_instance_is_not_served() -> None:
    served, second = instance(served="True"), instance("second")
    decided = plan(Seen(second, [served, second]), t, NOW)
    assert decided.status is not None
    assert decided.status["state"] == "Warning" and decided.status["served"] == "False"
    assert conds(decided) == [("Error", "OtherIsServed", "Only one instance of CloudResources is allowed: "
                                    "kyma-system/default is served")]


def test_deletion_waits_for_the_resources_then_deletes_the_crds() -> None:
    obj = instance(served="True", finalizer=True, deleting=True)
    crds = ["ipranges.cloud-resources.kyma-project.io", "awsnfsvolumes.cloud-resources.kyma-project.io"]
    waiting = plan(Seen(obj, [obj], crds, ["IpRange", "AwsNfsVolume"]), t, NOW)
    assert waiting.requeue_after == 10 and deleted_crds(waiting) == ()
    assert waiting.status is not None and waiting.status["state"] == "Warning"
    assert conds(waiting) == [("Warning", "ResourcesExist",
                                    "Can not deactivate module while cloud resources exist: [AwsNfsVolume IpRange]")]
    done = plan(Seen(obj, [obj], crds, []), t, NOW)
    assert deleted_crds(done) == tuple(crds) and done.remove_finalizer == names.FINALIZER
