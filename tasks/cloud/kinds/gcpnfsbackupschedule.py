"""GcpNfsBackupSchedule: GcpNfsVolumeBackups of one GcpNfsVolume at cron times, and their retention
(cloud-manager's ``pkg/skr/backupschedule/v1`` with ``backupImplGcpNfs.go``). No KCP mirror, no provider
call: the plan writes SKR objects only (the backups' own kind calls Filestore). Timed: an object whose next
run is past the connect is a key of its own, requeued at its run time (:mod:`tasks.cloud.skr.timed`)."""

from __future__ import annotations

from tasks.cloud import names, registry
from tasks.cloud.skr import backupschedule as skr
from tasks.cloud.skr import backupschedule_plan as plan
from tasks.cloud.skr.backupschedule_render import GCP_KINDS, problems, render_schedules

KIND = registry.register(registry.Kind(
    name="gcpnfsbackupschedule",
    skr=registry.SkrSide(resources={"gcp": names.GCP_NFS_BACKUP_SCHEDULE}, read=skr.read, plan=plan.plan, order=80,
                          quota={names.GCP_NFS_BACKUP_SCHEDULE.kind: plan.QUOTA}, summary=skr.summary, timed=True),
    render=registry.KindRender(
        "gcpnfsbackupschedule",
        "GcpNfsBackupSchedules -> state, next run times, the backup a due run creates, what retention deletes (now).",
        "GcpNfsBackupSchedule, GcpNfsVolume and (optional) GcpNfsVolumeBackup manifests", GCP_KINDS,
        lambda scope, docs, settings: render_schedules(scope, docs, skr.GCP),
        problems=lambda scope, docs: problems(docs, skr.GCP))))
