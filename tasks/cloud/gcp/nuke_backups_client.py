"""The Filestore backup calls of Nuke (``google-cloud-filestore``, transport ``rest``): list a project's
backups by filter, delete one (cloud-manager's ``FileBackupClient.ListFilestoreBackups`` /
``DeleteFilestoreBackup`` in ``pkg/kcp/provider/gcp/nfsbackup/client/v2``).

As :mod:`tasks.cloud.gcp.client`: plain data out (the API's camelCase JSON), every failure a
:class:`~tasks.cloud.gcp.client.GcpApiError`, :func:`fencing.check` before the write and
:func:`fencing.timeout` of the original's 8 s API timeout on every request.
"""

from __future__ import annotations

from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, _guarded, credentials_for, rest_client_options, start_operation

__all__ = ["MAX_LISTED", "NukeBackupsClient"]

#: At most this many backups are read per listing (pages of 500): the rest come in the next turn, once
#: the first ones are gone.
MAX_LISTED = 2000
_PAGE = 500


class NukeBackupsClient:
    """Filestore backups for one set of credentials.

    Args:
        endpoint, credentials, credentials_file: as :class:`~tasks.cloud.gcp.client.GcpClient`.
    """

    def __init__(self, endpoint: str | None = None, credentials: Any = None,
                 credentials_file: str | None = None) -> None:
        from google.cloud import filestore_v1

        self._client = filestore_v1.CloudFilestoreManagerClient(
            **rest_client_options(endpoint, credentials_for(endpoint, credentials, credentials_file)))

    @_guarded
    def list_backups(self, parent: str, filter: str) -> list[dict[str, Any]]:
        """``ListBackups`` of ``parent`` (``projects/<p>/locations/<l or ->``) with ``filter``, every page up
        to :data:`MAX_LISTED` backups: each the API's JSON (``name``, ``state``, ``labels``, ...)."""
        from google.cloud import filestore_v1
        from google.protobuf import json_format

        request = filestore_v1.ListBackupsRequest(parent=parent, filter=filter, page_size=_PAGE)
        out: list[dict[str, Any]] = []
        for backup in self._client.list_backups(request=request, timeout=fencing.timeout(API_TIMEOUT)):
            out.append(dict(json_format.MessageToDict(filestore_v1.Backup.pb(backup))))
            if len(out) >= MAX_LISTED:
                break
        return out

    @_guarded
    def delete_backup(self, name: str) -> str | None:
        """``DeleteBackup`` of ``projects/<p>/locations/<l>/backups/<id>``; the operation's name, ``None``
        when the backup is already gone."""
        from google.api_core import exceptions as gexc

        try:
            return start_operation(self._client.delete_backup, name=name)
        except gexc.NotFound:
            return None
