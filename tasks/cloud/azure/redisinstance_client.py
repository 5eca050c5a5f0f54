"""The Azure Cache for Redis I/O of the Azure layer (``azure-mgmt-redis``, private endpoints through
``azure-mgmt-network``), as :mod:`tasks.cloud.azure.client`: plain dicts in ARM's wire shape, ``None``
for a missing resource, every failure an :class:`~tasks.cloud.azure.client.AzureApiError`, writes that
start the long-running operation and return (``polling=False``) after :func:`fencing.check`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.azure.client import AzureClient, _bearer_over_http, _guarded, call_timeouts, get_or_none

__all__ = ["AzureRedisClient"]


def _any(body: Mapping[str, Any]) -> Any:
    """A request body as the SDK takes it (its JSON form; the overloads name only the models)."""
    return dict(body)


def _wire(model: Any) -> dict[str, Any] | None:
    """A model in ARM's wire shape (``properties`` nested, camelCase), as the stand-in and ARM answer."""
    if model is None:
        return None
    if hasattr(type(model), "serialize"):  # azure-mgmt-redis: msrest models
        return dict(model.serialize(keep_readonly=True))
    return dict(model.as_dict())  # azure-mgmt-network: models that hold the wire shape


class AzureRedisClient:
    """Redis caches and private endpoints of one subscription (``pkg/kcp/provider/azure/redisinstance/client``)."""

    def __init__(self, network: AzureClient, base_url: str | None = None, retry_total: int = 2) -> None:
        from azure.mgmt.redis import RedisManagementClient

        kwargs: dict[str, Any] = {"retry_total": retry_total, "polling_interval": 0}
        credential = network.credential
        if base_url:
            kwargs["base_url"] = base_url.rstrip("/")
            if base_url.startswith("http://"):
                kwargs["authentication_policy"] = _bearer_over_http(credential)
        self._redis = RedisManagementClient(credential, network.subscription_id, **kwargs)
        self._network = network._network

    def _timeout(self, write: bool = False) -> dict[str, Any]:
        return call_timeouts(write)

    def _found(self, call: Any, *args: Any) -> dict[str, Any] | None:
        return get_or_none(_wire, call, *args)

    @_guarded
    def get_redis(self, group: str, name: str) -> dict[str, Any] | None:
        return self._found(self._redis.redis.get, group, name)

    @_guarded
    def primary_key(self, group: str, name: str) -> str:
        return str(self._redis.redis.list_keys(group, name, **self._timeout()).primary_key or "")

    @_guarded
    def create_redis(self, group: str, name: str, body: Mapping[str, Any]) -> None:
        self._redis.redis.begin_create(group, name, _any(body), polling=False, **self._timeout(True))

    @_guarded
    def update_redis(self, group: str, name: str, body: Mapping[str, Any]) -> None:
        self._redis.redis.begin_update(group, name, _any(body), polling=False, **self._timeout(True))

    @_guarded
    def delete_redis(self, group: str, name: str) -> None:
        self._redis.redis.begin_delete(group, name, polling=False, **self._timeout(True))

    @_guarded
    def get_private_endpoint(self, group: str, name: str) -> dict[str, Any] | None:
        return self._found(self._network.private_endpoints.get, group, name)

    @_guarded
    def create_private_endpoint(self, group: str, name: str, body: Mapping[str, Any]) -> None:
        self._network.private_endpoints.begin_create_or_update(group, name, _any(body), polling=False,
                                                               **self._timeout(True))

    @_guarded
    def delete_private_endpoint(self, group: str, name: str) -> None:
        self._network.private_endpoints.begin_delete(group, name, polling=False, **self._timeout(True))

    @_guarded
    def get_dns_zone_group(self, group: str, endpoint: str, name: str) -> dict[str, Any] | None:
        return self._found(self._network.private_dns_zone_groups.get, group, endpoint, name)

    @_guarded
    def create_dns_zone_group(self, group: str, endpoint: str, name: str, body: Mapping[str, Any]) -> None:
        self._network.private_dns_zone_groups.begin_create_or_update(group, endpoint, name, _any(body),
                                                                     polling=False, **self._timeout(True))

    @_guarded
    def delete_dns_zone_group(self, group: str, endpoint: str, name: str) -> None:
        self._network.private_dns_zone_groups.begin_delete(group, endpoint, name, polling=False,
                                                           **self._timeout(True))

