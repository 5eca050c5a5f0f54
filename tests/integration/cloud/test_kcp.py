"""The KCP loop against real parts: dev API server (KCP + Garden + SKRs), moto's EC2/STS, Redis, and
``reconcilery worker`` / ``watch`` / ``beat`` processes. Scenarios after the original's
``internal/controller/cloud-control/{scope_aws,iprange_aws,iprange_delete,nuke_*}_test.go``."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kube import resources
from tasks.cloud import names
from tests.integration.cloud.conftest import PROJECT, REGION, CloudEnv, Runtime

pytestmark = pytest.mark.integration


def cond_of(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def scope_ready(cloud: CloudEnv, rt: Runtime) -> dict[str, Any]:
    return cloud.wait(lambda: (s := cloud.kcp_get(names.SCOPE, rt.kyma)) is not None
                      and (s.get("status") or {}).get("state") == "Ready" and s, timeout=90, message="Scope Ready")


def kcp_iprange(cloud: CloudEnv, rt: Runtime, cidr: str = "", name: str | None = None) -> str:
    name = name or str(uuid.uuid4())
    spec: dict[str, Any] = {"scope": {"name": rt.kyma}, "remoteRef": {"namespace": "", "name": "skr-range"}}
    if cidr:
        spec["cidr"] = cidr
    cloud.kcp.create(names.KCP_IPRANGE, {"metadata": {"name": name, "namespace": names.KCP_NAMESPACE}, "spec": spec})
    return name


def wait_state(cloud: CloudEnv, name: str, state: str, timeout: float = 60) -> dict[str, Any]:
    return cloud.wait(lambda: (o := cloud.kcp_get(names.KCP_IPRANGE, name)) is not None
                      and (o.get("status") or {}).get("state") == state and o, timeout=timeout,
                      message=f"KCP IpRange {name} {state}")


def test_scope_from_the_garden_kyma_network_exposed_data_and_activation(cloud: CloudEnv) -> None:
    rt = cloud.runtime()
    scope = scope_ready(cloud, rt)
    assert scope["metadata"]["labels"] == {
        names.LABEL_KYMA_NAME: rt.kyma, "kyma-project.io/global-account-id": "ga-1",
        "kyma-project.io/subaccount-id": "sa-1", "kyma-project.io/shoot-name": rt.shoot,
        "kyma-project.io/region": REGION, "kyma-project.io/broker-plan-name": "aws"}
    assert names.FINALIZER in scope["metadata"]["finalizers"]
    spec = scope["spec"]
    assert (spec["kymaName"], spec["shootName"], spec["region"], spec["provider"]) == (rt.kyma, rt.shoot, REGION, "aws")
    aws = spec["scope"]["aws"]
    assert aws["accountId"] == "123456789012"  # moto's account for any key: STS GetCallerIdentity
    assert aws["vpcNetwork"] == f"shoot--kyma--{rt.shoot}" == names.vpc_network(PROJECT, rt.shoot)
    assert [z["name"] for z in aws["network"]["zones"]] == ["eu-central-1a", "eu-central-1b", "eu-central-1c"]
    assert (aws["network"]["nodes"], aws["network"]["pods"], aws["network"]["services"]) == (
        "10.250.0.0/16", "100.64.0.0/12", "100.104.0.0/13")
    cond = cond_of(scope, "Ready")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == ("True", "Ready", "Ready")
    network = cloud.kcp_get(names.NETWORK, f"{rt.kyma}--kyma")
    assert network is not None and network["spec"]["type"] == "kyma"
    assert network["status"]["network"]["aws"] == {"awsAccountId": "123456789012", "region": REGION,
                                                   "networkName": rt.vpc_network}
    ips = scope["status"]["exposedData"]["natGatewayIps"]
    assert len(ips) == 1 and scope["status"]["exposedData"]["readTime"]
    assert rt.skr is not None
    info = rt.skr.get(resources.CONFIGMAP, "kyma-info", "kyma-system")
    assert info is not None and info["data"]["cloud.natGatewayIps"] == ips[0]
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), message="SKR active")


def test_kyma_without_the_module_is_not_active_until_it_is_added(cloud: CloudEnv) -> None:
    rt = cloud.runtime(module=None)
    scope_ready(cloud, rt)
    assert not cloud.rotation.is_active(rt.kyma)
    cloud.kcp.patch_status(names.KYMA, rt.kyma, {"modules": [{"name": "cloud-manager", "state": "Processing"}]},
                           names.KCP_NAMESPACE)
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), message="SKR active once the module is listed")
    cloud.kcp.delete(names.KYMA, rt.kyma, names.KCP_NAMESPACE)
    cloud.wait(lambda: not cloud.rotation.is_active(rt.kyma), message="SKR inactive once its Kyma is gone")


def test_scope_rebuilt_when_a_label_is_missing(cloud: CloudEnv) -> None:
    rt = cloud.runtime()
    scope = scope_ready(cloud, rt)
    labels = dict(scope["metadata"]["labels"])
    cloud.kcp.patch(names.SCOPE, rt.kyma, {"metadata": {"labels": {"kyma-project.io/region": None}}},
                    names.KCP_NAMESPACE)
    cloud.wait(lambda: (cloud.kcp_get(names.SCOPE, rt.kyma) or {}).get("metadata", {}).get("labels") == labels,
               message="Scope labels restored")


def test_iprange_with_cidr_ready_with_one_subnet_per_zone(cloud: CloudEnv) -> None:
    rt = cloud.runtime()
    scope_ready(cloud, rt)
    name = kcp_iprange(cloud, rt, cidr="10.251.0.0/22")
    obj = wait_state(cloud, name, "Ready")
    st = obj["status"]
    assert st["cidr"] == "10.251.0.0/22" and st["vpcId"] == rt.vpc_id and st["addressSpaceId"]
    assert st["ranges"] == ["10.251.0.0/24", "10.251.1.0/24", "10.251.2.0/24"]
    assert [(s["zone"], s["range"]) for s in st["subnets"]] == [
        ("eu-central-1a", "10.251.0.0/24"), ("eu-central-1b", "10.251.1.0/24"), ("eu-central-1c", "10.251.2.0/24")]
    assert [(c["type"], c["reason"], c["message"]) for c in st["conditions"]] == [("Ready", "Ready", "Ready")]
    assert names.FINALIZER in obj["metadata"]["finalizers"]
    subnets = cloud.ec2().describe_subnets(Filters=[{"Name": "vpc-id", "Values": [rt.vpc_id]},
                                                    {"Name": "tag:cloud-manager.kyma-project.io/iprange",
                                                     "Values": ["1"]}])["Subnets"]
    tags = {s["CidrBlock"]: {t["Key"]: t["Value"] for t in s["Tags"]} for s in subnets}
    assert tags["10.251.1.0/24"] == {"Name": f"{name}-1", "cloud-manager.kyma-project.io/name": f"kcp-system/{name}",
                                     "cloud-manager.kyma-project.io/remote-name": "/skr-range",
                                     "cloud-manager.kyma-project.io/scope": rt.kyma,
                                     "cloud-manager.kyma-project.io/iprange": "1"}
    vpc = cloud.ec2().describe_vpcs(VpcIds=[rt.vpc_id])["Vpcs"][0]
    assert {"10.251.0.0/22": "associated"}.items() <= {
        a["CidrBlock"]: a["CidrBlockState"]["State"] for a in vpc["CidrBlockAssociationSet"]}.items()


def test_iprange_without_cidr_gets_the_first_free_22_after_the_nodes(cloud: CloudEnv) -> None:
    rt = cloud.runtime(zones=2)
    scope_ready(cloud, rt)
    name = kcp_iprange(cloud, rt)
    obj = wait_state(cloud, name, "Ready")
    assert obj["status"]["cidr"] == "10.251.0.0/22"
    assert obj["status"]["ranges"] == ["10.251.0.0/23", "10.251.2.0/23"]
    assert "cidr" not in obj["spec"]


def test_vpc_not_found(cloud: CloudEnv) -> None:
    rt = cloud.runtime(vpc=False)
    scope_ready(cloud, rt)
    name = kcp_iprange(cloud, rt, cidr="10.251.0.0/22")
    obj = wait_state(cloud, name, "Error")
    assert [(c["type"], c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("Error", "VpcNotFound", f"AWS VPC {rt.vpc_network} not found")]
    events = cloud.kcp.list(resources.EVENT, names.KCP_NAMESPACE,
                            field_selector=f"involvedObject.name={name}")
    assert any(e["reason"] == "VpcNotFound" and e["type"] == "Warning" for e in events)


def _iprange_beside_a_vpc_block(cloud: CloudEnv, block: str, cidr: str, state: str) -> tuple[Runtime, dict[str, Any]]:
    """A ready runtime whose VPC has the extra CIDR ``block``, and its KCP IpRange of ``cidr`` once in
    ``state``."""
    rt = cloud.runtime()
    scope_ready(cloud, rt)
    cloud.ec2().associate_vpc_cidr_block(VpcId=rt.vpc_id, CidrBlock=block)
    return rt, wait_state(cloud, kcp_iprange(cloud, rt, cidr=cidr), state)


def test_cidr_already_associated_is_used(cloud: CloudEnv) -> None:
    rt, obj = _iprange_beside_a_vpc_block(cloud, "10.251.0.0/22", "10.251.0.0/22", "Ready")
    vpc = cloud.ec2().describe_vpcs(VpcIds=[rt.vpc_id])["Vpcs"][0]
    blocks = [a for a in vpc["CidrBlockAssociationSet"] if a["CidrBlock"] == "10.251.0.0/22"]
    assert len(blocks) == 1 and obj["status"]["addressSpaceId"] == blocks[0]["AssociationId"]


def test_cidr_overlapping_a_vpc_block(cloud: CloudEnv) -> None:
    _, obj = _iprange_beside_a_vpc_block(cloud, "10.251.0.0/16", "10.251.4.0/22", "Error")
    assert [(c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("CidrOverlap", "CIDR overlaps with VPC adress range cidr 10.251.0.0/16")]


def test_range_overlapping_an_existing_subnet(cloud: CloudEnv) -> None:
    rt = cloud.runtime()
    scope_ready(cloud, rt)
    # a subnet nobody tagged inside the VPC's main block: the IpRange inside that block clashes with it
    foreign = cloud.ec2().create_subnet(VpcId=rt.vpc_id, CidrBlock="10.250.200.0/24",
                                        AvailabilityZone="eu-central-1a")["Subnet"]
    name = kcp_iprange(cloud, rt, cidr="10.250.200.0/22")
    obj = wait_state(cloud, name, "Error")
    reasons = [(c["reason"], c["message"]) for c in obj["status"]["conditions"]]
    assert reasons in (
        [("CidrOverlap", "CIDR overlaps with VPC adress range cidr 10.250.0.0/16")],  # main block checked first
        [("CidrOverlap", f"Range 10.250.200.0/24 overlaps with existing subnet {foreign['SubnetId']} "
                         "with cidr 10.250.200.0/24")])


def test_range_overlapping_an_existing_subnet_of_an_associated_block(cloud: CloudEnv) -> None:
    rt = cloud.runtime()
    scope_ready(cloud, rt)
    cloud.ec2().associate_vpc_cidr_block(VpcId=rt.vpc_id, CidrBlock="10.252.0.0/22")
    foreign = cloud.ec2().create_subnet(VpcId=rt.vpc_id, CidrBlock="10.252.1.0/24",
                                        AvailabilityZone="eu-central-1b")["Subnet"]
    name = kcp_iprange(cloud, rt, cidr="10.252.0.0/22")
    obj = wait_state(cloud, name, "Error")
    assert [(c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("CidrOverlap", f"Range 10.252.1.0/24 overlaps with existing subnet {foreign['SubnetId']} "
                        "with cidr 10.252.1.0/24")]


def test_delete_removes_subnets_then_the_association(cloud: CloudEnv) -> None:
    rt = cloud.runtime()
    scope_ready(cloud, rt)
    name = kcp_iprange(cloud, rt, cidr="10.253.0.0/22")
    wait_state(cloud, name, "Ready")
    cloud.kcp.delete(names.KCP_IPRANGE, name, names.KCP_NAMESPACE)
    cloud.wait(lambda: cloud.kcp_get(names.KCP_IPRANGE, name) is None, message="KCP IpRange gone")
    tagged = cloud.ec2().describe_subnets(Filters=[{"Name": "vpc-id", "Values": [rt.vpc_id]},
                                                   {"Name": "tag-key",
                                                    "Values": ["cloud-manager.kyma-project.io/iprange"]}])["Subnets"]
    assert tagged == []
    vpc = cloud.ec2().describe_vpcs(VpcIds=[rt.vpc_id])["Vpcs"][0]
    assert all(a["CidrBlockState"]["State"] in ("disassociated", "disassociating")
               for a in vpc["CidrBlockAssociationSet"] if a["CidrBlock"] == "10.253.0.0/22")


def test_delete_while_used(cloud: CloudEnv) -> None:
    rt = cloud.runtime(zones=1)
    scope_ready(cloud, rt)
    name = kcp_iprange(cloud, rt, cidr="10.251.0.0/24")
    wait_state(cloud, name, "Ready")
    nfs = f"nfs-{uuid.uuid4().hex[:6]}"  # its own controller skips it (the ignore label)
    cloud.kcp.create(names.NFS_INSTANCE, {
        "metadata": {"name": nfs, "namespace": names.KCP_NAMESPACE, "labels": {names.LABEL_IGNORE: "true"}},
        "spec": {"ipRange": {"name": name}, "scope": {"name": rt.kyma}, "remoteRef": {"namespace": "ns", "name": "v"},
                 "instance": {"aws": {}}}})
    # another tenant's object naming this IpRange (its id copied) never keeps it
    foreign = f"nfs-{uuid.uuid4().hex[:6]}"
    cloud.kcp.create(names.NFS_INSTANCE, {
        "metadata": {"name": foreign, "namespace": names.KCP_NAMESPACE, "labels": {names.LABEL_IGNORE: "true"}},
        "spec": {"ipRange": {"name": name}, "scope": {"name": "another-kyma"},
                 "remoteRef": {"namespace": "ns", "name": "v"}, "instance": {"aws": {}}}})
    try:  # the stack is shared by the package's tests: the foreign object goes also when this fails
        cloud.kcp.delete(names.KCP_IPRANGE, name, names.KCP_NAMESPACE)
        obj = wait_state(cloud, name, "Warning")
        assert [(c["type"], c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
            ("Warning", "DeleteWhileUsed", f"Can not be deleted while used by NfsInstance: [kcp-system/{nfs}]")]
        cloud.kcp.delete(names.NFS_INSTANCE, nfs, names.KCP_NAMESPACE)
        cloud.wait(lambda: cloud.kcp_get(names.KCP_IPRANGE, name) is None, message="deleted once unused by its own")
    finally:
        cloud.kcp.delete(names.NFS_INSTANCE, foreign, names.KCP_NAMESPACE)


def test_scope_missing(cloud: CloudEnv) -> None:
    name = str(uuid.uuid4())
    cloud.kcp.create(names.KCP_IPRANGE, {"metadata": {"name": name, "namespace": names.KCP_NAMESPACE},
                                         "spec": {"scope": {"name": "no-such-scope"}, "remoteRef": {"name": "x"}}})
    obj = wait_state(cloud, name, "Error")
    assert [(c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("ScopeNoFound", "Scope no-such-scope does not exist")]
    cloud.kcp.delete(names.KCP_IPRANGE, name, names.KCP_NAMESPACE)


def test_gardener_cluster_gone_deactivates_nukes_and_deletes_the_scope(cloud: CloudEnv) -> None:
    rt = cloud.runtime(zones=1)
    scope_ready(cloud, rt)
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), message="SKR active")
    name = kcp_iprange(cloud, rt, cidr="10.251.0.0/24")
    wait_state(cloud, name, "Ready")
    cloud.kcp.delete(names.GARDENER_CLUSTER, rt.kyma, names.KCP_NAMESPACE)
    cloud.wait(lambda: cloud.kcp_get(names.SCOPE, rt.kyma) is None, timeout=90, message="Scope deleted")
    assert not cloud.rotation.is_active(rt.kyma)
    assert cloud.kcp_get(names.KCP_IPRANGE, name) is None
    assert cloud.kcp_get(names.NETWORK, f"{rt.kyma}--kyma") is None
    nuke = cloud.kcp_get(names.NUKE, rt.kyma)
    assert nuke is not None and nuke["status"]["state"] == "Ready"
    kinds = {r["kind"]: r["objects"] for r in nuke["status"]["resources"]}
    assert kinds["IpRange"] == {name: "Deleted"}
    tagged = cloud.ec2().describe_subnets(Filters=[{"Name": "vpc-id", "Values": [rt.vpc_id]},
                                                   {"Name": "tag-key",
                                                    "Values": ["cloud-manager.kyma-project.io/iprange"]}])["Subnets"]
    assert tagged == []
