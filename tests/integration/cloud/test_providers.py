"""GCP and Azure runtimes through the same KCP and SKR controllers (the providers of
:mod:`tasks.cloud.gcp.provider` and :mod:`tasks.cloud.azure.provider` over the issue-10 layers), against
the GCP and Azure stand-ins."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tasks.cloud import names
from tests.integration.cloud.conftest import AZURE_SUBSCRIPTION, GCP_PROJECT, CloudEnv

pytestmark = pytest.mark.integration


def ready_scope(cloud: CloudEnv, kyma: str) -> dict[str, Any]:
    return cloud.wait(lambda: (s := cloud.kcp_get(names.SCOPE, kyma)) and (s.get("status") or {}).get("state")
                      == "Ready" and s, timeout=90, message="Scope Ready")


def ready_skr_range(cloud: CloudEnv, skr: Any, name: str) -> dict[str, Any]:
    return cloud.wait(lambda: (o := skr.get(names.SKR_IPRANGE, name)) and (o.get("status") or {}).get("state")
                      in ("Ready", "Error") and o, timeout=120, message=f"SKR IpRange {name} settled")


def test_gcp_runtime_scope_and_iprange(cloud: CloudEnv) -> None:
    rt = cloud.runtime(provider="gcp")
    scope = ready_scope(cloud, rt.kyma)
    gcp = scope["spec"]["scope"]["gcp"]
    assert scope["spec"]["provider"] == "gcp" and gcp["project"] == GCP_PROJECT
    assert gcp["vpcNetwork"] == rt.vpc_network and gcp["workers"] == [{"zones": ["us-east4-a", "us-east4-b",
                                                                                  "us-east4-c"]}]
    network = cloud.kcp_get(names.NETWORK, f"{rt.kyma}--kyma")
    assert network is not None and network["status"]["network"] == {
        "gcp": {"gcpProject": GCP_PROJECT, "networkName": rt.vpc_network}}
    assert rt.skr is not None
    name = f"r-{uuid.uuid4().hex[:6]}"
    rt.skr.create(names.SKR_IPRANGE, {"metadata": {"name": name}, "spec": {"cidr": "10.251.0.0/22"}})
    obj = ready_skr_range(cloud, rt.skr, name)
    assert obj["status"]["state"] == "Ready", obj["status"]
    kcp = cloud.kcp_get(names.KCP_IPRANGE, obj["status"]["id"])
    assert kcp is not None and kcp["status"]["id"] == f"cm-{obj['status']['id']}"
    assert f"cm-{obj['status']['id']}" in cloud.gcp.state.addresses(GCP_PROJECT)
    rt.skr.delete(names.SKR_IPRANGE, name)
    cloud.wait(lambda: rt.skr.get(names.SKR_IPRANGE, name) is None, timeout=120, message="deleted")
    assert f"cm-{obj['status']['id']}" not in cloud.gcp.state.addresses(GCP_PROJECT)


def test_azure_runtime_scope_and_iprange_on_the_cm_network(cloud: CloudEnv) -> None:
    rt = cloud.runtime(provider="azure")
    scope = ready_scope(cloud, rt.kyma)
    azure = scope["spec"]["scope"]["azure"]
    assert scope["spec"]["provider"] == "azure" and azure["subscriptionId"] == AZURE_SUBSCRIPTION
    assert [z["name"] for z in azure["network"]["zones"]] == ["1", "2"]
    assert rt.skr is not None
    name = f"r-{uuid.uuid4().hex[:6]}"
    rt.skr.create(names.SKR_IPRANGE, {"metadata": {"name": name}, "spec": {}})
    obj = ready_skr_range(cloud, rt.skr, name)
    assert obj["status"]["state"] == "Ready", obj["status"]
    kcp = cloud.kcp_get(names.KCP_IPRANGE, obj["status"]["id"])
    assert kcp is not None and kcp["spec"]["network"] == {"name": f"{rt.kyma}--cm"}
    assert kcp["status"]["cidr"] == "10.251.0.0/22"  # allocated after the nodes
    cm = cloud.kcp_get(names.NETWORK, f"{rt.kyma}--cm")
    assert cm is not None and cm["spec"]["type"] == "cloud-resources" and cm["status"]["state"] == "Ready"
    subnets = [i for i in cloud.azure.state.ids("virtualNetworks/subnets") if f"{rt.vpc_network}--cm" in i]
    assert subnets, cloud.azure.state.ids()
    # the kyma <-> CM VNet peering is the KCP VpcPeering <kyma>, Ready, both its ARM peerings Connected
    peering = cloud.kcp_get(names.VPC_PEERING, rt.kyma)
    assert peering is not None and peering["status"]["state"] == "Ready", peering
    assert peering["metadata"]["labels"][names.LABEL_KYMA_NAME] == rt.kyma
    assert {k: v for k, v in peering["spec"]["details"].items() if k != "remoteRouteTableUpdateStrategy"} == {
        "localNetwork": {"name": f"{rt.kyma}--kyma"}, "remoteNetwork": {"name": f"{rt.kyma}--cm"},
        "peeringName": f"kyma--{rt.shoot}", "localPeeringName": f"cm--{rt.shoot}", "deleteRemotePeering": True}
    net = (f"/subscriptions/{AZURE_SUBSCRIPTION}/resourceGroups/{{rg}}/providers/Microsoft.Network/"
           "virtualNetworks/{rg}")

    kyma_vnet, cm_vnet = net.format(rg=rt.vpc_network), net.format(rg=f"{rt.vpc_network}--cm")
    local = cloud.azure.state.resource(f"{kyma_vnet}/virtualNetworkPeerings/cm--{rt.shoot}")
    remote = cloud.azure.state.resource(f"{cm_vnet}/virtualNetworkPeerings/kyma--{rt.shoot}")
    assert local is not None and remote is not None
    assert (local["properties"]["peeringState"], remote["properties"]["peeringState"]) == ("Connected", "Connected")
    assert local["properties"]["remoteVirtualNetwork"]["id"].lower() == cm_vnet.lower()
    # a VpcPeering of that name without the kyma's label is not the IpRange's: never deleted by it
    cloud.kcp.patch(names.VPC_PEERING, rt.kyma, {"metadata": {"labels": {names.LABEL_KYMA_NAME: None}}},
                    names.KCP_NAMESPACE)
    rt.skr.delete(names.SKR_IPRANGE, name)
    message = f"VpcPeering {rt.kyma} exists and does not belong to kyma {rt.kyma}"
    cloud.wait(lambda: message in str((cloud.kcp_get(names.KCP_IPRANGE, obj["status"]["id"]) or {}).get("status")),
               timeout=60, message="foreign VpcPeering refused")
    kept = cloud.kcp_get(names.VPC_PEERING, rt.kyma)  # still there, and not being deleted
    assert kept is not None and kept["metadata"].get("deletionTimestamp") is None, kept
    cloud.kcp.patch(names.VPC_PEERING, rt.kyma, {"metadata": {"labels": {names.LABEL_KYMA_NAME: rt.kyma}}},
                    names.KCP_NAMESPACE)
    cloud.kcp.patch(names.KCP_IPRANGE, obj["status"]["id"], {"metadata": {"annotations": {"test/nudge": "1"}}},
                    names.KCP_NAMESPACE)  # look again now rather than after the 6 s requeue
    cloud.wait(lambda: rt.skr.get(names.SKR_IPRANGE, name) is None, timeout=120, message="deleted")
    cloud.wait(lambda: cloud.kcp_get(names.NETWORK, f"{rt.kyma}--cm") is None, timeout=60, message="cm network gone")
    assert not [i for i in cloud.azure.state.ids("virtualNetworks/subnets") if f"{rt.vpc_network}--cm" in i]
    assert cloud.kcp_get(names.VPC_PEERING, rt.kyma) is None
    assert cloud.azure.state.resource(f"{kyma_vnet}/virtualNetworkPeerings/cm--{rt.shoot}") is None
