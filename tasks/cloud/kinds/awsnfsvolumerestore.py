"""AwsNfsVolumeRestore: an AWS Backup restore job of an AwsNfsVolumeBackup into its volume's EFS file system,
in place; no KCP mirror, the SKR plan calls AWS Backup with the Scope's credentials (cloud-manager's
``pkg/skr/awsnfsvolumerestore``, feature ``nfsBackup``)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.aws.nfsbackup_render import RENDERED_RESTORES, render_restores
from tasks.cloud.aws.nfsrestore_plan import plan
from tasks.cloud.skr import awsnfsbackup as skr

KIND = registry.register(registry.Kind(
    name="awsnfsvolumerestore",
    # after the backups (45); no default quota, as the original: a Done restore stays and reads nothing
    skr=registry.SkrSide(resources={"aws": names.AWS_NFS_VOLUME_RESTORE}, read=skr.read_restore, plan=plan,
                         order=46,
                         clients=skr.clients, summary=skr.restore_summary),
    render=registry.KindRender(
        "awsnfsvolumerestore", "AWS NFS volume restores with a Scope -> the AWS Backup restore jobs.",
        "AwsNfsVolumeRestore, AwsNfsVolumeBackup and AwsNfsVolume manifests", RENDERED_RESTORES, render_restores)))
