"""AWS VPC peering end to end on the package's cloud stack: an SKR AwsVpcPeering → the KCP remote Network
and VpcPeering → boto3 against moto's server, with the customer's VPC in a second AWS account reached by
STS AssumeRole. Scenarios after the original's ``internal/controller/cloud-control/vpcpeering_aws_test.go``
and ``cloud-resources/awsvpcpeering_test.go``; the CRD's CEL rules against the dev API server."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from kube import ApiError, Kube, resources
from tasks.cloud import install, names
from tests.integration.cloud.conftest import REGION, CloudEnv, Runtime
from tests.integration.cloud.test_kcp import scope_ready
from tests.integration.cloud.test_skr import active_skr

pytestmark = pytest.mark.integration

REMOTE_ACCOUNT = "444455556666"
REMOTE_CIDR = "172.16.0.0/16"


def remote_ec2(cloud: CloudEnv) -> Any:
    """EC2 in the customer's account, as the customer (their own role assumed in moto)."""
    sts = boto3.client("sts", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{REMOTE_ACCOUNT}:role/admin", RoleSessionName="customer")[
        "Credentials"]
    return boto3.client("ec2", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id=creds["AccessKeyId"],
                        aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["SessionToken"])


def remote_vpc(cloud: CloudEnv, tag: str, vpc_tagged: bool = True) -> tuple[Any, str, dict[str, str]]:
    """The customer's VPC (tagged ``tag`` when ``vpc_tagged``) with its main route table and two more, one
    tagged with ``tag``; returns (client, vpc id, {"main"|"tagged"|"untagged": route table id})."""
    ec2 = remote_ec2(cloud)
    tags = [{"Key": "Name", "Value": f"customer-{uuid.uuid4().hex[:6]}"}] + ([{"Key": tag, "Value": ""}]
                                                                              if vpc_tagged else [])
    vpc = ec2.create_vpc(CidrBlock=REMOTE_CIDR, TagSpecifications=[{"ResourceType": "vpc", "Tags": tags}])["Vpc"]
    main = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["RouteTables"][0]
    tables = {"main": main["RouteTableId"]}
    for name, table_tags in (("tagged", [{"Key": tag, "Value": "1"}]), ("untagged", [])):
        spec = [{"ResourceType": "route-table", "Tags": table_tags}] if table_tags else []
        tables[name] = ec2.create_route_table(VpcId=vpc["VpcId"], TagSpecifications=spec)["RouteTable"]["RouteTableId"]
    return ec2, vpc["VpcId"], tables


def routes(ec2: Any, table: str) -> set[tuple[str, str]]:
    found = ec2.describe_route_tables(RouteTableIds=[table])["RouteTables"][0]["Routes"]
    return {(r["DestinationCidrBlock"], r["VpcPeeringConnectionId"]) for r in found if r.get("VpcPeeringConnectionId")}


def peering_of(cloud: CloudEnv, skr: Kube, name: str, state: str, timeout: float = 90) -> dict[str, Any]:
    return cloud.wait(lambda: (o := skr.get(names.SKR_AWS_VPC_PEERING, name)) is not None
                      and (o.get("status") or {}).get("state") == state and o,
                      timeout=timeout, message=f"AwsVpcPeering {name} {state}")


def create(skr: Kube, vpc_id: str, strategy: str = "AUTO", delete_remote: bool = False) -> str:
    name = f"peer-{uuid.uuid4().hex[:6]}"
    skr.create(names.SKR_AWS_VPC_PEERING, {"metadata": {"name": name}, "spec": {
        "remoteAccountId": REMOTE_ACCOUNT, "remoteRegion": REGION, "remoteVpcId": vpc_id,
        "remoteRouteTableUpdateStrategy": strategy, "deleteRemotePeering": delete_remote}})
    return name


def local_tables(cloud: CloudEnv, rt: Runtime) -> list[str]:
    found = cloud.ec2().describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [rt.vpc_id]}])["RouteTables"]
    return [t["RouteTableId"] for t in found]


def test_aws_peering_ready_with_matched_routes_then_deleted(cloud: CloudEnv) -> None:
    rt, skr = active_skr(cloud)
    ec2, vpc_id, tables = remote_vpc(cloud, rt.shoot)
    name = create(skr, vpc_id, "MATCHED")
    obj = peering_of(cloud, skr, name, "Ready")
    ident = obj["status"]["id"]
    assert obj["metadata"]["labels"][names.LABEL_SKR_ID] == ident
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("Ready", "True", "Ready", "Additional VpcPeerings(s) are provisioned")]
    network = cloud.kcp_get(names.NETWORK, ident)
    assert network is not None and network["spec"]["type"] == "external"
    assert network["spec"]["network"]["reference"] == {"aws": {"awsAccountId": REMOTE_ACCOUNT, "region": REGION,
                                                               "vpcId": vpc_id}}
    kcp = cloud.kcp_get(names.VPC_PEERING, ident)
    assert kcp is not None and kcp["status"]["state"] == "active"
    assert kcp["spec"]["details"]["localNetwork"]["name"] == f"{rt.kyma}--kyma"
    assert kcp["spec"]["details"]["remoteNetwork"]["name"] == ident
    pcx = kcp["status"]["id"]
    assert kcp["status"]["remoteId"] == pcx and kcp["status"]["vpcId"] == rt.vpc_id
    found = ec2.describe_vpc_peering_connections(VpcPeeringConnectionIds=[pcx])["VpcPeeringConnections"][0]
    assert found["Status"]["Code"] == "active"
    tags = {t["Key"]: t["Value"] for t in found["Tags"]}
    assert tags["Name"] == ident and tags[names.TAG_SHOOT] == rt.shoot and tags[names.TAG_REMOTE_NAME] == f"/{name}"
    for table in local_tables(cloud, rt):
        assert (REMOTE_CIDR, pcx) in routes(cloud.ec2(), table)
    assert routes(ec2, tables["tagged"]) == {("10.250.0.0/16", pcx)}
    assert routes(ec2, tables["untagged"]) == routes(ec2, tables["main"]) == set()

    skr.delete(names.SKR_AWS_VPC_PEERING, name)
    cloud.wait(lambda: skr.get(names.SKR_AWS_VPC_PEERING, name) is None, timeout=90, message="SKR peering gone")
    assert cloud.kcp_get(names.VPC_PEERING, ident) is None and cloud.kcp_get(names.NETWORK, ident) is None
    found = ec2.describe_vpc_peering_connections(VpcPeeringConnectionIds=[pcx])["VpcPeeringConnections"][0]
    assert found["Status"]["Code"] == "deleted"
    for table in local_tables(cloud, rt):
        assert routes(cloud.ec2(), table) == set()
    assert routes(ec2, tables["tagged"]) == set()


def kcp_peering(cloud: CloudEnv, rt: Runtime, vpc_id: str, strategy: str, delete_remote: bool) -> str:
    """A KCP remote Network and VpcPeering made directly (the KCP loop alone), once the Scope is Ready."""
    scope_ready(cloud, rt)
    ident = str(uuid.uuid4())
    ns = names.KCP_NAMESPACE
    cloud.kcp.create(names.NETWORK, {"metadata": {"name": ident, "namespace": ns}, "spec": {
        "scope": {"name": rt.kyma}, "type": "external",
        "network": {"reference": {"aws": {"awsAccountId": REMOTE_ACCOUNT, "region": REGION, "vpcId": vpc_id}}}}})
    cloud.kcp.create(names.VPC_PEERING, {"metadata": {"name": ident, "namespace": ns}, "spec": {
        "remoteRef": {"namespace": "", "name": "p"}, "scope": {"name": rt.kyma},
        "details": {"localNetwork": {"name": f"{rt.kyma}--kyma", "namespace": ns},
                    "remoteNetwork": {"name": ident, "namespace": ns},
                    "remoteRouteTableUpdateStrategy": strategy, "deleteRemotePeering": delete_remote}}})
    return ident


def kcp_error(cloud: CloudEnv, ident: str, reason: str) -> dict[str, Any]:
    """The KCP VpcPeering once it has an Error condition of ``reason`` (a ScopeNoFound may come first)."""
    return cloud.wait(lambda: (o := cloud.kcp_get(names.VPC_PEERING, ident)) is not None and any(
        c["type"] == "Error" and c["reason"] == reason for c in (o.get("status") or {}).get("conditions") or []) and o,
        timeout=90, message=f"VpcPeering {ident} Error {reason}")


def kcp_state(cloud: CloudEnv, ident: str, state: str) -> dict[str, Any]:
    return cloud.wait(lambda: (o := cloud.kcp_get(names.VPC_PEERING, ident)) is not None
                      and (o.get("status") or {}).get("state") == state and o, timeout=90,
                      message=f"VpcPeering {ident} {state}")


def test_untagged_remote_vpc_then_unmatched_routes_and_remote_side_deleted(cloud: CloudEnv) -> None:
    rt = cloud.runtime(skr=False)
    ec2, vpc_id, tables = remote_vpc(cloud, rt.shoot, vpc_tagged=False)
    ident = kcp_peering(cloud, rt, vpc_id, "UNMATCHED", delete_remote=True)
    obj = kcp_error(cloud, ident, "FailedLoadingRemoteVpcNetwork")
    error = next(c for c in obj["status"]["conditions"] if c["type"] == "Error")
    assert (error["reason"], error["message"]) == ("FailedLoadingRemoteVpcNetwork",
                                                   "Loaded remote Vpc network has no matching tags")
    assert obj["status"]["state"] == "initiating-request" and not obj["status"].get("id")
    assert [p for p in ec2.describe_vpc_peering_connections()["VpcPeeringConnections"]
            if p["AccepterVpcInfo"]["VpcId"] == vpc_id] == []

    ec2.create_tags(Resources=[vpc_id], Tags=[{"Key": rt.shoot, "Value": ""}])  # the customer fixes it
    cloud.kcp.patch(names.VPC_PEERING, ident, {"metadata": {"labels": {"nudge": "1"}}}, names.KCP_NAMESPACE)
    obj = kcp_state(cloud, ident, "active")
    pcx = obj["status"]["id"]
    # UNMATCHED: the tables without the shoot tag (main, untagged), not the tagged one
    assert routes(ec2, tables["main"]) == routes(ec2, tables["untagged"]) == {("10.250.0.0/16", pcx)}
    assert routes(ec2, tables["tagged"]) == set()

    cloud.kcp.delete(names.VPC_PEERING, ident, names.KCP_NAMESPACE)
    cloud.wait(lambda: cloud.kcp_get(names.VPC_PEERING, ident) is None, timeout=90, message="KCP peering gone")
    assert routes(ec2, tables["main"]) == routes(ec2, tables["untagged"]) == set()
    found = ec2.describe_vpc_peering_connections(VpcPeeringConnectionIds=[pcx])["VpcPeeringConnections"][0]
    assert found["Status"]["Code"] == "deleted"
    cloud.kcp.delete(names.NETWORK, ident, names.KCP_NAMESPACE)


def test_crd_rules_reject_invalid_and_changed_specs(cloud: CloudEnv) -> None:
    cluster = f"cel-{uuid.uuid4().hex[:6]}"
    cloud.server.add_cluster(cluster)
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = cloud.server.cluster_url(cluster)
    kube = Kube(client.ApiClient(cfg), cluster=cluster, timeout=15)
    for provider in ("aws", "gcp", "azure"):
        install.install(kube, "skr", provider=provider)

    def refused(res: Any, body: dict[str, Any]) -> str:
        with pytest.raises(ApiError) as caught:
            kube.create(res, body)
        assert caught.value.status == 422
        return caught.value.message

    assert "RemotePeeringName must start with a lowercase letter" in refused(names.SKR_GCP_VPC_PEERING, {
        "metadata": {"name": "g"}, "spec": {"remotePeeringName": "Bad_Name", "remoteProject": "my-project-1",
                                            "remoteVpc": "vpc"}})
    assert "RemoteProject must be 6 to 30 characters in length" in refused(names.SKR_GCP_VPC_PEERING, {
        "metadata": {"name": "g"}, "spec": {"remotePeeringName": "p", "remoteProject": "abc", "remoteVpc": "vpc"}})
    assert "RemotePeeringName can be up to 80 characters long" in refused(names.SKR_AZURE_VPC_PEERING, {
        "metadata": {"name": "a"}, "spec": {"remotePeeringName": "p" * 81, "remoteVnet": "/subscriptions/x"}})
    assert "remoteRouteTableUpdateStrategy" in refused(names.SKR_AWS_VPC_PEERING, {
        "metadata": {"name": "w"}, "spec": {"remoteAccountId": "1", "remoteRegion": REGION, "remoteVpcId": "vpc-1",
                                            "remoteRouteTableUpdateStrategy": "SOME"}})
    stored = kube.create(names.SKR_AWS_VPC_PEERING, {"metadata": {"name": "w"}, "spec": {
        "remoteAccountId": "1", "remoteRegion": REGION, "remoteVpcId": "vpc-1"}})
    assert stored["spec"]["remoteRouteTableUpdateStrategy"] == "AUTO"  # the schema's default
    with pytest.raises(ApiError) as caught:
        kube.patch(names.SKR_AWS_VPC_PEERING, "w", {"spec": {"remoteVpcId": "vpc-2"}})
    assert caught.value.status == 422 and "RemoteVpcId is immutable." in caught.value.message
    assert kube.get(resources.CRD, "awsvpcpeerings.cloud-resources.kyma-project.io") is not None


def test_a_remote_vpc_that_does_not_exist(cloud: CloudEnv) -> None:
    rt = cloud.runtime(skr=False)
    ident = kcp_peering(cloud, rt, "vpc-0123456789abcdef0", "AUTO", delete_remote=False)
    obj = kcp_error(cloud, ident, "VpcNotFound")
    assert obj["status"]["state"] == "Error"
    assert [(c["type"], c["reason"], c["message"]) for c in obj["status"]["conditions"]] == [
        ("Error", "VpcNotFound", "Remote VPC ID vpc-0123456789abcdef0 not found")]
    cloud.kcp.delete(names.VPC_PEERING, ident, names.KCP_NAMESPACE)  # nothing was made: it goes at once
    cloud.wait(lambda: cloud.kcp_get(names.VPC_PEERING, ident) is None, timeout=60, message="KCP peering gone")
    cloud.kcp.delete(names.NETWORK, ident, names.KCP_NAMESPACE)
