"""The Filestore I/O of the GCP layer (``google-cloud-filestore``, transport ``rest``): the NfsInstance
flow's client.

As :mod:`tasks.cloud.gcp.client`: plain data out (the API's camelCase JSON), every failure a
:class:`~tasks.cloud.gcp.client.GcpApiError`, :func:`fencing.check` before every write and
:func:`fencing.timeout` of the original's 8 s API timeout on every read; ``endpoint`` aims the client at
the stand-in (anonymous credentials), else Google with the key file or the default credentials.
"""

from __future__ import annotations

import json
from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, _guarded, credentials_for, rest_client_options, start_operation

__all__ = ["FilestoreClient"]


class FilestoreClient:
    """Filestore (``google-cloud-filestore``, transport ``rest``) for one set of credentials: the calls of
    the NfsInstance flow (``pkg/kcp/provider/gcp/nfsinstance/v2/client``). Plain data in and out (the
    API's camelCase JSON), every failure a :class:`~tasks.cloud.gcp.client.GcpApiError`,
    :func:`fencing.check` before writes.

    Args:
        endpoint, credentials, credentials_file: as :class:`~tasks.cloud.gcp.client.GcpClient`.
    """

    def __init__(self, endpoint: str | None = None, credentials: Any = None,
                 credentials_file: str | None = None) -> None:
        from google.cloud import filestore_v1

        self._client = filestore_v1.CloudFilestoreManagerClient(
            **rest_client_options(endpoint, credentials_for(endpoint, credentials, credentials_file)))

    @staticmethod
    def _plain(message: Any) -> dict[str, Any]:
        from google.protobuf import json_format

        pb = getattr(type(message), "pb", None)
        raw = pb(message) if pb is not None else message
        return dict(json_format.MessageToDict(raw))

    @_guarded
    def get_instance(self, name: str) -> dict[str, Any] | None:
        """The instance ``projects/<p>/locations/<l>/instances/<id>`` (``state``, ``statusMessage``,
        ``fileShares``, ``networks[].ipAddresses``, ``protocol``), or None when it does not exist."""
        from google.api_core import exceptions as gexc

        try:
            return self._plain(self._client.get_instance(name=name, timeout=fencing.timeout(API_TIMEOUT)))
        except gexc.NotFound:
            return None

    @_guarded
    def create_instance(self, parent: str, instance_id: str, instance: dict[str, Any]) -> str:
        """``CreateInstance`` of ``instance`` (API JSON) under ``projects/<p>/locations/<l>``; the
        operation's name."""
        from google.cloud import filestore_v1

        return start_operation(self._client.create_instance, parent=parent, instance_id=instance_id,
                               instance=filestore_v1.Instance.from_json(json.dumps(instance)))

    @_guarded
    def update_capacity(self, name: str, file_share: str, capacity_gb: int) -> str:
        """``UpdateInstance`` with mask ``fileShares``: the share's new capacity; the operation's name."""
        from google.cloud import filestore_v1
        from google.protobuf import field_mask_pb2

        body = filestore_v1.Instance(name=name, file_shares=[filestore_v1.FileShareConfig(
            name=file_share, capacity_gb=capacity_gb)])
        return start_operation(self._client.update_instance, instance=body,
                               update_mask=field_mask_pb2.FieldMask(paths=["file_shares"]))

    @_guarded
    def delete_instance(self, name: str) -> str:
        """``DeleteInstance``; the operation's name."""
        return start_operation(self._client.delete_instance, name=name)

    @_guarded
    def get_operation(self, name: str) -> dict[str, Any] | None:
        """The long-running operation (``done``, ``error{code,message}``), or None when it does not exist."""
        from google.api_core import exceptions as gexc
        from google.protobuf import json_format

        try:
            op = self._client.get_operation(request={"name": name}, timeout=fencing.timeout(API_TIMEOUT))
        except gexc.NotFound:
            return None
        plain = {"name": op.name, "done": op.done}
        if op.HasField("error"):
            plain["error"] = json_format.MessageToDict(op.error)
        return plain
