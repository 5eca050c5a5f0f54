"""GCP calls into ``cloud_manager_cloud_provider_api_call_total`` (:mod:`tasks.cloud.provider_metrics`),
counted on the HTTP transports of every GCP client (:mod:`tasks.cloud.gcp.clients` builds them all):

- ``google-cloud-*`` clients (transport ``rest``): their ``AuthorizedSession`` (a ``requests.Session``)
  gets :class:`CountingAdapter` around its own adapters (:func:`instrument`, applied by ``clients.of`` to
  every client it builds: a new kind's client is counted without an edit);
- the discovery clients of :class:`~tasks.cloud.gcp.client.GcpClient` (Service Networking, Resource
  Manager) send through :class:`CountingHttp` (an ``httplib2.Http``).

Ported from cloud-manager's ``pkg/kcp/provider/gcp/metrics/metrics.go`` (``metricsRoundTripper``):
``method`` is ``<HTTP method> <path>`` with id-like segments masked as ``{id}`` (:func:`sanitize_path`),
``response_code`` is ``200`` for any answer below 400 and the status otherwise, ``0`` without an answer;
``region`` and ``subscription`` (the project) come from the ``x-goog-request-params`` header, else from
the path (:func:`region_and_project`; a zone counts as its region).

One deviation for bounded labels: the original keeps a path segment that looks like no id (``mynet``: no
digit and no hyphen); here the segment after ``projects``, ``regions``, ``zones``, ``locations`` and the
collections of resources we name (networks, addresses, operations, instances, ...) is always ``{id}``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

import httplib2
import requests
import requests.adapters

from tasks.cloud.provider_metrics import GCP, NO_ANSWER, record_call

__all__ = ["CountingAdapter", "CountingHttp", "instrument", "method_of", "region_and_project", "sanitize_path",
           "status_of", "zone_region"]

#: Collections whose next segment is a name or id (masked whatever it looks like).
_NAMED = frozenset({"projects", "regions", "zones", "locations", "networks", "subnetworks",
                    "addresses", "globalAddresses", "operations", "instances", "clusters", "backups", "routers",
                    "firewalls", "services", "connections", "tagBindings", "tagKeys", "tagValues", "peerings"})


def _looks_like_id(s: str) -> bool:
    """The original's ``looksLikeID``: letters with a hyphen/underscore, or letters with digits."""
    digit = any(c.isascii() and c.isdigit() for c in s)
    letter = any(c.isascii() and c.isalpha() for c in s)
    hyphen = any(c in "-_" for c in s)
    return (hyphen and letter) or (digit and letter)


def sanitize_path(path: str) -> str:
    """``path`` with ids masked (the original's ``sanitizePath``): empty segments dropped; ``v1``-like
    version segments kept; ``<id>:<verb>`` keeps its verb (``{id}:getAuthString``); id-like segments and
    (our addition) the segment after a :data:`_NAMED` collection become ``{id}``."""
    out: list[str] = []
    previous = ""
    for part in path.split("/"):
        if not part:
            continue
        named = previous in _NAMED
        previous = part
        if ":" in part:
            head, verb = part.split(":", 1)
            out.append(f"{{id}}:{verb}" if named or _looks_like_id(head) else part)
        elif len(part) > 1 and part[0] == "v" and part[1].isdigit() and not named:
            out.append(part)
        elif named or _looks_like_id(part):
            out.append("{id}")
        else:
            out.append(part)
    return "/" + "/".join(out)


def zone_region(location: str) -> str:
    """A zone's region (``us-east4-a`` -> ``us-east4``), anything else unchanged (``convertZoneToRegion``)."""
    if len(location) > 2 and location[-2] == "-" and "a" <= location[-1] <= "z":
        return location[:-2]
    return location


def _value(value: str) -> str:
    for i, c in enumerate(value):
        if c in "=&?":
            return value[:i]
    return value


def _from_path(path: str) -> tuple[str, str]:
    """``(region, project)`` named in ``path`` (``extractRegionAndProjectFromPath``)."""
    region = project = ""
    parts = path.lstrip("/").split("/")
    for i, part in enumerate(parts[:-1]):
        following = parts[i + 1]
        if following.startswith("{"):
            continue
        if part == "projects":
            project = _value(following)
        elif part == "regions":
            region = _value(following)
        elif part in ("locations", "zones"):
            region = zone_region(_value(following))
    return region, project


def region_and_project(path: str, request_params: str = "") -> tuple[str, str]:
    """``(region, project)`` of a request: from the first ``x-goog-request-params`` pair that names either
    (``name=projects%2Fp%2Flocations%2Fus-east4%2F...``, ``parseGoogRequestParams``), else from ``path``."""
    for pair in request_params.split("&") if request_params else ():
        if "=" not in pair:
            continue
        found = _from_path(urllib.parse.unquote(pair.split("=", 1)[1]))
        if any(found):
            return found
    return _from_path(path)


def status_of(status: int | None) -> int:
    """The original's code of an answer: 200 below 400, else the status; ``None`` (no answer): 0."""
    if status is None:
        return NO_ANSWER
    return 200 if status < 400 else int(status)


def method_of(http_method: str, path: str) -> str:
    """``<HTTP method> <sanitized path>``."""
    return f"{http_method.upper()} {sanitize_path(path)}"


def _record(http_method: str, url: str, headers: Mapping[str, Any] | None, status: int | None) -> None:
    path = urllib.parse.urlsplit(url).path
    params = ""
    for name, value in (headers or {}).items():
        if str(name).lower() == "x-goog-request-params":
            params = value.decode() if isinstance(value, bytes) else str(value)
    region, project = region_and_project(path, params)
    record_call(GCP, method_of(http_method, path), status_of(status), region, project)


class CountingAdapter(requests.adapters.BaseAdapter):
    """A ``requests`` transport adapter that counts each request sent through ``inner`` (the session's own
    adapter, so TLS and pooling stay as they were)."""

    def __init__(self, inner: requests.adapters.BaseAdapter) -> None:
        super().__init__()
        self.inner = inner

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        try:
            response = self.inner.send(request, *args, **kwargs)
        except Exception:
            _record(str(request.method or ""), str(request.url or ""), request.headers, None)
            raise
        _record(str(request.method or ""), str(request.url or ""), request.headers, response.status_code)
        return response

    def close(self) -> None:
        self.inner.close()


class CountingHttp(httplib2.Http):
    """``httplib2.Http`` that counts each request (the discovery clients' transport)."""

    def request(self, uri: str, method: str = "GET", body: Any = None, headers: Any = None,
                *args: Any, **kwargs: Any) -> Any:
        try:
            response, content = super().request(uri, method, body, headers, *args, **kwargs)
        except Exception:
            _record(method, uri, headers, None)
            raise
        _record(method, uri, headers, int(response.status))
        return response, content


def count_session(session: requests.Session) -> None:
    """Count every request of ``session`` (idempotent)."""
    for prefix, adapter in list(session.adapters.items()):
        if not isinstance(adapter, CountingAdapter):
            session.mount(prefix, CountingAdapter(adapter))


def instrument(client: Any) -> Any:
    """Count the requests of every ``google-cloud-*`` client held by ``client`` (one of this layer's
    client classes: its attributes' REST transports' sessions); returns ``client``."""
    for held in list(vars(client).values()):
        # the rest transport's AuthorizedSession: no public accessor, only this module reads it
        session = getattr(getattr(held, "_transport", None), "_session", None)
        if isinstance(session, requests.Session):
            count_session(session)
    return client
