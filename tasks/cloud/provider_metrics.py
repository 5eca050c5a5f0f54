"""``cloud_manager_cloud_provider_api_call_total``: every HTTP attempt a provider client makes, counted once
at each provider's one client layer (cloud-manager's ``pkg/metrics/cloudProvider.go``).

Exposed as ``cloud_manager_cloud_provider_api_call_total{provider,method,response_code,region,subscription}``
(a counter: prometheus-client adds ``_total``). Labels, as the original's per provider:

- ``provider``: ``aws``, ``gcp`` or ``azure``;
- ``method``: AWS ``<ServiceId>/<Operation>`` (``EC2/DescribeVpcs``: ``pkg/metrics/cloudProviderAws.go``);
  GCP ``<HTTP method> <path with ids masked>`` (``GET /compute/v1/projects/{id}/global/networks/{id}``:
  ``pkg/kcp/provider/gcp/metrics/metrics.go``); Azure ``<HTTP method> <ARM path with names masked>``
  (``GET /subscriptions/{id}/resourceGroups/{id}/providers/Microsoft.Network/virtualNetworks/{id}``:
  ``pkg/kcp/provider/azure/metrics/metrics.go``). Bounded: ids and names never reach the label;
- ``response_code``: the HTTP status of the attempt as a decimal string; GCP answers below 400 count as
  ``200`` (the original maps a call without error to 200); no answer (connection refused, timeout,
  TLS failure) counts as ``0`` on every provider (the GCP and Azure originals' value; the AWS original
  does not count such attempts at all, we count them with ``0`` so an AWS outage shows as one);
- ``region``: the client's region (AWS), the region in the request's routing header or path (GCP; a
  zone as its region), the reconciled Scope's region (Azure, :func:`region_scope`) else the
  ``locations/<region>`` of the path;
- ``subscription``: the AWS account, GCP project or Azure subscription: one value per tenant, so it is
  only filled when ``RECONCILERY_CLOUD_METRICS_SUBSCRIPTION_LABEL=true``; otherwise it is always ``""``,
  which Prometheus stores as no label at all (one series per provider, method, code and region).

Counted per attempt, below each SDK's retries (botocore's standard retryer, azure-core's RetryPolicy),
as the original counts (a throttled-then-successful call is a 429 and a 200). Provider errors are
``response_code!~"2.."``: there is no separate error counter.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from kube.toolkit.metrics import counter
from tasks.cloud import settings

__all__ = ["AWS", "AZURE", "CALLS", "GCP", "NO_ANSWER", "record_call", "region_scope"]

AWS, GCP, AZURE = "aws", "gcp", "azure"
#: ``response_code`` of an attempt that got no answer.
NO_ANSWER = 0

CALLS = counter(
    "cloud_manager_cloud_provider_api_call_total",
    "Cloud provider API calls (each HTTP attempt, retries included) by provider, method (operation or "
    "masked path), HTTP response code (0: no answer) and region; subscription (account/project/subscription) "
    "only with RECONCILERY_CLOUD_METRICS_SUBSCRIPTION_LABEL=true, else empty.",
    ["provider", "method", "response_code", "region", "subscription"])

_region: contextvars.ContextVar[str] = contextvars.ContextVar("cloud_provider_region", default="")


@contextlib.contextmanager
def region_scope(region: str) -> Iterator[None]:
    """Within the block, provider calls of this thread that carry no region of their own are counted
    with ``region`` (the Scope's ``spec.region``; the original's ``RegionIntoContext``)."""
    token = _region.set(region)
    try:
        yield
    finally:
        _region.reset(token)


def current_region() -> str:
    """The region :func:`region_scope` set (``""`` outside one)."""
    return _region.get()


def record_call(provider: str, method: str, code: int, region: str, subscription: str = "") -> None:
    """Count one attempt; ``subscription`` is dropped (``""``) unless the setting
    ``metrics_subscription_label`` is on. Never raises into the call it counts."""
    try:
        tenant = subscription if settings.current().metrics_subscription_label else ""
    except ValueError:  # unreadable settings: the worker reports them elsewhere; the label stays empty
        tenant = ""
    CALLS.labels(provider, method, str(code), region, tenant).inc()
