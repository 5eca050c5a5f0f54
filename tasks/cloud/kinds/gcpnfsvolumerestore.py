"""GcpNfsVolumeRestore: restores a Filestore backup into a GcpNfsVolume of the same SKR, one restore at a
time per volume, made by the SKR loop itself (no KCP mirror: cloud-manager's ``pkg/skr/gcpnfsvolumerestore/v2``)."""

from __future__ import annotations

from tasks.cloud import registry
from tasks.cloud.skr import gcpnfsvolumerestore as skr
from tasks.cloud.skr.gcpnfsbackup_render import BACKUP, RESTORE, VOLUME, render_restores
from tasks.cloud.skr.gcpnfsvolumerestore_plan import KINDS, plan

KIND = registry.register(registry.Kind(
    name="gcpnfsvolumerestore",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=65, clients=skr.client,
                         summary=skr.summary),  # no default quota, as the original: a Done restore stays
    render=registry.KindRender(
        "gcpnfsvolumerestore", "GcpNfsVolumeRestores with a Scope -> the Filestore restore each would start.",
        "GcpNfsVolumeRestore, GcpNfsVolumeBackup and GcpNfsVolume manifests", (RESTORE, BACKUP, VOLUME),
        lambda scope, docs, settings: render_restores(scope, docs))))
