"""The EFS I/O of the AWS layer (the NfsInstance flow's calls, ``pkg/kcp/provider/aws/nfsinstance/client``).

As :mod:`tasks.cloud.aws.client`, whose clients, credentials, timeouts and errors it shares: every failure
an :class:`~tasks.cloud.aws.client.AwsError`, :func:`fencing.check` before every write; the security group
calls are the layer's shared ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import botocore.exceptions

import fencing
from tasks.cloud.aws.client import (
    _client,
    _credentials,
    _guard_methods,
    _guarded,
    _SecurityGroups,
    _tags,
    _unless_gone,
    attempt_timeout,
    is_not_found,
)
from tasks.cloud.settings import CloudSettings

__all__ = ["Efs", "efs_for"]


@_guarded
def efs_for(settings: CloudSettings, account: str, region: str) -> Efs:
    """The EFS layer (EFS and the EC2 security group calls of the NFS flow) for ``account`` in ``region``."""
    key, secret, token = _credentials(settings, account, region)
    return Efs(lambda timeout: _client("efs", region, key, secret, token, settings.aws_endpoint_url, timeout),
               lambda timeout: _client("ec2", region, key, secret, token, settings.aws_endpoint_url, timeout))


@_guard_methods
class Efs(_SecurityGroups):
    """The NfsInstance flow's calls: EFS file systems and mount targets, EC2 security groups and subnets.
    Raises :class:`~tasks.cloud.aws.client.AwsError` (and :class:`fencing.FenceError` when the reconcile
    must stop).

    Args:
        efs_clients: the boto3 EFS client for a per-attempt timeout in seconds.
        ec2_clients: the boto3 EC2 client likewise.
    """

    def __init__(self, efs_clients: Callable[[float], Any], ec2_clients: Callable[[float], Any]) -> None:
        self._efs_clients = efs_clients
        self._ec2_clients = ec2_clients

    def _efs(self, write: bool = False) -> Any:
        if write:
            fencing.check()
        return self._efs_clients(attempt_timeout(write))

    def _ec2(self, write: bool = False) -> Any:
        if write:
            fencing.check()
        return self._ec2_clients(attempt_timeout(write))

    def subnet_vpcs(self, subnet_ids: Sequence[str]) -> dict[str, str]:
        """``subnet id -> VPC id`` of the subnets that exist."""
        if not subnet_ids:
            return {}
        try:
            found = self._ec2().describe_subnets(SubnetIds=list(subnet_ids)).get("Subnets") or []
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return {}
            raise
        return {str(s["SubnetId"]): str(s.get("VpcId") or "") for s in found}

    def file_system(self, token: str) -> dict[str, Any] | None:
        """The file system of creation token ``token`` (the KCP name), or ``None``."""
        try:
            found = self._efs().describe_file_systems(CreationToken=token).get("FileSystems") or []
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        return dict(found[0]) if found else None

    def create_file_system(self, token: str, performance_mode: str, throughput_mode: str,
                           tags: Mapping[str, str]) -> dict[str, Any]:
        """``CreateFileSystem`` (encrypted) with tags; the file system."""
        return dict(self._efs(write=True).create_file_system(
            CreationToken=token, PerformanceMode=performance_mode, ThroughputMode=throughput_mode,
            Encrypted=True, Tags=_tags(tags)))

    def delete_file_system(self, fs_id: str) -> None:
        """``DeleteFileSystem`` (one already gone is fine)."""
        _unless_gone(self._efs(write=True).delete_file_system, FileSystemId=fs_id)

    def mount_targets(self, fs_id: str) -> list[dict[str, Any]]:
        """The file system's mount targets."""
        try:
            found = self._efs().describe_mount_targets(FileSystemId=fs_id).get("MountTargets") or []
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return []
            raise
        return [dict(m) for m in found]

    def create_mount_target(self, fs_id: str, subnet_id: str, group_ids: Sequence[str]) -> dict[str, Any]:
        """``CreateMountTarget`` in ``subnet_id`` with the security groups; the mount target."""
        return dict(self._efs(write=True).create_mount_target(FileSystemId=fs_id, SubnetId=subnet_id,
                                                              SecurityGroups=list(group_ids)))

    def delete_mount_target(self, mount_target_id: str) -> None:
        """``DeleteMountTarget`` (one already gone is fine)."""
        _unless_gone(self._efs(write=True).delete_mount_target, MountTargetId=mount_target_id)
