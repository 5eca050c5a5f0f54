"""GcpNfsVolumeBackup: a Filestore backup of a GcpNfsVolume of the same SKR, made by the SKR loop itself (no
KCP mirror: cloud-manager's ``pkg/skr/gcpnfsvolumebackup/v2``); Nuke deletes a gone runtime's backups
(``pkg/kcp/provider/gcp/nuke``)."""

from __future__ import annotations

from tasks.cloud import registry
from tasks.cloud.gcp import nuke_backups
from tasks.cloud.skr import gcpnfsvolumebackup as skr
from tasks.cloud.skr.gcpnfsbackup_render import BACKUP, VOLUME, render_backups
from tasks.cloud.skr.gcpnfsvolumebackup_plan import KINDS, plan

KIND = registry.register(registry.Kind(
    name="gcpnfsvolumebackup",
    # after the volumes (40); no quota: the original has none, and a schedule keeps up to 100 Ready ones
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=60, clients=skr.client, summary=skr.summary),
    provider_nuke={"gcp": nuke_backups.NUKE_SIDE},
    render=registry.KindRender(
        "gcpnfsvolumebackup", "GcpNfsVolumeBackups with a Scope -> the Filestore backup each would create.",
        "GcpNfsVolumeBackup and GcpNfsVolume manifests", (BACKUP, VOLUME),
        lambda scope, docs, settings: render_backups(scope, docs))))
