"""AwsNfsVolumeBackup: a one-time AWS Backup of an AwsNfsVolume's EFS file system into the runtime's vault,
copied into another region's vault when ``location`` says so; no KCP mirror, the SKR plan calls AWS Backup
with the Scope's credentials (cloud-manager's ``pkg/skr/awsnfsvolumebackup``, feature ``nfsBackup``)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.aws import nuke_backups
from tasks.cloud.aws.nfsbackup_plan import plan
from tasks.cloud.aws.nfsbackup_render import RENDERED_BACKUPS, render_backups
from tasks.cloud.skr import awsnfsbackup as skr

KIND = registry.register(registry.Kind(
    name="awsnfsvolumebackup",
    # after the volumes (40); no default quota: the original has none, and a schedule keeps up to 100 Ready
    # backups (maxReadyBackups) — a configured one (resourceQuota.skr) still applies
    skr=registry.SkrSide(resources={"aws": names.AWS_NFS_VOLUME_BACKUP}, read=skr.read_backup, plan=plan, order=45,
                         clients=skr.clients, summary=skr.backup_summary),
    # Nuke deletes a gone runtime's recovery points in its vault (pkg/kcp/provider/aws/nuke, nukeBackupsAws)
    provider_nuke={"aws": nuke_backups.NUKE_SIDE},
    render=registry.KindRender(
        "awsnfsvolumebackup", "AWS NFS volume backups with a Scope -> the AWS Backup vault, backup and copy jobs.",
        "AwsNfsVolumeBackup and AwsNfsVolume manifests", RENDERED_BACKUPS, render_backups)))
