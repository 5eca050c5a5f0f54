"""Conformance of the GCP stand-in with the documented APIs, through the unmodified SDK clients.

Compute through ``google-cloud-compute`` (transport ``rest``: its request paths and its protobuf
parsing of every answer, which rejects e.g. a non-numeric operation ``id``); Service Networking and
Resource Manager through ``google-api-python-client`` built from the discovery documents the package
ships, so paths, verbs and parameter names are Google's, not ours. Answers are also checked against
the discovery schemas (no field the API does not define).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1
from googleapiclient import discovery
from googleapiclient.errors import HttpError

from standins.gcp import GcpStandIn

from .conftest import NETWORK, NETWORK_URL, PROJECT, VPC, compute_kwargs, conforms, discovery_client

pytestmark = pytest.mark.integration

PSA = "services/servicenetworking.googleapis.com"
CONNECTION = f"{PSA}/connections/servicenetworking-googleapis-com"


def _address(name: str, cidr: str = "10.250.4.0/22", network: str = NETWORK) -> compute_v1.Address:
    ip, prefix = cidr.split("/")
    return compute_v1.Address(name=name, description="Kyma cloud-manager IP Range", address=ip,
                              prefix_length=int(prefix), network=network, address_type="INTERNAL",
                              purpose="VPC_PEERING")


def _error_reason(exc: gexc.GoogleAPICallError) -> str:
    assert exc.response is not None
    return str(exc.response.json()["error"]["errors"][0]["reason"])


def _wait_sn(sn: Any, op: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got: dict[str, Any] = sn.operations().get(name=op["name"]).execute()
        if got.get("done") or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


# -- Compute global addresses and operations ---------------------------------------------------------

def test_insert_answers_a_running_operation_with_a_numeric_id_and_the_address_appears_when_done(
        gcp: GcpStandIn, addresses: compute_v1.GlobalAddressesClient) -> None:
    gcp.state.op_delay = 0.5
    op = addresses.insert(project=PROJECT, address_resource=_address("cm-a"))
    assert op.status in (compute_v1.Operation.Status.RUNNING, compute_v1.Operation.Status.PENDING)
    raw = op._extended_operation
    assert int(raw.id) > 0 and raw.operation_type == "insert"
    assert raw.target_link.endswith(f"/projects/{PROJECT}/global/addresses/cm-a")
    with pytest.raises(gexc.NotFound):
        addresses.get(project=PROJECT, address="cm-a")
    op.result(timeout=10)  # polls GET .../global/operations/{name} on the stand-in (workaround installed)
    assert op.done() and not op.error_code
    got = addresses.get(project=PROJECT, address="cm-a")
    assert (got.address, got.prefix_length, got.status) == ("10.250.4.0", 22, "RESERVED")
    assert got.network == NETWORK_URL  # stored as the full URL, whatever form was sent
    assert (got.address_type, got.purpose, got.description) == ("INTERNAL", "VPC_PEERING",
                                                                  "Kyma cloud-manager IP Range")
    assert got.self_link.endswith(f"/projects/{PROJECT}/global/addresses/cm-a")


def test_get_of_a_missing_address_is_404_not_found(addresses: compute_v1.GlobalAddressesClient) -> None:
    with pytest.raises(gexc.NotFound) as err:
        addresses.get(project=PROJECT, address="cm-missing")
    assert err.value.code == 404 and _error_reason(err.value) == "notFound"
    assert "projects/sap-kyma-example-42/global/addresses/cm-missing" in str(err.value.message)


@pytest.mark.parametrize(("resource", "reason"), [
    (_address("Bad_Name"), "invalid"),
    (_address("cm-b", cidr="10.250.5.0/22"), "invalid"),  # not the first address of its range
    (_address("cm-b", network="not-a-network"), "invalid"),
])
def test_insert_validates_like_compute(addresses: compute_v1.GlobalAddressesClient,
                                       resource: compute_v1.Address, reason: str) -> None:
    with pytest.raises(gexc.BadRequest) as err:
        addresses.insert(project=PROJECT, address_resource=resource)
    assert _error_reason(err.value) == reason


def test_duplicate_insert_is_409_already_exists(addresses: compute_v1.GlobalAddressesClient) -> None:
    addresses.insert(project=PROJECT, address_resource=_address("cm-a")).result(timeout=10)
    with pytest.raises(gexc.Conflict) as err:
        addresses.insert(project=PROJECT, address_resource=_address("cm-a", cidr="10.250.8.0/22"))
    assert _error_reason(err.value) == "alreadyExists"


def test_overlapping_range_on_the_same_network_is_rejected(addresses: compute_v1.GlobalAddressesClient) -> None:
    addresses.insert(project=PROJECT, address_resource=_address("cm-a", "10.250.4.0/22")).result(timeout=10)
    with pytest.raises(gexc.BadRequest):
        addresses.insert(project=PROJECT, address_resource=_address("cm-b", "10.250.6.0/23"))


def test_list_filters_by_network_and_pages(gcp: GcpStandIn, addresses: compute_v1.GlobalAddressesClient) -> None:
    for i in range(3):
        addresses.insert(project=PROJECT, address_resource=_address(f"cm-{i}", f"10.250.{4 * (i + 1)}.0/22")) \
            .result(timeout=10)
    gcp.state.put_address(PROJECT, "other-vpc", "10.100.0.0/22", f"projects/{PROJECT}/global/networks/other")
    flt = f'network="{NETWORK_URL}"'
    pager = addresses.list(request=compute_v1.ListGlobalAddressesRequest(project=PROJECT, filter=flt, max_results=2))
    assert sorted(a.name for a in pager) == ["cm-0", "cm-1", "cm-2"]
    assert sorted(a.name for a in addresses.list(project=PROJECT)) == ["cm-0", "cm-1", "cm-2", "other-vpc"]
    assert list(addresses.list(request=compute_v1.ListGlobalAddressesRequest(
        project=PROJECT, filter='purpose="PRIVATE_SERVICE_CONNECT"'))) == []


def test_delete_answers_an_operation_and_the_address_goes_when_done(
        gcp: GcpStandIn, addresses: compute_v1.GlobalAddressesClient,
        operations: compute_v1.GlobalOperationsClient) -> None:
    addresses.insert(project=PROJECT, address_resource=_address("cm-a")).result(timeout=10)
    gcp.state.op_delay = 0.3
    op = addresses.delete(project=PROJECT, address="cm-a")
    assert op._extended_operation.operation_type == "delete"
    done = operations.wait(project=PROJECT, operation=op.name)  # POST .../operations/{op}/wait
    assert done.status == compute_v1.Operation.Status.DONE
    with pytest.raises(gexc.NotFound):
        addresses.get(project=PROJECT, address="cm-a")
    with pytest.raises(gexc.NotFound):
        addresses.delete(project=PROJECT, address="cm-a")


def test_a_failed_operation_is_done_with_an_error_and_changes_nothing(
        gcp: GcpStandIn, addresses: compute_v1.GlobalAddressesClient,
        operations: compute_v1.GlobalOperationsClient) -> None:
    gcp.state.fail_operation("compute", "insert", "cm-a", code="QUOTA_EXCEEDED", message="Quota 'X' exceeded.")
    op = addresses.insert(project=PROJECT, address_resource=_address("cm-a"))
    with pytest.raises(gexc.GoogleAPICallError) as err:
        op.result(timeout=10)
    assert "Quota 'X' exceeded." in str(err.value)
    got = operations.get(project=PROJECT, operation=op.name)
    assert got.status == compute_v1.Operation.Status.DONE
    assert [(e.code, e.message) for e in got.error.errors] == [("QUOTA_EXCEEDED", "Quota 'X' exceeded.")]
    assert got.http_error_status_code == 400
    with pytest.raises(gexc.NotFound):
        addresses.get(project=PROJECT, address="cm-a")


def test_unknown_operation_is_404(operations: compute_v1.GlobalOperationsClient) -> None:
    with pytest.raises(gexc.NotFound):
        operations.get(project=PROJECT, operation="operation-0-missing")


def test_injected_429_and_503_reach_the_client(gcp: GcpStandIn, addresses: compute_v1.GlobalAddressesClient) -> None:
    gcp.state.inject("GET", "/global/addresses/cm-a$", 429, "Rate Limit Exceeded")
    with pytest.raises(gexc.TooManyRequests) as err:
        addresses.get(project=PROJECT, address="cm-a")
    assert _error_reason(err.value) == "rateLimitExceeded"
    gcp.state.inject("POST", "/global/addresses$", 503, "Backend Error")
    with pytest.raises(gexc.ServiceUnavailable):
        addresses.insert(project=PROJECT, address_resource=_address("cm-a"))
    with pytest.raises(gexc.NotFound):  # injections are used up
        addresses.get(project=PROJECT, address="cm-a")


def test_address_reserved_by_a_connection_cannot_be_deleted(
        gcp: GcpStandIn, addresses: compute_v1.GlobalAddressesClient) -> None:
    addresses.insert(project=PROJECT, address_resource=_address("cm-a")).result(timeout=10)
    sn = discovery_client(gcp, "servicenetworking")
    _wait_sn(sn, sn.services().connections().create(
        parent=PSA, body={"network": NETWORK, "reservedPeeringRanges": ["cm-a"]}).execute())
    with pytest.raises(gexc.BadRequest) as err:
        addresses.delete(project=PROJECT, address="cm-a")
    assert _error_reason(err.value) == "resourceInUseByAnotherResource"


def test_sdk_without_the_workaround_polls_googleapis_com(gcp: GcpStandIn) -> None:
    """Pins the SDK behaviour the GCP layer works around: ExtendedOperation.result() ignores the endpoint."""
    plain = compute_v1.GlobalAddressesClient(**compute_kwargs(gcp))
    op = plain.insert(project=PROJECT, address_resource=_address("cm-w"))
    operations = plain._transport._global_operations_client
    assert operations._transport._host.endswith("compute.googleapis.com") \
        or "compute.googleapis.com" in operations._transport._host
    del op


# -- Service Networking and Resource Manager -----------------------------------------------------------

def _reserve(gcp: GcpStandIn, *names: str) -> None:
    for i, name in enumerate(names):
        gcp.state.put_address(PROJECT, name, f"10.{200 + i}.0.0/22", NETWORK)


def test_connection_lifecycle(gcp: GcpStandIn) -> None:
    _reserve(gcp, "cm-a", "cm-b")
    gcp.state.op_delay = 0.3
    sn = discovery_client(gcp, "servicenetworking")
    conns = sn.services().connections()
    assert conns.list(parent=PSA, network=NETWORK).execute() == {}  # proto3 JSON: empty list omitted

    op = conns.create(parent=PSA, body={"network": NETWORK, "reservedPeeringRanges": ["cm-a"]}).execute()
    assert op["name"].startswith("operations/") and op["done"] is False
    conforms("servicenetworking", "Operation", op)
    assert conns.list(parent=PSA, network=NETWORK).execute() == {}
    done = _wait_sn(sn, op)
    assert done["done"] is True and "error" not in done and "response" in done
    conforms("servicenetworking", "Operation", done)

    listed = conns.list(parent=PSA, network=NETWORK).execute()
    conforms("servicenetworking", "ListConnectionsResponse", listed)
    [conn] = listed["connections"]
    number = gcp.state.project_number(PROJECT)
    assert conn == {"network": f"projects/{number}/global/networks/{VPC}", "reservedPeeringRanges": ["cm-a"],
                    "peering": "servicenetworking-googleapis-com", "service": PSA}

    patch = conns.patch(name=CONNECTION, force=True,
                        body={"network": NETWORK, "reservedPeeringRanges": ["cm-a", "cm-b"]}).execute()
    assert _wait_sn(sn, patch)["done"] is True
    [conn] = conns.list(parent=PSA, network=NETWORK).execute()["connections"]
    assert conn["reservedPeeringRanges"] == ["cm-a", "cm-b"]

    with pytest.raises(HttpError) as err:  # the consumer network must name the project by number
        conns.deleteConnection(name=CONNECTION, body={"consumerNetwork": NETWORK}).execute()
    assert err.value.resp.status == 400
    crm = discovery_client(gcp, "cloudresourcemanager")
    project = crm.projects().get(projectId=PROJECT).execute()
    conforms("cloudresourcemanager", "Project", project)
    assert project["projectNumber"] == str(number)
    op = conns.deleteConnection(name=CONNECTION, body={
        "consumerNetwork": f"projects/{project['projectNumber']}/global/networks/{VPC}"}).execute()
    assert _wait_sn(sn, op)["done"] is True
    assert conns.list(parent=PSA, network=NETWORK).execute() == {}


def test_connection_errors(gcp: GcpStandIn) -> None:
    _reserve(gcp, "cm-a")
    sn = discovery_client(gcp, "servicenetworking")
    conns = sn.services().connections()
    with pytest.raises(HttpError) as err:
        conns.list(parent=PSA).execute()
    assert err.value.resp.status == 400
    assert json.loads(err.value.content)["error"]["status"] == "INVALID_ARGUMENT"

    failed = _wait_sn(sn, conns.create(parent=PSA, body={"network": NETWORK,
                                                         "reservedPeeringRanges": ["cm-unknown"]}).execute())
    assert failed["done"] is True and failed["error"]["code"] == 9 and "cm-unknown" in failed["error"]["message"]
    conforms("servicenetworking", "Operation", failed)

    assert "error" not in _wait_sn(sn, conns.create(
        parent=PSA, body={"network": NETWORK, "reservedPeeringRanges": ["cm-a"]}).execute())
    again = _wait_sn(sn, conns.create(parent=PSA, body={"network": NETWORK,
                                                        "reservedPeeringRanges": ["cm-a"]}).execute())
    assert "UpdateConnection" in again["error"]["message"]

    gcp.state.fail_operation("servicenetworking", "patch", message="Internal error patching")
    failed_patch = _wait_sn(sn, conns.patch(name=CONNECTION, force=True, body={
        "network": NETWORK, "reservedPeeringRanges": ["cm-a"]}).execute())
    assert failed_patch["error"]["message"] == "Internal error patching"

    with pytest.raises(HttpError) as err:
        sn.operations().get(name="operations/pssn.unknown").execute()
    assert err.value.resp.status == 404
    assert json.loads(err.value.content)["error"]["status"] == "NOT_FOUND"

    gcp.state.inject("GET", "/v1/services/.*/connections$", 429, "Quota exceeded")
    with pytest.raises(HttpError) as err:
        conns.list(parent=PSA, network=NETWORK).execute()
    assert err.value.resp.status == 429
    assert json.loads(err.value.content)["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_resource_manager_unknown_project_is_403(gcp: GcpStandIn) -> None:
    crm = discovery_client(gcp, "cloudresourcemanager")
    with pytest.raises(HttpError) as err:
        crm.projects().get(projectId="nobody").execute()
    assert err.value.resp.status == 403


# -- Compute networks and their peerings (VPC peering) --------------------------------------------------

REMOTE_PROJECT = "customer-project-7"


def _networks(gcp: GcpStandIn) -> compute_v1.NetworksClient:
    client = compute_v1.NetworksClient(**compute_kwargs(gcp))
    client._transport._extended_operations_services["global_operations"] = compute_v1.GlobalOperationsClient(
        **compute_kwargs(gcp))
    return client


def _add(networks: compute_v1.NetworksClient, project: str, network: str, name: str, peer: str,
         **flags: bool) -> Any:
    peering = compute_v1.NetworkPeering(name=name, network=peer, exchange_subnet_routes=True, **flags)
    return networks.add_peering(project=project, network=network, networks_add_peering_request_resource=(
        compute_v1.NetworksAddPeeringRequest(network_peering=peering)))


def _done(gcp: GcpStandIn, project: str, op: Any) -> None:
    """Wait until a compute operation is DONE, reading it through GlobalOperationsClient every 20 ms (the
    SDK's ``result()`` polls once a second)."""
    ops = compute_v1.GlobalOperationsClient(**compute_kwargs(gcp))
    deadline = time.monotonic() + 10
    while ops.get(project=project, operation=op.name).status != compute_v1.Operation.Status.DONE:
        assert time.monotonic() < deadline, f"operation {op.name} not done"
        time.sleep(0.02)


def _raw(gcp: GcpStandIn, path: str) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(f"{gcp.url}{path}") as answer:
        return dict(json.loads(answer.read()))


def test_peerings_are_inactive_until_both_sides_exist_and_inactive_again_when_one_goes(gcp: GcpStandIn) -> None:
    gcp.state.project_number(REMOTE_PROJECT)
    networks = _networks(gcp)
    for project, name in ((PROJECT, VPC), (REMOTE_PROJECT, "customer-vpc")):
        op = networks.insert(project=project, network_resource=compute_v1.Network(
            name=name, auto_create_subnetworks=False))
        _done(gcp, project, op)
    remote_url = f"https://www.googleapis.com/compute/v1/projects/{REMOTE_PROJECT}/global/networks/customer-vpc"
    op = _add(networks, REMOTE_PROJECT, "customer-vpc", "to-kyma", NETWORK_URL, export_custom_routes=True)
    assert op._extended_operation.operation_type == "addPeering"
    op.result(timeout=10)  # once through the SDK's own polling (the workaround installed)
    got = networks.get(project=REMOTE_PROJECT, network="customer-vpc")
    assert [(p.name, p.state, p.network, p.export_custom_routes) for p in got.peerings] == [
        ("to-kyma", "INACTIVE", NETWORK_URL, True)]
    assert got.self_link_with_id.endswith(f"/networks/{got.id}")
    _done(gcp, PROJECT, _add(networks, PROJECT, VPC, "cm-x", remote_url, import_custom_routes=True))
    assert networks.get(project=PROJECT, network=VPC).peerings[0].state == "ACTIVE"
    assert networks.get(project=REMOTE_PROJECT, network="customer-vpc").peerings[0].state == "ACTIVE"
    raw = _raw(gcp, f"/compute/v1/projects/{PROJECT}/global/networks/{VPC}")
    conforms("compute", "Network", raw)
    assert raw["peerings"][0]["importCustomRoutes"] is True and raw["peerings"][0]["exchangeSubnetRoutes"] is True

    with pytest.raises(gexc.BadRequest):  # the same name twice
        _add(networks, PROJECT, VPC, "cm-x", remote_url)
    _done(gcp, PROJECT, networks.remove_peering(project=PROJECT, network=VPC, networks_remove_peering_request_resource=(
        compute_v1.NetworksRemovePeeringRequest(name="cm-x"))))
    assert list(networks.get(project=PROJECT, network=VPC).peerings) == []
    assert networks.get(project=REMOTE_PROJECT, network="customer-vpc").peerings[0].state == "INACTIVE"
    with pytest.raises(gexc.NotFound):
        networks.get(project=REMOTE_PROJECT, network="nope")


def test_a_second_peering_operation_while_one_runs_is_refused(gcp: GcpStandIn) -> None:
    networks = _networks(gcp)
    _done(gcp, PROJECT, networks.insert(project=PROJECT, network_resource=compute_v1.Network(name=VPC)))
    gcp.state.op_delay = 0.5
    _add(networks, PROJECT, VPC, "a", "projects/p2/global/networks/n2")
    with pytest.raises(gexc.BadRequest) as err:
        _add(networks, PROJECT, VPC, "b", "projects/p3/global/networks/n3")
    assert "There is a peering operation in progress on the local or peer network" in str(err.value.message)


def test_tags_are_created_bound_to_a_network_and_listed_as_effective(gcp: GcpStandIn) -> None:
    networks = _networks(gcp)
    _done(gcp, PROJECT, networks.insert(project=PROJECT, network_resource=compute_v1.Network(name=VPC)))
    net = networks.get(project=PROJECT, network=VPC)
    rm = discovery.build("cloudresourcemanager", "v3", credentials=AnonymousCredentials(), static_discovery=True,
                         cache_discovery=False, client_options={"api_endpoint": gcp.url})
    key = _wait_sn(rm, rm.tagKeys().create(body={"parent": f"projects/{PROJECT}", "shortName": "c-91b7d03"})
                   .execute())["response"]
    conforms("cloudresourcemanager", "TagKey", key, "v3")
    assert key["namespacedName"] == f"{PROJECT}/c-91b7d03" and key["name"].startswith("tagKeys/")
    assert rm.tagKeys().getNamespaced(name=f"{PROJECT}/c-91b7d03").execute()["name"] == key["name"]
    value = _wait_sn(rm, rm.tagValues().create(body={"parent": key["name"], "shortName": "true"}).execute())["response"]
    parent = f"//compute.googleapis.com/projects/{PROJECT}/global/networks/{net.id}"
    binding = _wait_sn(rm, rm.tagBindings().create(body={"parent": parent, "tagValue": value["name"]}).execute())
    conforms("cloudresourcemanager", "TagBinding", binding["response"], "v3")
    listed = rm.effectiveTags().list(parent=parent).execute()
    assert [t["namespacedTagKey"] for t in listed["effectiveTags"]] == [f"{PROJECT}/c-91b7d03"]
    conforms("cloudresourcemanager", "ListEffectiveTagsResponse", listed, "v3")
    with pytest.raises(HttpError) as err:
        rm.effectiveTags().list(parent=f"//compute.googleapis.com/projects/{PROJECT}/global/networks/0").execute()
    assert err.value.resp.status == 403
    with pytest.raises(HttpError) as err:
        rm.tagKeys().create(body={"parent": f"projects/{PROJECT}", "shortName": "c-91b7d03"}).execute()
    assert err.value.resp.status == 409


def test_runs_as_a_module(spawn: Any) -> None:
    """``python -m standins.gcp`` serves the same API."""
    import sys

    from tests.fixtures.processes import free_port, wait_for

    port = free_port()
    spawn([sys.executable, "-m", "standins.gcp", "--port", str(port), "--op-delay", "0", "--project", PROJECT])
    standin = GcpStandIn(port=port)  # not started: only for its url
    client = compute_v1.GlobalAddressesClient(**compute_kwargs(standin))

    def _listed() -> bool:
        return list(client.list(project=PROJECT)) == []

    wait_for(_listed, timeout=30, message="the stand-in process to answer")
