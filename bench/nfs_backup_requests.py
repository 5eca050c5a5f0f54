# mypy: disable-error-code="union-attr, arg-type, index"
"""Provider requests per NFS backup, restore and schedule tick, beside the original's (issue 28's Measure):
``python bench/nfs_backup_requests.py [--ticks 20] [--gcp-op 1.0] [--aws-step 0.3]``.

In process: a dev API server (KCP = its default cluster, one GCP and one AWS SKR), the GCP stand-in
(Filestore) and moto's server with the AWS Backup stand-in (:mod:`standins.awsbackup`). Each flow is driven
one turn at a time through :func:`tasks.cloud.skr.kind.reconcile` with an :class:`SkrContext`, as a connect
would: a turn asking to be requeued is run again after its ``requeue_after`` (capped by ``--max-wait``),
until the object reaches its end state. The provider requests are
counted where they arrive: the GCP stand-in's ``request_log`` and a WSGI wrapper around moto's application
(:class:`Counter`; every HTTP request, retries included). Setup (volumes, file systems, instances) is not
counted.

Flows: GcpNfsVolumeBackup to Ready, then deleted; GcpNfsVolumeRestore to Done; AwsNfsVolumeBackup to Ready
without and with a copy ``location``, then deleted; AwsNfsVolumeRestore to Done; ``--ticks`` turns of a Ready
backup of each provider and of a schedule of each provider with nothing due.

Printed: one table, flow | ours measured (requests in turns) | ours as a model | the original's model | both
at ``--duration`` s per provider wait | how the original's was counted. A model is ``fixed + requests per
polling turn @ its requeue`` per state: fixed = the requests of the turns that move the object on, a polling
turn = one that leaves its state as it was while the provider works. Ours comes from the measured turns (the
median polling turn, the requeue it asked for: production's values at time scale 1; the bench itself waits at
most ``--max-wait`` s between turns); the original's from reading cloud-manager's code (:data:`ORIGINAL`:
calls per reconcile per phase; every status patch wakes the object again through its watch). The stand-ins'
waits (``--gcp-op`` s per Filestore operation, ``--aws-step`` s per AWS Backup job step, three to COMPLETED)
are short; real ones take minutes, hence the ``at`` column. Then our requests by kind per flow.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kube import Kube, Resource  # noqa: E402

GCP_PROJECT = "bench-project-1"
AWS_REGION = "eu-central-1"
AWS_REMOTE = "us-west-2"
NAMESPACE = "default"
_VERSION = re.compile(r"^v[0-9]+(beta[0-9]*)?$")
_ID = re.compile(r"[0-9]|^cm-|^arn|%3A", re.IGNORECASE)


def label(method: str, path: str) -> str:
    """A request's label for the breakdown: its method and path with every id-like segment (digits, ``cm-``
    names, ARNs) as ``{}``; e.g. ``GET /backup-jobs/{}``. Query strings are dropped."""
    path = path.split("?", 1)[0]
    if method == "POST" and path in ("", "/"):
        return "POST / (STS, query protocol)"
    parts = ["{}" if _ID.search(p) and not _VERSION.match(p) else p for p in path.strip("/").split("/")]
    return f"{method} /{'/'.join(parts)}"


class Counter:
    """Counts the HTTP requests reaching a WSGI application (thread safe): :attr:`seen` by :func:`label`."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.seen: Tally[str] = Tally()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        with self._lock:
            self.seen[label(str(environ.get("REQUEST_METHOD")), str(environ.get("PATH_INFO") or "/"))] += 1
        return self.app(environ, start_response)

    def take(self) -> Tally[str]:
        """The requests counted since the last :meth:`take` (and forget them)."""
        with self._lock:
            out, self.seen = self.seen, Tally()
        return out


@contextmanager
def moto_server() -> Iterator[tuple[str, Counter]]:
    """moto's server with the AWS Backup stand-in, its application wrapped in a :class:`Counter`."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    from standins import awsbackup

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    awsbackup.install()
    counter = Counter(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, counter, True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", counter
    finally:
        server.shutdown()
        thread.join(5)


@dataclass
class Run:
    """One flow's turns: the requests of each (by label), the state after each, and the ``requeue_after`` each
    asked for (seconds; production's at time scale 1)."""

    flow: str
    turns: list[Tally[str]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    requeues: list[float | None] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(sum(t.values()) for t in self.turns)

    def breakdown(self) -> Tally[str]:
        out: Tally[str] = Tally()
        for t in self.turns:
            out.update(t)
        return out

    def phases(self) -> dict[str, tuple[list[int], list[float]]]:
        """The polling turns (a turn leaving the state as the previous one left it, not an end state) by
        state: their request counts and requeues."""
        out: dict[str, tuple[list[int], list[float]]] = {}
        for i in range(1, len(self.turns)):
            state = self.states[i]
            if state == self.states[i - 1] and state not in ("", "Ready", "Done", "tick"):
                counts, waits = out.setdefault(state, ([], []))
                counts.append(sum(self.turns[i].values()))
                if self.requeues[i] is not None:
                    waits.append(float(self.requeues[i] or 0.0))
        return out

    def model(self) -> tuple[int, list[tuple[str, int, float | str]]]:
        """``fixed + per poll @ requeue`` per polling state: each state's median polling turn and requeue;
        fixed = the total less the polls at their medians (a polling turn that did more, such as creating a
        copy's vault, counts its extra as fixed)."""
        phases: list[tuple[str, int, float | str]] = []
        polled = 0
        for state, (counts, waits) in self.phases().items():
            per = sorted(counts)[len(counts) // 2]
            phases.append((state, per, sorted(waits)[len(waits) // 2] if waits else 0.0))
            polled += per * len(counts)
        return self.total - polled, phases


class Driver:
    """Turns of one SKR's objects through the kinds' own read / plan / execute."""

    def __init__(self, ctx_of: Callable[[], Any], take: Callable[[], Tally[str]], max_wait: float) -> None:
        self.ctx_of, self.take, self.max_wait = ctx_of, take, max_wait

    def turn(self, kind_name: str, res: Resource, name: str) -> Any:
        from tasks.cloud import registry
        from tasks.cloud.skr import kind

        return kind.reconcile(self.ctx_of(), NAMESPACE if res.namespaced else "", name,
                              kind=registry.get(kind_name), res=res)

    def until(self, flow: str, kind_name: str, res: Resource, name: str, done: Callable[[dict | None], bool],
              limit: int = 200) -> Run:
        """Turns of ``name`` until ``done(obj)`` (the object, ``None`` when gone)."""
        run = Run(flow)
        skr: Kube = self.ctx_of().skr
        self.take()
        for _ in range(limit):
            result = self.turn(kind_name, res, name)
            obj = skr.get(res, name, NAMESPACE if res.namespaced else None)
            run.turns.append(self.take())
            run.states.append(str(((obj or {}).get("status") or {}).get("state") or ""))
            run.requeues.append(result.requeue_after)
            if done(obj):
                return run
            wait = result.requeue_after if result.requeue_after is not None else 0.05
            time.sleep(min(max(wait, 0.01), self.max_wait))
        raise RuntimeError(f"{flow}: not done after {limit} turns: {run.states[-5:]}, {skr.get(res, name, NAMESPACE)}")

    def ticks(self, flow: str, kind_name: str, res: Resource, name: str, n: int) -> Run:
        run = Run(flow)
        self.take()
        for _ in range(n):
            result = self.turn(kind_name, res, name)
            run.turns.append(self.take())
            run.states.append("tick")
            run.requeues.append(result.requeue_after)
        return run


def state_is(*states: str) -> Callable[[dict | None], bool]:
    return lambda obj: obj is not None and ((obj.get("status") or {}).get("state") in states)


def gone(obj: dict | None) -> bool:
    return obj is None


def finalizer_released(obj: dict | None) -> bool:
    from tasks.cloud import names

    return obj is not None and (obj.get("status") or {}).get("state") == "Done" \
        and names.FINALIZER not in (obj["metadata"].get("finalizers") or [])


READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
          "lastTransitionTime": "2026-01-01T00:00:00Z"}]


def _kube(server: Any, cluster: str | None) -> Kube:
    from kubernetes import client as k8s

    cfg = k8s.Configuration()
    cfg.host = server.cluster_url(cluster)
    return Kube(k8s.ApiClient(cfg), cluster=cluster or "local", timeout=30.0)


def _with_status(kube: Kube, res: Resource, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    kube.create(res, body)
    meta = body["metadata"]
    return kube.patch_status(res, meta["name"], status, meta.get("namespace"))


def _mirror(kcp: Kube, kyma: str, volume: str, ident: str, spec: dict[str, Any], status: dict[str, Any]) -> None:
    from tasks.cloud import names
    from tasks.cloud.ownership import owner_labels

    _with_status(kcp, names.NFS_INSTANCE, {
        "metadata": {"name": ident, "namespace": names.KCP_NAMESPACE, "labels": owner_labels(kyma, volume, NAMESPACE)},
        "spec": spec}, {"state": "Ready", "conditions": READY, **status})


def gcp_setup(server: Any, kcp: Kube, gcp: Any) -> tuple[str, Kube, dict[str, Any]]:
    """A GCP SKR with a Ready GcpNfsVolume ``src`` whose KCP NfsInstance names a READY Filestore instance."""
    from localrun.cloud import add_skr
    from tasks.cloud import names
    from tasks.cloud.gcp import scope as gcp_scope

    kyma = "bench-gcp"
    skr = add_skr(server, kcp, kyma, provider="gcp")
    skr.create(Resource("", "v1", "namespaces", "Namespace", namespaced=False), {"metadata": {"name": NAMESPACE}}) \
        if skr.get(Resource("", "v1", "namespaces", "Namespace", namespaced=False), NAMESPACE) is None else None
    shoot = {"metadata": {"name": "c-gcp"}, "spec": {"region": "us-east4", "provider": {
        "type": "gcp", "infrastructureConfig": {"networks": {"workers": "10.250.0.0/16"}},
        "workers": [{"name": "w", "zones": ["us-east4-a"]}]}, "networking": {
        "nodes": "10.250.0.0/16", "pods": "100.64.0.0/12", "services": "100.104.0.0/13"}}}
    section = gcp_scope.scope_section(shoot, {"serviceaccount.json": f'{{"project_id": "{GCP_PROJECT}"}}'})
    scope = kcp.create(names.SCOPE, {"metadata": {"name": kyma, "namespace": names.KCP_NAMESPACE},
                                     "spec": {"kymaName": kyma, "shootName": "c-gcp", "region": "us-east4",
                                              "provider": "gcp", "scope": section}})
    ident = str(uuid.uuid4())
    vpc = "bench-vpc"
    gcp.state.put_network(GCP_PROJECT, vpc)
    gcp.state.put_address(GCP_PROJECT, "cm-r", "10.251.0.0/22", f"projects/{GCP_PROJECT}/global/networks/{vpc}")
    zone = f"projects/{GCP_PROJECT}/locations/us-east4-a"
    gcp.filestore.create_instance(zone, f"cm-{ident}", {
        "tier": "BASIC_HDD", "fileShares": [{"name": "vol1", "capacityGb": 1024}],
        "networks": [{"network": f"projects/{GCP_PROJECT}/global/networks/{vpc}", "modes": ["MODE_IPV4"],
                      "reservedIpRange": "cm-r", "connectMode": "PRIVATE_SERVICE_ACCESS"}]})
    gcp.filestore.finish()
    _with_status(skr, names.GCP_NFS_VOLUME, {
        "metadata": {"name": "src", "namespace": NAMESPACE, "labels": {names.LABEL_IGNORE: "true"}},
        "spec": {"capacityGb": 1024, "fileShareName": "vol1"}}, {"state": "Ready", "id": ident, "conditions": READY})
    _mirror(kcp, kyma, "src", ident, {"scope": {"name": kyma}, "remoteRef": {"namespace": NAMESPACE, "name": "src"},
                                      "ipRange": {"name": "x"},
                                      "instance": {"gcp": {"location": "us-east4-a", "tier": "BASIC_HDD",
                                                           "fileShareName": "vol1", "capacityGb": 1024}}}, {})
    return kyma, skr, scope


def aws_setup(server: Any, kcp: Kube, endpoint: str) -> tuple[str, Kube, dict[str, Any]]:
    """An AWS SKR with a Ready AwsNfsVolume ``data`` whose KCP NfsInstance names an EFS file system in moto."""
    import boto3

    from localrun.cloud import add_skr
    from tasks.cloud import names
    from tasks.cloud.aws.scope import aws_scope_info

    kyma = "bench-aws"
    skr = add_skr(server, kcp, kyma, provider="aws")
    sts = boto3.client("sts", endpoint_url=endpoint, region_name=AWS_REGION)
    account = sts.get_caller_identity()["Account"]
    efs = boto3.client("efs", endpoint_url=endpoint, region_name=AWS_REGION)
    fs_id = efs.create_file_system(CreationToken=str(uuid.uuid4()))["FileSystemId"]
    shoot = {"metadata": {"name": "c-aws"}, "spec": {"region": AWS_REGION, "provider": {
        "type": "aws", "infrastructureConfig": {"networks": {"vpc": {"cidr": "10.250.0.0/16"}, "zones": [
            {"name": f"{AWS_REGION}a", "workers": "10.250.0.0/19", "public": "10.250.32.0/20",
             "internal": "10.250.48.0/20"}]}}}, "networking": {
        "nodes": "10.250.0.0/16", "pods": "100.64.0.0/12", "services": "100.104.0.0/13"}}}
    scope = kcp.create(names.SCOPE, {"metadata": {"name": kyma, "namespace": names.KCP_NAMESPACE},
                                     "spec": {"kymaName": kyma, "shootName": "c-aws", "region": AWS_REGION,
                                              "provider": "aws",
                                              "scope": {"aws": aws_scope_info(shoot, "vpc", account)}}})
    ident = str(uuid.uuid4())
    _with_status(skr, names.AWS_NFS_VOLUME, {
        "metadata": {"name": "data", "namespace": NAMESPACE, "labels": {names.LABEL_IGNORE: "true"}},
        "spec": {"capacity": "10Gi"}}, {"state": "Ready", "id": ident, "conditions": READY})
    _mirror(kcp, kyma, "data", ident, {"scope": {"name": kyma}, "remoteRef": {"namespace": NAMESPACE, "name": "data"},
                                       "ipRange": {"name": "x"}, "instance": {"aws": {}}}, {"id": fs_id})
    return kyma, skr, scope


# -- the original's counts, from reading cloud-manager's code ------------------------------------------

BACKOFF = "backoff"  # controller-runtime's per-item rate limiter: 5 ms doubling up to 1000 s (an action erred)


@dataclass(frozen=True)
class Original:
    """The original's provider requests of one flow, read from its code: ``fixed`` (the calls of the
    reconciles that move it on, summed), ``phases`` (state, calls of one reconcile that only waits, its
    requeue in seconds or :data:`BACKOFF`), ``per_tick`` (a settled object's reconcile) and ``how``."""

    fixed: int
    phases: tuple[tuple[str, int, float | str], ...] = ()
    per_tick: float | None = None
    how: str = ""


_GCP = "pkg/skr/gcpnfsvolumebackup/v2"
_AWS = "pkg/skr/awsnfsvolumebackup"
_STS = ("STS AssumeRole once per reconcile that calls AWS: createAwsClient builds a new client each reconcile "
        "(awsclient.NewSkrConfig, a fresh credentials cache), one more for the destination region's client")

#: flow key -> the original's count (see each ``how``; every status patch also wakes the object through its
#: watch, so the reconcile after a patch is immediate and counted as the next one).
ORIGINAL: dict[str, Original] = {
    "gcp-backup": Original(6, (("Creating", 2, 5.0),), how=(
        f"{_GCP}/reconcile.go: R1 createNfsBackup sets status.id (0 calls); R2 loadNfsBackup GetBackup (404) + "
        "CreateBackup (2), requeue GcpRetryWaitTime 5 s; polls: GetBackup + checkBackupOperation GetOperation "
        "(2 / 5 s); op done: GetBackup + GetOperation + addLabelsToNfsBackup UpdateBackup (the create set only "
        "managed-by and scope labels) (3); next: GetBackup, updateStatus capacity and labels (1); then "
        "shortCircuit")),
    "gcp-ready": Original(0, per_tick=0, how=(
        f"{_GCP}/shortCircuit.go: Ready, accessibleFrom and status labels current -> StopWithRequeueDelay"
        "(GcpCapacityCheckInterval 1 h), no call; once an hour GetBackup for the capacity")),
    "gcp-restore": Original(3, (("InProgress", 1, 5.0),), how=(
        "pkg/skr/gcpnfsvolumerestore/v2: R1 setProcessing (0); R2 findRestoreOperation lists the instance's "
        "operations + runNfsRestore RestoreInstance (2), requeue GcpOperationWaitTime 5 s; polls: "
        "checkRestoreOperation GetOperation (1 / GcpRetryWaitTime 5 s); done: GetOperation (1). By backupUrl "
        "instead of a reference: loadBackup's GetBackup on every reconcile too (+1 each)")),
    "gcp-delete": Original(4, (("Deleting", 2, 5.0),), how=(
        f"{_GCP}: R1 GetBackup + deleteNfsBackup DeleteBackup (2), waitBackupDeleted requeues 5 s; polls: "
        "GetBackup + GetOperation (2 / 5 s); done: GetBackup (404) + GetOperation (2), finalizer removed")),
    "gcp-schedule": Original(0, per_tick=0, how=(
        "pkg/skr/backupschedule/v1/evaluateNextRun.go: next run not due -> StopWithRequeueDelay(time left); "
        "the schedule kinds call no provider (their backups do)")),
    "aws-backup": Original(9, (("Creating", 4, 1.0),), how=(
        f"{_AWS}/reconciler.go (after the finalizer and idempotency token reconciles, 0 calls): create: STS + "
        "loadLocalVault ListBackupVaults + CreateBackupVault + ListBackupVaults (first backup of the Scope) + "
        "StartBackupJob (5), requeue 1 s; polls: STS + ListBackupVaults (the vault is loaded on every "
        "reconcile) + DescribeBackupJob + DescribeRecoveryPoint (4 / 1 s, updateStatus); completed: the same "
        f"4, Ready; then shortCircuit. {_STS}")),
    "aws-backup-copy": Original(27, (("Creating", 7, BACKOFF),), how=(
        f"{_AWS}: create: STS + ListBackupVaults + StartBackupJob (3); while the backup job runs each "
        "reconcile also runs the remote branch: dest STS + dest ListBackupVaults (+ CreateBackupVault + "
        "ListBackupVaults the first time: 2 in fixed) and createAwsDestBackup StartCopyJob of a recovery point "
        "not yet COMPLETED, refused -> the action errs -> rate-limited requeue (7 / backoff); job done: 4 local + "
        "2 dest + StartCopyJob (7), requeue 10 s; loadAwsCopyJob DescribeCopyJob sets remoteId (7), requeue 1 s; "
        "then 4 + 2 + DescribeCopyJob + dest DescribeRecoveryPoint (8) and Ready: updateStatus looks at the "
        "local job and recovery point only, so it is Ready without waiting for the copy (no copy polling)")),
    "aws-ready": Original(0, per_tick=0, how=(
        f"{_AWS}/shortCircuit.go: Ready and capacity not due -> requeue EfsCapacityCheckInterval (1 h), no "
        "call; once an hour a full reconcile (STS + ListBackupVaults + DescribeBackupJob + "
        "DescribeRecoveryPoint)")),
    "aws-restore": Original(5, (("InProgress", 2, 1.0),), how=(
        "pkg/skr/awsnfsvolumerestore: start: STS + GetRecoveryPointRestoreMetadata + StartRestoreJob (3), "
        "requeue 1 s; polls: STS + checkRestoreJob DescribeRestoreJob (2 / 1 s); completed: the same 2, Done; "
        "then PatchRemoveCommonFinalizer (0)")),
    "aws-delete": Original(5, (("Deleting", 2, 1.0),), how=(
        f"{_AWS}: R1 STS + loadLocalAwsBackup DescribeRecoveryPoint + DeleteRecoveryPoint (3), immediate "
        "requeue; polls (DELETING): STS + DescribeRecoveryPoint (2 / 1 s, updateStatus); gone: the same 2, "
        "removeFinalizer")),
    "aws-delete-copy": Original(14, (("Deleting", 4, 1.0),), how=(
        f"{_AWS}: R1 STS + DescribeRecoveryPoint, dest STS + dest DescribeRecoveryPoint + dest "
        "DeleteRecoveryPoint (5); R2 the 4 reads + local DeleteRecoveryPoint (5); polls: the 4 reads (4 / 1 s); "
        "both gone: the 4 reads (4), removeFinalizer")),
    "aws-schedule": Original(0, per_tick=0, how="as gcp-schedule (backupImplAwsNfs.go)"),
}


def polls_in(seconds: float, cadence: float | str) -> int:
    """Reconciles that only wait during a provider wait of ``seconds``: one per ``cadence`` seconds, or
    controller-runtime's per-item backoff (5 ms, doubling, at most 1000 s apart) for :data:`BACKOFF`."""
    if cadence == BACKOFF:
        n, waited, delay = 0, 0.0, 0.005
        while waited + delay <= seconds:
            waited, delay, n = waited + delay, min(delay * 2, 1000.0), n + 1
        return n
    return max(1, int(-(-seconds // float(cadence)))) if float(cadence) > 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=20, help="turns of a Ready backup and an idle schedule")
    parser.add_argument("--gcp-op", type=float, default=1.0, help="seconds per Filestore operation")
    parser.add_argument("--aws-step", type=float, default=0.3, help="seconds per AWS Backup job step")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="RECONCILERY_CLOUD_TIME_SCALE of the turns (1: the requeues are production's)")
    parser.add_argument("--max-wait", type=float, default=0.25, help="longest wait between two turns (s)")
    parser.add_argument("--duration", type=float, default=300.0,
                        help="seconds of each provider wait for the 'at' column (real backups take minutes)")
    parser.add_argument("--aws-role", default="CloudManagerSkrRole",
                        help="role assumed in the Scope's account (AWS_ROLE_NAME; empty: none)")
    parser.add_argument("-v", "--verbose", action="store_true", help="per-turn requests")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    from kubedev import DevAPIServer
    from standins import awsbackup
    from standins.gcp import GcpStandIn
    from tasks.cloud import install, names
    from tasks.cloud import settings as cloud_settings
    from tasks.cloud.skr.context import SkrContext

    started = time.time()
    with moto_server() as (aws_url, aws_counter), DevAPIServer(port=0) as server:
        gcp = GcpStandIn(op_delay=args.gcp_op, projects=(GCP_PROJECT,)).start()
        awsbackup.set_step(args.aws_step)
        try:
            s = cloud_settings.load({**os.environ, "RECONCILERY_CLOUD_TIME_SCALE": str(args.time_scale),
                                     "RECONCILERY_AWS_ENDPOINT_URL": aws_url, "AWS_ROLE_NAME": args.aws_role,
                                     "RECONCILERY_GCP_ENDPOINT_URL": gcp.url})
            kcp = _kube(server, None)
            install.install(kcp, "kcp")
            gkyma, gskr, gscope = gcp_setup(server, kcp, gcp)
            akyma, askr, ascope = aws_setup(server, kcp, aws_url)

            def gctx() -> SkrContext:
                return SkrContext(kyma=gkyma, skr=gskr, kcp=kcp, scope=gscope, settings=s,
                                  deadline=time.monotonic() + 30)

            def actx() -> SkrContext:
                return SkrContext(kyma=akyma, skr=askr, kcp=kcp, scope=ascope, settings=s,
                                  deadline=time.monotonic() + 30)

            def gtake() -> Tally[str]:
                with gcp.state.lock:
                    log = list(gcp.state.request_log)
                    gcp.state.request_log.clear()
                return Tally(label(m, p) for m, p in log)

            g = Driver(gctx, gtake, args.max_wait)
            a = Driver(actx, aws_counter.take, args.max_wait)
            runs = flows(g, a, gskr, askr, args.ticks, names)
        finally:
            gcp.stop()
            awsbackup.set_step(awsbackup.STEP_SECONDS)
    report(runs, args, time.time() - started)


def flows(g: Driver, a: Driver, gskr: Kube, askr: Kube, ticks: int, names: Any) -> list[Run]:
    """Every flow of the module doc, in order; returns their runs."""
    runs: list[Run] = []
    gskr.create(names.GCP_NFS_VOLUME_BACKUP, {"metadata": {"name": "bk", "namespace": NAMESPACE},
                                             "spec": {"source": {"volume": {"name": "src"}}}})
    runs.append(g.until("gcp-backup", "gcpnfsvolumebackup", names.GCP_NFS_VOLUME_BACKUP, "bk",
                        state_is("Ready")))
    runs.append(g.ticks("gcp-ready", "gcpnfsvolumebackup", names.GCP_NFS_VOLUME_BACKUP,
                        "bk", ticks))
    gskr.create(names.GCP_NFS_VOLUME_RESTORE, {"metadata": {"name": "rs", "namespace": NAMESPACE}, "spec": {
        "source": {"backup": {"name": "bk", "namespace": NAMESPACE}}, "destination": {"volume": {"name": "src"}}}})
    runs.append(g.until("gcp-restore", "gcpnfsvolumerestore", names.GCP_NFS_VOLUME_RESTORE, "rs",
                        state_is("Done")))
    gskr.delete(names.GCP_NFS_VOLUME_BACKUP, "bk", NAMESPACE)
    runs.append(g.until("gcp-delete", "gcpnfsvolumebackup", names.GCP_NFS_VOLUME_BACKUP, "bk", gone))
    gskr.create(names.GCP_NFS_BACKUP_SCHEDULE, {"metadata": {"name": "sch", "namespace": NAMESPACE}, "spec": {
        "nfsVolumeRef": {"name": "src"}, "schedule": "0 0 1 1 *"}})
    g.turn("gcpnfsbackupschedule", names.GCP_NFS_BACKUP_SCHEDULE, "sch")  # its first turn: next run times
    runs.append(g.ticks("gcp-schedule", "gcpnfsbackupschedule",
                        names.GCP_NFS_BACKUP_SCHEDULE, "sch", ticks))

    for name, location in (("bk", ""), ("bkcopy", AWS_REMOTE)):
        spec: dict[str, Any] = {"source": {"volume": {"name": "data"}}}
        if location:
            spec["location"] = location
        askr.create(names.AWS_NFS_VOLUME_BACKUP, {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
        runs.append(a.until("aws-backup-copy" if location else "aws-backup",
                            "awsnfsvolumebackup", names.AWS_NFS_VOLUME_BACKUP, name, state_is("Ready")))
    runs.append(a.ticks("aws-ready", "awsnfsvolumebackup", names.AWS_NFS_VOLUME_BACKUP,
                        "bk", ticks))
    askr.create(names.AWS_NFS_VOLUME_RESTORE, {"metadata": {"name": "rs", "namespace": NAMESPACE},
                                              "spec": {"source": {"backup": {"name": "bk"}}}})
    runs.append(a.until("aws-restore", "awsnfsvolumerestore", names.AWS_NFS_VOLUME_RESTORE, "rs",
                        finalizer_released))
    for name, what in (("bk", ""), ("bkcopy", "-copy")):
        askr.delete(names.AWS_NFS_VOLUME_BACKUP, name, NAMESPACE)
        runs.append(a.until(f"aws-delete{what}", "awsnfsvolumebackup", names.AWS_NFS_VOLUME_BACKUP, name,
                            gone))
    askr.create(names.AWS_NFS_BACKUP_SCHEDULE, {"metadata": {"name": "sch", "namespace": NAMESPACE}, "spec": {
        "nfsVolumeRef": {"name": "data"}, "schedule": "0 0 1 1 *"}})
    a.turn("awsnfsbackupschedule", names.AWS_NFS_BACKUP_SCHEDULE, "sch")
    runs.append(a.ticks("aws-schedule", "awsnfsbackupschedule",
                        names.AWS_NFS_BACKUP_SCHEDULE, "sch", ticks))
    return runs


TITLES = {
    "gcp-backup": "GcpNfsVolumeBackup -> Ready", "gcp-ready": "GcpNfsVolumeBackup Ready, per tick",
    "gcp-restore": "GcpNfsVolumeRestore -> Done", "gcp-delete": "GcpNfsVolumeBackup deleted",
    "gcp-schedule": "GcpNfsBackupSchedule nothing due, per tick",
    "aws-backup": "AwsNfsVolumeBackup -> Ready", "aws-backup-copy": "AwsNfsVolumeBackup (copy location) -> Ready",
    "aws-ready": "AwsNfsVolumeBackup Ready, per tick", "aws-restore": "AwsNfsVolumeRestore -> Done",
    "aws-delete": "AwsNfsVolumeBackup deleted", "aws-delete-copy": "AwsNfsVolumeBackup (copy) deleted",
    "aws-schedule": "AwsNfsBackupSchedule nothing due, per tick",
}


def _cadence(c: float | str) -> str:
    return c if isinstance(c, str) else f"{c:.3g} s"


def at(fixed: int, phases: Iterable[tuple[str, int, float | str]], seconds: float) -> int:
    """Requests of a flow whose every provider wait lasts ``seconds``."""
    return fixed + sum(per * polls_in(seconds, cadence) for _, per, cadence in phases)


def _model(fixed: int, phases: Iterable[tuple[str, int, float | str]]) -> str:
    return f"{fixed}" + "".join(f" + {per}/poll @ {_cadence(c)} ({state})" for state, per, c in phases)


def report(runs: Iterable[Run], args: Any, seconds: float) -> None:
    """The table (flow | ours | original | how) and the per-request breakdown of ours."""
    runs = list(runs)
    print(f"Provider requests per NFS backup flow: ours counted at the stand-ins (Filestore operations "
          f"{args.gcp_op:g} s, AWS Backup job steps {args.aws_step:g} s, AWS role "
          f"{args.aws_role or 'none'}), the original's read from its code. Model: fixed + requests per polling "
          f"turn @ its requeue; 'at {args.duration:g} s' = each provider wait lasting {args.duration:g} s. "
          f"Run took {seconds:.0f} s.\n")
    rows = [("flow", "ours measured", "ours model", "original model", f"at {args.duration:g} s ours/orig", "how")]
    for n, run in enumerate(runs, 1):
        orig = ORIGINAL[run.flow]
        fixed, phases = run.model()
        if orig.per_tick is not None:
            per = run.total / max(1, len(run.turns))
            wait = next((r for r in run.requeues if r is not None), None)
            rows.append((TITLES[run.flow], f"{run.total} in {len(run.turns)} ticks", f"{per:g}/tick"
                         + (f" (requeue {wait:.0f} s)" if wait else ""), f"{orig.per_tick:g}/tick", "-", f"[{n}]"))
            continue
        rows.append((TITLES[run.flow], f"{run.total} in {len(run.turns)} turns", _model(fixed, phases),
                     _model(orig.fixed, orig.phases),
                     f"{at(fixed, phases, args.duration)} / {at(orig.fixed, orig.phases, args.duration)}", f"[{n}]"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    print("\nHow the original's was counted:")
    for n, run in enumerate(runs, 1):
        print(f"  [{n}] {ORIGINAL[run.flow].how}")
    print("\nOurs, requests by kind (per turn):")
    for run in runs:
        print(f"  {TITLES[run.flow]}: per turn {[sum(t.values()) for t in run.turns]}")
        for key, count in sorted(run.breakdown().items()):
            print(f"      {count:4d}  {key}")
        if args.verbose:
            for i, (t, state) in enumerate(zip(run.turns, run.states, strict=True)):
                print(f"        turn {i + 1}: {state or '-'} {dict(t)} requeue {run.requeues[i]}")


if __name__ == "__main__":
    main()
