"""Nuke's AWS backups (pkg/kcp/provider/aws/nuke): which recovery points are the runtime's, the order, the
empty vault last (tasks/cloud/aws/nuke_backups_plan.py, pure; tasks/cloud/aws/nuke_backups.py over a
fake client)."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud.aws import nfsbackup_client, nuke_backups
from tasks.cloud.aws.nuke_backups_plan import KIND, LIST_FAILED, Target, objects, owned, target, vault_name
from tasks.cloud.kcp.nuke_plan import plan

ACCOUNT, REGION = "123456789012", "eu-central-1"
WHERE = Target(ACCOUNT, REGION, "cm-kyma-1")
VAULT_ARN = f"arn:aws:backup:{REGION}:{ACCOUNT}:backup-vault:cm-kyma-1"
NOW = "2026-01-01T00:00:00Z"


def scope(name: str = "kyma-1", account: str = ACCOUNT, region: str = REGION) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"provider": "aws", "region": region,
                                                  "scope": {"aws": {"accountId": account}}}}


def point(ident: str, status: str = "COMPLETED", created: str = "2026-01-01", region: str = REGION,
          account: str = ACCOUNT, vault: str | None = "cm-kyma-1") -> dict[str, Any]:
    found: dict[str, Any] = {"RecoveryPointArn": f"arn:aws:backup:{region}:{account}:recovery-point:{ident}",
                             "Status": status, "CreationDate": created}
    if vault is not None:
        found["BackupVaultName"] = vault
    return found


def test_the_runtime_vault_is_its_scopes_own() -> None:
    assert target(scope()) == WHERE
    assert vault_name("kyma-1") == nfsbackup_client.vault_name("kyma-1") == "cm-kyma-1"
    for bad in (scope(account="12345"), scope(account="../123456789012"), scope(region=""),
                scope(region="eu-central-1/x"), scope(name=""), scope(name="x" * 60), scope(name="a b")):
        assert target(bad) is None, bad
    assert KIND == "AwsNfsVolumeBackup" and LIST_FAILED == "ErrorListingAwsRecoveryPoints"


def test_only_the_runtimes_recovery_points_are_owned() -> None:
    assert owned(point("a"), WHERE) and owned(point("a", vault=None), WHERE)
    assert not owned(point("a", region="us-east-1"), WHERE)
    assert not owned(point("a", account="999999999999"), WHERE)
    assert not owned(point("a", vault="cm-other"), WHERE)
    assert not owned({"RecoveryPointArn": f"arn:aws:backup:{REGION}:{ACCOUNT}:backup-vault:cm-kyma-1"}, WHERE)
    assert not owned({}, WHERE)


def test_objects_oldest_first_waiting_ones_without_a_call_and_no_vault_while_points_remain() -> None:
    listed = [point("c", created="2026-03-01"), point("a", "DELETING", created="2026-01-01"),
              point("b", "CREATING", created="2026-02-01"), point("x", vault="cm-other"), point("c")]
    found = objects(listed, {"BackupVaultName": "cm-kyma-1", "BackupVaultArn": VAULT_ARN}, WHERE)
    assert [(o.id.rsplit(":", 1)[-1], o.deleting) for o in found] == [("a", True), ("b", True), ("c", False)]
    assert found[2].method == "delete_recovery_point" and found[2].args == ("cm-kyma-1", listed[0]["RecoveryPointArn"])
    # a foreign point listed in the vault (never expected) also keeps the vault: AWS would refuse it
    assert objects([point("x", account="999999999999")], {"BackupVaultName": "cm-kyma-1",
                                                          "BackupVaultArn": VAULT_ARN}, WHERE) == []


def test_the_empty_vault_is_deleted_last() -> None:
    vault = {"BackupVaultName": "cm-kyma-1", "BackupVaultArn": VAULT_ARN, "NumberOfRecoveryPoints": 0}
    [only] = objects([], vault, WHERE)
    assert (only.id, only.deleting, only.method, only.args) == (VAULT_ARN, False, "delete_vault",
                                                                ("cm-kyma-1",))
    assert objects([], None, WHERE) == []
    assert objects([], {**vault, "NumberOfRecoveryPoints": 2}, WHERE) == []
    assert objects([], {**vault, "BackupVaultName": "cm-other"}, WHERE) == []


class FakeBackup:
    """The two reads Nuke makes, recorded."""

    def __init__(self, points: list[dict[str, Any]], vault: dict[str, Any] | None) -> None:
        self.points, self.found_vault, self.calls = points, vault, []  # type: list[tuple[str, ...]]

    def recovery_points(self, account_id: str, backup_vault_name: str) -> list[dict[str, Any]]:
        self.calls.append(("list", account_id, backup_vault_name))
        return self.points

    def vault(self, backup_vault_name: str) -> dict[str, Any] | None:
        self.calls.append(("describe", backup_vault_name))
        return self.found_vault


def test_listed_through_the_client_then_nuke_deletes_in_order() -> None:
    fake = FakeBackup([point("a"), point("b", "DELETING")], None)
    found = nuke_backups.listed(fake, scope())  # type: ignore[arg-type]
    assert fake.calls == [("list", ACCOUNT, "cm-kyma-1")]  # no describe while points are listed
    nuke = {"metadata": {"name": "kyma-1"}, "spec": {"scope": {"name": "kyma-1"}}, "status": {}}
    first = plan(nuke, {}, lambda s: s, NOW, {KIND: found})
    calls = [w for w in first.writes if not hasattr(w, "verb")]
    assert [(c.client, c.method, c.args) for c in calls] == [
        (KIND, "delete_recovery_point", ("cm-kyma-1", point("a")["RecoveryPointArn"]))]
    assert first.status is not None and first.status["state"] == "Deleting"

    nuke["status"] = first.status
    fake = FakeBackup([], {"BackupVaultName": "cm-kyma-1", "BackupVaultArn": VAULT_ARN,
                           "NumberOfRecoveryPoints": 0})
    second = plan(nuke, {}, lambda s: s, NOW, {KIND: nuke_backups.listed(fake, scope())})  # type: ignore[arg-type]
    assert [(c.method, c.args) for c in second.writes] == [("delete_vault", ("cm-kyma-1",))]
    assert second.status is not None and second.status["resources"] == [{
        "kind": KIND, "resourceType": "ProviderResource",
        "objects": {point("a")["RecoveryPointArn"]: "Deleted", point("b")["RecoveryPointArn"]: "Deleted",
                    VAULT_ARN: "Deleting"}}]

    nuke["status"] = second.status
    done = plan(nuke, {}, lambda s: s, NOW, {KIND: nuke_backups.listed(FakeBackup([], None), scope())})  # type: ignore[arg-type]
    assert done.writes == () and done.status is not None and done.status["state"] == "Ready"


def test_a_scope_without_account_or_region_lists_nothing() -> None:
    from tasks.cloud.settings import CloudSettings

    bad = scope(account="")
    assert nuke_backups.client(bad, CloudSettings()) is None
    assert nuke_backups.listed(None, bad) == []
    with pytest.raises(AssertionError):
        assert nuke_backups.listed(FakeBackup([point("a")], None), bad)  # type: ignore[arg-type]
