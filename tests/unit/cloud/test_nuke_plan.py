"""The Nuke plan (pkg/kcp/nuke), pure."""

from __future__ import annotations

from typing import Any

from tasks.cloud.kcp.nuke_plan import plan

NOW = "2026-01-01T00:00:00Z"


def t(seconds: float) -> float:
    return seconds


def obj(name: str, scope: str = "k", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "spec": {"scope": {"name": scope}}}


def test_deletes_the_scopes_objects_and_tracks_them_until_ready() -> None:
    nuke = {"metadata": {"name": "k"}, "spec": {"scope": {"name": "k"}}, "status": {}}
    found = {"IpRange": [obj("a"), obj("b", deleting=True), obj("c", scope="other")], "Network": []}
    first = plan(nuke, found, t, NOW)
    assert first.deletes == (("IpRange", "a"),)
    assert first.step.requeue_after == 1
    assert first.step.status == {"resources": [{"kind": "IpRange", "resourceType": "KCP",
                                                "objects": {"a": "Deleting", "b": "Deleting"}}],
                                 "initializedOn": NOW, "state": "Processing"}
    nuke["status"] = first.step.status
    done = plan(nuke, {"IpRange": [obj("c", scope="other")], "Network": []}, t, NOW)
    assert done.deletes == () and done.step.requeue_after is None
    assert done.step.status is not None and done.step.status["state"] == "Ready"
    assert done.step.status["resources"] == [{"kind": "IpRange", "resourceType": "KCP",
                                               "objects": {"a": "Deleted", "b": "Deleted"}}]
    assert [c["type"] for c in done.step.status["conditions"]] == ["Ready"]
