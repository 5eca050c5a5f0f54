"""Cloud Resources on one machine: the Garden and the SKRs as clusters of the dev API server, AWS as
moto's server, GCP and Azure as the project's stand-ins (:mod:`standins.gcp`, :mod:`standins.azure`).
Used by ``reconcilery up`` (:class:`CloudResourcesLocal`, the domain's :class:`workers.domains.Local`),
the tests and the benchmark. The summary has a row per SKR object of a declared kind (the registry's
``SkrSide.summary`` gives its detail) and per SKR IpRange; only the seeding of a peering's remote network is
kind-specific (it plays the customer, in the customer's account).

What Kyma's control plane provides in a landscape is simulated here:

- the Garden: dev API server cluster ``garden`` with the Gardener CRDs; its kubeconfig (context namespace
  = the project namespace) in Secret ``kcp-system/gardener-credentials`` (key ``kubeconfig``);
- an SKR per Kyma CR: cluster ``<kyma>`` with the CloudResources module CRD and its ``kyma-system/default``
  instance (as Kyma's lifecycle manager installs them) and the SKR CRDs of the installer; its kubeconfig
  in Secret ``kcp-system/kubeconfig-<kyma>`` (key ``config``, as the infrastructure manager writes it);
- AWS: the shoots' VPCs in moto (Name tag ``shoot--<project>--<shoot>``, the zones' subnets, a NAT gateway);
- GCP: the project of each GCP shoot's ``serviceaccount.json`` known to the stand-in (Resource Manager
  answers its number, which Service Networking's ``deleteConnection`` needs) and the shoot's VPC network
  ``shoot--<project>--<shoot>`` in it, with Gardener's Cloud Router ``<vpc>-cloud-router`` and Cloud NAT
  ``<vpc>-cloud-nat`` in the shoot's region and its two auto-allocated NAT IPs (:func:`seed_gcp_nat`);
- Azure: the resource group and VNet ``shoot--<project>--<shoot>`` of each Azure shoot (the VNet the
  Cloud Manager VNet peers with), in the subscription of its credentials, and Gardener's NAT gateways on
  the nodes subnets, one per zone with one public IP each (:func:`seed_azure_nat`).

The seeded NAT IPs are derived from the network's name (:func:`nat_ips`), so a test can name them; the
Scope's exposed data publishes them into each SKR's ``kyma-system/kyma-info``.

Documents of ``--apply`` go to the KCP unless annotated ``reconcilery.kyma-project.io/cluster: garden``
or ``reconcilery.kyma-project.io/cluster: <kyma name>`` (an SKR).

The customer's side of a VPC peering is seeded as the customer would create it in their own account,
project or subscription, for an SKR peering annotated ``reconcilery.kyma-project.io/seed-remote-vpc``
(JSON ``{"cidr": ..., "tags": [tag keys], "location": ...}``; :meth:`CloudLocal.seed_remote`): an
``AwsVpcPeering`` gets a VPC in moto in its ``remoteAccountId`` and ``remoteRegion`` (reached by STS
AssumeRole of any role there, as moto lets any caller), whose Name tag is the document's ``remoteVpcId``,
with two route tables (one tagged with the tag keys); the document's ``remoteVpcId`` is then replaced by
the seeded VPC's id (:func:`seed_aws_remote_vpc`). A ``GcpVpcPeering`` gets its ``remoteVpc`` network in
its ``remoteProject`` in the GCP stand-in, tagged with the tag keys; an ``AzureVpcPeering`` the resource
group and VNet of its ``remoteVnet`` (address space ``cidr``, tagged) in that subscription of the Azure
stand-in. Each GCP shoot's own VPC network is seeded in its project as well (a GCP peering peers from it).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import socket
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import yaml
from kubernetes import client as k8s

from kube import Kube, Resource, resources
from standins import awsbackup, elasticache
from standins.azure import AzureStandIn
from standins.gcp import GcpStandIn
from tasks.cloud import install, names, registry
from tasks.cloud.azure.client import AzureClient
from tasks.cloud.azure.vpcpeering import seed_vnet
from tasks.cloud.azure.vpcpeering_plan import VNet
from tasks.cloud.controller import SWEEP, SWEEP_KEY
from tasks.cloud.gcp.client import GcpClient
from tasks.cloud.gcp.vpcpeering import seed_network
from tasks.cloud.scope import binding_secret_ref, decode_secret
from tasks.cloud.skr.listener import ListenerTLS
from webhooks.certificates import KeyPair, generate_ca, issue_client_cert, issue_serving_cert
from workers.domains import Apply, Local, LocalRun, Row

__all__ = ["CLUSTER_ANNOTATION", "SEED_REMOTE_VPC_ANNOTATION", "CloudLocal", "CloudResourcesLocal", "add_garden",
           "add_skr", "cluster_of", "kubeconfig_secret", "nat_ips", "seed_aws_remote_vpc", "seed_aws_shoot",
           "seed_azure_nat", "seed_azure_shoot", "seed_gcp_nat", "seed_gcp_project", "shoot_credentials"]

#: The SKR peering kinds whose remote network ``apply_after`` seeds (:meth:`CloudLocal.seed_remote`).
PEERINGS = frozenset(res.kind for res in names.SKR_VPC_PEERINGS.values())
#: Annotation naming the cluster a manifest belongs to (``garden`` or a kyma name; default: the KCP).
CLUSTER_ANNOTATION = "reconcilery.kyma-project.io/cluster"
#: Annotation of an SKR peering whose remote network ``up`` seeds (JSON ``{"cidr", "tags", "location"}``).
SEED_REMOTE_VPC_ANNOTATION = "reconcilery.kyma-project.io/seed-remote-vpc"
GARDEN = "garden"



@dataclass(frozen=True)
class ListenerCerts:
    """Files under ``root``: ``tls`` for the listener, ``server_ca`` to verify it, :meth:`client` pairs."""

    root: Path
    client_ca: KeyPair
    tls: ListenerTLS
    server_ca: Path

    def client(self, kyma: str, ca: KeyPair | None = None) -> tuple[str, str]:
        """``(cert file, key file)`` of a client certificate with CN ``kyma`` signed by ``ca`` (default: the
        listener's client CA; another CA is a forged certificate)."""
        pair = issue_client_cert(ca or self.client_ca, kyma)
        serial = f"{pair.certificate.serial_number:x}"
        crt, key = self.root / f"client-{serial}.crt", self.root / f"client-{serial}.key"
        crt.write_bytes(pair.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(pair.key_pem)
        return str(crt), str(key)


def listener_certs(root: Path, trust_xfcc: bool = False) -> ListenerCerts:
    """Write a fresh client CA (``client-ca.crt``/``client-ca.key``: it stands in for KLM's runtime-watcher CA) and
    a serving certificate (``tls.crt``/``tls.key``, SANs localhost and 127.0.0.1, signed by ``server-ca.crt``) into
    ``root`` (local use and tests: production certificates come from cert-manager)."""
    root.mkdir(parents=True, exist_ok=True)
    client_ca, server_ca = generate_ca("klm-watcher-ca"), generate_ca("listener-ca")
    serving = issue_serving_cert(server_ca, "skr-listener", ["localhost"], ["127.0.0.1"])
    files = {"client-ca.crt": client_ca.cert_pem, "client-ca.key": client_ca.key_pem,
             "server-ca.crt": server_ca.cert_pem, "tls.crt": serving.cert_pem, "tls.key": serving.key_pem}
    for name, data in files.items():
        if name.endswith(".key"):
            (root / name).touch(mode=0o600)
        (root / name).write_bytes(data)
    tls = ListenerTLS(str(root / "tls.crt"), str(root / "tls.key"), str(root / "client-ca.crt"), trust_xfcc)
    return ListenerCerts(root, client_ca, tls, root / "server-ca.crt")


def cluster_of(doc: Mapping[str, Any]) -> str:
    """The cluster a document is meant for: ``""`` (KCP), ``garden`` or an SKR's kyma name."""
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(CLUSTER_ANNOTATION) or "")


def kubeconfig_secret(config: Mapping[str, Any], name: str, namespace: str, key: str) -> dict[str, Any]:
    """A Secret holding ``config`` (a kubeconfig dict) under ``key``."""
    text = yaml.safe_dump(dict(config), sort_keys=False)
    return {"metadata": {"name": name, "namespace": namespace},
            "data": {key: base64.b64encode(text.encode()).decode()}}


def _put(kube: Kube, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
    meta = body["metadata"]
    current = kube.get(res, meta["name"], meta.get("namespace"))
    if current is None:
        return kube.create(res, body)
    return kube.replace(res, {**body, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}})


def _namespace(kube: Kube, name: str) -> None:
    if kube.get(resources.NAMESPACE, name) is None:
        with contextlib.suppress(Exception):
            kube.create(resources.NAMESPACE, {"metadata": {"name": name}})


def add_garden(server: Any, kcp: Kube, project_namespace: str = "garden-kyma",
               kcp_namespace: str = names.KCP_NAMESPACE) -> Kube:
    """Serve cluster ``garden`` on the dev API server ``server`` with the Gardener CRDs and the project
    namespace; store its kubeconfig in the KCP Secret ``gardener-credentials``. Returns a client."""
    server.add_cluster(GARDEN)
    garden = _client(server, GARDEN)
    install.install(garden, "garden")
    _namespace(garden, project_namespace)
    _namespace(kcp, kcp_namespace)
    config = server.kubeconfig(GARDEN, namespace=project_namespace)
    _put(kcp, resources.SECRET, kubeconfig_secret(config, names.GARDENER_CREDENTIALS, kcp_namespace,
                                                  names.GARDENER_CREDENTIALS_KEY))
    return garden


def add_skr(server: Any, kcp: Kube, kyma: str, provider: str = "aws", state_dir: Path | None = None,
            kcp_namespace: str = names.KCP_NAMESPACE, module: bool = True) -> Kube:
    """Serve the SKR cluster ``kyma``: the module CRD and ``kyma-system/default`` CloudResources (as
    Kyma's lifecycle manager installs them; ``module=False`` leaves them out), the installer's SKR CRDs,
    and its kubeconfig in KCP Secret ``kubeconfig-<kyma>`` (and ``state_dir/skrs/<kyma>.kubeconfig``)."""
    server.add_cluster(kyma)
    skr = _client(server, kyma)
    if module:
        install.install(skr, "module", "skr", provider=provider)
        _namespace(skr, names.KYMA_SYSTEM)
        if skr.get(names.CLOUD_RESOURCES, "default", names.KYMA_SYSTEM) is None:
            skr.create(names.CLOUD_RESOURCES, {"metadata": {"name": "default", "namespace": names.KYMA_SYSTEM},
                                               "spec": {}})
    _namespace(kcp, kcp_namespace)
    config = server.kubeconfig(kyma)
    _put(kcp, resources.SECRET, kubeconfig_secret(config, names.kubeconfig_secret(kyma), kcp_namespace, "config"))
    if state_dir is not None:
        path = state_dir / "skrs" / f"{kyma}.kubeconfig"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
    return skr


def _client(server: Any, cluster: str | None) -> Kube:
    cfg = k8s.Configuration()
    cfg.host = server.cluster_url(cluster)
    cfg.connection_pool_maxsize = 4
    return Kube(k8s.ApiClient(cfg), cluster=cluster or "local", timeout=30.0)


def _shoot_network(shoot: Mapping[str, Any], project_namespace: str, key: str,
                   default_region: str) -> tuple[str, str, dict[str, Any], str]:
    """(region, network name ``shoot--<project>--<shoot>``, the InfrastructureConfig's ``networks``, the
    CIDR of its ``networks.<key>``, default the nodes range, else ``10.250.0.0/16``) of a Shoot."""
    spec = shoot.get("spec") or {}
    name = names.vpc_network(project_namespace, str((shoot.get("metadata") or {}).get("name")))
    networks = ((spec.get("provider") or {}).get("infrastructureConfig") or {}).get("networks") or {}
    cidr = str((networks.get(key) or {}).get("cidr") or (spec.get("networking") or {}).get("nodes")
               or "10.250.0.0/16")
    return str(spec.get("region") or default_region), name, dict(networks), cidr


def seed_aws_shoot(endpoint: str, shoot: Mapping[str, Any], project_namespace: str,
                   access_key: str = "testing", secret_key: str = "testing") -> str:
    """Create the shoot's VPC in moto (idempotent): CIDR and zones from its AWS InfrastructureConfig
    (default one /16 with three zones), Name tag ``shoot--<project>--<shoot>``, the zones' workers,
    public and internal subnets, and a NAT gateway in the first public subnet. Returns the VPC id."""
    region, name, networks, cidr = _shoot_network(shoot, project_namespace, "vpc", "eu-central-1")
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region, aws_access_key_id=access_key,
                       aws_secret_access_key=secret_key)
    found = ec2.describe_vpcs(Filters=[{"Name": "tag:Name", "Values": [name]}]).get("Vpcs") or []
    if found:
        return str(found[0]["VpcId"])
    vpc = ec2.create_vpc(CidrBlock=cidr, TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": name}]}])["Vpc"]
    public_subnet = ""
    for zone in networks.get("zones") or []:
        for role in ("workers", "public", "internal"):
            if not zone.get(role):
                continue
            subnet = ec2.create_subnet(VpcId=vpc["VpcId"], CidrBlock=zone[role], AvailabilityZone=zone["name"],
                                       TagSpecifications=[{"ResourceType": "subnet", "Tags": [
                                           {"Key": "Name", "Value": f"{name}-{role}-z{zone['name'][-1]}"}]}])["Subnet"]
            if role == "public" and not public_subnet:
                public_subnet = subnet["SubnetId"]
    if public_subnet:
        eip = ec2.allocate_address(Domain="vpc")
        ec2.create_nat_gateway(SubnetId=public_subnet, AllocationId=eip["AllocationId"])
    return str(vpc["VpcId"])


def seed_aws_remote_vpc(endpoint: str, account: str, region: str, name: str, cidr: str,
                        tags: Iterable[str] = (), access_key: str = "testing", secret_key: str = "testing") -> str:
    """Create a customer's VPC in moto in ``account`` (reached by STS AssumeRole, as a customer's admin;
    moto accepts any role) and ``region`` (idempotent by its Name tag ``name``): CIDR ``cidr``, a tag per
    key of ``tags``, and two route tables besides the main one, ``<name>-tagged`` (carrying ``tags``) and
    ``<name>-other``. Returns the VPC id."""
    sts = boto3.client("sts", endpoint_url=endpoint, region_name=region, aws_access_key_id=access_key,
                       aws_secret_access_key=secret_key)
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/customer-admin",
                            RoleSessionName="seed")["Credentials"]
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region, aws_access_key_id=creds["AccessKeyId"],
                       aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["SessionToken"])
    found = ec2.describe_vpcs(Filters=[{"Name": "tag:Name", "Values": [name]}]).get("Vpcs") or []
    if found:
        return str(found[0]["VpcId"])
    keys = [{"Key": key, "Value": ""} for key in tags]
    vpc = ec2.create_vpc(CidrBlock=cidr, TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": name}, *keys]}])["Vpc"]
    for table, table_tags in ((f"{name}-tagged", keys), (f"{name}-other", [])):
        ec2.create_route_table(VpcId=vpc["VpcId"], TagSpecifications=[
            {"ResourceType": "route-table", "Tags": [{"Key": "Name", "Value": table}, *table_tags]}])
    return str(vpc["VpcId"])


def seed_gcp_project(state: Any, credentials: Mapping[str, str]) -> str:
    """Make the project of a GCP credential (``serviceaccount.json``'s ``project_id``) known to the GCP
    stand-in's :class:`~standins.gcp.GcpState` ``state`` (idempotent). Returns the project id, ``""``
    when the credential names none."""
    try:
        project = str(json.loads(credentials.get("serviceaccount.json") or "{}").get("project_id") or "")
    except ValueError:
        return ""
    if project:
        state.project_number(project)
    return project


def seed_azure_shoot(base_url: str, shoot: Mapping[str, Any], project_namespace: str,
                     credentials: Mapping[str, str]) -> str:
    """Create the shoot's resource group and VNet ``shoot--<project>--<shoot>`` (CIDR from its Azure
    InfrastructureConfig ``networks.vnet.cidr``, default the nodes range) in the Azure stand-in at
    ``base_url``, in the subscription of ``credentials`` (``subscriptionID``). Idempotent (ARM PUTs).
    Returns the VNet's resource id."""
    region, name, _, cidr = _shoot_network(shoot, project_namespace, "vnet", "westeurope")
    client = AzureClient(str(credentials.get("subscriptionID") or ""), base_url=base_url, retry_total=0)
    client.create_resource_group(name, region)
    vnet = client.create_vnet(name, name, region, cidr) or {}
    return str(vnet.get("id") or "")


def nat_ips(network: str, count: int, first_octet: int) -> tuple[str, ...]:
    """``count`` public IPs ``<first_octet>.a.b.c`` derived from ``network``'s name (stable across runs, distinct
    per network), the seeded NAT IPs of a shoot."""
    base = zlib.crc32(network.encode()) % 250
    return tuple(f"{first_octet}.{base + 1}.{i + 1}.{(base * 7 + i) % 250 + 1}" for i in range(count))


def seed_gcp_nat(state: Any, shoot: Mapping[str, Any], project_namespace: str, project: str) -> tuple[str, ...]:
    """Gardener's Cloud NAT of a GCP shoot in the GCP stand-in's ``state`` (idempotent): the router
    ``<vpc>-cloud-router`` on the shoot's VPC in its region with the NAT ``<vpc>-cloud-nat`` (``AUTO_ONLY``)
    and two auto-allocated NAT IPs (:func:`nat_ips`, ``35.*``). Returns the IPs."""
    region, name, _, _ = _shoot_network(shoot, project_namespace, "vpc", "europe-west3")  # GCP: no CIDR needed
    ips = nat_ips(name, 2, 35)
    state.put_router(project, region, f"{name}-cloud-router", f"projects/{project}/global/networks/{name}",
                     nat=f"{name}-cloud-nat", nat_ips=ips)
    return ips


def seed_azure_nat(state: Any, vnet_id: str, shoot: Mapping[str, Any], project_namespace: str) -> tuple[str, ...]:
    """Gardener's NAT gateways of an Azure shoot in the Azure stand-in's ``state`` (idempotent), in the VNet
    ``vnet_id``: a zoned shoot (InfrastructureConfig ``networks.zones``) gets per zone the subnet
    ``<vpc>-nodes-z<zone>`` (the zone's CIDR) with NAT gateway ``<vpc>-nat-gateway-z<zone>`` and its public IP;
    else the subnet ``<vpc>-nodes`` (``networks.workers``, default the VNet's CIDR) with ``<vpc>-nat-gateway``.
    The IPs are :func:`nat_ips` (``20.*``, one per gateway). Returns them."""
    _, name, networks, cidr = _shoot_network(shoot, project_namespace, "vnet", "westeurope")
    zones = [z for z in networks.get("zones") or [] if z.get("cidr")]
    ips = nat_ips(name, max(len(zones), 1), 20)
    if zones:
        for zone, ip in zip(zones, ips, strict=True):
            z = str(zone.get("name"))
            state.put_nat_gateway(vnet_id, f"{name}-nodes-z{z}", str(zone["cidr"]), f"{name}-nat-gateway-z{z}",
                                  (ip,), zone=z)
    else:
        state.put_nat_gateway(vnet_id, f"{name}-nodes", str(networks.get("workers") or cidr),
                              f"{name}-nat-gateway", ips)
    return ips


def shoot_credentials(garden: Kube, shoot: Mapping[str, Any]) -> dict[str, str]:
    """The decoded credentials Secret of ``shoot``: through its CredentialsBinding, else its
    SecretBinding (as the Scope controller resolves them); ``{}`` when none is found."""
    spec = shoot.get("spec") or {}
    namespace = str((shoot.get("metadata") or {}).get("namespace") or "")
    for res, name, kind in ((names.CREDENTIALS_BINDING, spec.get("credentialsBindingName"), "CredentialsBinding"),
                            (names.SECRET_BINDING, spec.get("secretBindingName"), "SecretBinding")):
        binding = garden.get(res, str(name), namespace) if name else None
        if binding is None:
            continue
        _, secret_ns, secret_name = binding_secret_ref(binding, kind)
        secret = garden.get(resources.SECRET, secret_name, secret_ns)
        return decode_secret(secret) if secret else {}
    return {}


def _provider(shoot: Mapping[str, Any]) -> str:
    return str(((shoot.get("spec") or {}).get("provider") or {}).get("type") or "")


def _row(kind: str, name: str, status: Mapping[str, Any], detail: str) -> tuple[str, str, str, str]:
    """(kind, object, state, detail) of an SKR object: its state (``Pending`` before any) and ``detail``,
    or its first condition's message while it is not Ready."""
    conds = status.get("conditions") or []
    if status.get("state") != names.STATE_READY and conds:
        detail = str(conds[0].get("message", detail))
    return kind, name, str(status.get("state") or "Pending"), detail


class CloudLocal:
    """The Cloud Resources part of ``reconcilery up`` on the dev API server.

    ``wanted(documents)`` says whether the applied documents hold Cloud Resources objects;
    :meth:`start` starts moto's server and the GCP and Azure stand-ins, installs the KCP CRDs and
    serves the Garden; :meth:`split`
    keeps the KCP documents for ``up``'s own apply; :meth:`apply_before` (Garden documents, an SKR per
    Kyma CR) and :meth:`apply_after` (SKR documents) surround it; :meth:`settled` and :meth:`rows` report.
    """

    #: Controllers that are never idle (the sweep ticks, SKRs are revisited): ``up --once`` ignores them.
    ALWAYS_BUSY = ("cloud-skr-sweep", "cloud-skr-connect")

    KINDS = {"Kyma", "GardenerCluster", "Shoot", "CredentialsBinding", "SecretBinding", "IpRange", "Scope",
             *(res.kind for kind in registry.kinds() if kind.skr for res in kind.skr.resources.values())}

    def __init__(self, server: Any, kcp: Kube, state_dir: Path, log: Callable[[str], None] = print) -> None:
        self.server = server
        self.kcp = kcp
        self.state_dir = state_dir
        self.log = log
        self.moto: Any = None
        self.endpoint = ""
        self.gcp: Any = None  # standins.gcp.GcpStandIn
        self.azure: Any = None  # standins.azure.AzureStandIn
        self.garden: Kube | None = None
        self.skrs: dict[str, Kube] = {}
        self.others: list[dict[str, Any]] = []
        self.kymas: dict[str, str] = {}  # kyma -> provider (its broker-plan-name label)
        self.skr_objects: list[tuple[str, str, str, str]] = []  # (kyma, kind, namespace, name): declared kinds

    @classmethod
    def wanted(cls, documents: Iterable[Mapping[str, Any]]) -> bool:
        return any(d.get("kind") in cls.KINDS or cluster_of(d) for d in documents)

    def start(self, port: int = 0, op_delay: float = 0.2) -> dict[str, str]:
        """Start moto's server and the GCP and Azure stand-ins (plain HTTP; their operations end after
        ``op_delay`` s), serve the Garden, install the KCP CRDs; returns the workers' env, which aims the
        three providers' layers at them (no real credentials: anonymous GCP, a static Azure token)."""
        from moto.server import ThreadedMotoServer  # moto's Flask server (~1 s to import): for a Cloud run only

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per AWS call otherwise
        elasticache.install()  # the ElastiCache actions moto lacks, in this process's moto
        awsbackup.install()  # the AWS Backup jobs and recovery points moto lacks (NFS backups)
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.moto.start()
        host, bound = self.moto.get_host_and_port()
        self.endpoint = f"http://{host}:{bound}"
        self.gcp = GcpStandIn(op_delay=op_delay).start()
        self.azure = AzureStandIn(op_delay=op_delay).start()
        install.install(self.kcp, "kcp", "kyma")
        self.garden = add_garden(self.server, self.kcp)
        self.log(f"moto (AWS) at {self.endpoint}; GCP at {self.gcp.url}; Azure at {self.azure.url}; "
                 f"Garden at {self.server.cluster_url(GARDEN)}")
        return {"RECONCILERY_AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "RECONCILERY_GCP_ENDPOINT_URL": self.gcp.url, "GCP_SA_JSON_KEY_PATH": "",
                "RECONCILERY_AZURE_ENDPOINT_URL": self.azure.url, "AZURE_CLIENT_ID": "", "AZURE_CLIENT_SECRET": ""}

    def split(self, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The KCP documents; the Garden and SKR ones are kept for :meth:`apply_before` / :meth:`apply_after`."""
        self.others = [d for d in documents if cluster_of(d)]
        self.kymas = {str(d["metadata"]["name"]): str(((d.get("metadata") or {}).get("labels") or {}).get(
            names.LABEL_BROKER_PLAN) or "aws") for d in documents if d.get("kind") == "Kyma" and not cluster_of(d)}
        return [d for d in documents if not cluster_of(d)]

    def apply_before(self, apply: Callable[[Kube, dict[str, Any]], dict[str, Any]]) -> int:
        """Before the KCP documents: the Garden documents, then each Shoot's network seeded in its provider
        (:meth:`seed`), and an SKR cluster per Kyma CR (with its kubeconfig Secret). Returns how many
        documents failed."""
        for kyma, provider in self.kymas.items():
            self.skrs[kyma] = add_skr(self.server, self.kcp, kyma, provider=provider, state_dir=self.state_dir)
        failed = 0
        shoots: list[dict[str, Any]] = []
        for doc in [d for d in self.others if cluster_of(d) == GARDEN]:
            stored = self._apply(apply, doc)
            if stored is None:
                failed += 1
            elif doc.get("kind") == "Shoot":
                shoots.append(stored)
        for shoot in shoots:  # after the bindings and Secrets: GCP and Azure seeds need the credentials
            try:
                self.seed(shoot)
            except Exception as exc:
                failed += 1
                self.log(f"✗ seeding Shoot {shoot['metadata']['name']} ({_provider(shoot)}): {exc}")
        self._garden_kubeconfig()
        return failed

    def seed(self, shoot: Mapping[str, Any]) -> str:
        """Create what the Garden ``shoot`` has in its provider: the VPC in moto (:func:`seed_aws_shoot`),
        the GCP project, VPC and Cloud NAT (:func:`seed_gcp_project`, :func:`seed_gcp_nat`), the Azure
        resource group, VNet and NAT gateways (:func:`seed_azure_shoot`, :func:`seed_azure_nat`). Returns the
        provider's id of it (``""`` for an unknown provider)."""
        namespace = str((shoot.get("metadata") or {}).get("namespace") or "garden-kyma")
        provider = _provider(shoot)
        if provider == "aws":
            return seed_aws_shoot(self.endpoint, shoot, namespace)
        if provider not in ("gcp", "azure") or self.garden is None:
            return ""
        credentials = shoot_credentials(self.garden, shoot)
        if provider == "gcp":
            project = seed_gcp_project(self.gcp.state, credentials)
            if project:  # the shoot's VPC network (Gardener's), which a GCP peering peers from, and its NAT
                seed_network(GcpClient(endpoint=self.gcp.url), project,
                             names.vpc_network(namespace, str((shoot.get("metadata") or {}).get("name"))))
                seed_gcp_nat(self.gcp.state, shoot, namespace, project)
            return project
        vnet_id = seed_azure_shoot(self.azure.url, shoot, namespace, credentials)
        if vnet_id:
            seed_azure_nat(self.azure.state, vnet_id, shoot, namespace)
        return vnet_id

    def apply_after(self, apply: Callable[[Kube, dict[str, Any]], dict[str, Any]]) -> int:
        """After the KCP documents: the SKR documents. Returns how many failed."""
        failed = 0
        for doc in [d for d in self.others if cluster_of(d) != GARDEN]:
            try:
                self.seed_remote(doc)
            except Exception as exc:
                failed += 1
                self.log(f"✗ seeding the remote network of {doc.get('kind')} {doc['metadata'].get('name')}: {exc}")
                continue
            stored = self._apply(apply, doc)
            if stored is None:
                failed += 1
            elif registry.by_skr_kind(str(doc.get("kind"))) is not None:
                meta = stored["metadata"]
                self.skr_objects.append((cluster_of(doc), str(doc["kind"]), str(meta.get("namespace") or ""),
                                         str(meta["name"])))
        return failed

    def seed_remote(self, doc: dict[str, Any]) -> None:
        """The customer's network of an annotated SKR peering (:data:`SEED_REMOTE_VPC_ANNOTATION`), created
        through the SDKs as the customer would in their own account/project/subscription:

        - AwsVpcPeering: a VPC in moto (:func:`seed_aws_remote_vpc`), its id written into ``doc``'s
          ``spec.remoteVpcId``;
        - GcpVpcPeering: the network ``spec.remoteVpc`` in ``spec.remoteProject``, tagged (Resource Manager)
          with the annotation's ``tags`` keys (:func:`tasks.cloud.gcp.vpcpeering.seed_network`);
        - AzureVpcPeering: the resource group and VNet of ``spec.remoteVnet`` (its subscription), address space
          the annotation's ``cidr``, tagged with its ``tags`` keys (:func:`tasks.cloud.azure.vpcpeering.seed_vnet`).

        Raises ValueError for an AzureVpcPeering whose ``remoteVnet`` is not a VNet resource id."""
        seed = ((doc.get("metadata") or {}).get("annotations") or {}).get(SEED_REMOTE_VPC_ANNOTATION)
        if doc.get("kind") not in PEERINGS or not seed:
            return
        wanted = json.loads(seed)
        spec = doc.setdefault("spec", {})
        tags = [str(t) for t in wanted.get("tags") or []]
        if doc["kind"] == "GcpVpcPeering":  # a network in a second GCP project
            seed_network(GcpClient(endpoint=self.gcp.url), str(spec.get("remoteProject") or ""),
                         str(spec.get("remoteVpc") or ""), tuple(tags))
            return
        if doc["kind"] == "AzureVpcPeering":  # a VNet in a second subscription
            vnet = VNet.from_id(str(spec.get("remoteVnet") or ""))
            if vnet is None:
                raise ValueError(f"spec.remoteVnet {spec.get('remoteVnet')!r} is not a VNet resource id")
            seed_vnet(AzureClient(vnet.subscription, base_url=self.azure.url, retry_total=0), vnet.resource_group,
                      vnet.name, str(wanted.get("location") or "westeurope"),
                      str(wanted.get("cidr") or "172.16.0.0/16"), {t: "" for t in tags})
            return
        spec["remoteVpcId"] = seed_aws_remote_vpc(
            self.endpoint, str(spec.get("remoteAccountId") or ""), str(spec.get("remoteRegion") or ""),
            str(spec.get("remoteVpcId") or doc["metadata"]["name"]), str(wanted.get("cidr") or "172.16.0.0/16"),
            [str(t) for t in wanted.get("tags") or []])

    def _apply(self, apply: Callable[[Kube, dict[str, Any]], dict[str, Any]], doc: dict[str, Any]) -> dict | None:
        target = cluster_of(doc)
        kube = self.garden if target == GARDEN else self.skrs.get(target)
        ref = f"{doc.get('kind')} {target}:{doc.get('metadata', {}).get('name')}"
        if kube is None:
            self.log(f"✗ {ref}: no cluster {target!r} (an SKR exists for each Kyma CR applied)")
            return None
        try:
            stored = apply(kube, json.loads(json.dumps(doc)))
        except Exception as exc:
            self.log(f"✗ {ref}: {exc}")
            return None
        return stored

    def endpoints(self) -> dict[str, Any]:
        return {"aws": self.endpoint, "gcp": self.gcp.url if self.gcp else "",
                "azure": self.azure.url if self.azure else "", "garden": str(self._garden_kubeconfig()),
                "skrs": {k: str(self.state_dir / "skrs" / f"{k}.kubeconfig") for k in self.skrs}}

    def _garden_kubeconfig(self) -> Path:
        path = self.state_dir / "garden.kubeconfig"
        if not path.exists():
            self.server.write_kubeconfig(path, cluster=GARDEN, namespace="garden-kyma")
        return path

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(kind, object, state, detail) of each SKR object of a declared kind applied, in the connect's
        order (IpRanges first), the detail its ``SkrSide.summary`` gives (for an IpRange the KCP CIDR and
        what it is in the provider)."""
        rows: list[tuple[str, str, str, str]] = []
        declared = {res.kind: (kind, res) for kind in registry.kinds() if kind.skr
                    for res in kind.skr.resources.values()}
        def order(o: tuple[str, str, str, str]) -> tuple[int, tuple[str, str, str, str]]:
            side = declared[o[1]][0].skr
            return (side.order if side else 0, o)

        for kyma, kind_name, namespace, name in sorted(self.skr_objects, key=order):
            kind, res = declared[kind_name]
            skr = self.skrs[kyma]
            obj = skr.get(res, name, namespace or None) or {}
            summary = kind.skr.summary(skr, self.kcp, kyma, obj) if obj and kind.skr and kind.skr.summary else None
            row = _row(f"SKR {kind_name} ({kyma[:8]})", f"{namespace}/{name}" if namespace else name,
                       obj.get("status") or {}, summary.detail if summary else "")
            if summary is not None and summary.state and row[2] == names.STATE_READY:
                row = (*row[:2], summary.state, row[3])
            rows.append(row)
        return rows

    def settled(self) -> bool:
        """Every row of the summary (SKR IpRanges and the objects of every declared kind) has settled:
        Ready, Error or Warning (a peering's remote-load warning is its resting state), or a job's end
        (``Done``, ``Failed``) or a schedule's waiting state (``Active``, ``Suspended``)."""
        return all(r[2] in SETTLED for r in self.rows())

    def stop(self) -> None:
        """Stop moto's server and the stand-ins."""
        for server in (self.moto, self.gcp, self.azure):
            if server is not None:
                with contextlib.suppress(Exception):
                    server.stop()
        self.moto = self.gcp = self.azure = None


#: The states of a settled SKR object in ``up``'s summary.
SETTLED = frozenset({names.STATE_READY, names.STATE_ERROR, names.STATE_WARNING, "Done", "Failed", "Active",
                     "Suspended"})


def wait(predicate: Callable[[], Any], timeout: float) -> Any:
    """Poll ``predicate`` until truthy; raises ``TimeoutError``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError


class CloudResourcesLocal(Local):
    """Cloud Resources' part of ``reconcilery up`` (:class:`workers.domains.Local`): :class:`CloudLocal`
    when the applied documents hold Cloud Resources objects (dev API server only), the runtime-watcher
    listener, the Garden and SKR documents around the KCP ones, and a summary row per SKR IpRange."""

    always_busy = CloudLocal.ALWAYS_BUSY

    def __init__(self, run: LocalRun) -> None:
        super().__init__(run)
        self.cloud: CloudLocal | None = None

    def start(self) -> None:
        """moto's server for AWS, the GCP and Azure stand-ins, the Garden and an SKR per Kyma CR as dev API
        server clusters, the runtime-watcher listener. Only when the applied documents hold Cloud
        Resources objects."""
        run = self.run
        if run.devapi is None or not CloudLocal.wanted(run.documents):
            return
        self.cloud = CloudLocal(run.devapi, run.kube(), run.state_dir, log=run.log)
        run.on_stop(self.cloud.stop)
        env = self.cloud.start()
        # The stand-ins finish every operation at once, so the original's waits (10 s per pending operation)
        # only slow a local run down: 10x faster timings, as the tests run them, and a small local fleet
        # revisited every 2 s, not 60. Either can be set in the environment. Only the processes read them
        # (this one reaches the providers through explicit endpoints).
        run.env.update(env)
        for name, local in (("RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL", "2"), ("RECONCILERY_CLOUD_TIME_SCALE", "10")):
            run.default_env(name, local)
        run.documents[:] = self.cloud.split(run.documents)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        # mTLS as deployed: a local client CA stands in for KLM's (issue SKR client certificates with
        # ListenerCerts.client or openssl from listener/client-ca.{crt,key})
        tls = listener_certs(run.state_dir / "listener").tls
        listener_env = {"RECONCILERY_CLOUD_LISTENER_CERT_FILE": tls.cert_file,
                        "RECONCILERY_CLOUD_LISTENER_KEY_FILE": tls.key_file,
                        "RECONCILERY_CLOUD_LISTENER_CLIENT_CA_FILE": tls.client_ca_file}
        run.env.update(listener_env)  # Cloud settings: only the listener reads them
        run.spawn("skr-listener", [sys.executable, "-m", "reconcilery.cli", "skr-listener", "--host", "127.0.0.1",
                                   "--port", str(port)])
        run.endpoints["skr_listener"] = f"https://127.0.0.1:{port}/v2/cloud-manager/event"
        run.endpoints["skr_listener_certs"] = str(run.state_dir / "listener")
        run.log(f"[green]✓[/green] Cloud Resources: moto (AWS) at {self.cloud.endpoint}, GCP stand-in at "
                f"{self.cloud.gcp.url}, Azure stand-in at {self.cloud.azure.url}, Garden cluster, "
                f"runtime-watcher listener on :{port}")

    def apply_before(self, apply: Apply) -> int:
        """The Garden documents and an SKR per Kyma CR (:meth:`CloudLocal.apply_before`)."""
        return 0 if self.cloud is None else int(self.cloud.apply_before(apply))

    def apply_after(self, apply: Apply) -> int:
        """The SKR documents, the endpoints of the providers and SKRs, and the sweep started."""
        if self.cloud is None:
            return 0
        failed = int(self.cloud.apply_after(apply))
        self.run.endpoints.update(self.cloud.endpoints())
        self.run.workqueue().add(SWEEP, SWEEP_KEY)  # beat (re)starts it too, after its first interval
        return failed

    def rows(self) -> list[Row]:
        return [] if self.cloud is None else self.cloud.rows()

    def settled(self) -> bool:
        return self.cloud is None or self.cloud.settled()
