"""The SKR GcpNfsVolumeBackupDiscovery read (cloud-manager's ``loadAvailableBackups``): the backups shared
with this shoot, listed only while the discovery is ``Processing``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kube import Resource
from tasks.cloud import names
from tasks.cloud.calls import attempt
from tasks.cloud.gcp import nfsbackup_plan as fs
from tasks.cloud.gcp.nfsbackup_client import FileBackupClient
from tasks.cloud.skr.context import SkrContext
from tasks.cloud.skr.gcpnfsvolumebackup import client
from tasks.cloud.skr.gcpnfsvolumebackupdiscovery_plan import Seen

__all__ = ["client", "read"]


def read(ctx: SkrContext, res: Resource, obj: dict[str, Any]) -> Seen:
    """What the plan needs of ``obj``: the shared backups when it is ``Processing`` (else nothing)."""
    base = Seen(obj=obj, scope=ctx.scope, retry=ctx.settings.gcp_retry_wait, everyone=ctx.objects(res),
                quota=ctx.quota(res))
    project, shoot = fs.project(ctx.scope), fs.shoot(ctx.scope)
    if (obj.get("status") or {}).get("state") != names.STATE_PROCESSING or not project or "/" in project \
            or not fs.valid_id(shoot):
        return base if shoot and project else replace(base, backups=[])
    backups: FileBackupClient = client(ctx)[""]
    # todo of the original: the second name is the subaccount's; until the Scope carries one, the shoot's
    listed, failure = attempt(backups.list_backups, f"projects/{project}/locations/-", fs.shared_filter(shoot, shoot))
    return replace(base, backups=listed, failure=failure)
