"""The AWS Backup stand-in (standins/awsbackup.py) against the documented API, through boto3 and the
package's moto server, and the layer's client (tasks/cloud/aws/nfsbackup_client.py) over it: every error
answers the code *and* HTTP status of botocore's Backup model (no ``httpStatusCode`` there, so
botocore's rule: 400, 500 for ``fault`` shapes); vaults (not found, already exists, not deletable
while holding recovery points); a backup job ``CREATED`` -> ``RUNNING`` -> ``COMPLETED`` with its
recovery point ``CREATING`` -> ``COMPLETED`` (``BackupSizeInBytes``), idempotent by token, ``FAILED``
for a file system moto's EFS lacks; a copy job into another region's vault (``FAILED`` without that
vault); a restore job in place with ``CreatedResourceArn``; recovery points listed, tagged, deleted
(``DELETING`` once, then gone).

Its own regions keep it apart from the cloud stack's objects on the shared server; jobs step every
60 s here (:func:`standins.awsbackup.set_step`) and the tests move the stand-in's clock
(:func:`standins.awsbackup.advance`) to complete them, so no assertion races the wall clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from standins import awsbackup
from tasks.cloud.aws import nfsbackup_client as nb
from tasks.cloud.aws.client import AwsError
from tasks.cloud.settings import CloudSettings
from tests.integration.cloud.aws.botomodel import faults
from tests.integration.cloud.aws.botomodel import refused as _refused

pytestmark = pytest.mark.integration

REGION, DEST = "ca-central-1", "sa-east-1"
ACCOUNT = "123456789012"
ROLE = nb.backup_role_arn(ACCOUNT)
STEP = 60.0


MODEL = faults("backup")


def refused(shape: str, call: Callable[[], Any]) -> str:
    """Run ``call``; it must fail with the model's code and status of the fault ``shape``."""
    return _refused(MODEL, shape, call)


@pytest.fixture
def aws(moto_endpoint: str) -> Iterator[dict[str, Any]]:
    kw: dict[str, Any] = {"endpoint_url": moto_endpoint, "aws_access_key_id": "testing",
                          "aws_secret_access_key": "testing"}
    awsbackup.set_step(STEP)
    efs = boto3.client("efs", region_name=REGION, **kw)
    fs = efs.create_file_system(CreationToken=uuid.uuid4().hex)["FileSystemId"]
    yield {"b": boto3.client("backup", region_name=REGION, **kw),
           "dest": boto3.client("backup", region_name=DEST, **kw), "efs": efs, "fs": fs,
           "fs_arn": nb.efs_arn(REGION, ACCOUNT, fs), "id": uuid.uuid4().hex[:8],
           "endpoint": moto_endpoint}
    awsbackup.set_step(awsbackup.STEP_SECONDS)  # no reset(): the cloud stack may share this moto
    efs.delete_file_system(FileSystemId=fs)


def settle(jobs: int = 1) -> None:
    """Complete the jobs started so far: ``jobs`` chained jobs' worth of the stand-in's clock."""
    awsbackup.advance(STEP * 2 * jobs + 1)


def test_vaults_not_found_already_exists_in_use(aws: dict[str, Any]) -> None:
    b, vault = aws["b"], f"cm-{aws['id']}"
    refused("ResourceNotFoundException", lambda: b.describe_backup_vault(BackupVaultName=vault))
    refused("ResourceNotFoundException", lambda: b.delete_backup_vault(BackupVaultName=vault))
    refused("ResourceNotFoundException", lambda: b.list_recovery_points_by_backup_vault(BackupVaultName=vault))
    arn = b.create_backup_vault(BackupVaultName=vault, BackupVaultTags={nb.VAULT_SCOPE_TAG: "s1"},
                                CreatorRequestId=vault)["BackupVaultArn"]
    assert arn == nb.vault_arn(REGION, ACCOUNT, vault)
    refused("AlreadyExistsException", lambda: b.create_backup_vault(BackupVaultName=vault))
    refused("InvalidParameterValueException", lambda: b.create_backup_vault(BackupVaultName="x" * 51))
    assert b.list_tags(ResourceArn=arn)["Tags"] == {nb.VAULT_SCOPE_TAG: "s1"}
    [listed] = [v for v in b.list_backup_vaults()["BackupVaultList"] if v["BackupVaultName"] == vault]
    assert listed["NumberOfRecoveryPoints"] == 0
    assert b.describe_backup_vault(BackupVaultName=vault)["BackupVaultArn"] == arn

    job = b.start_backup_job(BackupVaultName=vault, ResourceArn=aws["fs_arn"], IamRoleArn=ROLE)
    settle()
    assert b.describe_backup_vault(BackupVaultName=vault)["NumberOfRecoveryPoints"] == 1
    refused("InvalidRequestException", lambda: b.delete_backup_vault(BackupVaultName=vault))
    b.delete_recovery_point(BackupVaultName=vault, RecoveryPointArn=job["RecoveryPointArn"])
    b.list_recovery_points_by_backup_vault(BackupVaultName=vault)  # sees it DELETING, then it is gone
    b.delete_backup_vault(BackupVaultName=vault)
    refused("ResourceNotFoundException", lambda: b.describe_backup_vault(BackupVaultName=vault))


def test_backup_copy_restore(aws: dict[str, Any]) -> None:
    b, dest, vault, fs_arn = aws["b"], aws["dest"], f"cm-{aws['id']}", aws["fs_arn"]
    refused("ResourceNotFoundException", lambda: b.start_backup_job(BackupVaultName=vault, ResourceArn=fs_arn,
                                                                    IamRoleArn=ROLE))
    b.create_backup_vault(BackupVaultName=vault)
    refused("InvalidParameterValueException", lambda: b.start_backup_job(
        BackupVaultName=vault, ResourceArn=fs_arn, IamRoleArn="not-a-role"))
    refused("InvalidParameterValueException", lambda: b.start_backup_job(
        BackupVaultName=vault, ResourceArn="arn:aws:ec2:ca-central-1:123456789012:volume/vol-1", IamRoleArn=ROLE))
    refused("ResourceNotFoundException", lambda: b.describe_backup_job(BackupJobId="no-such-job"))
    refused("ResourceNotFoundException", lambda: b.describe_copy_job(CopyJobId="no-such-job"))
    refused("ResourceNotFoundException", lambda: b.describe_restore_job(RestoreJobId="no-such-job"))

    started = b.start_backup_job(BackupVaultName=vault, ResourceArn=fs_arn, IamRoleArn=ROLE, IdempotencyToken="t1",
                                 RecoveryPointTags={"Name": "ns/backup"})
    job_id, point = started["BackupJobId"], started["RecoveryPointArn"]
    assert point.startswith(f"arn:aws:backup:{REGION}:{ACCOUNT}:recovery-point:")
    assert nb.arn_resource_id(point) == point.rsplit(":", 1)[-1]
    assert b.start_backup_job(BackupVaultName=vault, ResourceArn=fs_arn, IamRoleArn=ROLE,
                              IdempotencyToken="t1")["BackupJobId"] == job_id
    assert b.describe_backup_job(BackupJobId=job_id)["State"] in ("CREATED", "RUNNING")
    described = b.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=point)
    assert described["Status"] == "CREATING" and "BackupSizeInBytes" not in described
    refused("InvalidResourceStateException", lambda: b.delete_recovery_point(BackupVaultName=vault,
                                                                             RecoveryPointArn=point))
    dest_arn = nb.vault_arn(DEST, ACCOUNT, vault)
    refused("InvalidRequestException", lambda: b.start_copy_job(
        SourceBackupVaultName=vault, RecoveryPointArn=point, DestinationBackupVaultArn=dest_arn, IamRoleArn=ROLE))
    settle()
    job = b.describe_backup_job(BackupJobId=job_id)
    assert (job["State"], job["BackupSizeInBytes"], job["RecoveryPointArn"]) == ("COMPLETED", awsbackup.BACKUP_SIZE,
                                                                                 point)
    described = b.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=point)
    assert (described["Status"], described["BackupSizeInBytes"], described["ResourceArn"]) == (
        "COMPLETED", awsbackup.BACKUP_SIZE, fs_arn)
    assert b.list_tags(ResourceArn=point)["Tags"] == {"Name": "ns/backup"}
    [listed] = b.list_recovery_points_by_backup_vault(BackupVaultName=vault)["RecoveryPoints"]
    assert listed["RecoveryPointArn"] == point and listed["Status"] == "COMPLETED"
    assert b.list_recovery_points_by_backup_vault(BackupVaultName=vault, ByResourceArn="arn:x")["RecoveryPoints"] == []
    refused("ResourceNotFoundException", lambda: b.describe_recovery_point(BackupVaultName=vault,
                                                                           RecoveryPointArn=point + "0"))

    # copy: a malformed destination refused; a missing destination vault fails the job; then completes
    refused("InvalidParameterValueException", lambda: b.start_copy_job(
        SourceBackupVaultName=vault, RecoveryPointArn=point, DestinationBackupVaultArn="cm-x", IamRoleArn=ROLE))
    refused("ResourceNotFoundException", lambda: b.start_copy_job(
        SourceBackupVaultName=vault, RecoveryPointArn=point + "0", DestinationBackupVaultArn=dest_arn,
        IamRoleArn=ROLE))
    failed = b.start_copy_job(SourceBackupVaultName=vault, RecoveryPointArn=point, DestinationBackupVaultArn=dest_arn,
                              IamRoleArn=ROLE)["CopyJobId"]
    dest.create_backup_vault(BackupVaultName=vault)
    copy_id = b.start_copy_job(SourceBackupVaultName=vault, RecoveryPointArn=point,
                               DestinationBackupVaultArn=dest_arn, IamRoleArn=ROLE, IdempotencyToken="c1")["CopyJobId"]
    copy = b.describe_copy_job(CopyJobId=copy_id)["CopyJob"]
    assert copy["State"] in ("CREATED", "RUNNING") and copy["SourceRecoveryPointArn"] == point
    remote = copy["DestinationRecoveryPointArn"]
    assert remote.startswith(f"arn:aws:backup:{DEST}:{ACCOUNT}:recovery-point:")
    settle()
    failed_job = b.describe_copy_job(CopyJobId=failed)["CopyJob"]
    assert failed_job["State"] == "FAILED" and "does not exist" in failed_job["StatusMessage"]
    assert b.describe_copy_job(CopyJobId=copy_id)["CopyJob"]["State"] == "COMPLETED"
    remote_point = dest.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=remote)
    assert (remote_point["Status"], remote_point["BackupSizeInBytes"]) == ("COMPLETED", awsbackup.BACKUP_SIZE)
    refused("ResourceNotFoundException", lambda: b.describe_recovery_point(BackupVaultName=vault,
                                                                           RecoveryPointArn=remote))

    # restore in place
    meta = b.get_recovery_point_restore_metadata(BackupVaultName=vault, RecoveryPointArn=point)
    assert meta["RestoreMetadata"]["file-system-id"] == aws["fs"] and meta["RecoveryPointArn"] == point
    in_place = {**meta["RestoreMetadata"], "newFileSystem": "false"}
    refused("ResourceNotFoundException", lambda: b.start_restore_job(RecoveryPointArn=point + "0", Metadata=in_place,
                                                                     IamRoleArn=ROLE, ResourceType="EFS"))
    refused("InvalidParameterValueException", lambda: b.start_restore_job(
        RecoveryPointArn=point, Metadata={**in_place, "file-system-id": "fs-0000dead"}, IamRoleArn=ROLE))
    restore_id = b.start_restore_job(RecoveryPointArn=point, Metadata=in_place, IamRoleArn=ROLE, ResourceType="EFS",
                                     IdempotencyToken="r1")["RestoreJobId"]
    assert b.describe_restore_job(RestoreJobId=restore_id)["Status"] in ("CREATED", "RUNNING")
    settle()
    restored = b.describe_restore_job(RestoreJobId=restore_id)
    assert (restored["Status"], restored["CreatedResourceArn"]) == ("COMPLETED", fs_arn)

    # delete: DELETING once, then gone
    b.delete_recovery_point(BackupVaultName=vault, RecoveryPointArn=point)
    assert b.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=point)["Status"] == "DELETING"
    refused("ResourceNotFoundException", lambda: b.describe_recovery_point(BackupVaultName=vault,
                                                                           RecoveryPointArn=point))
    refused("ResourceNotFoundException", lambda: b.delete_recovery_point(BackupVaultName=vault,
                                                                         RecoveryPointArn=point))


def test_failed_backup_and_injected_faults(aws: dict[str, Any]) -> None:
    b, vault = aws["b"], f"cm-{aws['id']}"
    b.create_backup_vault(BackupVaultName=vault)
    gone = nb.efs_arn(REGION, ACCOUNT, "fs-0000dead")
    job_id = b.start_backup_job(BackupVaultName=vault, ResourceArn=gone, IamRoleArn=ROLE)["BackupJobId"]
    settle()
    job = b.describe_backup_job(BackupJobId=job_id)
    assert job["State"] == "FAILED" and gone in job["StatusMessage"]
    assert b.list_recovery_points_by_backup_vault(BackupVaultName=vault)["RecoveryPoints"] == []
    code, status = MODEL["ServiceUnavailableException"]
    awsbackup.inject("StartBackupJob", code, "try later", status)
    refused("ServiceUnavailableException", lambda: b.start_backup_job(BackupVaultName=vault,
                                                                      ResourceArn=aws["fs_arn"], IamRoleArn=ROLE))
    awsbackup.inject("DeleteBackupVault", "DependencyFailureException", "kms", 500)
    refused("DependencyFailureException", lambda: b.delete_backup_vault(BackupVaultName=vault))
    awsbackup.inject("DescribeBackupJob", "DependencyFailureException", "kms", 500)
    refused("DependencyFailureException", lambda: b.describe_backup_job(BackupJobId=job_id))
    awsbackup.inject("ListTags", "ResourceNotFoundException", "gone")
    refused("ResourceNotFoundException", lambda: b.list_tags(ResourceArn=nb.vault_arn(REGION, ACCOUNT, vault)))

    # pages: MaxResults and NextToken, oldest first; the client reads every page
    points = [b.start_backup_job(BackupVaultName=vault, ResourceArn=aws["fs_arn"],
                                 IamRoleArn=ROLE)["RecoveryPointArn"] for _ in range(3)]
    first = b.list_recovery_points_by_backup_vault(BackupVaultName=vault, MaxResults=2)
    assert [p["RecoveryPointArn"] for p in first["RecoveryPoints"]] == points[:2] and first["NextToken"]
    rest = b.list_recovery_points_by_backup_vault(BackupVaultName=vault, MaxResults=2, NextToken=first["NextToken"])
    assert [p["RecoveryPointArn"] for p in rest["RecoveryPoints"]] == points[2:] and "NextToken" not in rest
    refused("InvalidParameterValueException", lambda: b.list_recovery_points_by_backup_vault(
        BackupVaultName=vault, NextToken="not-a-token"))
    settle()
    for point in points:
        b.delete_recovery_point(BackupVaultName=vault, RecoveryPointArn=point)
    b.list_recovery_points_by_backup_vault(BackupVaultName=vault)  # DELETING, then gone
    b.delete_backup_vault(BackupVaultName=vault)


def test_client(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    settings = CloudSettings(aws_endpoint_url=aws["endpoint"], aws_role_name="")
    local, remote = nb.backup_for(settings, ACCOUNT, REGION), nb.backup_for(settings, ACCOUNT, DEST)
    vault = nb.vault_name(f"scope-{aws['id']}")
    assert local.vault(vault) is None and local.recovery_points(ACCOUNT, vault) == []
    arn = local.create_vault(vault, {nb.VAULT_SCOPE_TAG: "scope"})
    remote.create_vault(vault, {nb.VAULT_SCOPE_TAG: "scope"})
    with pytest.raises(AwsError) as exc:
        local.create_vault(vault, {})
    assert nb.is_already_exists(exc.value) and exc.value.status == 400 and not exc.value.not_found
    assert vault in [v["BackupVaultName"] for v in local.list_vaults()]
    assert local.list_tags(arn) == {nb.VAULT_SCOPE_TAG: "scope"}
    started = local.start_backup_job(vault, aws["fs_arn"], ROLE, idempotency_token="tok", tags={"Name": "a/b"})
    job_id, point = started["BackupJobId"], started["RecoveryPointArn"]
    assert local.backup_job("no-such") is None and local.recovery_point(ACCOUNT, vault, point + "0") is None
    settle()
    assert (local.backup_job(job_id) or {})["State"] == "COMPLETED"
    assert (local.recovery_point(ACCOUNT, vault, point) or {})["BackupSizeInBytes"] == awsbackup.BACKUP_SIZE
    copy_id = local.start_copy_job(vault, point, nb.vault_arn(DEST, ACCOUNT, vault), ROLE)["CopyJobId"]
    settle()
    copy = local.copy_job(copy_id) or {}
    assert copy["State"] == "COMPLETED" and local.copy_job("no-such") is None
    [remote_point] = remote.recovery_points(ACCOUNT, vault)
    assert remote_point["RecoveryPointArn"] == copy["DestinationRecoveryPointArn"]
    meta = local.restore_metadata(ACCOUNT, vault, point)["RestoreMetadata"]
    restore_id = local.start_restore_job(point, ROLE, {**meta, "newFileSystem": "false"}, idempotency_token="r")
    settle()
    assert (local.restore_job(restore_id) or {})["CreatedResourceArn"] == aws["fs_arn"]
    assert local.restore_job("no-such") is None
    with pytest.raises(AwsError) as exc:
        local.delete_vault(vault)
    assert exc.value.code == "InvalidRequestException" and not exc.value.retryable
    local.delete_recovery_point(vault, point)
    local.recovery_points(ACCOUNT, vault)  # DELETING, then gone
    local.delete_recovery_point(vault, point)  # already gone: fine
    remote.delete_recovery_point(vault, remote_point["RecoveryPointArn"])
    assert [p["Status"] for p in remote.recovery_points(ACCOUNT, vault)] == ["DELETING"]
    local.delete_vault(vault)
    remote.delete_vault(vault)
    local.delete_vault(vault)  # already gone: fine
    assert local.vault(vault) is None and local.list_tags(arn) == {}


def test_nuke_side_over_the_stand_in(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Nuke's AWS side (tasks/cloud/aws/nuke_backups.py): the runtime's recovery points, then its empty vault,
    then nothing; another runtime's vault untouched."""
    from tasks.cloud.aws import nuke_backups

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    settings = CloudSettings(aws_endpoint_url=aws["endpoint"], aws_role_name="")
    name = f"kyma-{aws['id']}"
    scope = {"metadata": {"name": name}, "spec": {"provider": "aws", "region": REGION,
                                                  "scope": {"aws": {"accountId": ACCOUNT}}}}
    b = aws["b"]
    for vault in (nb.vault_name(name), nb.vault_name(f"other-{aws['id']}")):
        b.create_backup_vault(BackupVaultName=vault)
        b.start_backup_job(BackupVaultName=vault, ResourceArn=aws["fs_arn"], IamRoleArn=ROLE)
    settle()
    client = nuke_backups.client(scope, settings)
    assert client is not None
    [found] = nuke_backups.listed(client, scope)
    assert not found.deleting and found.method == "delete_recovery_point"
    getattr(client, found.method)(*found.args)
    assert [o.deleting for o in nuke_backups.listed(client, scope)] == [True]  # DELETING, then gone
    [vault] = nuke_backups.listed(client, scope)
    assert vault.id == nb.vault_arn(REGION, ACCOUNT, nb.vault_name(name))
    getattr(client, vault.method)(*vault.args)
    assert nuke_backups.listed(client, scope) == []
    assert len(b.list_recovery_points_by_backup_vault(BackupVaultName=f"cm-other-{aws['id']}")["RecoveryPoints"]) == 1
