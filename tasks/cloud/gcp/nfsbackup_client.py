"""The Filestore backup and restore I/O of the GCP layer (``google-cloud-filestore``, transport ``rest``):
the client of the SKR kinds without a KCP mirror (GcpNfsVolumeBackup, GcpNfsVolumeRestore,
GcpNfsVolumeBackupDiscovery, GcpNfsVolume from a backup).

As cloud-manager's ``FileBackupClient`` (``pkg/kcp/provider/gcp/nfsbackup/client/v2``) and
``FileRestoreClient`` (``pkg/kcp/provider/gcp/nfsrestore/client/v2``): get / list / create / patch the
labels of / delete a backup, restore an instance from one, get an operation and find an instance's
running restore. As :mod:`tasks.cloud.gcp.client`: plain data out (the API's camelCase JSON), every failure
a :class:`~tasks.cloud.gcp.client.GcpApiError`, :func:`fencing.check` before every write and
:func:`fencing.timeout` of the original's 8 s API timeout on every request. Built through
:func:`tasks.cloud.gcp.clients.of`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, _guarded, credentials_for, rest_client_options, start_operation

__all__ = ["MAX_LISTED", "FileBackupClient"]

#: At most this many backups (operations) are read per listing, in pages of 500: a discovery's status
#: stays bounded whatever other shoots share.
MAX_LISTED = 1000
_PAGE = 500


def _plain(message: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    pb = getattr(type(message), "pb", None)
    raw = pb(message) if pb is not None else message
    return dict(json_format.MessageToDict(raw))


class FileBackupClient:
    """Filestore backups and restores for one set of credentials.

    Args:
        endpoint, credentials, credentials_file: as :class:`~tasks.cloud.gcp.client.GcpClient`.
    """

    def __init__(self, endpoint: str | None = None, credentials: Any = None,
                 credentials_file: str | None = None) -> None:
        from google.cloud import filestore_v1

        self._client = filestore_v1.CloudFilestoreManagerClient(
            **rest_client_options(endpoint, credentials_for(endpoint, credentials, credentials_file)))

    @_guarded
    def get_backup(self, name: str) -> dict[str, Any] | None:
        """The backup ``projects/<p>/locations/<l>/backups/<id>`` (``state``, ``labels``, ``storageBytes``,
        ``sourceInstance``, ...), ``None`` when it does not exist."""
        from google.api_core import exceptions as gexc

        try:
            return _plain(self._client.get_backup(name=name, timeout=fencing.timeout(API_TIMEOUT)))
        except gexc.NotFound:
            return None

    @_guarded
    def list_backups(self, parent: str, filter: str) -> list[dict[str, Any]]:
        """``ListBackups`` of ``parent`` (``projects/<p>/locations/<l or ->``) with ``filter``, up to
        :data:`MAX_LISTED` backups (the API's JSON each)."""
        from google.cloud import filestore_v1

        request = filestore_v1.ListBackupsRequest(parent=parent, filter=filter, page_size=_PAGE)
        out: list[dict[str, Any]] = []
        for backup in self._client.list_backups(request=request, timeout=fencing.timeout(API_TIMEOUT)):
            out.append(_plain(backup))
            if len(out) >= MAX_LISTED:
                break
        return out

    @_guarded
    def create_backup(self, parent: str, backup_id: str, backup: Mapping[str, Any]) -> str:
        """``CreateBackup`` of ``backup`` (API JSON: ``sourceInstance``, ``sourceFileShare``, ``labels``)
        under ``projects/<p>/locations/<region>``; the operation's name."""
        from google.cloud import filestore_v1

        return start_operation(self._client.create_backup, parent=parent, backup_id=backup_id,
                               backup=filestore_v1.Backup.from_json(json.dumps(dict(backup))))

    @_guarded
    def update_backup_labels(self, name: str, labels: Mapping[str, str]) -> str:
        """``UpdateBackup`` with mask ``labels``: the backup's labels become ``labels``; the operation's name."""
        from google.cloud import filestore_v1
        from google.protobuf import field_mask_pb2

        return start_operation(self._client.update_backup,
                               backup=filestore_v1.Backup(name=name, labels=dict(labels)),
                               update_mask=field_mask_pb2.FieldMask(paths=["labels"]))

    @_guarded
    def delete_backup(self, name: str) -> str | None:
        """``DeleteBackup``; the operation's name, ``None`` when the backup is already gone."""
        from google.api_core import exceptions as gexc

        try:
            return start_operation(self._client.delete_backup, name=name)
        except gexc.NotFound:
            return None

    @_guarded
    def restore_instance(self, name: str, file_share: str, source_backup: str) -> str:
        """``RestoreInstance`` of the instance ``name``'s share ``file_share`` from the backup
        ``source_backup`` (full name); the operation's name."""
        from google.cloud import filestore_v1

        request = filestore_v1.RestoreInstanceRequest(name=name, file_share=file_share, source_backup=source_backup)
        return start_operation(self._client.restore_instance, request=request)

    @_guarded
    def get_operation(self, name: str) -> dict[str, Any] | None:
        """The long-running operation (``name``, ``done``, ``error{code,message}``), ``None`` when it does
        not exist."""
        from google.api_core import exceptions as gexc
        from google.protobuf import json_format

        try:
            op = self._client.get_operation(request={"name": name}, timeout=fencing.timeout(API_TIMEOUT))
        except gexc.NotFound:
            return None
        plain: dict[str, Any] = {"name": op.name, "done": op.done}
        if op.HasField("error"):
            plain["error"] = json_format.MessageToDict(op.error)
        return plain

    @_guarded
    def find_restore_operation(self, instance: str) -> dict[str, Any] | None:
        """The running (not done) restore of the instance ``instance`` (full name), found by listing the
        operations of its location with ``metadata.target="<instance>" AND metadata.verb="restore"`` (the
        original's ``FindRestoreOperation``: the last running one); ``None`` for none."""
        from google.longrunning import operations_pb2

        parent = instance.rsplit("/instances/", 1)[0]
        request = operations_pb2.ListOperationsRequest(
            name=parent, filter=f'metadata.target="{instance}" AND metadata.verb="restore"', page_size=_PAGE)
        running: dict[str, Any] | None = None
        answer = self._client.list_operations(request=request, timeout=fencing.timeout(API_TIMEOUT))
        for op in list(answer.operations)[:MAX_LISTED]:
            if not op.done:
                running = {"name": op.name, "done": False}
        return running
