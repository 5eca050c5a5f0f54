"""The Memorystore for Redis Cluster stand-in (:mod:`standins.memorystore_cluster`) through the unmodified
``google.cloud.redis_cluster_v1.CloudRedisClusterClient`` (transport ``rest``): create as the original
does (long-running, ``CREATING`` -> ``ACTIVE`` with discovery endpoints), get, the certificate authority,
one-field patches of shards / replicas / node type / configs, the refusals Google answers (bad sizes, two
fields at once, a write while updating, a missing network, a taken id), delete -> gone."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import redis_cluster_v1 as rc
from google.protobuf import field_mask_pb2

from standins.gcp import GcpStandIn
from standins.memorystore_cluster import SERVICE_CLASS
from tests.fixtures.processes import served
from tests.integration.cloud.gcp.conftest import NETWORK, PROJECT, VPC

REGION = "europe-west1"
PARENT = f"projects/{PROJECT}/locations/{REGION}"


#: The subnetwork the network's Memorystore Cluster service connection policy names (PSC addresses).
PSC_CIDR = "10.252.0.0/29"


def psc_policy(standin: GcpStandIn, project: str, region: str, vpc: str, cidr: str, subnet: str = "psc") -> None:
    """The network ``vpc`` (made when missing), a subnetwork ``subnet`` of ``cidr`` in ``region`` and the
    service connection policy of class ``gcp-memorystore-redis`` naming it, seeded in the stand-in's state
    (what the KCP GcpSubnet makes in production)."""
    state = standin.state
    state.put_network(project, vpc)
    network = f"projects/{project}/global/networks/{vpc}"
    with state.lock:
        state.insert_subnetwork(project, region, {"name": subnet, "network": network, "ipCidrRange": cidr})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with state.lock:
            state._advance()
            if state.has_subnetwork(project, region, subnet):
                break
        time.sleep(0.005)
    with state.lock:
        standin.connectivity.create(f"projects/{project}/locations/{region}", f"cm-{vpc}-{region}-rc", "", {
            "network": network, "serviceClass": SERVICE_CLASS,
            "pscConfig": {"subnetworks": [f"projects/{project}/regions/{region}/subnetworks/{subnet}"]}})


@pytest.fixture(scope="module")
def standin() -> Iterator[GcpStandIn]:
    standin = GcpStandIn(op_delay=0.02, projects=(PROJECT,))
    psc_policy(standin, PROJECT, REGION, VPC, PSC_CIDR)  # seeded before it serves
    yield from served(standin.start())


@pytest.fixture(scope="module")
def client(standin: GcpStandIn) -> rc.CloudRedisClusterClient:
    return rc.CloudRedisClusterClient(credentials=AnonymousCredentials(), transport="rest",
                                      client_options=ClientOptions(api_endpoint=standin.url))


def cluster(**over: Any) -> rc.Cluster:
    """The cluster the original creates (``CreateRedisClusterWithOptions``)."""
    fields: dict[str, Any] = {
        "replica_count": 1, "shard_count": 3, "node_type": rc.NodeType.REDIS_STANDARD_SMALL,
        "psc_configs": [rc.PscConfig(network=NETWORK)], "redis_configs": {"maxmemory-policy": "allkeys-lru"},
        "persistence_config": rc.ClusterPersistenceConfig(mode=rc.ClusterPersistenceConfig.PersistenceMode.DISABLED),
        "authorization_mode": rc.AuthorizationMode.AUTH_MODE_DISABLED,
        "transit_encryption_mode": rc.TransitEncryptionMode.TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION,
        "zone_distribution_config": rc.ZoneDistributionConfig(
            mode=rc.ZoneDistributionConfig.ZoneDistributionMode.MULTI_ZONE),
        "deletion_protection_enabled": False}
    fields.update(over)
    return rc.Cluster(**fields)


@contextlib.contextmanager
def slow(standin: GcpStandIn) -> Iterator[None]:
    """The operations started inside last 0.3 s: the state they show while running is seen by the next
    request also on a loaded machine (the others take 20 ms)."""
    standin.state.op_delay = 0.3
    try:
        yield
    finally:
        standin.state.op_delay = 0.02


def wait(op: Any) -> Any:
    """The operation's result, polled every 10 ms (the SDK's default polling starts at 1 s)."""
    deadline = time.monotonic() + 5
    while not op.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    return op.result(timeout=1)


def patch(client: rc.CloudRedisClusterClient, name: str, path: str, **value: Any) -> None:
    wait(client.update_cluster(cluster=rc.Cluster(name=name, **value),
                          update_mask=field_mask_pb2.FieldMask(paths=path.split(","))))


def test_lifecycle(standin: GcpStandIn, client: rc.CloudRedisClusterClient) -> None:
    name = f"{PARENT}/clusters/cm-life"
    with slow(standin):
        op = client.create_cluster(parent=PARENT, cluster_id="cm-life", cluster=cluster())
    assert client.get_cluster(name=name).state == rc.Cluster.State.CREATING
    wait(op)
    got = client.get_cluster(name=name)
    assert got.state == rc.Cluster.State.ACTIVE and got.shard_count == 3 and got.replica_count == 1
    assert got.node_type == rc.NodeType.REDIS_STANDARD_SMALL and got.psc_configs[0].network == NETWORK
    assert got.redis_configs == {"maxmemory-policy": "allkeys-lru"}
    assert got.discovery_endpoints[0].port == 6379 and got.discovery_endpoints[0].address
    assert got.discovery_endpoints[0].psc_config.network == NETWORK and got.psc_connections
    assert got.transit_encryption_mode == rc.TransitEncryptionMode.TRANSIT_ENCRYPTION_MODE_SERVER_AUTHENTICATION
    assert got.size_gb == int(6.5 * 3 * 2)
    ca = client.get_cluster_certificate_authority(name=f"{name}/certificateAuthority")
    assert "BEGIN CERTIFICATE" in "".join(ca.managed_server_ca.ca_certs[0].certificates)
    assert [c.name for c in client.list_clusters(parent=PARENT)] == [name]

    patch(client, name, "shard_count", shard_count=5)
    patch(client, name, "replica_count", replica_count=2)
    patch(client, name, "node_type", node_type=rc.NodeType.REDIS_HIGHMEM_MEDIUM)
    patch(client, name, "redis_configs", redis_configs={"maxmemory-policy": "volatile-lru"})
    got = client.get_cluster(name=name)
    assert (got.shard_count, got.replica_count, got.node_type) == (5, 2, rc.NodeType.REDIS_HIGHMEM_MEDIUM)
    assert got.redis_configs == {"maxmemory-policy": "volatile-lru"}

    with slow(standin):
        op = client.update_cluster(cluster=rc.Cluster(name=name, shard_count=4),
                                   update_mask=field_mask_pb2.FieldMask(paths=["shard_count"]))
    assert client.get_cluster(name=name).state == rc.Cluster.State.UPDATING
    with pytest.raises(gexc.BadRequest):  # FAILED_PRECONDITION while the update runs
        patch(client, name, "replica_count", replica_count=0)
    wait(op)
    with pytest.raises(gexc.BadRequest):  # one field per update
        patch(client, name, "shard_count,replica_count", shard_count=3, replica_count=0)
    with pytest.raises(gexc.BadRequest):
        patch(client, name, "replica_count", replica_count=3)

    with slow(standin):
        op = client.delete_cluster(name=name)
    assert client.get_cluster(name=name).state == rc.Cluster.State.DELETING
    wait(op)
    with pytest.raises(gexc.NotFound):
        client.get_cluster(name=name)
    with pytest.raises(gexc.NotFound):
        client.delete_cluster(name=name)


def test_refusals(client: rc.CloudRedisClusterClient) -> None:
    for bad in (cluster(shard_count=0), cluster(shard_count=251), cluster(replica_count=3), cluster(psc_configs=[]),
                cluster(psc_configs=[rc.PscConfig(network="default")])):
        with pytest.raises(gexc.BadRequest):
            client.create_cluster(parent=PARENT, cluster_id="cm-bad", cluster=bad)
    with pytest.raises(gexc.BadRequest):
        client.create_cluster(parent=PARENT, cluster_id="Bad_Id", cluster=cluster())
    wait(client.create_cluster(parent=PARENT, cluster_id="cm-plain", cluster=cluster(
        transit_encryption_mode=rc.TransitEncryptionMode.TRANSIT_ENCRYPTION_MODE_DISABLED, replica_count=0,
        shard_count=1, node_type=rc.NodeType.REDIS_SHARED_CORE_NANO)))
    name = f"{PARENT}/clusters/cm-plain"
    with pytest.raises(gexc.Conflict):
        client.create_cluster(parent=PARENT, cluster_id="cm-plain", cluster=cluster())
    with pytest.raises(gexc.BadRequest):  # no CA without in-transit encryption
        client.get_cluster_certificate_authority(name=f"{name}/certificateAuthority")
    with pytest.raises(gexc.NotFound):
        client.get_cluster(name=f"{PARENT}/clusters/cm-none")
    wait(client.delete_cluster(name=name))
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and list(client.list_clusters(parent=PARENT)):
        time.sleep(0.01)
    assert not list(client.list_clusters(parent=PARENT))


def test_the_psc_address_comes_from_the_policys_subnetwork(client: rc.CloudRedisClusterClient) -> None:
    """As Memorystore: each cluster's discovery endpoint and PSC connection take a free address of the
    subnetwork the network's service connection policy names (its first two and last two kept by Google);
    a full subnetwork, or a network no policy lets in, refuses the create."""
    import ipaddress

    names = [f"{PARENT}/clusters/cm-psc-{i}" for i in range(4)]
    for i in range(4):  # a /29 has 8 addresses: 4 usable
        wait(client.create_cluster(parent=PARENT, cluster_id=f"cm-psc-{i}", cluster=cluster()))
    addresses = []
    for name in names:
        got = client.get_cluster(name=name)
        address = got.discovery_endpoints[0].address
        assert got.psc_connections[0].address == address
        addresses.append(address)
    assert addresses == ["10.252.0.2", "10.252.0.3", "10.252.0.4", "10.252.0.5"]
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network(PSC_CIDR) for a in addresses)
    with pytest.raises(gexc.BadRequest, match="no free address"):
        client.create_cluster(parent=PARENT, cluster_id="cm-psc-full", cluster=cluster())
    wait(client.delete_cluster(name=names[1]))  # its address is free again
    wait(client.create_cluster(parent=PARENT, cluster_id="cm-psc-again", cluster=cluster()))
    assert client.get_cluster(name=f"{PARENT}/clusters/cm-psc-again").discovery_endpoints[0].address == "10.252.0.3"
    other = f"projects/{PROJECT}/global/networks/no-policy"
    with pytest.raises(gexc.BadRequest, match="No service connection policy"):
        client.create_cluster(parent=PARENT, cluster_id="cm-psc-none", cluster=cluster(
            psc_configs=[rc.PscConfig(network=other)]))
    for name in [names[0], names[2], names[3], f"{PARENT}/clusters/cm-psc-again"]:
        wait(client.delete_cluster(name=name))
