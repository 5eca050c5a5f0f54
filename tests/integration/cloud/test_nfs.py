"""NFS volumes end to end on the package's cloud stack: an SKR AwsNfsVolume through the default IpRange,
the KCP NfsInstance, EFS in moto (file system, one mount target per subnet, the security group's NFS
rule) and the PV/PVC in the SKR; the IpRange refuses deletion while the volume uses it; deletion removes
everything in order. A GcpNfsVolume likewise on the Filestore stand-in, with the CRD's capacity rules, a new
PV name (refused while the PV is claimed, then the PV replaced) and an instance in ERROR (issue 19)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from kube import ApiError, Kube, resources
from tasks.cloud import names
from tests.integration.cloud.conftest import GCP_PROJECT, REGION, CloudEnv
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


def test_gcp_nfs_volume_end_to_end(cloud: CloudEnv) -> None:
    rt = cloud.runtime(provider="gcp")
    skr = rt.skr
    assert skr is not None
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), timeout=90, message="SKR active")
    cloud.wait(lambda: skr.served(names.GCP_NFS_VOLUME), timeout=90, message="GcpNfsVolume installed")
    with pytest.raises(ApiError) as refused:  # the CRD's CEL rules
        skr.create(names.GCP_NFS_VOLUME, {"metadata": {"name": "small", "namespace": "default"},
                                          "spec": {"tier": "BASIC_SSD", "capacityGb": 1024}})
    assert "BASIC_SSD tier capacityGb must be between 2560 and 65433" in refused.value.message
    with pytest.raises(ApiError) as refused:
        skr.create(names.GCP_NFS_VOLUME, {"metadata": {"name": "steps", "namespace": "default"},
                                          "spec": {"tier": "ZONAL", "capacityGb": 1100}})
    assert "ZONAL tier capacityGb must be between 1024 and 9984" in refused.value.message
    skr.create(names.SKR_IPRANGE, {"metadata": {"name": "nfs"}, "spec": {"cidr": "10.251.0.0/22"}})
    skr.create(names.GCP_NFS_VOLUME, {"metadata": {"name": "files", "namespace": "default"},
                                      "spec": {"capacityGb": 1024, "ipRange": {"name": "nfs"}}})
    obj = volume_state(cloud, skr, names.GCP_NFS_VOLUME, "files", "Ready", timeout=120)
    assert obj["spec"]["tier"] == "BASIC_HDD" and obj["spec"]["fileShareName"] == "vol1"
    ident = obj["status"]["id"]
    iprange = skr.get(names.SKR_IPRANGE, "nfs")
    assert iprange is not None
    kcp = cloud.kcp_get(names.NFS_INSTANCE, ident)
    assert kcp is not None and kcp["spec"]["ipRange"] == {"name": iprange["status"]["id"]}
    assert kcp["spec"]["instance"]["gcp"]["location"] in ("us-east4-a", "us-east4-b", "us-east4-c")
    assert obj["status"]["location"] == kcp["spec"]["instance"]["gcp"]["location"]
    instances = cloud.gcp.filestore.instances(GCP_PROJECT)
    instance = instances[kcp["status"]["id"]]
    assert kcp["status"]["id"].endswith(f"/instances/cm-{ident}")
    assert instance["networks"][0]["reservedIpRange"] == f"cm-{iprange['status']['id']}"
    assert instance["networks"][0]["connectMode"] == "PRIVATE_SERVICE_ACCESS"
    assert instance["networks"][0]["network"] == f"projects/{GCP_PROJECT}/global/networks/{rt.vpc_network}"
    assert obj["status"]["hosts"] == instance["networks"][0]["ipAddresses"] == ["10.251.0.2"]
    assert obj["status"]["capacityGb"] == 1024 and obj["status"]["protocol"] == "NFS_V3"
    pv = cloud.wait(lambda: skr.get(resources.PERSISTENT_VOLUME, ident), message="PV")
    assert pv["spec"]["nfs"] == {"server": "10.251.0.2", "path": "/vol1"}
    assert pv["spec"]["capacity"] == {"storage": "1024Gi"}
    pvc = cloud.wait(lambda: skr.get(resources.PERSISTENT_VOLUME_CLAIM, "files", "default"), message="PVC")
    assert pvc["spec"]["volumeName"] == ident

    with pytest.raises(ApiError) as refused:
        skr.patch(names.GCP_NFS_VOLUME, "files", {"spec": {"capacityGb": 1023}}, "default")
    assert "BASIC_HDD tier capacityGb cannot be reduced" in refused.value.message
    skr.patch(names.GCP_NFS_VOLUME, "files", {"spec": {"capacityGb": 2048}}, "default")
    cloud.wait(lambda: cloud.gcp.filestore.instances(GCP_PROJECT)[kcp["status"]["id"]]["fileShares"][0]["capacityGb"]
               == "2048", timeout=90, message="Filestore capacity updated")
    cloud.wait(lambda: (skr.get(resources.PERSISTENT_VOLUME, ident) or {}).get("spec", {}).get("capacity")
               == {"storage": "2048Gi"}, timeout=90, message="PV capacity follows")

    # a new PV name (deletePVForNameChange): refused while the PV is claimed; once the user deleted the claim
    # the PV is replaced by one of the new name (no controller-manager here: the PV phases are set by hand)
    skr.patch_status(resources.PERSISTENT_VOLUME, ident, {"phase": "Bound"})
    skr.patch(names.GCP_NFS_VOLUME, "files", {"spec": {"volume": {"name": "files-pv"}}}, "default")
    stuck = volume_state(cloud, skr, names.GCP_NFS_VOLUME, "files", "Error")
    assert conditions(stuck) == [("Error", "True", "PVNotReadyForNameChange",
                                  f"PV[{ident}] exists with state Bound, and it cannot be replaced with a new name. "
                                  "Only PVs in Released or Available state can be replaced.")]
    skr.delete(resources.PERSISTENT_VOLUME_CLAIM, "files", "default")
    skr.patch_status(resources.PERSISTENT_VOLUME, ident, {"phase": "Released"})
    skr.patch(names.GCP_NFS_VOLUME, "files", {"metadata": {"annotations": {"test/poke": "1"}}}, "default")
    cloud.wait(lambda: skr.get(resources.PERSISTENT_VOLUME, ident) is None, timeout=60, message="old PV gone")
    cloud.wait(lambda: (c := skr.get(resources.PERSISTENT_VOLUME_CLAIM, "files", "default")) is not None
               and c["spec"]["volumeName"] == "files-pv", timeout=60, message="PVC on the new PV")
    renamed = volume_state(cloud, skr, names.GCP_NFS_VOLUME, "files", "Ready")
    assert conditions(renamed) == [("Ready", "True", "Ready", "Filestore instance provisioned in GCP.")]
    new_pv = skr.get(resources.PERSISTENT_VOLUME, "files-pv")
    assert new_pv is not None and new_pv["spec"]["nfs"] == {"server": "10.251.0.2", "path": "/vol1"}

    cloud.gcp.filestore.set_error(kcp["status"]["id"], "disk failure")
    cloud.kcp.patch(names.NFS_INSTANCE, ident, {"metadata": {"annotations": {"test/poke": "1"}}}, names.KCP_NAMESPACE)
    failed = volume_state(cloud, skr, names.GCP_NFS_VOLUME, "files", "Error")
    assert ("Error", "True", "Error", "disk failure") in conditions(failed)
    kcp = cloud.kcp_get(names.NFS_INSTANCE, ident)
    assert kcp is not None and ("Error", "True", "GCPError", "disk failure") in conditions(kcp)

    skr.delete(names.GCP_NFS_VOLUME, "files", "default")
    cloud.wait(lambda: skr.get(names.GCP_NFS_VOLUME, "files", "default") is None, timeout=120, message="volume gone")
    assert skr.get(resources.PERSISTENT_VOLUME, "files-pv") is None
    assert cloud.kcp_get(names.NFS_INSTANCE, ident) is None
    # this volume's instance is gone (the shared stand-in may hold other tests' volumes)
    assert kcp["status"]["id"] not in cloud.gcp.filestore.instances(GCP_PROJECT)
