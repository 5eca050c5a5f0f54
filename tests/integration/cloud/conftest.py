"""A Cloud Resources environment for the integration tests, started once for this folder and shared by
every test of test_kcp.py, test_skr.py, test_providers.py and test_vpcpeering.py (one pytest-xdist worker runs
them in a row,
tests/fixtures/audit.py); stopped after the folder's last test.

One dev API server (KCP = the default cluster, the Garden and every SKR as named clusters), moto's
server for EC2/STS, a Redis, and real processes: ``reconcilery worker`` for ``cloud-kcp`` and
``cloud-skr``, ``reconcilery watch`` for the cloud controllers and ``reconcilery beat`` (the sweep's
tick). Timings run 10x faster (``RECONCILERY_CLOUD_TIME_SCALE=10``). Each test makes its own runtimes
(unique kyma and shoot names, so unique VPCs), so tests share the processes without sharing objects.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import redis
import requests

from kube import Kube, resources
from kubedev import DevAPIServer
from localrun.cloud import (
    ListenerCerts,
    add_garden,
    add_skr,
    kubeconfig_secret,
    listener_certs,
    seed_aws_shoot,
    seed_azure_shoot,
)
from reconcilery.localredis import LocalRedis
from tasks.cloud import install, names
from tasks.cloud.settings import CloudSettings
from tasks.cloud.sweep import Rotation
from tests.fixtures.audit import scenario_audit
from tests.fixtures.devapi import real_cluster
from tests.fixtures.processes import free_port, stop_process, wait_for
from tests.fixtures.workers import ROOT, WorkerPool, worker_env

PROJECT = "garden-kyma"
GCP_PROJECT = "sap-kyma-example-42"
AZURE_SUBSCRIPTION = "3c1f8a57-0000-4d6e-9a11-5b2c7e0f9d44"
REGION = "eu-central-1"
ZONES = [("eu-central-1a", "10.250.0.0/19", "10.250.32.0/20", "10.250.48.0/20"),
         ("eu-central-1b", "10.250.64.0/19", "10.250.96.0/20", "10.250.112.0/20"),
         ("eu-central-1c", "10.250.128.0/19", "10.250.160.0/20", "10.250.176.0/20")]

#: Environment of the processes: fast timings, long enough task limits for a connect window.
CLOUD_ENV = {
    "RECONCILERY_CLOUD_TIME_SCALE": "10",
    # 4 MiB per SKR list (default 64 MiB) for the package's one stack: test_skr_flood.py floods 8 MiB, the
    # default would need a flood too large for a test machine (bench/skr_flood.py runs the default)
    "RECONCILERY_REMOTE_LIST_MAX_BYTES": str(4 * 2**20),
    "RECONCILERY_CLOUD_SWEEP_TICK": "0.2",
    "RECONCILERY_CLOUD_SWEEP_RESYNC": "2",
    "RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL": "2",
    "RECONCILERY_CLOUD_CYCLIC_WORKERS": "100",  # threshold 40: the few test SKRs wait the min interval
    "RECONCILERY_CLOUD_NOTIF_MIN_INTERVAL": "3",
    "RECONCILERY_CLOUD_RECONCILE_TIMEOUT": "5",
    "RECONCILERY_CLOUD_SKR_REQUEST_TIMEOUT": "3",
    "RECONCILERY_CLOUD_CONNECT_BACKOFF_BASE": "0.5",
    "RECONCILERY_CLOUD_CONNECT_BACKOFF_CAP": "2",
    "RECONCILERY_VISIBILITY_TIMEOUT": "40",
    "RECONCILERY_TASK_TIME_LIMIT": "30",
    "RECONCILERY_TASK_SOFT_TIME_LIMIT": "28",
    "RECONCILERY_LEASE_SECONDS": "5",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}

pytestmark = pytest.mark.skipif(real_cluster(), reason="the cloud environment needs the dev API server's clusters")


def _client(server: DevAPIServer, cluster: str | None) -> Kube:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = server.cluster_url(cluster)
    return Kube(client.ApiClient(cfg), cluster=cluster or "local", timeout=15)


@dataclass
class Runtime:
    """One simulated runtime: Kyma + GardenerCluster (KCP), Shoot + binding + Secret (Garden), an SKR."""

    kyma: str
    shoot: str
    skr: Kube | None
    vpc_id: str

    @property
    def vpc_network(self) -> str:
        return names.vpc_network(PROJECT, self.shoot)


@dataclass
class CloudEnv:
    server: DevAPIServer
    kcp: Kube
    garden: Kube
    redis_url: str
    aws: str
    logdir: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: WorkerPool | None = None
    listener: str = ""
    listener_certs: ListenerCerts | None = None  # the listener's mTLS: its CA, client certificates
    gcp: Any = None  # standins.gcp.GcpStandIn
    azure: Any = None  # standins.azure.AzureStandIn

    @property
    def rotation(self) -> Rotation:
        return Rotation(redis.Redis.from_url(self.redis_url), CloudSettings())

    def ec2(self) -> Any:
        return boto3.client("ec2", endpoint_url=self.aws, region_name=REGION, aws_access_key_id="testing",
                            aws_secret_access_key="testing")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-6000:]
                         for p in sorted(self.logdir.glob("*.log")))

    def runtime(self, *, vpc: bool = True, module: str | None = "Ready", skr: bool = True, plan: str = "aws",
                zones: int = 3, kcp_objects: bool = True, provider: str = "aws") -> Runtime:
        """A new runtime (unique names). ``module=None``: the Kyma CR lists no cloud-manager module;
        ``skr=False``: no SKR cluster (its kubeconfig Secret points nowhere); ``vpc=False``: no VPC in moto."""
        kyma = str(uuid.uuid4())
        shoot = f"c-{uuid.uuid4().hex[:7]}"
        labels = {"kyma-project.io/global-account-id": "ga-1", "kyma-project.io/subaccount-id": "sa-1",
                  "kyma-project.io/shoot-name": shoot, "kyma-project.io/region": REGION,
                  "kyma-project.io/broker-plan-name": plan}
        shoot_obj = {"metadata": {"name": shoot, "namespace": PROJECT}, "spec": {
            "region": REGION, "credentialsBindingName": f"{shoot}-aws",
            "networking": {"type": "calico", "nodes": "10.250.0.0/16", "pods": "100.64.0.0/12",
                           "services": "100.104.0.0/13"},
            "provider": {"type": "aws", "infrastructureConfig": {
                "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "InfrastructureConfig",
                "networks": {"vpc": {"cidr": "10.250.0.0/16"},
                             "zones": [{"name": z, "workers": w, "public": p, "internal": i}
                                       for z, w, p, i in ZONES[:zones]]}}}}}
        credentials = {"accessKeyID": "AKIAEXAMPLE", "secretAccessKey": "secret"}
        if provider != "aws":
            shoot_obj, credentials = self._other_shoot(provider, shoot, vpc)
        shoot_obj["spec"]["credentialsBindingName"] = f"{shoot}-{provider}"
        self.garden.create(names.SHOOT, shoot_obj)
        self.garden.create(names.CREDENTIALS_BINDING, {
            "metadata": {"name": f"{shoot}-{provider}", "namespace": PROJECT}, "provider": {"type": provider},
            "credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": f"{shoot}-secret",
                               "namespace": PROJECT}})
        self.garden.create(resources.SECRET, {
            "metadata": {"name": f"{shoot}-secret", "namespace": PROJECT}, "stringData": credentials})
        vpc_id = seed_aws_shoot(self.aws, shoot_obj, PROJECT) if vpc and provider == "aws" else ""
        skr_kube = add_skr(self.server, self.kcp, kyma, provider=provider) if skr else None
        if not skr:
            dead = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
                    "clusters": [{"name": "x", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
                    "users": [{"name": "x", "user": {"token": "t"}}],
                    "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}
            secret = kubeconfig_secret(dead, names.kubeconfig_secret(kyma), names.KCP_NAMESPACE, "config")
            self.kcp.create(resources.SECRET, secret)
        if kcp_objects:
            self.kcp.create(names.GARDENER_CLUSTER, {
                "metadata": {"name": kyma, "namespace": names.KCP_NAMESPACE, "labels": labels},
                "spec": {"kubeconfig": {"secret": {"name": names.kubeconfig_secret(kyma),
                                                   "namespace": names.KCP_NAMESPACE, "key": "config"}},
                         "shoot": {"name": shoot}}})
            self.kcp.create(names.KYMA, {"metadata": {"name": kyma, "namespace": names.KCP_NAMESPACE,
                                                                 "labels": labels},
                                                    "spec": {"channel": "regular"}})
            if module is not None:
                self.kcp.patch_status(names.KYMA, kyma, {"state": "Ready", "modules": [
                    {"name": "cloud-manager", "state": module}]}, names.KCP_NAMESPACE)
        return Runtime(kyma, shoot, skr_kube, vpc_id)

    def _other_shoot(self, provider: str, shoot: str, vpc: bool) -> tuple[dict[str, Any], dict[str, str]]:
        """A GCP or Azure shoot (after examples/cloud/11-garden-gcp-azure.yaml) and its credentials; the
        Azure shoot's VNet is created in the Azure stand-in (``vpc``)."""
        networking = {"type": "calico", "nodes": "10.250.0.0/16", "pods": "100.64.0.0/12",
                      "services": "100.104.0.0/13"}
        if provider == "gcp":
            return ({"metadata": {"name": shoot, "namespace": PROJECT}, "spec": {
                "region": "us-east4", "networking": networking, "provider": {
                    "type": "gcp", "infrastructureConfig": {"networks": {"workers": "10.250.0.0/16"}},
                    "workers": [{"name": "cpu-worker-0", "zones": ["us-east4-a", "us-east4-b", "us-east4-c"]}]}}},
                    {"serviceaccount.json": json.dumps({"type": "service_account", "project_id": GCP_PROJECT})})
        credentials = {"subscriptionID": AZURE_SUBSCRIPTION, "tenantID": "8e7d6c5b-0000-4a3b-8c2d-1e0f9a8b7c6d",
                       "clientID": "c", "clientSecret": "s"}
        shoot_obj = {"metadata": {"name": shoot, "namespace": PROJECT}, "spec": {
            "region": "northeurope", "networking": networking, "provider": {
                "type": "azure", "infrastructureConfig": {"zoned": True, "networks": {
                    "vnet": {"cidr": "10.250.0.0/16"},
                    "zones": [{"name": 1, "cidr": "10.250.0.0/19"}, {"name": 2, "cidr": "10.250.32.0/19"}]}},
                "workers": [{"name": "cpu-worker-0", "zones": ["1", "2"]}]}}}
        if vpc:
            seed_azure_shoot(self.azure.url, shoot_obj, PROJECT, credentials)
        return shoot_obj, credentials

    def wait(self, predicate: Callable[[], Any], timeout: float = 60.0, message: str = "condition") -> Any:
        try:
            return wait_for(predicate, timeout=timeout, interval=0.1, message=message)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def kcp_get(self, res: Any, name: str) -> dict[str, Any] | None:
        return self.kcp.get(res, name, names.KCP_NAMESPACE)


@pytest.fixture(scope="package")
def moto_endpoint() -> Iterator[str]:
    """moto's server (EC2, STS) on a free port for the tests of this folder."""
    import logging

    from moto.server import ThreadedMotoServer

    from standins import awsbackup, elasticache

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    elasticache.install()  # the ElastiCache actions moto lacks (Redis)
    awsbackup.install()  # the AWS Backup jobs and recovery points moto lacks (NFS backups)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="package")
def cloud(moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[CloudEnv]:
    """The environment with its processes running (see the module doc). They are the deployed components,
    whichever module starts the shared stack first: their calls are recorded with the scenarios' for
    tests/integration/test_rbac.py (tests/fixtures/audit.py), also when a module outside the scenarios
    started the stack in the worker that then runs them."""
    logdir = tmp_path_factory.mktemp("cloud")
    from standins.azure import AzureStandIn
    from standins.gcp import GcpStandIn

    server = DevAPIServer(port=0, bookmark_interval=1.0).start()
    local_redis = LocalRedis(free_port()).start()
    gcp = GcpStandIn(op_delay=0.05, projects=(GCP_PROJECT,)).start()
    azure = AzureStandIn(op_delay=0.05).start()
    env: CloudEnv | None = None
    try:
        kcp = _client(server, None)
        install.install(kcp, "kcp", "kyma")
        garden = add_garden(server, kcp, PROJECT)
        kubeconfig = server.write_kubeconfig(logdir / "kubeconfig")
        env = CloudEnv(server, kcp, garden, local_redis.url, moto_endpoint, logdir, gcp=gcp, azure=azure)
        extra = {**CLOUD_ENV, **scenario_audit(request.config),
                 "RECONCILERY_KUBECONFIG": str(kubeconfig), "RECONCILERY_AWS_ENDPOINT_URL": moto_endpoint,
                 "RECONCILERY_GCP_ENDPOINT_URL": gcp.url, "RECONCILERY_AZURE_ENDPOINT_URL": azure.url}
        domains = "tasks.cloud.controller"
        env.workers = WorkerPool(local_redis.url, domains, logdir)
        # one worker per queue, as deployed (each its own component for tests/integration/test_rbac.py)
        env.workers.start(1, queues="cloud-kcp", concurrency=4, **extra)
        env.workers.start(1, queues="cloud-skr", concurrency=4, **extra)
        health = free_port()
        listener = free_port()
        env.listener = f"https://127.0.0.1:{listener}"
        env.listener_certs = certs = listener_certs(logdir / "listener")
        listener_env = {"RECONCILERY_CLOUD_LISTENER_CERT_FILE": certs.tls.cert_file,
                        "RECONCILERY_CLOUD_LISTENER_KEY_FILE": certs.tls.key_file,
                        "RECONCILERY_CLOUD_LISTENER_CLIENT_CA_FILE": certs.tls.client_ca_file}
        for name, args in (("watcher", ["watch", "--health-port", str(health), "--health-host", "127.0.0.1"]),
                           ("beat", ["beat"]),
                           ("listener", ["skr-listener", "--host", "127.0.0.1", "--port", str(listener)])):
            log = open(logdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
            env.procs.append(subprocess.Popen([sys.executable, "-m", "reconcilery.cli", *args],
                                              env={**worker_env(local_redis.url, domains, **extra),
                                                   **(listener_env if name == "listener" else {})},
                                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                              cwd=ROOT))
        wait_for(lambda: requests.get(f"http://127.0.0.1:{health}/readyz", timeout=1).ok, timeout=60,
                 message="watcher ready")
        wait_for(lambda: requests.get(f"{env.listener}/v2/cloud-manager/event", timeout=1,
                                      verify=str(certs.server_ca)).status_code == 405,
                 timeout=60, message="listener ready")
        yield env
    finally:
        if env is not None:
            for proc in env.procs:
                stop_process(proc)
            if env.workers is not None:
                env.workers.stop()
        local_redis.stop()
        from informers import informer

        informer.reset()  # the KCP informers of connects the tests ran in this process (tasks.cloud.reads)
        server.stop()
        gcp.stop()
        azure.stop()
