# mypy: disable-error-code="union-attr, arg-type"
"""NFS backup schedules due in the same minute: ``python bench/nfs_schedules.py [--skrs 100] [--per-skr 10]
[--workers 8] [--min-interval 60] [--connect 0.2]``.

One dev API server holds the KCP and ``--skrs`` AWS SKR clusters (as ``bench/skr_sweep.py`` seeds them: the
module CR, a Ready IpRange, kubeconfig Secret, Scope), each with a Ready AwsNfsVolume (ignored by the
reconcilers: it stays Ready as written) and ``--per-skr`` AwsNfsBackupSchedules whose cron names one minute
(``M H * * *``): every schedule of the fleet is due at the same instant D, the first minute boundary at least
``--lead`` seconds after the sweep starts. ``reconcilery worker`` processes consume ``cloud-skr`` with
``--workers`` threads in all; the rotation revisits each SKR every ``--min-interval`` seconds (the original's
``cyclicMinInterval``, 60 s; ``RECONCILERY_CLOUD_CYCLIC_WORKERS`` is set high so that the interval holds),
each connect taking ``--connect`` s more than its real work.

The first connect of each SKR sees its schedules' next run time past its window and ``add_after`` s one
``cloud-skr-object`` key per schedule, due at D. Measured from outside the engine: a backup's creation is
its ADDED event in its SKR's store (wall clock), and the connect interval is the time between two SkrStatus
writes of one SKR (KCP store events). Printed: the lateness ``creation - D`` of every backup (p50, p99,
max), backups per schedule (must be 1), and the connect interval the lateness compares to (a schedule run
only by connects is late by up to one interval, about half of it on average).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.skr_sweep import create_with_status, percentile, rt, seed, start_workers  # noqa: E402
from kubedev import DevAPIServer  # noqa: E402
from kubedev.store import StoreEvent  # noqa: E402
from reconcilery.localredis import LocalRedis  # noqa: E402
from tasks.cloud import names  # noqa: E402
from tests.fixtures.processes import free_port, stop_process, wait_for  # noqa: E402

NAMESPACE = "default"
READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Ready",
          "lastTransitionTime": "2026-01-01T00:00:00Z"}]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its waited-for children (``/proc/<pid>/stat``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def seed_schedules(server: DevAPIServer, kymas: list[str], per_skr: int, due: dt.datetime) -> None:
    """In each SKR: namespace ``default``, a Ready AwsNfsVolume ``data`` (ignore label) and ``per_skr``
    schedules of it due at ``due`` (store calls: setup is not measured)."""
    cron = f"{due.minute} {due.hour} * * *"
    for kyma in kymas:
        store = server.clusters.store(kyma)
        ns_rt = store.registry.lookup("", "v1", "namespaces")
        if not store.namespace_exists(NAMESPACE):
            store.create(ns_rt, None, {"metadata": {"name": NAMESPACE}})
        create_with_status(store, names.AWS_NFS_VOLUME, NAMESPACE, {
            "metadata": {"name": "data", "namespace": NAMESPACE, "labels": {names.LABEL_IGNORE: "true"}},
            "spec": {"capacity": "100Gi"}}, {"state": "Ready", "conditions": READY})
        for n in range(per_skr):
            store.create(rt(store, names.AWS_NFS_BACKUP_SCHEDULE), NAMESPACE, {
                "metadata": {"name": f"s{n}", "namespace": NAMESPACE},
                "spec": {"nfsVolumeRef": {"name": "data"}, "schedule": cron}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skrs", type=int, default=100)
    parser.add_argument("--per-skr", type=int, default=10, help="schedules per SKR")
    parser.add_argument("--workers", type=int, default=8, help="cloud-skr worker threads in all (2 processes)")
    parser.add_argument("--min-interval", type=float, default=60.0, help="cyclicMinInterval: the connect interval")
    parser.add_argument("--connect", type=float, default=0.2, help="injected seconds per connect")
    parser.add_argument("--lead", type=float, default=40.0, help="seconds from the sweep's start to D, at least")
    args = parser.parse_args()
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"nfs-schedules-{os.getpid()}"
    logdir.mkdir(parents=True, exist_ok=True)
    local_redis = LocalRedis(free_port(), workdir=str(logdir / "redis")).start()
    server = DevAPIServer(port=0).start()
    procs: list[Any] = []
    lock = threading.Lock()
    created: dict[str, float] = {}  # kyma/name -> wall time of its ADDED event
    per_schedule: dict[str, int] = defaultdict(int)
    status_writes: dict[str, list[float]] = defaultdict(list)
    try:
        kymas = list(server.call(lambda: seed(server, args.skrs, ["aws"])))
        server.write_kubeconfig(logdir / "kubeconfig")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILERY_REDIS_URL": local_redis.url,
               "RECONCILERY_DOMAINS": "tasks.cloud.controller", "RECONCILERY_KUBECONFIG": str(logdir / "kubeconfig"),
               "RECONCILERY_TASK_EVENTS": "0", "RECONCILERY_CLOUD_CONNECT_DELAY": str(args.connect),
               "RECONCILERY_CLOUD_CYCLIC_WORKERS": "1000", "RECONCILERY_CLOUD_SWEEP_TICK": "0.25",
               "RECONCILERY_CLOUD_CYCLIC_MIN_INTERVAL": str(args.min_interval),
               "RECONCILERY_CLOUD_SKR_REQUEST_TIMEOUT": "30"}
        client = redis.Redis.from_url(local_redis.url)
        procs = start_workers("cloud-skr", args.workers, 2, env, logdir, "worker")
        wait_for(lambda: client.scard("reconcilery:workers-ready") >= 2, timeout=120, message="workers")
        now = dt.datetime.now(dt.UTC)
        due = (now + dt.timedelta(seconds=args.lead + 60)).replace(second=0, microsecond=0)
        server.call(lambda: seed_schedules(server, kymas, args.per_skr, due))

        def on_backup(kyma: str) -> Any:
            def listener(event: StoreEvent) -> None:
                if event.type == "ADDED":
                    at = time.time()
                    meta = event.obj["metadata"]
                    schedule = (meta.get("labels") or {}).get(names.LABEL_SCHEDULE_NAME, "?")
                    with lock:
                        created.setdefault(f"{kyma}/{meta['name']}", at)
                        per_schedule[f"{kyma}/{schedule}"] += 1
            return listener

        def on_status(event: StoreEvent) -> None:
            if event.type in ("ADDED", "MODIFIED"):
                with lock:
                    status_writes[event.obj["metadata"]["name"]].append(time.time())

        unsubscribe = [server.clusters.store(k).subscribe(
            f"{names.SKR_GROUP}/{names.AWS_NFS_VOLUME_BACKUP.plural}", on_backup(k)) for k in kymas]
        unsubscribe.append(server.store.subscribe(f"{names.KCP_GROUP}/{names.SKR_STATUS.plural}", on_status))
        from tasks.cloud.settings import CloudSettings
        from tasks.cloud.sweep import Rotation

        rotation = Rotation(client, CloudSettings())
        for kyma in kymas:
            rotation.activate(kyma)
        os.environ["RECONCILERY_REDIS_URL"] = local_redis.url
        from tasks.cloud.controller import SWEEP, SWEEP_KEY
        from workers.app import app, configure, workqueue
        from workers.settings import load

        configure(app, load())
        started = time.time()
        workqueue().add(SWEEP, SWEEP_KEY)
        total = args.skrs * args.per_skr
        print(f"{args.skrs} AWS SKRs x {args.per_skr} schedules = {total}, all due at {due:%H:%M:%S} "
              f"({due.timestamp() - started:.0f} s after the sweep's start); cloud-skr: {args.workers} threads in "
              f"2 processes; connect interval (cyclicMinInterval) {args.min_interval:.0f} s, connect +"
              f"{args.connect * 1000:.0f} ms; {os.cpu_count()} cores", flush=True)
        deadline = due.timestamp() + args.min_interval * 2 + 60
        while time.time() < deadline:
            with lock:
                if len(created) >= total and time.time() > started + args.min_interval + 15:
                    break  # every backup made, and each SKR connected twice (the interval is measured)
            time.sleep(0.2)
        time.sleep(2.0)  # a second backup of some schedule would show now
        workers_cpu = sum(cpu_seconds(p.pid) for p in procs)
        own_cpu = sum(os.times()[:2])
        for stop in unsubscribe:
            stop()
        with lock:
            late = sorted(at - due.timestamp() for at in created.values())
            counts = dict(per_schedule)
            revisits = [b - a for v in status_writes.values() for a, b in itertools.pairwise(v)]
        early = [x for x in late if x < -1.0]
        print(f"backups: {len(late)} of {total} schedules; per schedule: max {max(counts.values(), default=0)}, "
              f"schedules with more than one: {sum(1 for c in counts.values() if c > 1)}; made before D - 1 s: "
              f"{len(early)}")
        if late:
            print(f"lateness (backup ADDED - D): p50 {percentile(late, 0.5) * 1000:.0f} ms, p99 "
                  f"{percentile(late, 0.99) * 1000:.0f} ms, max {late[-1] * 1000:.0f} ms, min {late[0] * 1000:.0f} ms")
        print(f"CPU: cloud-skr workers {workers_cpu:.1f} s, this process (dev API server with {args.skrs + 1} "
              f"clusters, bench) {own_cpu:.1f} s, over {time.time() - started:.0f} s of wall time")
        if revisits:
            print(f"connect interval (between two SkrStatus writes of one SKR): median "
                  f"{statistics.median(revisits):.1f} s, min {min(revisits):.1f} s, max {max(revisits):.1f} s "
                  f"({len(revisits)} revisits); a schedule run only by connects would be late by up to one interval")
    finally:
        for proc in procs:
            stop_process(proc)
        server.stop()
        local_redis.stop()


if __name__ == "__main__":
    main()
