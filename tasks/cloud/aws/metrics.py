"""AWS calls into ``cloud_manager_cloud_provider_api_call_total`` (:mod:`tasks.cloud.provider_metrics`):
a botocore event hook on every client :mod:`tasks.cloud.aws.client` builds (the one place the AWS
layers get their clients).

Ported from cloud-manager's ``pkg/metrics/cloudProviderAws.go`` (a deserialize middleware added to every
client's stack in ``pkg/kcp/provider/aws/client/config.go``): ``method`` is ``<ServiceId>/<Operation>``
(``EC2/DescribeVpcs``, ``STS/AssumeRole``), ``response_code`` the attempt's HTTP status, ``region`` the
client's, ``subscription`` the account. botocore's ``response-received.<service>.<operation>`` event
fires once per attempt (below the retryer, as the Go middleware sits below the retry step), with the
HTTP answer or the exception of an attempt that got none (counted ``0``; the original skips it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.cloud.provider_metrics import AWS, NO_ANSWER, record_call

__all__ = ["instrument", "method_of", "status_of"]


def method_of(service_id: str, event_name: str) -> str:
    """``<ServiceId>/<Operation>`` from the client's service id (``EC2``) and the event's name
    (``response-received.ec2.DescribeVpcs``): the original's ``fmt.Sprintf("%s/%s", ...)``."""
    return f"{service_id}/{event_name.rsplit('.', 1)[-1]}"


def status_of(response_dict: Mapping[str, Any] | None) -> int:
    """The attempt's HTTP status, :data:`~tasks.cloud.provider_metrics.NO_ANSWER` without an answer."""
    if not response_dict:
        return NO_ANSWER
    try:
        return int(response_dict.get("status_code") or NO_ANSWER)
    except (TypeError, ValueError):
        return NO_ANSWER


def instrument(client: Any, account: str = "") -> Any:
    """Register the counting hook on the boto3 ``client`` (of ``account``, for the subscription label);
    returns the client."""
    service_id = str(client.meta.service_model.service_id)
    region = str(client.meta.region_name or "")

    def counted(event_name: str = "", response_dict: Mapping[str, Any] | None = None, **_: Any) -> None:
        record_call(AWS, method_of(service_id, event_name), status_of(response_dict), region, account)

    client.meta.events.register("response-received", counted)
    return client
