"""A GcpSubnet end to end on the package's cloud stack (SKR connects, the registry's KCP controller, the
GCP stand-in): the SKR GcpSubnet Ready with its id and CIDR, the KCP mirror, the subnetwork in the shoot's
VPC and the service connection policy listing it; deletion leaving neither."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.cloud import names
from tasks.cloud.skr.gcpsubnet_plan import SKR_GCP_SUBNET
from tests.integration.cloud.conftest import GCP_PROJECT, CloudEnv

pytestmark = pytest.mark.integration


def test_gcp_subnet_end_to_end(cloud: CloudEnv) -> None:
    rt = cloud.runtime(provider="gcp")
    skr = rt.skr
    assert skr is not None
    cloud.gcp.state.put_network(GCP_PROJECT, rt.vpc_network)  # the shoot's VPC (Gardener's)
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), timeout=90, message="SKR active")
    cloud.wait(lambda: skr.served(SKR_GCP_SUBNET), timeout=90, message="GcpSubnet CRD installed")
    skr.create(SKR_GCP_SUBNET, {"metadata": {"name": "redis-subnet"}, "spec": {"cidr": "10.251.0.0/22"}})
    obj: dict[str, Any] = cloud.wait(lambda: (o := skr.get(SKR_GCP_SUBNET, "redis-subnet")) is not None
                                     and (o.get("status") or {}).get("state") == "Ready" and o,
                                     timeout=120, message="GcpSubnet Ready")
    ident = obj["status"]["id"]
    assert obj["status"]["cidr"] == "10.251.0.0/22"
    assert [(c["type"], c["message"]) for c in obj["status"]["conditions"]] == [("Ready", "Subnet is ready")]
    kcp = cloud.kcp_get(names.GCP_SUBNET, ident) or {}
    assert kcp["spec"]["network"] == {"name": f"{rt.kyma}--kyma"} and kcp["status"]["id"] == f"cm-{ident}"
    subnet = cloud.gcp.state.subnetworks(GCP_PROJECT)[f"regions/us-east4/subnetworks/cm-{ident}"]
    assert subnet["network"].endswith(f"/global/networks/{rt.vpc_network}")
    policy = f"projects/{GCP_PROJECT}/locations/us-east4/serviceConnectionPolicies/cm-{rt.vpc_network}-us-east4-rc"
    assert cloud.gcp.connectivity.get(policy)["pscConfig"]["subnetworks"] == [
        f"projects/{GCP_PROJECT}/regions/us-east4/subnetworks/cm-{ident}"]

    skr.delete(SKR_GCP_SUBNET, "redis-subnet")
    cloud.wait(lambda: skr.get(SKR_GCP_SUBNET, "redis-subnet") is None, timeout=120, message="GcpSubnet gone")
    assert cloud.kcp_get(names.GCP_SUBNET, ident) is None
    assert cloud.gcp.state.subnetworks(GCP_PROJECT) == {} and policy not in cloud.gcp.connectivity.policies
