"""``cloud_manager_cloud_provider_api_call_total`` moves with the real requests of each provider's client
layer (moto's server for AWS, the GCP and ARM stand-ins), with the original's method and code, a
refusal counted with its code and a connection failure with 0; and the objects-by-state totals stay
exact in the real Redis as owners change and go."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from standins.azure import AzureStandIn
from standins.gcp import GcpStandIn
from tasks.cloud import kind_metrics, settings
from tasks.cloud.aws import client as aws
from tasks.cloud.azure import clients as azure_clients
from tasks.cloud.gcp import clients as gcp_clients
from tasks.cloud.provider_metrics import CALLS
from tests.fixtures.processes import free_port, served

pytestmark = pytest.mark.integration


def calls(*labels: str) -> float:
    return float(CALLS.labels(*labels)._value.get())  # the process's own counter, as /metrics shows it


def test_aws_calls_counted_with_operation_and_code(moto_endpoint: str) -> None:
    s = settings.load({"RECONCILERY_AWS_ENDPOINT_URL": moto_endpoint})
    ec2 = aws._client("ec2", "eu-central-1", "testing", "testing", "", s.aws_endpoint_url, 5.0)
    before = (calls("aws", "EC2/DescribeVpcs", "200", "eu-central-1", ""),
              calls("aws", "EC2/DescribeVpcs", "400", "eu-central-1", ""))
    ec2.describe_vpcs()
    with pytest.raises(Exception, match=r"InvalidVpcID\.NotFound"):
        ec2.describe_vpcs(VpcIds=["vpc-0000000000000dead"])
    assert calls("aws", "EC2/DescribeVpcs", "200", "eu-central-1", "") == before[0] + 1
    assert calls("aws", "EC2/DescribeVpcs", "400", "eu-central-1", "") == before[1] + 1


def test_gcp_calls_counted_with_masked_path_and_code() -> None:
    project = "sap-kyma-metrics-1"
    for standin in served(GcpStandIn(op_delay=0.01, projects=(project,)).start()):
        settings.override(settings.load({"RECONCILERY_GCP_ENDPOINT_URL": standin.url}))
        compute = gcp_clients.compute(settings.current())
        method = "GET /compute/v1/projects/{id}/global/addresses/{id}"
        before = calls("gcp", method, "404", "", "")
        assert compute.get_global_address(project, "no-such-address") is None  # a 404 refusal
        assert calls("gcp", method, "404", "", "") == before + 1


def test_gcp_connection_failure_counts_zero() -> None:
    settings.override(settings.load({"RECONCILERY_GCP_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}))
    compute = gcp_clients.compute(settings.current())
    method = "GET /compute/v1/projects/{id}/global/addresses/{id}"
    before = calls("gcp", method, "0", "", "")
    with pytest.raises(Exception):  # noqa: B017 - whichever error the layer makes of a refused connection
        compute.get_global_address("p", "a")
    assert calls("gcp", method, "0", "", "") > before


def test_azure_calls_counted_with_arm_path_and_code() -> None:
    for standin in served(AzureStandIn(op_delay=0.01).start()):
        s = settings.load({"RECONCILERY_AZURE_ENDPOINT_URL": standin.url})
        scope = {"spec": {"scope": {"azure": {"subscriptionId": str(uuid.uuid4()), "tenantId": "t"}}}}
        net = azure_clients.network(s, scope)
        method = "GET /subscriptions/{id}/resourceGroups/{id}/providers/Microsoft.Network/virtualNetworks/{id}"
        before = calls("azure", method, "404", "", "")
        assert net.get_vnet("rg-missing", "vnet-missing") is None
        assert calls("azure", method, "404", "", "") == before + 1


@pytest.fixture
def objects(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[kind_metrics._Objects]:
    monkeypatch.setenv("RECONCILERY_REDIS_URL", redis_url)
    found = kind_metrics._Objects()
    found._redis().delete(*kind_metrics.KEYS)
    yield found
    found._redis().delete(*kind_metrics.KEYS)


def test_object_totals_follow_owners(objects: kind_metrics._Objects) -> None:
    objects.put("kcp/iprange/a", {"iprange|Ready": 1})
    objects.put("kcp/iprange/b", {"iprange|Processing": 1})
    objects.put("skr/kyma-1", {"ipr.skr|Ready": 2, "nfs.skr|Error": 1})
    objects.put("kcp/iprange/b", {"iprange|Ready": 1})  # b became Ready
    assert objects.totals() == {("iprange", "Ready"): 2, ("ipr.skr", "Ready"): 2, ("nfs.skr", "Error"): 1}
    objects.put("kcp/iprange/a", {})  # a deleted
    objects.put("skr/kyma-1", {})  # SKR deactivated
    assert objects.totals() == {("iprange", "Ready"): 1}
    family = next(iter(objects.collect()))
    assert [(s.labels, s.value) for s in family.samples] == [({"kind": "iprange", "state": "Ready"}, 1)]
    assert isinstance(objects._redis(), redis.Redis)
