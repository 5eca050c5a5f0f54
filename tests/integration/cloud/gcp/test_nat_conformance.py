"""Conformance of the GCP stand-in's Cloud Routers and regional addresses (the Cloud NAT IPs of a shoot, the
Scope's exposed data) with the Compute API, through the unmodified ``google-cloud-compute`` clients
(``RoutersClient``, ``AddressesClient``; transport ``rest``) and the discovery schemas; then the GCP
provider's ``nat_gateway_ips`` against it, as the original's ``pkg/kcp/provider/gcp/exposedData`` reads."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from standins.gcp import GcpStandIn
from tasks.cloud import settings
from tasks.cloud.gcp.exposeddata_client import NAT_AUTO_FILTER, ExposedDataClient, routers_filter
from tasks.cloud.gcp.provider import GcpProvider
from tasks.cloud.providers import ProviderError

from .conftest import NETWORK, PROJECT, VPC, compute_kwargs, conforms

pytestmark = pytest.mark.integration

REGION = "us-east4"
ROUTER = f"{VPC}-cloud-router"
IPS = ("35.7.1.9", "35.7.2.10")


@pytest.fixture
def nat() -> Iterator[GcpStandIn]:
    """The stand-in with the shoot's router and Cloud NAT (two IPs), a router of another VPC whose name ends
    like the shoot's (``x-<vpc>``, so ``network eq .*<vpc>`` matches it too, as in Compute) with one IP, and
    a router of the shoot's VPC in another region."""
    standin = GcpStandIn(op_delay=0.01, projects=(PROJECT,))
    standin.state.put_router(PROJECT, REGION, ROUTER, NETWORK, nat=f"{VPC}-cloud-nat", nat_ips=IPS)
    standin.state.put_router(PROJECT, REGION, "other-router", f"projects/{PROJECT}/global/networks/{VPC}-2",
                             nat="other-nat", nat_ips=("35.9.9.9",))
    standin.state.put_router(PROJECT, "europe-west3", "far-router", NETWORK, nat="far-nat", nat_ips=("35.8.8.8",))
    standin.start()
    try:
        yield standin
    finally:
        standin.stop()


def _raw(standin: GcpStandIn, path: str) -> dict:
    with urllib.request.urlopen(f"{standin.url}/compute/v1/projects/{PROJECT}/regions/{REGION}/{path}") as r:
        return dict(json.load(r))


def test_routers_list_filters_by_network_regex_and_parses_with_the_sdk(nat: GcpStandIn) -> None:
    routers = compute_v1.RoutersClient(**compute_kwargs(nat))
    listed = list(routers.list(request=compute_v1.ListRoutersRequest(project=PROJECT, region=REGION,
                                                                      filter=routers_filter(VPC))))
    assert [r.name for r in listed] == [ROUTER]  # not the router of <vpc>-2, nor the one of another region
    [router] = listed
    assert router.network == f"https://www.googleapis.com/compute/v1/{NETWORK}"
    assert router.region.endswith(f"/projects/{PROJECT}/regions/{REGION}")
    assert [(n.name, n.nat_ip_allocate_option) for n in router.nats] == [(f"{VPC}-cloud-nat", "AUTO_ONLY")]
    every = list(routers.list(request=compute_v1.ListRoutersRequest(project=PROJECT, region=REGION,
                                                                     filter="network eq .*--c-91b7d03.*")))
    assert sorted(r.name for r in every) == ["other-router", ROUTER]  # the regex matches both networks
    got = routers.get(project=PROJECT, region=REGION, router=ROUTER)
    assert got.self_link.endswith(f"/regions/{REGION}/routers/{ROUTER}")
    raw = _raw(nat, f"routers/{ROUTER}")
    conforms("compute", "Router", raw)
    for config in raw["nats"]:
        conforms("compute", "RouterNat", config)


def test_nat_auto_addresses_name_their_router_as_user(nat: GcpStandIn) -> None:
    addresses = compute_v1.AddressesClient(**compute_kwargs(nat))
    listed = list(addresses.list(request=compute_v1.ListAddressesRequest(project=PROJECT, region=REGION,
                                                                          filter=NAT_AUTO_FILTER)))
    assert sorted(a.address for a in listed) == sorted([*IPS, "35.9.9.9"])
    mine = [a for a in listed if any(u.endswith(f"/{ROUTER}") for u in a.users)]
    assert sorted(a.address for a in mine) == sorted(IPS)
    assert {(a.purpose, a.address_type, a.status) for a in mine} == {("NAT_AUTO", "EXTERNAL", "IN_USE")}
    assert not list(addresses.list(request=compute_v1.ListAddressesRequest(
        project=PROJECT, region=REGION, filter='purpose="VPC_PEERING"')))
    for item in _raw(nat, "addresses?filter=purpose%3D%22NAT_AUTO%22")["items"]:
        conforms("compute", "Address", item)
    paged = list(addresses.list(request=compute_v1.ListAddressesRequest(project=PROJECT, region=REGION,
                                                                         max_results=1)))
    assert len(paged) == 3  # one per page, the pager follows nextPageToken
    with pytest.raises(gexc.NotFound):
        addresses.get(project=PROJECT, region=REGION, address="missing")
    with pytest.raises(gexc.BadRequest):
        list(addresses.list(request=compute_v1.ListAddressesRequest(project=PROJECT, region=REGION,
                                                                     filter="name eq (")))


def test_client_and_provider_read_the_shoots_nat_ips(nat: GcpStandIn) -> None:
    client = ExposedDataClient(endpoint=nat.url)
    assert [r["name"] for r in client.vpc_routers(PROJECT, REGION, VPC)] == [ROUTER]
    assert sorted(a["address"] for a in client.router_nat_addresses(PROJECT, REGION, ROUTER)) == sorted(IPS)
    scope = {"spec": {"region": REGION, "provider": "gcp", "scope": {"gcp": {"project": PROJECT, "vpcNetwork": VPC}}}}
    settings.override(settings.load({"RECONCILERY_GCP_ENDPOINT_URL": nat.url}))
    try:
        assert GcpProvider().nat_gateway_ips(scope) == sorted(IPS)
        elsewhere = {"spec": {**scope["spec"], "region": "europe-west3"}}
        assert GcpProvider().nat_gateway_ips(elsewhere) == ["35.8.8.8"]
        none = {"spec": {**scope["spec"], "scope": {"gcp": {"project": PROJECT, "vpcNetwork": "no-such-vpc"}}}}
        assert GcpProvider().nat_gateway_ips(none) == []
        nat.state.inject("GET", f"/regions/{REGION}/addresses", 500, "backend unavailable")
        with pytest.raises(ProviderError) as err:
            GcpProvider().nat_gateway_ips(scope)
        assert err.value.retryable and "backend unavailable" in err.value.message
        nat.state.inject("GET", f"/regions/{REGION}/routers", 403, "Required 'compute.routers.list' permission")
        with pytest.raises(ProviderError) as err:
            GcpProvider().nat_gateway_ips(scope)
        assert not err.value.retryable and "compute.routers.list" in err.value.message
    finally:
        settings.override(None)
