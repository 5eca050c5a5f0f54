"""The Memorystore for Redis Cluster I/O of the GCP layer (``google-cloud-redis-cluster``'s
``CloudRedisClusterClient``, transport ``rest``; cloud-manager's
``pkg/kcp/provider/gcp/rediscluster/client``).

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

__all__ = ["RedisClusterClient"]

_guarded = guarded(_translate)


class RedisClusterClient(MemorystoreBase):
    """Memorystore for Redis Cluster calls of the GcpRedisCluster flow."""

    def __init__(self, endpoint: str | None = None, credentials_file: str | None = None) -> None:
        from google.cloud import redis_cluster_v1

        super().__init__(redis_cluster_v1, redis_cluster_v1.CloudRedisClusterClient, "get_cluster", endpoint,
                         credentials_file)

    @_guarded
    def ca_cert(self, name: str) -> str:
        """The PEM certificates of the cluster's first managed server CA, concatenated (the original's
        ``GetRedisClusterCertificateString``); ``""`` when it has none or is missing."""
        from google.api_core import exceptions as gexc

        try:
            found = self._client.get_cluster_certificate_authority(
                name=f"{name}/certificateAuthority", timeout=fencing.timeout(API_TIMEOUT))
        except gexc.NotFound:
            return ""
        certs = found.managed_server_ca.ca_certs
        return "".join(certs[0].certificates) if certs else ""

    @_guarded
    def create(self, parent: str, cluster_id: str, cluster: Mapping[str, Any]) -> str:
        """``CreateCluster``; the operation's name."""
        return start_operation(self._client.create_cluster, parent=parent, cluster_id=cluster_id,
                               cluster=self._types.Cluster(mapping=dict(cluster)))

    @_guarded
    def update(self, name: str, changes: Mapping[str, Any], paths: Sequence[str]) -> str:
        """``UpdateCluster`` of the fields ``paths`` (snake_case) to ``changes``; the operation's name."""
        from google.protobuf import field_mask_pb2

        cluster = self._types.Cluster(mapping={"name": name, **dict(changes)})
        return start_operation(self._client.update_cluster, update_mask=field_mask_pb2.FieldMask(paths=list(paths)),
                               cluster=cluster)

    @_guarded
    def delete(self, name: str) -> str:
        """``DeleteCluster``; the operation's name (``""``: the cluster was already gone)."""
        from google.api_core import exceptions as gexc

        try:
            return start_operation(self._client.delete_cluster, name=name)
        except gexc.NotFound:
            return ""
