"""Azure calls into ``cloud_manager_cloud_provider_api_call_total`` (:mod:`tasks.cloud.provider_metrics`):
an azure-core per-retry pipeline policy (:class:`MetricsPolicy`) on every ARM client of the Azure layer.

:class:`~tasks.cloud.azure.client.AzureClient` passes it as ``per_retry_policies``; a kind's client built on
it by :func:`tasks.cloud.azure.clients.on_network` (Azure Cache for Redis) gets it added to its pipelines
by :func:`instrument`, so a new kind's client is counted without an edit.

Ported from cloud-manager's ``pkg/kcp/provider/azure/metrics/metrics.go`` (``metricsPolicy``, a
``PerRetryPolicy``: below azure-core's RetryPolicy, so every attempt counts and a throttled-then-
successful call shows its 429s): ``method`` is ``<HTTP method> <ARM path>`` with names and ids masked
(:func:`parse_path`, the original's ``parseAzureRequestPath``), ``response_code`` the status (``0``
without an answer), ``region`` the reconciled Scope's (:func:`tasks.cloud.provider_metrics.region_scope`,
the original's ``RegionIntoContext``) else the path's ``locations/<region>``, ``subscription`` the path's.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from azure.core.pipeline import PipelineRequest, PipelineResponse
from azure.core.pipeline.policies import HTTPPolicy

from tasks.cloud.provider_metrics import AZURE, NO_ANSWER, current_region, record_call

__all__ = ["MetricsPolicy", "instrument", "parse_path"]

PLACEHOLDER = "{id}"
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ROOT_KEYWORD, _ROOT_VALUE, _NAMESPACE, _TYPE, _NAME = range(5)


def _keep(segment: str) -> str:
    """A uuid on a keyword/type position (operationResults urls) is masked too (``keepSegment``)."""
    return PLACEHOLDER if _UUID.match(segment) else segment


def parse_path(path: str) -> tuple[str, str, str]:
    """``(sanitized path, region, subscription)`` of an ARM request path: the values after
    ``subscriptions``, ``resourceGroups``, ``locations`` and every resource name after a resource type
    become ``{id}``; the subscription and a ``locations`` region are returned. ARM paths are
    ``/subscriptions/{id}/resourceGroups/{name}/providers/{Namespace}`` then alternating
    ``{resourceType}/{resourceName}`` (a nested ``providers`` starts a namespace again)."""
    trimmed = path.strip("/")
    if not trimmed:
        return "/", "", ""
    region = subscription = ""
    capture_subscription = capture_region = False
    mode = _ROOT_KEYWORD
    out: list[str] = []
    for segment in trimmed.split("/"):
        lower = segment.lower()
        if mode == _ROOT_KEYWORD:
            out.append(_keep(segment))
            capture_subscription = capture_region = False
            if lower == "subscriptions":
                out[-1], capture_subscription, mode = "subscriptions", True, _ROOT_VALUE
            elif lower == "resourcegroups":
                out[-1], mode = "resourceGroups", _ROOT_VALUE
            elif lower == "locations":
                out[-1], capture_region, mode = "locations", True, _ROOT_VALUE
            elif lower == "providers":
                out[-1], mode = "providers", _NAMESPACE
        elif mode == _ROOT_VALUE:
            out.append(PLACEHOLDER)
            if capture_subscription:
                subscription = segment
            if capture_region:
                region = segment
            mode = _ROOT_KEYWORD
        elif mode == _NAMESPACE:
            out.append(segment)
            mode = _TYPE
        elif mode == _TYPE:
            out.append(_keep(segment))
            capture_region = False
            if lower == "providers":
                out[-1], mode = "providers", _NAMESPACE
            elif lower == "locations":
                out[-1], capture_region, mode = "locations", True, _NAME
            else:
                mode = _NAME
        else:  # _NAME
            out.append(PLACEHOLDER)
            if capture_region:
                region = segment
            mode = _TYPE
    return "/" + "/".join(out), region, subscription


class MetricsPolicy(HTTPPolicy):
    """Counts each attempt that passes it (place it below the RetryPolicy: ``per_retry_policies``)."""

    def send(self, request: PipelineRequest) -> PipelineResponse:
        http = request.http_request
        sanitized, url_region, subscription = parse_path(urllib.parse.urlsplit(http.url).path)
        region = current_region() or url_region
        method = f"{http.method.upper()} {sanitized}"
        try:
            response = self.next.send(request)
        except Exception:
            record_call(AZURE, method, NO_ANSWER, region, subscription)
            raise
        record_call(AZURE, method, int(response.http_response.status_code), region, subscription)
        return response


def policies() -> list[MetricsPolicy]:
    """``per_retry_policies`` of a new ARM client (a policy instance per pipeline: it links to the next)."""
    return [MetricsPolicy()]


def _add(pipeline: Any) -> None:
    # azure-core links a pipeline's policies at construction and offers no insertion: the policy goes in
    # as the last one, before the transport (below the RetryPolicy, as per_retry_policies would put it)
    chain = getattr(pipeline, "_impl_policies", None)
    if not chain or any(isinstance(p, MetricsPolicy) for p in chain):
        return
    policy = MetricsPolicy()
    policy.next = chain[-1].next
    chain[-1].next = policy
    chain.append(policy)


def instrument(client: Any) -> Any:
    """Count the attempts of every azure-mgmt client held by ``client`` (one of the Azure layer's client
    classes) that was built without :func:`policies`; returns ``client``."""
    for held in list(vars(client).values()):
        _add(getattr(getattr(held, "_client", None), "_pipeline", None))
    return client
