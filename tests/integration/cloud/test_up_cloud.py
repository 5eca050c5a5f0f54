"""``reconcilery up --once --apply examples/cloud``: moto, the GCP and Azure stand-ins, the Garden and
four SKRs locally (two AWS, one GCP, one Azure); every IpRange ends Ready with its provider objects in
moto and the stand-ins (read back through the SDKs, as a user would); the AWS VPC peering with the
customer's VPC in a second account ends Ready with the connection active and its routes, the GCP one
with the customer's network in a second project with both peerings ACTIVE, the Azure one with the
customer's VNet in a second subscription with both peerings Connected (and the Azure IpRange's own
kyma ↔ Cloud Manager VNet peering Connected), and the AWS and GCP NFS volumes end Ready with their PVC and
PV, their backups Ready, restores Done and schedules Active; a Redis cluster per provider ends Ready with
its auth Secret; the GCP and Azure runtimes' kyma-info carries the NAT IPs seeded for their shoots;
every process and server is stopped afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from localrun.cloud import nat_ips
from tests.fixtures.processes import free_port, port_closed
from tests.fixtures.workers import ROOT

pytestmark = pytest.mark.integration



AWS_KYMAS = {"5d3c9a1e-7b24-4f0e-9c11-2a6f0d8e4b71", "9e81b6f0-3c5d-4a27-8f1e-6d2c4b7a9e03"}
GCP_KYMA = "3f6a2c84-1d9e-4b57-a0c3-7e5d1b9f2a46"
AZURE_KYMA = "b7c41e09-5a2f-4d83-9e6b-0f1a3c5d7e92"
GCP_PROJECT = "sap-kyma-example-42"
AZURE_SUBSCRIPTION = "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44"
#: The customers' networks of examples/cloud/24-skr-gcp-azure-vpcpeerings.yaml, seeded by up.
GCP_REMOTE = ("customer-project-7", "customer-vpc")
AZURE_REMOTE = ("9d8c7b6a-0000-4e5f-8a7b-6c5d4e3f2a1b", "customer-rg", "customer-vnet")
GCP_SHOOT_NETWORK = "shoot--kyma--c-2d9a6e4"
AZURE_SHOOT_VNET = "shoot--kyma--c-8e3f1b7"


def _provider_objects(endpoints: dict[str, Any]) -> dict[str, Any]:
    """What each provider holds for the examples, read through the SDKs: moto's subnets tagged by the
    IpRange controller, the GCP global addresses of the shoot's VPC, the Azure ``--cm`` VNet's subnets."""
    import boto3
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import compute_v1

    from tasks.cloud.azure.client import AzureClient

    found: dict[str, Any] = {}
    subnets: list[str] = []
    for region in ("eu-central-1", "us-east-1"):
        ec2 = boto3.client("ec2", endpoint_url=endpoints["aws"], region_name=region, aws_access_key_id="testing",
                           aws_secret_access_key="testing")
        subnets += [s["CidrBlock"] for s in ec2.describe_subnets()["Subnets"]
                    if any(t["Key"] == "cloud-manager.kyma-project.io/iprange" for t in s.get("Tags") or [])]
    found["aws"] = subnets
    ec2 = boto3.client("ec2", endpoint_url=endpoints["aws"], region_name="eu-central-1", aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    peerings = ec2.describe_vpc_peering_connections()["VpcPeeringConnections"]
    found["aws_peerings"] = [(p["Status"]["Code"], p["AccepterVpcInfo"]["OwnerId"], p["AccepterVpcInfo"]["CidrBlock"])
                             for p in peerings]
    found["aws_peering_routes"] = sorted(
        r["DestinationCidrBlock"] for t in ec2.describe_route_tables()["RouteTables"] for r in t["Routes"]
        if r.get("VpcPeeringConnectionId"))
    addresses = compute_v1.GlobalAddressesClient(credentials=AnonymousCredentials(), transport="rest",
                                                 client_options=ClientOptions(api_endpoint=endpoints["gcp"]))
    found["gcp"] = [(a.name, f"{a.address}/{a.prefix_length}", a.purpose)
                    for a in addresses.list(project=GCP_PROJECT)]
    azure = AzureClient(AZURE_SUBSCRIPTION, base_url=endpoints["azure"], retry_total=0)
    cm = f"{AZURE_SHOOT_VNET}--cm"
    subnet = azure.get_subnet(cm, cm, cm) or {}
    found["azure"] = [(subnet.get("name"), (subnet.get("properties") or {}).get("addressPrefix"),
                       (subnet.get("properties") or {}).get("provisioningState"))] if subnet else []
    # the VPC peerings: (network, peering, state) on both sides, GCP and Azure
    networks = compute_v1.NetworksClient(credentials=AnonymousCredentials(), transport="rest",
                                         client_options=ClientOptions(api_endpoint=endpoints["gcp"]))
    found["gcp_peerings"] = sorted(
        (network, p.name, p.state) for project, network in ((GCP_PROJECT, GCP_SHOOT_NETWORK), GCP_REMOTE)
        for p in networks.get(project=project, network=network).peerings)
    remote = AzureClient(AZURE_REMOTE[0], base_url=endpoints["azure"], retry_total=0)
    found["azure_peerings"] = sorted(
        (vnet, str(p["name"]), str((p.get("properties") or {}).get("peeringState")))
        for client, rg, vnet in ((azure, AZURE_SHOOT_VNET, AZURE_SHOOT_VNET), (azure, cm, cm),
                                 (remote, AZURE_REMOTE[1], AZURE_REMOTE[2]))
        for p in client.list_peerings(rg, vnet))
    # the exposed data: each GCP and Azure SKR's kyma-system/kyma-info cloud.natGatewayIps
    from kube import Kube, resources
    from kube.kubeconfig import from_kubeconfig

    found["kyma_info"] = {}
    for kyma in (GCP_KYMA, AZURE_KYMA):
        skr = Kube(from_kubeconfig(endpoints["skrs"][kyma]), cluster=kyma, timeout=10.0)
        try:
            info = skr.get(resources.CONFIGMAP, "kyma-info", "kyma-system")
        finally:
            skr.close()
        if info is not None:
            found["kyma_info"][kyma] = (info.get("data") or {}).get("cloud.natGatewayIps")
    return found


def _complete(found: dict[str, Any]) -> bool:
    return len(found.get("aws", [])) == 5 and bool(found.get("gcp")) and bool(found.get("azure")) and \
        found["azure"][0][2] == "Succeeded" and ("active", "444455556666", "172.16.0.0/16") in found["aws_peerings"] \
        and bool(found.get("aws_peering_routes")) \
        and len(found.get("gcp_peerings", [])) == 2 and all(p[2] == "ACTIVE" for p in found["gcp_peerings"]) \
        and len(found.get("azure_peerings", [])) == 4 and all(p[2] == "Connected" for p in found["azure_peerings"]) \
        and all(found.get("kyma_info", {}).get(kyma) for kyma in (GCP_KYMA, AZURE_KYMA))


def _watch(state: Path, proc: subprocess.Popen[str], seen: dict[str, Any]) -> None:
    """While ``up`` runs: read the provider objects (its stand-ins stop with it) until all are there."""
    while proc.poll() is None:
        path = state / "endpoints.json"
        try:
            endpoints = json.loads(path.read_text()) if path.exists() else {}
            if {"aws", "gcp", "azure", "skrs"} <= set(endpoints):
                found = _provider_objects(endpoints)
                seen.update(found)
                if _complete(found):
                    return
        except Exception as exc:  # not up yet, or going down
            seen["error"] = repr(exc)
        time.sleep(0.3)


def test_up_once_brings_every_providers_ipranges_to_ready(tmp_path: Path) -> None:
    """Every IpRange Ready with its provider objects; one Redis instance per provider Ready with its
    connection Secret in its SKR (the keys are in the summary row)."""
    state = tmp_path / "state"
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconcilery.cli", "up", "--once", "--timeout", "300", "--state-dir", str(state),
         "--flower-port", str(free_port()), "--apply", str(ROOT / "examples" / "cloud")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    seen: dict[str, Any] = {}
    watcher = threading.Thread(target=_watch, args=(state, proc, seen), daemon=True)
    watcher.start()
    try:
        out, _ = proc.communicate(timeout=480)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=30)
        watcher.join(10)
    assert proc.returncode == 0, out + "".join(p.read_text()[-3000:] for p in (state / "logs").glob("*.log"))
    rows = [line for line in out.splitlines() if "SKR IpRange" in line]
    assert len(rows) == 4 and all("Ready" in r for r in rows), out
    # the NFS volumes of examples/cloud/30-skr-nfs.yaml: Ready, their PVC naming a PV with the NFS server
    volumes = [line for line in out.splitlines() if "SKR AwsNfsVolume " in line or "SKR GcpNfsVolume " in line]
    assert len(volumes) == 2 and all("Ready" in r for r in volumes), out
    # examples/cloud/31-skr-nfs-backups.yaml: each backup Ready, each restore and the discovery Done, each
    # schedule Active (the GCP one-time schedule with its one backup)
    family = {kind: [line for line in out.splitlines() if f"SKR {kind} " in line] for kind in (
        "GcpNfsVolumeBackup", "AwsNfsVolumeBackup", "GcpNfsVolumeRestore", "AwsNfsVolumeRestore",
        "GcpNfsVolumeBackupDiscovery", "GcpNfsBackupSchedule", "AwsNfsBackupSchedule")}
    assert [len(rows) for rows in family.values()] == [1] * 7, out
    for kind, rows in family.items():
        expected = "Ready" if kind.endswith("Backup") else "Active" if "Schedule" in kind else "Done"
        assert f"│ {expected} " in rows[0], (kind, out)
    assert "backups 1" in family["GcpNfsBackupSchedule"][0], out
    assert ".efs.eu-central-1.amazonaws.com:/; pvc shared-files bound to pv" in out, out
    assert "10.241.0.2:/vol1; pvc reports bound to pv" in out, out  # in the default range's PSA address
    assert "10.251.0.0/22" in out and "10.181.0.0/22" in out, out  # explicit, and allocated after 10.180.0.0/16
    assert "10.241.0.0/22" in out and "10.252.0.0/22" in out, out  # GCP allocated after 10.240.0.0/16; Azure
    lines = out.splitlines()
    for kind, extra in (("AwsRedisInstance", "url"), ("GcpRedisInstance", "readHost"),
                        ("AzureRedisInstance", "primaryEndpoint")):
        redis = [i for i, line in enumerate(lines) if f"SKR {kind}" in line]
        assert len(redis) == 1 and "Ready" in lines[redis[0]], out  # the provider's Redis, its Secret in the SKR
        row = " ".join(cell.strip() for line in lines[redis[0]:redis[0] + 8] for cell in line.split("│")[4:5])
        for key in ("authString", "host", "port", "primaryEndpoint", extra):
            assert key in row, out
    # examples/cloud/26-skr-redis-clusters.yaml: one cluster per provider Ready, its auth Secret's keys
    for kind, keys in (("AwsRedisCluster", ("authString", "discoveryEndpoint", "url")),
                       ("AzureRedisCluster", ("authString", "primaryEndpoint")),
                       ("GcpRedisCluster", ("CaCert.pem", "discoveryEndpoint"))):
        found = [i for i, line in enumerate(lines) if f"SKR {kind} " in line]
        assert len(found) == 1 and "Ready" in lines[found[0]], (kind, out)
        row = " ".join(cell.strip() for line in lines[found[0]:found[0] + 8] for cell in line.split("│")[4:5])
        assert all(key in row for key in keys), (kind, out)
    [peering] = [line for line in out.splitlines() if "SKR AwsVpcPeering" in line]
    assert "to-customer-vpc" in peering and "Ready" in peering and "kcp active" in peering, out
    [gcp_peering] = [line for line in out.splitlines() if "SKR GcpVpcPeering" in line]
    assert "to-customer-network" in gcp_peering and "Ready" in gcp_peering, out
    [azure_peering] = [line for line in out.splitlines() if "SKR AzureVpcPeering" in line]
    assert "to-customer-vnet" in azure_peering and "Ready" in azure_peering, out
    # examples/cloud/25-skr-gcp-subnet.yaml: Ready, its subnetwork cm-<id> in the shoot's VPC
    [subnet] = [line for line in out.splitlines() if "SKR GcpSubnet" in line]
    assert "redis-subnet" in subnet and "Ready" in subnet and "cidr 10.251.0.0/22; subnetwork cm-" in subnet, out

    # in the providers, while up ran: 3 + 2 zone subnets in moto, the GCP global address, the Azure subnet
    assert _complete(seen), seen
    assert sorted(seen["aws"]) == sorted(["10.251.0.0/24", "10.251.1.0/24", "10.251.2.0/24", "10.181.0.0/23",
                                          "10.181.2.0/23"]), seen
    [(address, cidr, purpose)] = seen["gcp"]
    assert address.startswith("cm-") and cidr == "10.241.0.0/22" and purpose == "VPC_PEERING", seen
    assert seen["azure"] == [("shoot--kyma--c-8e3f1b7--cm", "10.252.0.0/22", "Succeeded")], seen
    # the peering to the customer's VPC: active, routes to it in the shoot VPC's route tables (main + the
    # seeded ones: moto's main table only here) and to the shoot in the customer's table tagged MATCHED
    assert ("active", "444455556666", "172.16.0.0/16") in seen["aws_peerings"], seen
    assert "172.16.0.0/16" in seen["aws_peering_routes"], seen
    # GCP: customer-to-kyma in the customer's network and cm-<id> in the shoot's, both ACTIVE
    [(net_a, local, state_a), (net_b, remote, state_b)] = sorted(seen["gcp_peerings"],
                                                                 key=lambda p: p[0] != GCP_SHOOT_NETWORK)
    assert (net_a, net_b, remote) == (GCP_SHOOT_NETWORK, GCP_REMOTE[1], "customer-to-kyma"), seen
    assert local.startswith("cm-") and state_a == state_b == "ACTIVE", seen
    # Azure: <id> in the shoot VNet and customer-to-kyma in the customer's; the IpRange's kyma peering
    # (the KCP VpcPeering <kyma>): cm--<shoot> in the shoot VNet, kyma--<shoot> in the CM VNet; all Connected
    azure_peerings = {(vnet, name) for vnet, name, _ in seen["azure_peerings"]}
    assert {(AZURE_SHOOT_VNET, "cm--c-8e3f1b7"), (f"{AZURE_SHOOT_VNET}--cm", "kyma--c-8e3f1b7"),
            (AZURE_REMOTE[2], "customer-to-kyma")} < azure_peerings, seen
    assert {state for *_, state in seen["azure_peerings"]} == {"Connected"}, seen
    # the exposed data: the NAT IPs up seeded (GCP: the Cloud NAT's two auto-allocated IPs; Azure: one public IP
    # per zone's NAT gateway), published into each runtime's kyma-info as "a, b" (sorted)
    assert seen["kyma_info"] == {GCP_KYMA: ", ".join(sorted(nat_ips(GCP_SHOOT_NETWORK, 2, 35))),
                                 AZURE_KYMA: ", ".join(sorted(nat_ips(AZURE_SHOOT_VNET, 3, 20)))}, seen

    endpoints = json.loads((state / "endpoints.json").read_text())
    assert {"aws", "gcp", "azure", "garden", "skrs", "skr_listener"} <= set(endpoints)
    assert set(endpoints["skrs"]) == AWS_KYMAS | {GCP_KYMA, AZURE_KYMA}
    for path in (endpoints["garden"], *endpoints["skrs"].values()):
        config = yaml.safe_load(Path(path).read_text())
        assert "/clusters/" in config["clusters"][0]["cluster"]["server"]
    for url in (endpoints["kubernetes"], endpoints["redis"], endpoints["aws"], endpoints["gcp"], endpoints["azure"],
                endpoints["skr_listener"]):
        assert port_closed(url), f"{url} still open after up exited"
