"""Which Filestore backups Nuke deletes for a gone runtime (pkg/kcp/provider/gcp/nuke), pure."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud.gcp.nuke_backups_plan import KIND, LIST_FAILED, listing, objects, owned
from tasks.cloud.kcp.nuke_plan import ProviderObject

PROJECT = "sap-kyma-example-42"
SCOPE = {"metadata": {"name": "kyma-1", "namespace": "kcp-system"},
         "spec": {"provider": "gcp", "scope": {"gcp": {"project": PROJECT}}}}
MINE = {"managed-by": "cloud-manager", "scope-name": "kyma-1"}


def backup(name: str, labels: dict[str, str] | None = None, state: str = "READY",
           project: str = PROJECT, location: str = "us-east4") -> dict[str, Any]:
    return {"name": f"projects/{project}/locations/{location}/backups/{name}", "state": state,
            "labels": dict(MINE if labels is None else labels)}


def test_lists_every_location_of_the_project_with_the_originals_filter() -> None:
    """gcpclient.GetSkrBackupsFilter over GetFilestoreParentPath(project, "-")."""
    assert listing(SCOPE) == (f"projects/{PROJECT}/locations/-",
                              'labels.managed-by="cloud-manager" AND labels.scope-name="kyma-1"')
    assert (KIND, LIST_FAILED) == ("FilestoreBackup", "ErrorListingGcpFilestoreBackups")


@pytest.mark.parametrize("scope", [
    {"metadata": {"name": "kyma-1"}, "spec": {"scope": {"aws": {"accountId": "1"}}}},  # no project
    {"metadata": {"name": "kyma-1"}, "spec": {"scope": {"gcp": {"project": "a/b"}}}},
    {"metadata": {"name": ""}, "spec": {"scope": {"gcp": {"project": PROJECT}}}},
    {"metadata": {"name": 'x" OR labels.managed-by="cloud-manager'}, "spec": {"scope": {"gcp": {"project": PROJECT}}}},
    {"metadata": {"name": "Kyma.1"}, "spec": {"scope": {"gcp": {"project": PROJECT}}}},  # no label can hold it
])
def test_a_scope_that_can_own_no_backup_lists_nothing(scope: dict[str, Any]) -> None:
    assert listing(scope) is None


def test_only_the_scopes_own_backups_are_deleted_and_running_deletes_not_asked_again() -> None:
    listed = [
        backup("b1", location="us-east4"),
        backup("b2", location="europe-west3", state="DELETING"),
        backup("b1", location="us-east4"),  # listed twice (pages shifted): one object
        backup("shared", {"managed-by": "cloud-manager", "scope-name": "kyma-2", "cm-allow-c-1": "x"}),
        backup("foreign", {"managed-by": "someone", "scope-name": "kyma-1"}),
        backup("prefix", {"managed-by": "cloud-manager", "scope-name": "kyma-10"}),
        backup("other-project", project="elsewhere"),
        backup("unlabelled", {}),
        {"name": f"projects/{PROJECT}/locations/us-east4/instances/x", "labels": MINE},  # not a backup
        {"name": "", "labels": MINE},
    ]
    name = f"projects/{PROJECT}/locations/%s/backups/%s"
    assert objects(listed, SCOPE) == [  # no createTime here: by name
        ProviderObject(name % ("europe-west3", "b2"), True, "delete_backup", (name % ("europe-west3", "b2"),)),
        ProviderObject(name % ("us-east4", "b1"), False, "delete_backup", (name % ("us-east4", "b1"),)),
    ]


def test_owned_needs_the_scope_name() -> None:
    nameless = {"metadata": {}, "spec": {"scope": {"gcp": {"project": PROJECT}}}}
    assert not owned(backup("b", {"managed-by": "cloud-manager", "scope-name": ""}), nameless)
    assert owned(backup("b"), SCOPE)


def test_a_chain_outside_the_basic_tiers_is_deleted_one_backup_per_turn() -> None:
    """Filestore answers RESOURCE_EXHAUSTED to a second delete in a chain (not on BASIC tiers): one is asked,
    oldest first; BASIC chains and other chains go at once."""
    def of(backup_id: str, created: str, source: str, tier: str, state: str = "READY",
           location: str = "us-east4") -> dict[str, Any]:
        return {**backup(backup_id, state=state, location=location), "createTime": created, "sourceInstanceTier": tier,
                "sourceInstance": f"projects/{PROJECT}/locations/us-east4-a/instances/{source}"}

    listed = [of("z-new", "2026-01-03", "zonal", "ZONAL"), of("z-old", "2026-01-01", "zonal", "ZONAL"),
              of("z-mid", "2026-01-02", "zonal", "ZONAL"), of("r1", "2026-01-02", "regional", "REGIONAL"),
              of("r2", "2026-01-03", "regional", "REGIONAL", state="DELETING"),
              of("b1", "2026-01-01", "basic", "BASIC_HDD"), of("b2", "2026-01-02", "basic", "BASIC_HDD"),
              of("z-eu", "2026-01-04", "zonal", "ZONAL", location="europe-west3")]  # another region: another chain
    asked = [o.id.rsplit("/", 1)[-1] for o in objects(listed, SCOPE) if not o.deleting]
    assert asked == ["b1", "z-old", "b2", "z-eu"]  # r1 waits for r2; z-mid and z-new for z-old
    assert [o.id.rsplit("/", 1)[-1] for o in objects(listed, SCOPE)] == [
        "b1", "z-old", "b2", "r1", "z-mid", "r2", "z-new", "z-eu"]  # oldest first
