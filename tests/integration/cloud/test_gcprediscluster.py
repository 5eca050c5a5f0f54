"""A GcpRedisCluster end to end on the package's cloud stack (SKR connects, the registry's KCP controllers,
the GCP stand-in with Memorystore for Redis Cluster): the SKR GcpRedisCluster on its GcpSubnet Ready with
the auth Secret (discovery endpoint, CA), the KCP GcpRedisCluster and the cluster as the original makes it;
deletion leaving no cluster behind."""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

import pytest

from kube import resources
from standins.memorystore_cluster import CA_CERT
from tasks.cloud import names
from tasks.cloud.skr.gcpsubnet_plan import SKR_GCP_SUBNET
from tasks.cloud.skr.rediscluster_plan import SKR_GCP_REDIS_CLUSTER
from tests.integration.cloud.conftest import GCP_PROJECT, CloudEnv

pytestmark = pytest.mark.integration


def test_gcp_redis_cluster_end_to_end(cloud: CloudEnv) -> None:
    rt = cloud.runtime(provider="gcp")
    skr = rt.skr
    assert skr is not None
    cloud.gcp.state.put_network(GCP_PROJECT, rt.vpc_network)  # the shoot's VPC (Gardener's)
    cloud.wait(lambda: cloud.rotation.is_active(rt.kyma), timeout=90, message="SKR active")
    cloud.wait(lambda: skr.served(SKR_GCP_SUBNET) and skr.served(SKR_GCP_REDIS_CLUSTER), timeout=90,
               message="GcpSubnet and GcpRedisCluster CRDs installed")
    skr.create(SKR_GCP_SUBNET, {"metadata": {"name": "redis-subnet"}, "spec": {"cidr": "10.252.0.0/22"}})
    skr.create(SKR_GCP_REDIS_CLUSTER, {"metadata": {"name": "cache", "namespace": "default"}, "spec": {
        "redisTier": "C3", "shardCount": 2, "replicasPerShard": 1, "subnet": {"name": "redis-subnet"},
        "redisConfigs": {"maxmemory-policy": "allkeys-lru"}, "authSecret": {"name": "cache-conn"}}})
    obj: dict[str, Any] = cloud.wait(
        lambda: (o := skr.get(SKR_GCP_REDIS_CLUSTER, "cache", "default")) is not None
        and (o.get("status") or {}).get("state") == "Ready" and o, timeout=120, message="GcpRedisCluster Ready")
    ident = obj["status"]["id"]
    kcp = cloud.kcp_get(names.GCP_REDIS_CLUSTER, ident) or {}
    assert (kcp["spec"]["nodeType"], kcp["spec"]["shardCount"], kcp["spec"]["replicasPerShard"]) == (
        "REDIS_STANDARD_SMALL", 2, 1)
    name = f"projects/{GCP_PROJECT}/locations/us-east4/clusters/cm-{ident}"
    assert kcp["status"]["id"] == name and kcp["status"]["caCert"] == CA_CERT
    cluster = cloud.gcp.state.memorystore_cluster.clusters[name]
    assert cluster["pscConfigs"] == [{"network": f"projects/{GCP_PROJECT}/global/networks/{rt.vpc_network}"}]
    assert cluster["redisConfigs"] == {"maxmemory-policy": "allkeys-lru"}
    assert cluster["transitEncryptionMode"] == "TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION"
    secret = cloud.wait(lambda: skr.get(resources.SECRET, "cache-conn", "default"), timeout=60, message="Secret")
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["discoveryEndpoint"] == kcp["status"]["discoveryEndpoint"] and data["CaCert.pem"] == CA_CERT
    # the PSC endpoint is an address of the GcpSubnet's range (its service connection policy's subnetwork)
    assert ipaddress.ip_address(data["host"]) in ipaddress.ip_network("10.252.0.0/22"), data

    skr.delete(SKR_GCP_REDIS_CLUSTER, "cache", "default")
    cloud.wait(lambda: skr.get(SKR_GCP_REDIS_CLUSTER, "cache", "default") is None, timeout=120,
               message="GcpRedisCluster gone")
    assert cloud.kcp_get(names.GCP_REDIS_CLUSTER, ident) is None
    assert name not in cloud.gcp.state.memorystore_cluster.clusters
    skr.delete(SKR_GCP_SUBNET, "redis-subnet")
    cloud.wait(lambda: skr.get(SKR_GCP_SUBNET, "redis-subnet") is None, timeout=120, message="GcpSubnet gone")
