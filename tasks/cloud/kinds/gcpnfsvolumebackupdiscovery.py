"""GcpNfsVolumeBackupDiscovery (cluster scoped): the Filestore backups other shoots shared with this one,
listed into its status by the SKR loop (no KCP mirror: cloud-manager's ``pkg/skr/gcpnfsvolumebackupdiscovery``)."""

from __future__ import annotations

from tasks.cloud import registry
from tasks.cloud.skr import gcpnfsvolumebackupdiscovery as skr
from tasks.cloud.skr.gcpnfsvolumebackupdiscovery_plan import KINDS, plan

KIND = registry.register(registry.Kind(
    name="gcpnfsvolumebackupdiscovery",
    skr=registry.SkrSide(resources=KINDS, read=skr.read, plan=plan, order=66, clients=skr.client)))
# no default quota, as the original: a discovery lists once (at most 1,000 backups) and stays Done
