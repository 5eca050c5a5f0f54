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


def test_provider_resources_are_deleted_in_the_same_turn_and_hold_the_nuke_until_gone() -> None:
    """As cloud-manager's pkg/kcp/provider/gcp/nuke: listed backups are deleted (one whose deletion runs is
    not asked again), tracked as ProviderResource, and keep the Nuke Deleting until none is listed."""
    from tasks.cloud.kcp.nuke_plan import ProviderObject

    nuke = {"metadata": {"name": "k"}, "spec": {"scope": {"name": "k"}}, "status": {}}
    backups = [ProviderObject("b1", False, "delete_backup", ("projects/p/locations/l/backups/b1",)),
               ProviderObject("b2", True, "delete_backup", ("projects/p/locations/l/backups/b2",))]
    first = plan(nuke, {"IpRange": []}, t, NOW, {"FilestoreBackup": backups})
    calls = [w for w in first.writes if not hasattr(w, "verb")]
    assert [(c.client, c.method, c.args) for c in calls] == [
        ("FilestoreBackup", "delete_backup", ("projects/p/locations/l/backups/b1",))]
    assert first.status is not None and first.status["state"] == "Deleting" and first.requeue_after == 10
    assert first.status["resources"] == [{"kind": "FilestoreBackup", "resourceType": "ProviderResource",
                                          "objects": {"b1": "Deleting", "b2": "Deleting"}}]
    nuke["status"] = first.status
    done = plan(nuke, {"IpRange": []}, t, NOW, {"FilestoreBackup": []})
    assert done.writes == () and done.status is not None and done.status["state"] == "Ready"
    assert done.status["resources"] == [{"kind": "FilestoreBackup", "resourceType": "ProviderResource",
                                         "objects": {"b1": "Deleted", "b2": "Deleted"}}]


def test_kcp_objects_still_deleting_keep_the_nuke_processing_while_backups_go_too() -> None:
    from tasks.cloud.kcp.nuke_plan import ProviderObject

    nuke = {"metadata": {"name": "k"}, "spec": {"scope": {"name": "k"}}, "status": {}}
    out = plan(nuke, {"IpRange": [obj("a")]}, t, NOW,
               {"AwsNfsVolumeBackup": [ProviderObject("arn:rp", False, "delete_recovery_point", ("v", "arn:rp"))]})
    assert [getattr(w, "verb", None) or w.method for w in out.writes] == ["delete", "delete_recovery_point"]
    assert out.status is not None and out.status["state"] == "Processing" and out.requeue_after == 1
    assert out.refused is not None
    from kube.refusal import Failure

    again = out.refused(out.writes[1], Failure("refused", message="AccessDenied"), ())
    assert again.writes == () and again.requeue_after == 10  # a refused delete: the next turn asks again
