"""What the Memorystore for Redis and Memorystore for Redis Cluster clients share: the REST client of
the API, the plain data out, the read of one resource by name.

As :mod:`tasks.cloud.gcp.client`: every failure a :class:`~tasks.cloud.gcp.client.GcpApiError`, the
original's 8 s API timeout (:func:`fencing.timeout`) on every request; ``endpoint`` aims the client at the
stand-in (anonymous credentials), else Google with the key file or the default credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, _translate, credentials_for, rest_client_options
from tasks.cloud.guard import guarded

__all__ = ["MemorystoreBase"]

_guarded = guarded(_translate)


class MemorystoreBase:
    """A Memorystore API's client: ``types`` is its ``google.cloud`` module (imported by the subclass, on
    first use: the SDK is heavy), ``client_class`` its REST client, ``getter`` the name of its read of one
    resource (``get_instance`` / ``get_cluster``)."""

    def __init__(self, types: Any, client_class: Callable[..., Any], getter: str, endpoint: str | None = None,
                 credentials_file: str | None = None) -> None:
        self._client = client_class(**rest_client_options(endpoint, credentials_for(endpoint, None, credentials_file)))
        self._types = types
        self._getter = getter

    def _plain(self, message: Any) -> dict[str, Any]:
        return dict(type(message).to_dict(message, preserving_proto_field_name=False, use_integers_for_enums=False))

    @_guarded
    def get(self, name: str) -> dict[str, Any] | None:
        """The resource ``name`` (``projects/<p>/locations/<region>/<instances|clusters>/<id>``) as plain
        data, ``None`` when missing."""
        from google.api_core import exceptions as gexc

        try:
            return self._plain(getattr(self._client, self._getter)(name=name, timeout=fencing.timeout(API_TIMEOUT)))
        except gexc.NotFound:
            return None
