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
    assert [(w.verb, w.kind, w.name) for w in first.writes] == [("delete", "IpRange", "a")]
    assert first.requeue_after == 1
    assert first.status == {"resources": [{"kind": "IpRange", "resourceType": "KCP",
                                                "objects": {"a": "Deleting", "b": "Deleting"}}],
                                 "initializedOn": NOW, "state": "Processing"}
    nuke["status"] = first.status
    done = plan(nuke, {"IpRange": [obj("c", scope="other")], "Network": []}, t, NOW)
    assert done.writes == () and done.requeue_after is None
    assert done.status is not None and done.status["state"] == "Ready"
    assert done.status["resources"] == [{"kind": "IpRange", "resourceType": "KCP",
                                               "objects": {"a": "Deleted", "b": "Deleted"}}]
    assert [c["type"] for c in done.status["conditions"]] == ["Ready"]
