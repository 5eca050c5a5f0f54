"""Conformance of the stand-in's regional subnetworks (Compute v1) and service connection policies (Network
Connectivity v1) with the documented APIs, through the unmodified SDK clients: ``google-cloud-compute``
(transport ``rest``: Google's paths, its protobuf parsing of every answer, ``ExtendedOperation`` polling
the region operation) and ``google-api-python-client`` built from the ``networkconnectivity`` v1 discovery
document it ships; answers are checked against the discovery schemas (no field the API does not define)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.future import polling
from google.cloud import compute_v1
from googleapiclient.errors import HttpError

from standins.gcp import GcpStandIn

from .conftest import NETWORK, NETWORK_URL, PROJECT, VPC, compute_kwargs, conforms, discovery_client

pytestmark = pytest.mark.integration

REGION = "us-east4"
PARENT = f"projects/{PROJECT}/locations/{REGION}"
SUBNET = f"projects/{PROJECT}/regions/{REGION}/subnetworks"
#: Polling of an operation every 20 ms (the SDK's default waits a second before its first look).
FAST = polling.DEFAULT_POLLING.with_delay(initial=0.02, maximum=0.1)


@pytest.fixture
def gcp(gcp_vpc: GcpStandIn) -> GcpStandIn:
    return gcp_vpc


@pytest.fixture
def subnetworks(gcp: GcpStandIn) -> compute_v1.SubnetworksClient:
    """SubnetworksClient on the stand-in, with ExtendedOperation polling aimed there too."""
    client = compute_v1.SubnetworksClient(**compute_kwargs(gcp))
    client._transport._extended_operations_services["region_operations"] = compute_v1.RegionOperationsClient(
        **compute_kwargs(gcp))
    return client


def _subnet(name: str, cidr: str, network: str = NETWORK) -> compute_v1.Subnetwork:
    return compute_v1.Subnetwork(name=name, ip_cidr_range=cidr, network=network, purpose="PRIVATE",
                                 private_ip_google_access=True)


def _error_reason(exc: gexc.GoogleAPICallError) -> str:
    assert exc.response is not None
    return str(exc.response.json()["error"]["errors"][0]["reason"])


def test_subnetwork_insert_get_list_delete(gcp: GcpStandIn, subnetworks: compute_v1.SubnetworksClient) -> None:
    gcp.state.op_delay = 0.3
    op = subnetworks.insert(project=PROJECT, region=REGION, subnetwork_resource=_subnet("cm-a", "10.251.0.0/22"))
    raw = op._extended_operation
    assert int(raw.id) > 0 and raw.operation_type == "insert" and raw.region.endswith(f"/regions/{REGION}")
    assert raw.self_link.endswith(f"/regions/{REGION}/operations/{raw.name}")
    with pytest.raises(gexc.NotFound):  # not there before its operation is done
        subnetworks.get(project=PROJECT, region=REGION, subnetwork="cm-a")
    op.result(timeout=10, polling=FAST)  # polls GET .../regions/{r}/operations/{name}
    got = subnetworks.get(project=PROJECT, region=REGION, subnetwork="cm-a")
    assert (got.ip_cidr_range, got.gateway_address, got.purpose, got.private_ip_google_access) == (
        "10.251.0.0/22", "10.251.0.1", "PRIVATE", True)
    assert got.network == NETWORK_URL and got.region.endswith(f"/projects/{PROJECT}/regions/{REGION}")
    conforms("compute", "Subnetwork", gcp.state.subnetworks(PROJECT)[f"regions/{REGION}/subnetworks/cm-a"])
    conforms("compute", "Operation", gcp.state.get_compute_op(PROJECT, raw.name, REGION))
    assert [s.name for s in subnetworks.list(project=PROJECT, region=REGION)] == ["cm-a"]
    assert gcp.state.networks(PROJECT)[VPC]["subnetworks"] == [got.self_link]
    with pytest.raises(gexc.NotFound):  # a regional operation is not a global one
        compute_v1.GlobalOperationsClient(**compute_kwargs(gcp)).get(project=PROJECT, operation=raw.name)
    subnetworks.delete(project=PROJECT, region=REGION, subnetwork="cm-a").result(timeout=10, polling=FAST)
    with pytest.raises(gexc.NotFound) as err:
        subnetworks.get(project=PROJECT, region=REGION, subnetwork="cm-a")
    assert _error_reason(err.value) == "notFound" and f"{SUBNET}/cm-a" in str(err.value.message)


def test_subnetwork_insert_validates_like_compute(subnetworks: compute_v1.SubnetworksClient,
                                                 gcp: GcpStandIn) -> None:
    subnetworks.insert(project=PROJECT, region=REGION,
                       subnetwork_resource=_subnet("cm-a", "10.251.0.0/22")).result(timeout=10, polling=FAST)
    for resource, error, reason in (
            (_subnet("Bad_Name", "10.251.8.0/22"), gexc.BadRequest, "invalid"),
            (_subnet("cm-b", "10.251.9.0/22"), gexc.BadRequest, "invalid"),  # not a range's first address
            (_subnet("cm-b", "10.251.2.0/23"), gexc.BadRequest, "invalid"),  # overlaps cm-a
            (_subnet("cm-b", "10.252.0.0/22", f"projects/{PROJECT}/global/networks/none"), gexc.NotFound, "notFound"),
            (_subnet("cm-a", "10.252.0.0/22"), gexc.Conflict, "alreadyExists")):
        with pytest.raises(error) as err:
            subnetworks.insert(project=PROJECT, region=REGION, subnetwork_resource=resource)
        assert _error_reason(err.value) == reason
    gcp.state.put_address(PROJECT, "psa", "10.252.0.0/22", NETWORK)
    with pytest.raises(gexc.BadRequest) as err:  # a range reserved for private services access
        subnetworks.insert(project=PROJECT, region=REGION, subnetwork_resource=_subnet("cm-c", "10.252.0.0/24"))
    assert "conflicts with reserved range 'psa'" in str(err.value.message)
    with pytest.raises(gexc.BadRequest) as err:  # a network with subnetworks cannot go
        compute_v1.NetworksClient(**compute_kwargs(gcp)).delete(project=PROJECT, network=VPC)
    assert _error_reason(err.value) == "resourceInUseByAnotherResource"


def test_connection_policy_lifecycle(gcp: GcpStandIn, subnetworks: compute_v1.SubnetworksClient) -> None:
    for name, cidr in (("cm-a", "10.251.0.0/22"), ("cm-b", "10.251.4.0/22")):
        subnetworks.insert(project=PROJECT, region=REGION,
                           subnetwork_resource=_subnet(name, cidr)).result(timeout=10, polling=FAST)
    policies = discovery_client(gcp, "networkconnectivity").projects().locations().serviceConnectionPolicies()
    body = {"network": NETWORK, "serviceClass": "gcp-memorystore-redis", "description": "for Redis",
            "pscConfig": {"subnetworks": [f"{SUBNET}/cm-a"]}}
    op = policies.create(parent=PARENT, serviceConnectionPolicyId="cm-p", requestId="r-1", body=body).execute()
    assert op["done"] and op["metadata"]["verb"] == "create" and op["name"].startswith(f"{PARENT}/operations/")
    conforms("networkconnectivity", "GoogleLongrunningOperation", op)
    conforms("networkconnectivity", "OperationMetadata", op["metadata"])
    assert policies.create(parent=PARENT, serviceConnectionPolicyId="cm-p", requestId="r-1",
                           body=body).execute()["name"] == op["name"]  # the same request id: the same operation
    operations = discovery_client(gcp, "networkconnectivity").projects().locations().operations()
    assert operations.get(name=op["name"]).execute()["response"]["name"] == f"{PARENT}/serviceConnectionPolicies/cm-p"
    got = policies.get(name=f"{PARENT}/serviceConnectionPolicies/cm-p").execute()
    conforms("networkconnectivity", "ServiceConnectionPolicy", got)
    assert (got["network"], got["infrastructure"], got["pscConfig"]["subnetworks"]) == (
        NETWORK, "PSC", [f"{SUBNET}/cm-a"])
    with pytest.raises(gexc.BadRequest) as in_use:  # a subnetwork a policy names cannot go
        subnetworks.delete(project=PROJECT, region=REGION, subnetwork="cm-a")
    assert _error_reason(in_use.value) == "resourceInUseByAnotherResource"

    policies.patch(name=got["name"], updateMask="pscConfig", requestId="r-2",
                   body={"pscConfig": {"subnetworks": [f"{SUBNET}/cm-a", f"{SUBNET}/cm-b"]}}).execute()
    assert policies.get(name=got["name"]).execute()["pscConfig"]["subnetworks"] == [f"{SUBNET}/cm-a", f"{SUBNET}/cm-b"]
    listed = policies.list(parent=PARENT).execute()["serviceConnectionPolicies"]
    assert [p["name"] for p in listed] == [got["name"]]
    done = policies.delete(name=got["name"], requestId="r-3").execute()
    assert done["done"] and done["response"]["@type"] == "type.googleapis.com/google.protobuf.Empty"
    with pytest.raises(HttpError) as missing:
        policies.get(name=got["name"]).execute()
    assert missing.value.resp.status == 404 and json.loads(missing.value.content)["error"]["status"] == "NOT_FOUND"
    subnetworks.delete(project=PROJECT, region=REGION, subnetwork="cm-a").result(timeout=10, polling=FAST)


def test_connection_policy_errors(gcp: GcpStandIn, subnetworks: compute_v1.SubnetworksClient) -> None:
    subnetworks.insert(project=PROJECT, region=REGION,
                       subnetwork_resource=_subnet("cm-a", "10.251.0.0/22")).result(timeout=10, polling=FAST)
    policies = discovery_client(gcp, "networkconnectivity").projects().locations().serviceConnectionPolicies()
    good = {"network": NETWORK, "serviceClass": "gcp-memorystore-redis",
            "pscConfig": {"subnetworks": [f"{SUBNET}/cm-a"]}}

    def refused(call: Any) -> tuple[int, str]:
        with pytest.raises(HttpError) as err:
            call.execute()
        return err.value.resp.status, json.loads(err.value.content)["error"]["status"]

    for bad in ({**good, "network": f"projects/{PROJECT}/global/networks/none"}, {**good, "serviceClass": ""},
                {**good, "pscConfig": {"subnetworks": [f"{SUBNET}/none"]}}, {**good, "pscConfig": {}},
                {**good, "pscConfig": {"subnetworks": [f"projects/{PROJECT}/regions/europe-west1/subnetworks/cm-a"]}}):
        assert refused(policies.create(parent=PARENT, serviceConnectionPolicyId="cm-p", body=bad)) == (
            400, "INVALID_ARGUMENT")
    policies.create(parent=PARENT, serviceConnectionPolicyId="cm-p", body=good).execute()
    assert refused(policies.create(parent=PARENT, serviceConnectionPolicyId="cm-p", body=good)) == (
        409, "ALREADY_EXISTS")
    assert refused(policies.create(parent=PARENT, serviceConnectionPolicyId="cm-q", body=good)) == (
        400, "INVALID_ARGUMENT")  # one policy per network, region and service class
    name = f"{PARENT}/serviceConnectionPolicies/cm-p"
    assert refused(policies.patch(name=name, updateMask="serviceClass", body={"serviceClass": "x"})) == (
        400, "INVALID_ARGUMENT")
    assert refused(policies.patch(name=name, updateMask="pscConfig", body={
        "serviceClass": "other", "pscConfig": {"subnetworks": []}})) == (400, "INVALID_ARGUMENT")  # immutable
    assert refused(policies.get(name=f"{PARENT}/serviceConnectionPolicies/none")) == (404, "NOT_FOUND")
    assert refused(policies.delete(name=f"{PARENT}/serviceConnectionPolicies/none")) == (404, "NOT_FOUND")
