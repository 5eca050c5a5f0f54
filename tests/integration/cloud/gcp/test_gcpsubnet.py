"""The GCP GcpSubnet flow (the registry's ``gcp`` provider of ``gcpsubnet``, its client over
google-cloud-compute and the networkconnectivity discovery client) against the GCP stand-in: create ->
Ready with the subnetwork and the service connection policy, a second GcpSubnet added to the policy,
deletion in the original's order (out of the policy, the policy with its last subnetwork, the
subnetwork); a refused insert, a failed creation operation, a refused and a throttled read."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kube.toolkit.outcome import Outcome
from standins.gcp import GcpStandIn
from tasks.cloud import names, settings
from tasks.cloud.gcp.gcpsubnet_client import SubnetClient
from tasks.cloud.kcp.gcpsubnet_plan import Seen
from tests.integration.cloud.gcp.conftest import NETWORK, PROJECT, VPC
from tests.integration.cloud.steps import provider_step

pytestmark = pytest.mark.integration

REGION = "us-east4"
SCOPE = {"metadata": {"name": "k1", "namespace": "kcp-system"},
         "spec": {"provider": "gcp", "region": REGION, "shootName": "c-91b7d03",
                  "scope": {"gcp": {"project": PROJECT, "vpcNetwork": VPC}}}}
POLICY = f"projects/{PROJECT}/locations/{REGION}/serviceConnectionPolicies/cm-{VPC}-{REGION}-rc"
SUBNETS = f"projects/{PROJECT}/regions/{REGION}/subnetworks"
#: Timings scaled 1/500 (the 10 s waits after a delete are 20 ms, past the stand-in's 10 ms operations),
#: the GCP retry wait 1 s -> 2 ms.
SETTINGS = settings.load({"RECONCILERY_CLOUD_TIME_SCALE": "500", "GCP_RETRY_WAIT_DURATION": "1s"})


def subnet(name: str = "s1", cidr: str = "10.251.0.0/22") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "kcp-system", "finalizers": [names.FINALIZER]},
            "spec": {"cidr": cidr, "purpose": "PRIVATE", "scope": {"name": "k1"},
                     "remoteRef": {"namespace": "", "name": "my-subnet"}, "network": {"name": "k1--kyma"}},
            "status": {}}


def turn(o: dict[str, Any], client: SubnetClient, deleting: bool = False) -> Outcome:
    return provider_step("gcpsubnet", o, SCOPE, SETTINGS, Seen(o, SCOPE), client, deleting)


def until(o: dict[str, Any], client: SubnetClient, deleting: bool = False, errors: bool = False) -> Outcome:
    for _ in range(60):
        step = turn(o, client, deleting)
        if step.remove_finalizer or (step.requeue_after is None and step.error is None):
            return step
        assert errors or o["status"].get("state") != "Error", o["status"]
        time.sleep(min(step.requeue_after or 0.002, 0.05))
    raise AssertionError(o["status"])


@pytest.fixture
def gcp(gcp_vpc: GcpStandIn) -> GcpStandIn:
    return gcp_vpc


@pytest.fixture
def client(gcp: GcpStandIn) -> SubnetClient:
    return SubnetClient(endpoint=gcp.url)


def test_create_two_then_delete_in_order(gcp: GcpStandIn, client: SubnetClient) -> None:
    first = subnet()
    until(first, client)
    status = first["status"]
    assert (status["state"], status["id"], status["cidr"]) == ("Ready", "cm-s1", "10.251.0.0/22")
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Ready", "Ready", "Subnet is ready")]
    assert status["subnetCreationOperationName"].startswith("operation-")
    made = gcp.state.subnetworks(PROJECT, REGION)[f"regions/{REGION}/subnetworks/cm-s1"]
    assert (made["ipCidrRange"], made["purpose"], made["privateIpGoogleAccess"]) == ("10.251.0.0/22", "PRIVATE", True)
    assert made["network"].endswith(f"/projects/{PROJECT}/global/networks/{VPC}")
    policy = gcp.connectivity.get(POLICY)
    assert (policy["serviceClass"], policy["network"], policy["description"]) == (
        "gcp-memorystore-redis", f"projects/{PROJECT}/global/networks/{VPC}",
        "Managed by cloud-manager. Used for Redis Cluster.")
    assert policy["pscConfig"]["subnetworks"] == [f"{SUBNETS}/cm-s1"]

    second = subnet("s2", "10.251.4.0/22")
    until(second, client)
    assert second["status"]["state"] == "Ready"
    assert gcp.connectivity.get(POLICY)["pscConfig"]["subnetworks"] == [
        f"{SUBNETS}/cm-s1", f"{SUBNETS}/cm-s2"]

    first["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert until(first, client, deleting=True).remove_finalizer == names.FINALIZER
    assert gcp.connectivity.get(POLICY)["pscConfig"]["subnetworks"] == [f"{SUBNETS}/cm-s2"]
    assert list(gcp.state.subnetworks(PROJECT)) == [f"regions/{REGION}/subnetworks/cm-s2"]
    second["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert until(second, client, deleting=True).remove_finalizer == names.FINALIZER
    assert gcp.connectivity.policies == {} and gcp.state.subnetworks(PROJECT) == {}


def test_refused_insert_and_failed_operation(gcp: GcpStandIn, client: SubnetClient) -> None:
    gcp.state.put_address(PROJECT, "psa", "10.251.0.0/22", NETWORK)  # a reserved range: the insert is refused
    o = subnet()
    step = turn(o, client)
    error = next(c for c in o["status"]["conditions"] if c["type"] == "Error")
    assert (o["status"]["state"], error["reason"], error["message"]) == (
        "Error", "CloudProviderError", "Failed to create GCP Private Subnet")
    assert step.event is not None and step.requeue_after == pytest.approx(0.12)

    gcp.state.fail_operation("compute", "insert", f"regions/{REGION}/subnetworks/cm-s2")
    other = subnet("s2", "10.251.8.0/22")
    step = until(other, client, errors=True)
    error = next(c for c in other["status"]["conditions"] if c["type"] == "Error")
    assert (other["status"]["state"], error["message"]) == ("Error", "KCP GcpSubnet creation operation failed")
    assert turn(other, client).status is None  # it stays so (the original's StopAndForget)
    assert gcp.state.subnetworks(PROJECT) == {}


def test_refused_and_throttled_reads(gcp: GcpStandIn, client: SubnetClient) -> None:
    o = subnet()
    gcp.state.inject("GET", "/subnetworks/cm-s1$", 429, "Quota exceeded", times=1)
    step = turn(o, client)
    assert step.status is None and step.requeue_after == pytest.approx(0.002)
    gcp.state.inject("GET", "/serviceConnectionPolicies/", 403, "Permission denied", times=1)
    step = turn(o, client)
    error = next(c for c in o["status"]["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("CloudProviderError", "Failed to load Service Connection Policy")
    assert step.requeue_after == pytest.approx(0.12)
