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


def conds(step: Any) -> list[tuple[str, str, str]]:
    return [(c["type"], c["reason"], c["message"]) for c in (step.status or {}).get("conditions") or []]


def test_the_first_instance_becomes_served_then_ready_with_the_finalizer() -> None:
    first = instance()
    decided = plan(Seen(first, [first]), t, NOW)
    assert decided.step.status == {"served": "True"} and decided.step.requeue_after == 0
    served = instance(served="True")
    decided = plan(Seen(served, [served]), t, NOW)
    assert decided.step.add_finalizer == names.FINALIZER
    assert decided.step.status is not None and decided.step.status["state"] == "Ready"
    assert conds(decided.step) == [("Ready", "Ready", "Ready")]


def test_a_second_instance_is_not_served() -> None:
    served, second = instance(served="True"), instance("second")
    decided = plan(Seen(second, [served, second]), t, NOW)
    assert decided.step.status is not None
    assert decided.step.status["state"] == "Warning" and decided.step.status["served"] == "False"
    assert conds(decided.step) == [("Error", "OtherIsServed", "Only one instance of CloudResources is allowed: "
                                    "kyma-system/default is served")]


def test_deletion_waits_for_the_resources_then_deletes_the_crds() -> None:
    obj = instance(served="True", finalizer=True, deleting=True)
    crds = ["ipranges.cloud-resources.kyma-project.io", "awsnfsvolumes.cloud-resources.kyma-project.io"]
    waiting = plan(Seen(obj, [obj], crds, ["IpRange", "AwsNfsVolume"]), t, NOW)
    assert waiting.step.requeue_after == 10 and waiting.delete_crds == ()
    assert waiting.step.status is not None and waiting.step.status["state"] == "Warning"
    assert conds(waiting.step) == [("Warning", "ResourcesExist",
                                    "Can not deactivate module while cloud resources exist: [AwsNfsVolume IpRange]")]
    done = plan(Seen(obj, [obj], crds, []), t, NOW)
    assert done.delete_crds == tuple(crds) and done.step.remove_finalizer == names.FINALIZER
