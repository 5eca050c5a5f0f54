"""NFS volumes end to end on the package's cloud stack: an SKR AwsNfsVolume through the default IpRange,
the KCP NfsInstance, EFS in moto (file system, one mount target per subnet, the security group's NFS
rule) and the PV/PVC in the SKR; the IpRange refuses deletion while the volume uses it; deletion removes
everything in order (issue 19)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from kube import Kube, resources
from tasks.cloud import names
from tests.integration.cloud.conftest import REGION, CloudEnv
from tests.integration.cloud.test_skr import active_skr, conditions

pytestmark = pytest.mark.integration


def volume_state(cloud: CloudEnv, skr: Kube, res: Any, name: str, state: str, timeout: float = 90) -> dict[str, Any]:
    return cloud.wait(lambda: (o := skr.get(res, name, "default")) is not None
                      and (o.get("status") or {}).get("state") == state and o,
                      timeout=timeout, message=f"{res.kind} {name} {state}")


def test_aws_nfs_volume_end_to_end(cloud: CloudEnv) -> None:
    rt, skr = active_skr(cloud)
    skr.create(names.AWS_NFS_VOLUME, {"metadata": {"name": "data", "namespace": "default"},
                                      "spec": {"capacity": "100Gi",
                                               "volume": {"labels": {"team": "a"}, "annotations": {"n": "1"}}}})
    obj = volume_state(cloud, skr, names.AWS_NFS_VOLUME, "data", "Ready", timeout=120)
    ident = obj["status"]["id"]
    assert obj["spec"]["performanceMode"] == "generalPurpose" and obj["spec"]["throughput"] == "bursting"
    assert conditions(obj) == [("Ready", "True", "Ready", "NFS instance is ready")]
    default = skr.get(names.SKR_IPRANGE, "default")
    assert default is not None
    assert names.DEFAULT_IPRANGE_LABELS.items() <= default["metadata"]["labels"].items()
    kcp = cloud.kcp_get(names.NFS_INSTANCE, ident)
    assert kcp is not None
    assert kcp["spec"]["ipRange"] == {"name": default["status"]["id"]}
    assert kcp["spec"]["remoteRef"] == {"namespace": "default", "name": "data"}
    assert kcp["spec"]["instance"] == {"aws": {"performanceMode": "generalPurpose", "throughput": "bursting"}}
    fs_id = kcp["status"]["id"]
    assert obj["status"]["server"] == f"{fs_id}.efs.{REGION}.amazonaws.com" == kcp["status"]["host"]
    efs = boto3.client("efs", endpoint_url=cloud.aws, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    fs = efs.describe_file_systems(FileSystemId=fs_id)["FileSystems"][0]
    assert fs["Encrypted"] and fs["PerformanceMode"] == "generalPurpose" and fs["ThroughputMode"] == "bursting"
    tags = {t["Key"]: t["Value"] for t in fs["Tags"]}
    assert tags["Name"] == ident and tags[names.TAG_REMOTE_NAME] == "default/data" and tags[names.TAG_SCOPE] == rt.kyma
    kcp_iprange = cloud.kcp_get(names.KCP_IPRANGE, default["status"]["id"])
    assert kcp_iprange is not None
    mts = efs.describe_mount_targets(FileSystemId=fs_id)["MountTargets"]
    assert sorted(m["SubnetId"] for m in mts) == sorted(s["id"] for s in kcp_iprange["status"]["subnets"])
    groups = cloud.ec2().describe_security_groups(Filters=[{"Name": "tag:Name", "Values": [ident]}])["SecurityGroups"]
    assert len(groups) == 1 and groups[0]["VpcId"] == rt.vpc_id
    assert {r["CidrIp"] for p in groups[0]["IpPermissions"] if p["ToPort"] == 2049 for r in p["IpRanges"]} == \
        {"100.64.0.0/12", "10.250.0.0/16"}
    pv = cloud.wait(lambda: skr.get(resources.PERSISTENT_VOLUME, ident), message="PV")
    assert pv["spec"]["nfs"] == {"server": obj["status"]["server"], "path": "/", "readOnly": False}
    assert pv["spec"]["capacity"] == {"storage": "100Gi"} and pv["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pv["metadata"]["labels"]["team"] == "a" and pv["metadata"]["annotations"] == {"n": "1"}
    assert pv["metadata"]["labels"][names.LABEL_NFS_VOLUME_NAME] == "data"
    pvc = cloud.wait(lambda: skr.get(resources.PERSISTENT_VOLUME_CLAIM, "data", "default"), message="PVC")
    assert pvc["spec"]["volumeName"] == ident and pvc["spec"]["storageClassName"] == ""
    assert pvc["metadata"]["labels"][names.LABEL_NFS_VOLUME_CAPACITY] == "100Gi"

    skr.patch(names.AWS_NFS_VOLUME, "data", {"spec": {"capacity": "200Gi"}}, "default")
    cloud.wait(lambda: (skr.get(resources.PERSISTENT_VOLUME, ident) or {}).get("spec", {}).get("capacity")
               == {"storage": "200Gi"}, message="PV capacity follows the spec")

    skr.delete(names.SKR_IPRANGE, "default")
    refused = cloud.wait(lambda: (o := skr.get(names.SKR_IPRANGE, "default")) is not None
                         and any(c["reason"] == "DeleteWhileUsed" for c in o["status"].get("conditions") or [])
                         and o, message="DeleteWhileUsed")
    assert ("Warning", "True", "DeleteWhileUsed", "Can not be deleted while used by: [default/data]") in \
        conditions(refused)

    skr.delete(names.AWS_NFS_VOLUME, "data", "default")
    cloud.wait(lambda: skr.get(names.AWS_NFS_VOLUME, "data", "default") is None, timeout=120, message="volume gone")
    assert skr.get(resources.PERSISTENT_VOLUME_CLAIM, "data", "default") is None
    assert skr.get(resources.PERSISTENT_VOLUME, ident) is None
    assert cloud.kcp_get(names.NFS_INSTANCE, ident) is None
    assert efs.describe_file_systems(CreationToken=ident)["FileSystems"] == []
    groups = cloud.ec2().describe_security_groups(Filters=[{"Name": "tag:Name", "Values": [ident]}])
    assert groups["SecurityGroups"] == []
    cloud.wait(lambda: skr.get(names.SKR_IPRANGE, "default") is None, timeout=120,
               message="the unused default IpRange goes")
