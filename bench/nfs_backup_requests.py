# mypy: disable-error-code="union-attr, arg-type, index"
"""Provider requests per NFS backup, restore and schedule tick, beside the original's (issue 28's Measure):
``python bench/nfs_backup_requests.py [--ticks 20] [--gcp-op 1.0] [--aws-step 0.3]``.

In process: a dev API server (KCP = its default cluster, one GCP and one AWS SKR), the GCP stand-in
(Filestore) and moto's server with the AWS Backup stand-in (:mod:`standins.awsbackup`). Each flow is driven
one turn at a time through :func:`tasks.cloud.skr.kind.reconcile` with an :class:`SkrContext`, as a connect
would: a turn asking to be requeued is run again after its ``requeue_after`` (the settings' time scale
applies; capped by ``--max-wait``), until the object reaches its end state. The provider requests are
counted where they arrive: the GCP stand-in's ``request_log`` and a WSGI wrapper around moto's application
(:class:`Counter`; every HTTP request, retries included). Setup (volumes, file systems, instances) is not
counted.

Flows: GcpNfsVolumeBackup to Ready, then deleted; GcpNfsVolumeRestore to Done; AwsNfsVolumeBackup to Ready
without and with a copy ``location``, then deleted; AwsNfsVolumeRestore to Done; ``--ticks`` turns of a Ready
backup of each provider and of a schedule of each provider with nothing due.

Printed: per flow our requests (turns; the requests of one polling turn while the provider works) and the
original's, counted by reading cloud-manager's code (:data:`ORIGINAL`: calls per reconcile per phase times
the reconciles its requeue cadence gives for the same provider durations); then the per-request breakdown.
Provider durations here are the stand-ins' (``--gcp-op`` s per Filestore operation, ``--aws-step`` s per AWS
Backup job step: three steps to COMPLETED); real ones are minutes, which multiplies the polling part of both
sides by the same factor of turns (ours poll at the original's cadence, see the table's notes).
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
    """One flow's turns: ``requests`` per turn (labels), the state after each."""

    flow: str
    turns: list[Tally[str]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(sum(t.values()) for t in self.turns)

    def breakdown(self) -> Tally[str]:
        out: Tally[str] = Tally()
        for t in self.turns:
            out.update(t)
        return out

    def polls(self) -> list[int]:
        """Requests of the turns that left the state as it was (polling while the provider works)."""
        return [sum(t.values()) for i, t in enumerate(self.turns)
                if i > 0 and self.states[i] == self.states[i - 1] and self.states[i] not in ("", "Ready", "Done")]


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
            if done(obj):
                return run
            wait = result.requeue_after if result.requeue_after is not None else 0.05
            time.sleep(min(max(wait, 0.01), self.max_wait))
        raise RuntimeError(f"{flow}: not done after {limit} turns: {run.states[-5:]}, {skr.get(res, name, NAMESPACE)}")

    def ticks(self, flow: str, kind_name: str, res: Resource, name: str, n: int) -> Run:
        run = Run(flow)
        self.take()
        for _ in range(n):
            self.turn(kind_name, res, name)
            run.turns.append(self.take())
            run.states.append("tick")
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

@dataclass(frozen=True)
class Original:
    """The original's requests of one flow: ``fixed`` (the calls outside polling, summed over the reconciles
    that make them), ``per_poll`` (the calls of one reconcile that waits for the provider) and how they were
    counted (source paths)."""

    fixed: int
    per_poll: int
    how: str


ORIGINAL: dict[str, Original] = {}  # filled below, per flow (see the module doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=20, help="turns of a Ready backup and an idle schedule")
    parser.add_argument("--gcp-op", type=float, default=1.0, help="seconds per Filestore operation")
    parser.add_argument("--aws-step", type=float, default=0.3, help="seconds per AWS Backup job step")
    parser.add_argument("--time-scale", type=float, default=10.0, help="RECONCILERY_CLOUD_TIME_SCALE of the turns")
    parser.add_argument("--max-wait", type=float, default=1.0, help="longest wait between two turns (s)")
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
                                     "RECONCILERY_AWS_ENDPOINT_URL": aws_url,
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
    runs.append(g.until("GCP backup -> Ready", "gcpnfsvolumebackup", names.GCP_NFS_VOLUME_BACKUP, "bk",
                        state_is("Ready")))
    runs.append(g.ticks(f"GCP Ready backup, {ticks} ticks", "gcpnfsvolumebackup", names.GCP_NFS_VOLUME_BACKUP,
                        "bk", ticks))
    gskr.create(names.GCP_NFS_VOLUME_RESTORE, {"metadata": {"name": "rs", "namespace": NAMESPACE}, "spec": {
        "source": {"backup": {"name": "bk", "namespace": NAMESPACE}}, "destination": {"volume": {"name": "src"}}}})
    runs.append(g.until("GCP restore -> Done", "gcpnfsvolumerestore", names.GCP_NFS_VOLUME_RESTORE, "rs",
                        state_is("Done")))
    gskr.delete(names.GCP_NFS_VOLUME_BACKUP, "bk", NAMESPACE)
    runs.append(g.until("GCP backup deleted", "gcpnfsvolumebackup", names.GCP_NFS_VOLUME_BACKUP, "bk", gone))
    gskr.create(names.GCP_NFS_BACKUP_SCHEDULE, {"metadata": {"name": "sch", "namespace": NAMESPACE}, "spec": {
        "nfsVolumeRef": {"name": "src"}, "schedule": "0 0 1 1 *"}})
    g.turn("gcpnfsbackupschedule", names.GCP_NFS_BACKUP_SCHEDULE, "sch")  # its first turn: next run times
    runs.append(g.ticks(f"GCP schedule, nothing due, {ticks} ticks", "gcpnfsbackupschedule",
                        names.GCP_NFS_BACKUP_SCHEDULE, "sch", ticks))

    for name, location in (("bk", ""), ("bkcopy", AWS_REMOTE)):
        spec: dict[str, Any] = {"source": {"volume": {"name": "data"}}}
        if location:
            spec["location"] = location
        askr.create(names.AWS_NFS_VOLUME_BACKUP, {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
        runs.append(a.until(f"AWS backup -> Ready{' (copy to ' + location + ')' if location else ''}",
                            "awsnfsvolumebackup", names.AWS_NFS_VOLUME_BACKUP, name, state_is("Ready")))
    runs.append(a.ticks(f"AWS Ready backup, {ticks} ticks", "awsnfsvolumebackup", names.AWS_NFS_VOLUME_BACKUP,
                        "bk", ticks))
    askr.create(names.AWS_NFS_VOLUME_RESTORE, {"metadata": {"name": "rs", "namespace": NAMESPACE},
                                              "spec": {"source": {"backup": {"name": "bk"}}}})
    runs.append(a.until("AWS restore -> Done", "awsnfsvolumerestore", names.AWS_NFS_VOLUME_RESTORE, "rs",
                        finalizer_released))
    for name, what in (("bk", ""), ("bkcopy", " (and its copy)")):
        askr.delete(names.AWS_NFS_VOLUME_BACKUP, name, NAMESPACE)
        runs.append(a.until(f"AWS backup deleted{what}", "awsnfsvolumebackup", names.AWS_NFS_VOLUME_BACKUP, name,
                            gone))
    askr.create(names.AWS_NFS_BACKUP_SCHEDULE, {"metadata": {"name": "sch", "namespace": NAMESPACE}, "spec": {
        "nfsVolumeRef": {"name": "data"}, "schedule": "0 0 1 1 *"}})
    a.turn("awsnfsbackupschedule", names.AWS_NFS_BACKUP_SCHEDULE, "sch")
    runs.append(a.ticks(f"AWS schedule, nothing due, {ticks} ticks", "awsnfsbackupschedule",
                        names.AWS_NFS_BACKUP_SCHEDULE, "sch", ticks))
    return runs


def report(runs: Iterable[Run], args: Any, seconds: float) -> None:
    runs = list(runs)
    print(f"provider requests per flow (stand-ins: Filestore op {args.gcp_op:g} s, AWS Backup job step "
          f"{args.aws_step:g} s; time scale {args.time_scale:g}); {seconds:.0f} s")
    for run in runs:
        polls = run.polls()
        print(f"  {run.flow}: {run.total} requests in {len(run.turns)} turns; per turn {[sum(t.values()) for t in run.turns]}"
              f"; polls {polls}")
        for key, n in sorted(run.breakdown().items()):
            print(f"      {n:4d}  {key}")


if __name__ == "__main__":
    main()
