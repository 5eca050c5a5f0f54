"""AWS NFS backups end to end on the package's cloud stack: an SKR AwsNfsVolume (EFS in moto), an
AwsNfsVolumeBackup with a ``location`` in another region through the AWS Backup stand-in (the vault
``cm-<scope>`` in both regions, a backup job, its recovery point, a copy job into the other region's vault) to
Ready (one of a volume that does not exist: Error), an AwsNfsVolumeRestore of it to Done with its directory,
and the backup's deletion deleting both recovery points before it goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from kube import Kube
from standins import awsbackup
from tasks.cloud import names
from tests.integration.cloud.conftest import REGION, CloudEnv
from tests.integration.cloud.test_skr import active_skr, conditions

pytestmark = pytest.mark.integration

REMOTE = "us-west-2"


@pytest.fixture
def quick_jobs() -> Iterator[None]:
    """Jobs of the stand-in (in this process' moto server) step every 0.1 s instead of 0.5 s."""
    awsbackup.set_step(0.1)
    yield
    awsbackup.set_step(awsbackup.STEP_SECONDS)


def state(cloud: CloudEnv, skr: Kube, res: Any, name: str, wanted: str, timeout: float = 60) -> dict[str, Any]:
    return cloud.wait(lambda: (o := skr.get(res, name, "default")) is not None
                      and (o.get("status") or {}).get("state") == wanted and o,
                      timeout=timeout, message=f"{res.kind} {name} {wanted}")


def test_aws_nfs_volume_backup_restore_and_deletion(cloud: CloudEnv, quick_jobs: None) -> None:
    rt, skr = active_skr(cloud)
    skr.create(names.AWS_NFS_VOLUME, {"metadata": {"name": "data", "namespace": "default"},
                                      "spec": {"capacity": "10Gi"}})
    volume = state(cloud, skr, names.AWS_NFS_VOLUME, "data", "Ready", timeout=120)
    fs_id = (cloud.kcp_get(names.NFS_INSTANCE, volume["status"]["id"]) or {})["status"]["id"]

    skr.create(names.AWS_NFS_VOLUME_BACKUP, {"metadata": {"name": "bk", "namespace": "default"},
                                             "spec": {"source": {"volume": {"name": "data"}},
                                                      "location": REMOTE}})
    skr.create(names.AWS_NFS_VOLUME_BACKUP, {"metadata": {"name": "lost", "namespace": "default"},
                                             "spec": {"source": {"volume": {"name": "nope"}}}})
    backup = state(cloud, skr, names.AWS_NFS_VOLUME_BACKUP, "bk", "Ready")
    lost = state(cloud, skr, names.AWS_NFS_VOLUME_BACKUP, "lost", "Error")
    assert conditions(lost) == [("Error", "True", "MissingNfsVolume", "AwsNfsVolume default/nope does not exist")]
    status = backup["status"]
    assert conditions(backup) == [("Ready", "True", "Ready", "Backup is ready for use.")]
    assert status["locations"] == [REGION, REMOTE] and status["jobId"] and status["copyJobId"]
    assert names.FINALIZER in backup["metadata"]["finalizers"]
    aws = boto3.client("backup", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    vault = f"cm-{rt.kyma}"
    account = aws.describe_backup_vault(BackupVaultName=vault)["BackupVaultArn"].split(":")[4]
    point_arn = f"arn:aws:backup:{REGION}:{account}:recovery-point:{status['id']}"
    point = aws.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=point_arn)
    assert point["Status"] == "COMPLETED" and point["ResourceArn"].endswith(f":file-system/{fs_id}")
    assert status["capacity"] == "12Ki"  # both recovery points
    remote = boto3.client("backup", endpoint_url=cloud.aws, region_name=REMOTE, aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    remote_arn = f"arn:aws:backup:{REMOTE}:{account}:recovery-point:{status['remoteId']}"
    assert remote.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=remote_arn)["Status"] == "COMPLETED"

    skr.create(names.AWS_NFS_VOLUME_RESTORE, {"metadata": {"name": "rs", "namespace": "default"},
                                              "spec": {"source": {"backup": {"name": "bk"}}}})
    state(cloud, skr, names.AWS_NFS_VOLUME_RESTORE, "rs", "Done")
    restore = cloud.wait(lambda: (o := skr.get(names.AWS_NFS_VOLUME_RESTORE, "rs", "default")) is not None
                         and names.FINALIZER not in (o["metadata"].get("finalizers") or []) and o,
                         message="a Done restore releases its finalizer")
    assert restore["status"]["restoredDir"].startswith("aws-backup-restore_")
    assert conditions(restore) == [("Ready", "True", "Ready", "Restore Job completed successfully")]
    job = aws.describe_restore_job(RestoreJobId=restore["status"]["jobId"])
    assert job["Status"] == "COMPLETED"

    skr.delete(names.AWS_NFS_VOLUME_BACKUP, "bk", "default")
    skr.delete(names.AWS_NFS_VOLUME_BACKUP, "lost", "default")
    cloud.wait(lambda: skr.get(names.AWS_NFS_VOLUME_BACKUP, "bk", "default") is None
               and skr.get(names.AWS_NFS_VOLUME_BACKUP, "lost", "default") is None, message="backups gone")
    for client, arn in ((aws, point_arn), (remote, remote_arn)):
        with pytest.raises(client.exceptions.ResourceNotFoundException):
            client.describe_recovery_point(BackupVaultName=vault, RecoveryPointArn=arn)
