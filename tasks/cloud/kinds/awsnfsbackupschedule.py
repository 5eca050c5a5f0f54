"""AwsNfsBackupSchedule: AwsNfsVolumeBackups of one AwsNfsVolume at cron times, and their retention
(cloud-manager's ``pkg/skr/backupschedule/v1`` with ``backupImplAwsNfs.go``). No KCP mirror, no provider
call: the plan writes SKR objects only (the backups' own kind calls AWS Backup). Timed: an object whose next
run is past the connect is a key of its own, requeued at its run time (:mod:`tasks.cloud.skr.timed`)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.skr import backupschedule as skr
from tasks.cloud.skr import backupschedule_plan as plan
from tasks.cloud.skr.backupschedule_render import AWS_KINDS, problems, render_schedules

KIND = registry.register(registry.Kind(
    name="awsnfsbackupschedule",
    skr=registry.SkrSide(resources={"aws": names.AWS_NFS_BACKUP_SCHEDULE}, read=skr.read, plan=plan.plan, order=80,
                          quota={names.AWS_NFS_BACKUP_SCHEDULE.kind: plan.QUOTA}, summary=skr.summary, timed=True),
    render=registry.KindRender(
        "awsnfsbackupschedule",
        "AwsNfsBackupSchedules -> state, next run times, the backup a due run creates, what retention deletes (now).",
        "AwsNfsBackupSchedule, AwsNfsVolume and (optional) AwsNfsVolumeBackup manifests", AWS_KINDS,
        lambda scope, docs, settings: render_schedules(scope, docs, skr.AWS),
        problems=lambda scope, docs: problems(docs, skr.AWS))))
