# mypy: disable-error-code="union-attr, arg-type, index"
"""Provider requests per Redis cluster create and per steady reconcile, and turns to Ready, beside the
original's (issue 29's Measure): ``python bench/redis_clusters.py [--steady 10] [-v]``.

In process, every stand-in's operation delay 0: moto's server with the ElastiCache stand-in
(:mod:`standins.elasticache`; a group is ``available`` at once, a change ``modifying`` for one describe), the
ARM stand-in (:mod:`standins.azure`, ``op_delay=0``) and the GCP stand-in's Memorystore for Redis Cluster
(:mod:`standins.memorystore_cluster`, ``op_delay=0``). Each KCP provider side (AWS and Azure RedisCluster,
GcpRedisCluster) is driven one turn at a time as the generic KCP controller runs it
(:func:`tasks.cloud.kcp.kind.provider_turn`, then the executor; the status patch written into the object, no
Kubernetes), as tests/integration/cloud/{aws,azure,gcp}/test_rediscluster.py do, until the object is Ready
with nothing left to do (``requeue_after`` None), then ``--steady`` more turns. Requests are counted where
they arrive: a WSGI :class:`bench.nfs_backup_requests.Counter` around moto's application (AWS, STS
included), the stand-ins' ``request_log`` (Azure, GCP). Setup (VPC, subnets, resource group, DNS zone) is not
counted. Time scale 1000: the requeues asked for are production's / 1000 and are slept.

Printed: provider | ours: requests to Ready (in turns) | ours per steady turn | the original's (read from
cloud-manager's pkg/kcp/provider/*/rediscluster, :data:`ORIGINAL`) | how the original's was counted; then the
SKR side's connects to Ready (:data:`CONNECTS`, and :func:`skr_connects`: the SKR plan run turn by turn with a
Ready network and a KCP mirror Ready by the next connect) and, unless ``--no-stack``, measured through the whole
stack (:func:`stack_connects`); then ours by request kind, and per turn with ``-v``; last one JSON line
(requests and turns to Ready, requests per steady turn, ``connects_to_ready`` on a Ready network and
``connects_to_ready_new_network`` per provider).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import time
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.nfs_backup_requests import Counter, label, moto_server  # noqa: E402

AWS_REGION = "eu-west-1"
GCP_PROJECT = "bench-redis-1"
GCP_REGION = "europe-west1"
GCP_VPC = "bench-vpc"


class ActionCounter(Counter):
    """A :class:`Counter` that names an AWS request by its action: ``Action=`` of a query-protocol body (STS,
    EC2, ElastiCache) or the ``X-Amz-Target`` header (JSON protocol: Secrets Manager); the body is put back."""

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
        if not target:
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(size) if size else b""
            environ["wsgi.input"] = io.BytesIO(body)
            target = (parse_qs(body.decode(errors="replace")).get("Action") or ["?"])[0]
        host = str(environ.get("HTTP_AUTHORIZATION") or "")
        service = host.split("/")[3] if host.count("/") >= 4 else "?"
        with self._lock:
            self.seen[f"{service} {target}"] += 1
        return self.app(environ, start_response)


@dataclass
class Run:
    """One provider's turns: requests per turn (by :func:`label`), the state after each, its requeue."""

    provider: str
    turns: list[Tally[str]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    requeues: list[float | None] = field(default_factory=list)
    ready_turns: int = 0

    def total(self, part: slice) -> int:
        return sum(sum(t.values()) for t in self.turns[part])


@dataclass(frozen=True)
class Original:
    """The original's requests to Ready (``create``), per steady reconcile, and how counted."""

    create: str
    steady: str
    how: str


ORIGINAL = {
    "aws": Original("87 in 8 reconciles (+14: the wake-up by its Ready patch)", "14", (
        "pkg/kcp/provider/aws/rediscluster/new.go, read not run, delay 0. Every reconcile: STS AssumeRole "
        "(the SKR client provider builds a new config per reconcile, state.go NewState) + the loads "
        "DescribeCacheSubnetGroups, DescribeCacheParameterGroups main + temp (2), DescribeCacheParameters and "
        "DescribeEngineDefaultParameters of each existing group, GetSecretValue, DescribeUserGroups, "
        "findSecurityGroup DescribeSecurityGroups, DescribeReplicationGroups, loadMemberClusters "
        "DescribeCacheClusters per member (4 for 2 shards x 1 replica). Each create is its own reconcile "
        "ending Stop(WithRequeue): CreateCacheSubnetGroup (7+1), CreateCacheParameterGroup (7+1, requeue 5 s), "
        "ModifyCacheParameterGroup (9+1, 5 s), CreateSecret, CreateSecurityGroup, "
        "AuthorizeSecurityGroupIngress, CreateReplicationGroup (9+1 each), then available: 13, Ready patch "
        "(StopAndForget); +1 STS each = 87 in 8. Steady (watch event / resync only; StopAndForget, no "
        "requeue): STS + 13 reads = 14.")),
    "azure": Original("16 in 5 reconciles (+4: the wake-up by its Ready patch)", "4", (
        "pkg/kcp/provider/azure/rediscluster/new.go, read not run, delay 0. Every reconcile: GET private "
        "endpoint, GET DNS zone group (only once the endpoint exists), GET redis. R1 +PUT redis, requeue "
        "60 s (3); R2 Succeeded -> updateStatusId patch, requeue (2); R3 +PUT private endpoint, requeue 60 s "
        "(3); R4 +PUT DNS zone group, requeue 60 s (4); R5 updateStatus ListKeys (unconditional) + Ready "
        "patch (4) = 16 in 5, three 60 s requeues even at delay 0. Steady: 3 GETs + ListKeys = 4, "
        "StopAndForget.")),
    "gcp": Original("5 in 3 reconciles (+2: the wake-up by its Ready patch)", "2", (
        "pkg/kcp/provider/gcp/rediscluster/reconcile.go, read not run, delay 0. Every reconcile: loadRedis "
        "GetCluster (loadSubnet is the KCP GcpSubnet, no call). R1 (404) +CreateCluster, StopWithRequeue "
        "(2); R2 ACTIVE -> updateStatusId patch, requeue (1); R3 waitRedisAvailable ok, loadCertificates "
        "GetCertificateAuthority (every reconcile: caCerts is per reconcile state), Ready patch (2) = 5 in 3. "
        "Steady: GetCluster + GetCertificateAuthority = 2, StopAndForget.")),
}


#: The SKR side's connects to Ready, reasoned from tasks/cloud/skr/rediscluster_plan.py (each SKR object gets
#: one turn per connect) and printed with the table; the Ready-network case is also run (:func:`skr_connects`).
CONNECTS = (
    "SKR connects from creation to Ready when the KCP side is fast (tasks/cloud/skr/rediscluster_plan.plan, one "
    "turn per connect): with its IpRange / GcpSubnet already Ready, connect 1 assigns the id, adds the "
    "finalizer, creates the KCP mirror (state Creating); the KCP side above reaches Ready in the turns shown "
    "(at delay 0 well under a second: its requeues are 0 to 60 ms at time scale 1000, production's 0-60 s "
    "would still end before a 5-minute revisit); connect 2 projects the KCP Ready and writes the auth Secret "
    "in the same turn (the projection returns None on Ready, so step 7 runs): Ready in 2 connects. With the "
    "default IpRange / GcpSubnet created by connect 1 (given its own turn at once: its KCP mirror), "
    "connect 2 makes the network Ready (its turn at once again, then the cluster re-reads it) and creates "
    "the KCP cluster: Ready in 3 connects, the network's own two included. The original's SKR reconciler "
    "re-reads after each step (watch-driven, no connects); it needs the same KCP Ready plus its own "
    "requeues.")


def skr_connects(provider: str, limit: int = 6) -> tuple[int, list[str]]:
    """SKR turns (= connects: one turn per object per connect) of a new cluster whose network is Ready, the KCP
    mirror Ready by the connect after its creation (the KCP side above at delay 0): the pure plan
    (:func:`tasks.cloud.skr.rediscluster_plan.plan`) run over what each connect would read, with the unit
    tests' builders. Returns (connects until Ready with the auth Secret, what each turn did)."""
    from kube.toolkit.conditions import condition
    from tasks.cloud import names
    from tasks.cloud.skr import rediscluster_plan
    from tests.integration.cloud.steps import apply_step
    from tests.unit.cloud.test_skr_rediscluster_plan import ID, NOW, Planned, kcp, seen, skr

    obj = skr(provider, finalizer=False)
    mirror: dict[str, Any] | None = None
    secret: dict[str, Any] | None = None
    did: list[str] = []
    for n in range(1, limit + 1):
        out = Planned(rediscluster_plan.plan(seen(obj, provider, kcp=mirror, secret=secret), ID, lambda x: x, NOW),
                      provider)
        apply_step(obj, out.step)
        if out.step.add_finalizer:
            obj["metadata"]["finalizers"] = [names.FINALIZER]
        what = [w for w, on in (("id", out.label_id), ("finalizer", out.step.add_finalizer),
                                ("KCP mirror", out.create), ("auth Secret", out.secret_create)) if on]
        did.append(f"{n}: {', '.join(what) or '-'} -> {obj['status'].get('state')}")
        if out.create is not None:  # the KCP side makes it Ready before the next connect
            mirror = kcp(provider, conds=[condition("Ready", True, "Ready", "Ready", NOW)],
                         status={"state": "Ready", "discoveryEndpoint": "cfg.example:6379", "authString": "x",
                                 "caCert": "ca"})
        if out.secret_create is not None:
            secret = out.secret_create
        if obj["status"].get("state") == "Ready" and secret is not None:
            return n, did
    raise RuntimeError(f"{provider}: SKR not Ready after {limit} connects: {did}")


def drive(provider: str, turn: Callable[[], tuple[Any, dict[str, Any]]], take: Callable[[], Tally[str]],
          steady: int, limit: int = 40) -> Run:
    """Turns of one object until Ready with nothing left (``requeue_after`` None), then ``steady`` more;
    ``turn()`` -> (the step, the object's status after it)."""
    run = Run(provider)
    take()
    for i in range(limit):
        step, status = turn()
        run.turns.append(take())
        run.states.append(str(status.get("state") or ""))
        run.requeues.append(step.requeue_after)
        if status.get("state") == "Ready" and step.requeue_after is None:
            run.ready_turns = i + 1
            break
        if step.requeue_after:
            time.sleep(min(step.requeue_after, 1.0))
    else:
        raise RuntimeError(f"{provider}: not Ready after {limit} turns: {status}")
    for _ in range(steady):
        step, status = turn()
        run.turns.append(take())
        run.states.append("steady:" + str(status.get("state") or ""))
        run.requeues.append(step.requeue_after)
    return run


def _apply(obj: dict[str, Any], step: Any) -> dict[str, Any]:
    from tests.integration.cloud.steps import apply_step

    apply_step(obj, step)
    return obj["status"]


def kind_turn(kind: Any, obj: dict[str, Any], scope: Any, settings: Any, clients: dict[str, Any] | None = None,
              seen: Callable[[], Any] | None = None) -> Callable[[], tuple[Any, dict[str, Any]]]:
    """A turn of ``kind``'s provider side over ``obj`` (``clients``: instead of the provider's own; ``seen``:
    what the KCP read found, built afresh each turn), executed, its status applied: ``(step, status)``."""
    from kube.toolkit import execute
    from tasks.cloud import registry
    from tasks.cloud.kcp.kind import provider_turn

    def turn() -> tuple[Any, dict[str, Any]]:
        at = registry.Turn(kube=None, obj=obj, scope=scope, settings=settings, seen=seen() if seen else None)
        outcome, used = provider_turn(kind, at, False, clients)
        step = execute(outcome, clients=used, scale=at.t).outcome
        return step, _apply(obj, step)

    return turn


def standin_take(standin: Any) -> Callable[[], Tally[str]]:
    """The requests ``standin`` (GCP or Azure) logged since the last take, counted by :func:`label`."""

    def take() -> Tally[str]:
        with standin.state.lock:
            log = list(standin.state.request_log)
            standin.state.request_log.clear()
        return Tally(label(m, p) for m, p in log)

    return take


def aws_run(steady: int, role: str) -> Run:
    import boto3

    from standins import elasticache
    from tasks.cloud import registry, settings
    from tasks.cloud.aws.rediscluster import SIDE
    from tasks.cloud.kcp.consumer_plan import Seen

    elasticache.install()
    elasticache.reset()
    with moto_server() as (url, outer):
        counter = ActionCounter(outer.app)  # inside the bench's counter: requests named by their action
        outer.app = counter
        ec2 = boto3.client("ec2", endpoint_url=url, region_name=AWS_REGION)
        account = boto3.client("sts", endpoint_url=url, region_name=AWS_REGION).get_caller_identity()["Account"]
        vpc = ec2.create_vpc(CidrBlock="10.180.0.0/16")["Vpc"]["VpcId"]
        subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.180.{i}.0/24", AvailabilityZone=f"{AWS_REGION}{z}")[
            "Subnet"]["SubnetId"] for i, z in enumerate("ab")]
        s = settings.load({**os.environ, "RECONCILERY_CLOUD_TIME_SCALE": "1000", "RECONCILERY_AWS_ENDPOINT_URL": url,
                           "AWS_ROLE_NAME": role})
        scope = {"spec": {"provider": "aws", "region": AWS_REGION, "shootName": "shoot1",
                          "scope": {"aws": {"accountId": account,
                                            "network": {"pods": "100.64.0.0/12", "vpc": {"cidr": "10.180.0.0/16"}}}}}}
        iprange = {"status": {"vpcId": vpc, "subnets": [{"id": x} for x in subnets]}}
        obj = {"metadata": {"name": "c1", "namespace": "kcp-system"},
               "spec": {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"},
                        "ipRange": {"name": "r"}, "instance": {"aws": {
                            "cacheNodeType": "cache.t4g.small", "engineVersion": "7.0", "shardCount": 2,
                            "replicasPerShard": 1, "authEnabled": True,
                            "parameters": {"maxmemory-policy": "allkeys-lru"}}}}, "status": {}}
        kind = registry.Kind(name="rediscluster", providers={"aws": SIDE})

        turn = kind_turn(kind, obj, scope, s, seen=lambda: Seen(obj, scope, True, iprange))
        try:
            return drive("aws", turn, counter.take, steady)
        finally:
            elasticache.reset()


def azure_run(steady: int) -> Run:
    from standins.azure import AzureStandIn
    from tasks.cloud import names, registry
    from tasks.cloud.azure import rediscluster
    from tasks.cloud.azure.redisinstance_client import AzureRedisClient
    from tests.integration.cloud.azure.test_redisinstance import SCOPE, SETTINGS, seeded

    standin = AzureStandIn(op_delay=0.0).start()
    try:
        client = AzureRedisClient(seeded(standin), base_url=standin.url, retry_total=0)
        kind = registry.Kind(name="rediscluster-azure-bench", kcp=registry.KcpSide(names.REDIS_CLUSTER),
                             providers={"azure": rediscluster.SIDE})
        obj = {"metadata": {"name": "rc1", "namespace": "kcp-system"},
               "spec": {"remoteRef": {"namespace": "apps", "name": "cluster"}, "scope": {"name": "k1"},
                        "ipRange": {"name": "ipr"},
                        "instance": {"azure": {"sku": {"capacity": 1}, "shardCount": 2, "replicasPerPrimary": 2,
                                               "redisConfiguration": {"maxmemory-policy": "allkeys-lru"}}}},
               "status": {}}

        return drive("azure", kind_turn(kind, obj, SCOPE, SETTINGS, {"": client}), standin_take(standin), steady)
    finally:
        standin.stop()


def gcp_run(steady: int) -> Run:
    from standins.gcp import GcpStandIn
    from tasks.cloud import names, registry, settings
    from tasks.cloud.gcp.rediscluster import SIDE
    from tasks.cloud.gcp.rediscluster_client import RedisClusterClient
    from tasks.cloud.kcp.gcprediscluster import KCP
    from tasks.cloud.kcp.gcprediscluster_plan import Seen
    from tests.integration.cloud.gcp.test_memorystore_cluster_conformance import psc_policy

    standin = GcpStandIn(op_delay=0.0, projects=(GCP_PROJECT,))
    psc_policy(standin, GCP_PROJECT, GCP_REGION, GCP_VPC, "10.252.0.0/24")  # the GcpSubnet's, not counted
    standin.start()
    try:
        client = RedisClusterClient(endpoint=standin.url)
        s = settings.load({"RECONCILERY_CLOUD_TIME_SCALE": "1000", "GCP_RETRY_WAIT_DURATION": "1s"})
        scope = {"spec": {"provider": "gcp", "region": GCP_REGION, "shootName": "shoot1",
                          "scope": {"gcp": {"project": GCP_PROJECT, "vpcNetwork": GCP_VPC}}}}
        kind = registry.Kind(name="gcprediscluster", kcp=KCP, providers={"gcp": SIDE})
        obj = {"metadata": {"name": "c1", "namespace": "kcp-system", "finalizers": [names.FINALIZER]},
               "spec": {"remoteRef": {"namespace": "apps", "name": "cache"}, "scope": {"name": "k1"},
                        "subnet": {"name": "s1"}, "nodeType": "REDIS_STANDARD_SMALL", "shardCount": 3,
                        "replicasPerShard": 1, "redisConfigs": {"maxmemory-policy": "allkeys-lru"}},
               "status": {}}

        turn = kind_turn(kind, obj, scope, s, {"": client}, seen=lambda: Seen(obj, scope))
        return drive("gcp", turn, standin_take(standin), steady)
    finally:
        standin.stop()


@dataclass
class StackRun:
    """One provider's clusters through the whole stack: SKR connects from apply to Ready with the Secret,
    for a cluster whose network the same connect creates (``new_network``) and one applied once it is Ready
    (``ready_network``); what each connect left (``log``)."""

    provider: str
    new_network: int = 0
    ready_network: int = 0
    log: list[str] = field(default_factory=list)


#: The SKR objects of each provider's cluster (no network named: the default IpRange / GcpSubnet).
STACK_SPECS = {"aws": {"redisTier": "C1", "shardCount": 2, "replicasPerShard": 1},
               "azure": {"redisTier": "C3", "shardCount": 2, "replicasPerPrimary": 1},
               "gcp": {"redisTier": "C3", "shardCount": 2, "replicasPerShard": 1}}


def stack_connects(providers: tuple[str, ...] = ("aws", "azure", "gcp"), limit: int = 8) -> list[StackRun]:
    """The SKR connects to Ready through the real stack, in process, every stand-in's operation delay 0: the
    dev API server (KCP, Garden, one SKR per provider), moto's server with the ElastiCache stand-in, the GCP
    and Azure stand-ins; the runtimes made as tests/integration/cloud/conftest.py makes them. Each connect is
    :func:`tasks.cloud.skr.connect.connect` (what a ``cloud-skr-connect`` task runs); between two connects
    the KCP loop runs until it is quiet: every declared kind's KCP controller
    (:func:`tasks.cloud.kcp.kind.reconcile`) and the Scope's, over every KCP object, again while any asks
    to come back within 5 s (time scale 1000: production's 5000 s), sleeping what it asks; a watch-driven
    KCP is at least this quick. Counted per provider: connects from the apply to the SKR cluster Ready with
    its auth Secret, first with the default network created by the cluster's connect, then for a second
    cluster on that network once Ready."""
    import logging as logs
    import tempfile

    from kube import clusters, resources
    from kubedev import DevAPIServer
    from localrun.cloud import add_garden
    from standins import elasticache
    from standins.azure import AzureStandIn
    from standins.gcp import GcpStandIn
    from tasks.cloud import install, names, registry
    from tasks.cloud import settings as cloud_settings
    from tasks.cloud.kcp import kind as kcp_kind
    from tasks.cloud.kcp import scope as kcp_scope
    from tasks.cloud.skr import connect as skr_connect
    from tasks.cloud.skr.rediscluster_plan import skr_kind
    from tests.integration.cloud.conftest import GCP_PROJECT, PROJECT, CloudEnv, _client
    from workers.controller import LOCAL_CLUSTER, Key

    logs.getLogger("werkzeug").setLevel(logs.ERROR)
    elasticache.install()
    elasticache.reset()
    server = DevAPIServer(port=0, bookmark_interval=1.0).start()
    gcp = GcpStandIn(op_delay=0.0, projects=(GCP_PROJECT,)).start()
    azure = AzureStandIn(op_delay=0.0).start()
    runs: list[StackRun] = []
    try:
        with moto_server() as (aws_url, _), tempfile.TemporaryDirectory() as tmp:
            kcp = _client(server, None)
            install.install(kcp, "kcp", "kyma")
            garden = add_garden(server, kcp, PROJECT)
            clusters.register(LOCAL_CLUSTER, kcp.api_client)
            s = cloud_settings.load({**os.environ, "RECONCILERY_CLOUD_TIME_SCALE": "1000",
                                     "RECONCILERY_AWS_ENDPOINT_URL": aws_url, "RECONCILERY_GCP_ENDPOINT_URL": gcp.url,
                                     "RECONCILERY_AZURE_ENDPOINT_URL": azure.url, "GCP_RETRY_WAIT_DURATION": "1s"})
            cloud_settings.override(s)
            env = CloudEnv(server, kcp, garden, "", aws_url, Path(tmp), gcp=gcp, azure=azure)
            controllers = [k for k in registry.kinds() if k.kcp is not None and k.kcp.read is not None
                           and k.kcp.plan is not None]

            def kcp_quiet(rounds: int = 60) -> None:
                for _ in range(rounds):
                    soon: list[float] = []
                    for declared in controllers:
                        assert declared.kcp is not None
                        for obj in kcp.list(declared.kcp.resource, s.kcp_namespace):
                            key = Key(LOCAL_CLUSTER, s.kcp_namespace, obj["metadata"]["name"])
                            result = kcp_kind.reconcile(key, kind=declared)
                            if result.requeue_after is not None and result.requeue_after < 5.0:
                                soon.append(result.requeue_after)
                    if not soon:
                        return
                    time.sleep(min(max(soon), 0.2))

            for provider in providers:
                run = StackRun(provider)
                runs.append(run)
                rt = env.runtime(provider=provider)
                assert rt.skr is not None
                if provider == "gcp":
                    gcp.state.put_network(GCP_PROJECT, rt.vpc_network)
                for _ in range(5):  # the Scope (the cloud-scope controller's turns)
                    kcp_scope.reconcile(Key(LOCAL_CLUSTER, s.kcp_namespace, rt.kyma))
                    if kcp.get(names.SCOPE, rt.kyma, s.kcp_namespace) is not None:
                        break
                kcp_quiet()
                skr_connect.connect(kcp, rt.kyma, s)  # the first connect installs the CRDs: nothing to count
                kcp_quiet()
                res = skr_kind(provider)

                for name, attr in (("first", "new_network"), ("second", "ready_network")):
                    rt.skr.create(res, {"metadata": {"name": name, "namespace": "default"},
                                        "spec": {**STACK_SPECS[provider], "authSecret": {"name": f"{name}-conn"}}})
                    for n in range(1, limit + 1):
                        report = skr_connect.connect(kcp, rt.kyma, s)
                        obj = rt.skr.get(res, name, "default") or {}
                        run.log.append(f"{name} connect {n}: {report.result}, {obj.get('status', {}).get('state')}")
                        if (obj.get("status") or {}).get("state") == "Ready" and \
                                rt.skr.get(resources.SECRET, f"{name}-conn", "default") is not None:
                            setattr(run, attr, n)
                            break
                        kcp_quiet()
                    else:
                        raise RuntimeError(f"{provider}: {name} not Ready after {limit} connects: {run.log}\n"
                                           f"{rt.skr.get(res, name, 'default')}")
    finally:
        cloud_settings.override(None)
        clusters.reset()
        elasticache.reset()
        gcp.stop()
        azure.stop()
        from informers import informer

        informer.reset()  # the KCP informers of the connects (tasks.cloud.reads), before their server
        server.stop()
    return runs


def report(runs: list[Run], steady: int, seconds: float, verbose: bool, stack: list[StackRun] | None = None) -> None:
    print(f"Provider requests per Redis cluster (KCP provider side, stand-ins' operation delay 0), ours counted "
          f"where they arrive, the original's read from its code. Run took {seconds:.0f} s.\n")
    rows = [("provider", "ours to Ready", "ours per steady turn", "original to Ready", "original per steady", "how")]
    for n, run in enumerate(runs, 1):
        ready = slice(0, run.ready_turns)
        steady_turns = run.turns[run.ready_turns:]
        per = [sum(t.values()) for t in steady_turns]
        per_s = (f"{per[0]}" if len(set(per)) == 1 else f"{min(per)}-{max(per)}") if per else "-"
        orig = ORIGINAL[run.provider]
        rows.append((run.provider, f"{run.total(ready)} in {run.ready_turns} turns",
                     f"{per_s} ({sum(per)} in {len(per)})", orig.create, orig.steady, f"[{n}]"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    print("\nHow the original's was counted:")
    for n, run in enumerate(runs, 1):
        print(f"  [{n}] {ORIGINAL[run.provider].how}")
    print(f"\nConnects to Ready: {CONNECTS}")
    for provider in ("aws", "azure", "gcp"):
        n, did = skr_connects(provider)
        print(f"  measured on the plan, {provider}: Ready with its auth Secret in {n} connects ({'; '.join(did)})")
    if stack:
        print("  measured through the whole stack (SKR connect + KCP controllers + provider + stand-ins, "
              "delay 0; stack_connects):")
        for one in stack:
            print(f"    {one.provider}: a cluster on a Ready network Ready with its Secret in {one.ready_network} "
                  f"connects; with the default network made by its own connects {one.new_network}")
    print("\nOurs, requests by kind:")
    for run in runs:
        to_ready: Tally[str] = Tally()
        for t in run.turns[:run.ready_turns]:
            to_ready.update(t)
        per_turn = [sum(t.values()) for t in run.turns]
        print(f"  {run.provider}: per turn {per_turn[:run.ready_turns]} | steady {per_turn[run.ready_turns:]}")
        print("    to Ready:")
        for key, count in sorted(to_ready.items()):
            print(f"      {count:4d}  {key}")
        if run.ready_turns < len(run.turns):
            print("    one steady turn:")
            for key, count in sorted(run.turns[run.ready_turns].items()):
                print(f"      {count:4d}  {key}")
        if verbose:
            for i, (t, state) in enumerate(zip(run.turns, run.states, strict=True)):
                print(f"        turn {i + 1}: {state or '-'} {dict(t)} requeue {run.requeues[i]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steady", type=int, default=10, help="turns after Ready")
    parser.add_argument("--aws-role", default="CloudManagerSkrRole",
                        help="role assumed in the Scope's account (AWS_ROLE_NAME; empty: none)")
    parser.add_argument("-v", "--verbose", action="store_true", help="per-turn requests")
    parser.add_argument("--no-stack", action="store_true",
                        help="skip the connects to Ready through the whole stack (stack_connects, ~1.5 min)")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    logging.getLogger().setLevel(logging.WARNING)
    started = time.time()
    runs = [aws_run(args.steady, args.aws_role), azure_run(args.steady), gcp_run(args.steady)]
    stack = [] if args.no_stack else stack_connects()
    report(runs, args.steady, time.time() - started, args.verbose, stack)
    steady_per = {r.provider: [sum(t.values()) for t in r.turns[r.ready_turns:]] for r in runs}
    print(json.dumps({
        "bench": "redis_clusters",
        "requests_to_ready": {r.provider: r.total(slice(0, r.ready_turns)) for r in runs},
        "turns_to_ready": {r.provider: r.ready_turns for r in runs},
        "requests_per_steady_turn": {p: (max(v) if v else None) for p, v in steady_per.items()},
        "connects_to_ready": {one.provider: one.ready_network for one in stack},
        "connects_to_ready_new_network": {one.provider: one.new_network for one in stack}}, sort_keys=True))


if __name__ == "__main__":
    main()
