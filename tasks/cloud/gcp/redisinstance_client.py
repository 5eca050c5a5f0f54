"""The Memorystore for Redis I/O of the GCP layer (``google-cloud-redis``, transport ``rest``).

As :mod:`tasks.cloud.gcp.client`: plain data out (camelCase dicts, enum names), every failure a
:class:`~tasks.cloud.gcp.client.GcpApiError`, :func:`fencing.check` before every write and
:func:`fencing.timeout` of the original's 8 s API timeout on every request; ``endpoint`` aims the client
at the stand-in (anonymous credentials), else Google with the key file or the default credentials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, _translate, start_operation
from tasks.cloud.gcp.redis_common_client import MemorystoreBase
from tasks.cloud.guard import guarded

__all__ = ["MemorystoreClient"]

_guarded = guarded(_translate)


class MemorystoreClient(MemorystoreBase):
    """Memorystore calls of the RedisInstance flow (``pkg/kcp/provider/gcp/redisinstance/client``)."""

    def __init__(self, endpoint: str | None = None, credentials_file: str | None = None) -> None:
        from google.cloud import redis_v1

        super().__init__(redis_v1, redis_v1.CloudRedisClient, "get_instance", endpoint, credentials_file)

    @_guarded
    def auth_string(self, name: str) -> str:
        found = self._client.get_instance_auth_string(name=name, timeout=fencing.timeout(API_TIMEOUT))
        return str(found.auth_string)

    @_guarded
    def create(self, parent: str, instance_id: str, instance: Mapping[str, Any]) -> str:
        """``CreateInstance``; the operation's name."""
        return start_operation(self._client.create_instance, parent=parent, instance_id=instance_id,
                               instance=self._types.Instance(mapping=dict(instance)))

    @_guarded
    def update(self, name: str, changes: Mapping[str, Any], paths: Sequence[str]) -> str:
        """``UpdateInstance`` of the fields ``paths`` (snake_case) to ``changes``; the operation's name."""
        from google.protobuf import field_mask_pb2

        instance = self._types.Instance(mapping={"name": name, **dict(changes)})
        return start_operation(self._client.update_instance, update_mask=field_mask_pb2.FieldMask(paths=list(paths)),
                               instance=instance)

    @_guarded
    def upgrade(self, name: str, redis_version: str) -> str:
        return start_operation(self._client.upgrade_instance, name=name, redis_version=redis_version)

    @_guarded
    def delete(self, name: str) -> str:
        return start_operation(self._client.delete_instance, name=name)
