"""The AWS NfsInstance flow's I/O (``pkg/kcp/provider/aws/nfsinstance``): the EFS client of a turn
(:class:`~tasks.cloud.aws.nfsinstance_client.Efs`) and the reads of :func:`read`; the decisions are the
pure plans of :mod:`tasks.cloud.aws.nfsinstance_plan`, declared as the kind's ``aws`` provider
(:data:`SIDE`), whose calls the executor makes in order (:func:`kube.toolkit.execute`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.aws.nfsinstance_client import Efs, efs_for
from tasks.cloud.aws.nfsinstance_plan import Read, plan_create, plan_delete, read_failed
from tasks.cloud.registry import ProviderSide, Turn

__all__ = ["SIDE", "clients", "read"]


def clients(turn: Turn) -> dict[str, Any]:
    """The EFS client of the Scope's account and region. Raises :class:`~tasks.cloud.aws.client.AwsError`."""
    spec = turn.scope.get("spec") or {}
    account = str((((spec.get("scope") or {}).get("aws")) or {}).get("accountId") or "")
    return {"": efs_for(turn.settings, account, str(spec.get("region") or ""))}


def _iprange(turn: Turn) -> Mapping[str, Any]:
    """The KCP IpRange the object lives on (``{}``: gone, only while deleting)."""
    return getattr(turn.seen, "iprange", None) or {}


def read(found: Mapping[str, Any], turn: Turn) -> Read:
    """The security group, the file system, its mount targets and the VPCs of foreign mount-target
    subnets. Raises :class:`~tasks.cloud.aws.client.AwsError`."""
    efs: Efs = found[""]
    ip_status = _iprange(turn).get("status") or {}
    group = efs.security_group(str(ip_status.get("vpcId") or ""), turn.name, f"{turn.namespace}/{turn.name}")
    fs = efs.file_system(turn.name)
    mts = efs.mount_targets(str(fs["FileSystemId"])) if fs is not None else []
    ours = {str(s.get("id")) for s in ip_status.get("subnets") or []}
    foreign = sorted({str(m.get("SubnetId")) for m in mts if str(m.get("SubnetId")) not in ours})
    return Read(group, fs, mts, efs.subnet_vpcs(foreign) if foreign else {})


#: The kind's ``aws`` provider (EFS). A Ready instance comes back after the capacity check interval.
SIDE = ProviderSide(
    clients=clients, read=read,
    create=lambda found, turn: plan_create(turn.obj, turn.scope, _iprange(turn), found, turn.t,
                                           turn.settings.efs_capacity_check_interval),
    delete=lambda found, turn: plan_delete(turn.obj, found, turn.t),
    read_failed=lambda failure, turn: read_failed(turn.obj, failure, turn.t))
