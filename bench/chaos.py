"""Chaos run of the real pipeline: prints what the workqueue's guarantees come to under faults.

    python bench/chaos.py [--seconds 60] [--workers 3] [--objects 200] [--rate 20] [--fault-every 6]

Starts its own Redis (AOF, as deployed), a recorder Redis that no fault touches, an in-process dev API
server, ``reconcilery watch`` and ``reconcilery worker`` processes with the test controller of
``bench/chaos_domain.py`` (some reconciles 3x longer than the lease and the visibility timeout), changes
ConfigMaps all along, and injects, in turn: SIGKILL of a worker mid-reconcile, a Redis restart (AOF),
a Redis that comes back empty, a dev API server restart, a 410 Gone (changes missed while the server
was away, log compacted), and lost ready entries (a lost publish). After each fault a canary change
measures the recovery time. It prints:

- keys whose last change was never followed by a completed reconcile (must be 0);
- moments where one key was inside two reconciles at once, counting a fenced reconcile only until
  its lease stopped being trusted and a killed one until its kill (must be 0);
- the worst recovery time per fault.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kube import Kube, resources  # noqa: E402
from kube.kubeconfig import from_kubeconfig_dict  # noqa: E402
from kubedev import DevAPIServer, kubeconfig_dict  # noqa: E402
from kubedev.store import Store  # noqa: E402
from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port, stop_process, wait_for  # noqa: E402

FAULTS = ("kill-worker", "redis-restart", "api-restart", "gone-410", "lost-publish", "redis-wipe")
LEASE, VISIBILITY = 2.0, 3.0


@dataclass
class Report:
    """What a chaos run measured."""

    changes: int = 0
    reconciles: int = 0
    fenced: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    recovery: dict[str, float] = field(default_factory=dict)  # worst seconds per fault
    stranded: list[str] = field(default_factory=list)
    overlaps: list[str] = field(default_factory=list)
    settle_seconds: float = 0.0
    timeline: list[tuple[float, str]] = field(default_factory=list)  # (wall time, fault)

    def lines(self) -> list[str]:
        worst = max(self.recovery.values(), default=0.0)
        return [
            f"changes made: {self.changes}; reconciles: {self.reconciles} ({self.fenced} fenced)",
            "faults injected: " + ", ".join(f"{k} x{v}" for k, v in self.faults.items()),
            f"keys whose last change was never reconciled: {len(self.stranded)} {self.stranded[:5]}",
            f"moments one key was inside two reconciles at once: {len(self.overlaps)} {self.overlaps[:3]}",
            "recovery (fault -> canary change reconciled), worst per fault: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in self.recovery.items()),
            f"worst recovery time: {worst:.2f} s; settled {self.settle_seconds:.1f} s after the last change",
        ]


class Chaos:
    """One chaos run; :meth:`run` returns the :class:`Report`. Every process it starts is stopped."""

    def __init__(self, workdir: str, seconds: float = 60.0, workers: int = 3, concurrency: int = 4,
                 objects: int = 200, rate: float = 20.0, fault_every: float = 6.0, slow_share: float = 0.02,
                 faults: tuple[str, ...] = FAULTS, seed: int = 1) -> None:
        self.workdir = Path(workdir)
        self.seconds, self.workers, self.concurrency = seconds, workers, concurrency
        self.objects, self.rate, self.fault_every, self.slow_share = objects, rate, fault_every, slow_share
        self.fault_kinds = faults
        self.rand = random.Random(seed)
        self.report = Report()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.kills: dict[int, float] = {}
        self.gen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._log_ids = itertools.count()

    # -- the parts ---------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        return {**os.environ, "RECONCILERY_REDIS_URL": self.queue.url, "RECONCILERY_KUBECONFIG": str(self.kubeconfig),
                "RECONCILERY_DOMAINS": "bench.chaos_domain", "RECONCILERY_WATCH_MODULES": "bench.chaos_domain",
                "CHAOS_RECORDER_URL": self.recorder.url, "CHAOS_SLOW_SECONDS": str(3 * max(LEASE, VISIBILITY)),
                "RECONCILERY_LEASE_SECONDS": str(LEASE), "RECONCILERY_VISIBILITY_TIMEOUT": str(VISIBILITY),
                "RECONCILERY_TASK_TIME_LIMIT": "2.5", "RECONCILERY_TASK_SOFT_TIME_LIMIT": "2",
                "RECONCILERY_RECONCILE_TIMEOUT": "30", "RECONCILERY_IDLE_WAIT": "0.5",
                "RECONCILERY_REDIS_CHECK_INTERVAL": "0.5", "RECONCILERY_TASK_EVENTS": "0",
                "RECONCILERY_HEARTBEAT_FILE": str(self.workdir / "heartbeat"), "PYTHONPATH": str(ROOT)}

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}-{next(self._log_ids)}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "reconcilery.cli", *args], env=self._env(), cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def _worker(self) -> subprocess.Popen[bytes]:
        return self._spawn(["worker", "-Q", "apigateway", "-c", str(self.concurrency), "-l", "WARNING",
                            "-n", f"chaos{len(self.procs)}@%h"], "worker")

    def _live_workers(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None and "worker" in p.args]  # type: ignore[operator]

    def _start_api(self, store: Store | None = None, port: int = 0) -> None:
        self.api = DevAPIServer(port=port, store=store or Store(event_log_size=2000), bookmark_interval=2.0).start()

    def _set_gen(self, name: str, gen: int, slow: bool | None = None) -> None:
        data: dict[str, str] = {"gen": str(gen)}
        if slow is not None:
            data["slow"] = "1" if slow else "0"
        self.kube.patch(resources.CONFIGMAP, name, {"data": data}, "chaos")
        self.gen[name] = gen

    def _bump(self, name: str) -> None:
        with self._lock:
            gen = self.gen[name] + 1
            for _ in range(50):  # the API server may be restarting
                try:
                    self._set_gen(name, gen)
                    self.report.changes += 1
                    return
                except Exception:
                    time.sleep(0.1)

    def _applied(self, name: str) -> int:
        return int(self.rec.hget("chaos:applied", name) or -1)

    # -- faults ------------------------------------------------------------------------------------

    def _inject(self, kind: str) -> None:
        if kind == "kill-worker":
            running = {int(k.split(":")[2]) for k in self.rec.keys("chaos:enter:*")}
            live = self._live_workers()
            victims = [p for p in live if p.pid in running] or live
            victim = self.rand.choice(victims)
            victim.kill()
            self.kills[victim.pid] = time.time()
            victim.wait(10)
            self._worker()
        elif kind in ("redis-restart", "redis-wipe"):
            self.queue.kill()
            if kind == "redis-wipe":
                for f in Path(self.queue.workdir).glob("appendonly*"):
                    if f.is_dir():
                        for g in f.iterdir():
                            g.unlink()
                    else:
                        f.unlink()
            time.sleep(0.5)
            self.queue.start()
        elif kind in ("api-restart", "gone-410"):
            store, port = self.api.store, self.api.port
            self.api.stop()
            if kind == "gone-410":  # changes the watcher never sees as events, then the log is compacted
                rt = store.registry.lookup("", "v1", "configmaps")
                assert rt is not None
                with self._lock:
                    for name in self.rand.sample(sorted(self.gen), k=min(20, len(self.gen))):
                        self.gen[name] += 1
                        store.patch(rt, "chaos", name, "merge", {"data": {"gen": str(self.gen[name])}})
                        self.report.changes += 1
                store.compact()
            time.sleep(1.0)
            self._start_api(store, port)
        elif kind == "lost-publish":
            self.queue_client.delete("rq:apigateway:ready", "rq:apigateway:ready-resync")
        self.report.faults[kind] = self.report.faults.get(kind, 0) + 1
        self.report.timeline.append((time.time(), kind))

    def _recovery(self, kind: str, started: float) -> None:
        """Time from the fault to the canary's next change being reconciled."""
        self._bump("canary")
        want = self.gen["canary"]
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: self._applied("canary") >= want, timeout=60, interval=0.02, message="canary")
        took = time.monotonic() - started
        with self._lock:
            self.report.recovery[kind] = max(self.report.recovery.get(kind, 0.0), took)

    # -- the run -----------------------------------------------------------------------------------

    def run(self) -> Report:
        self.recorder = LocalRedis(free_port(), workdir=str(self.workdir / "recorder")).start()
        self.queue = LocalRedis(free_port(), workdir=str(self.workdir / "queue"), appendonly=True).start()
        self._start_api()
        try:
            return self._run()
        finally:
            for p in self.procs:
                stop_process(p)
            self.api.stop()
            self.queue.stop()
            self.recorder.stop()

    def _run(self) -> Report:
        self.rec = redis.Redis.from_url(self.recorder.url, decode_responses=True)
        self.queue_client = redis.Redis.from_url(self.queue.url)
        self.kubeconfig = self.api.write_kubeconfig(self.workdir / "kubeconfig")
        self.kube = Kube(from_kubeconfig_dict(kubeconfig_dict(self.api.url)))
        for ns in ("chaos", "chaos-applied"):
            self.kube.create(resources.NAMESPACE, {"metadata": {"name": ns}})
        names = [f"cm{i}" for i in range(self.objects)] + ["canary"]
        for name in names:
            slow = name != "canary" and self.rand.random() < self.slow_share
            self.kube.create(resources.CONFIGMAP, {"metadata": {"name": name, "namespace": "chaos"},
                                                   "data": {"gen": "0", "slow": "1" if slow else "0"}})
            self.gen[name] = 0
        for _ in range(self.workers):
            self._worker()
        self._spawn(["watch", "--controllers", "chaos", "--health-port", str(free_port()),
                     "--health-host", "127.0.0.1"], "watcher")
        wait_for(lambda: all(self._applied(n) >= 0 for n in names), timeout=120, message="initial reconciles")

        checks: list[threading.Thread] = []
        end = time.monotonic() + self.seconds
        next_fault = time.monotonic() + self.fault_every / 2
        kinds = itertools.cycle(self.fault_kinds)
        injected = 0
        while time.monotonic() < end or injected < len(self.fault_kinds):  # every fault at least once
            self._bump(self.rand.choice(names[:-1]))
            if self.fault_kinds and time.monotonic() >= next_fault:
                kind = next(kinds)
                started = time.monotonic()
                self._inject(kind)
                injected += 1
                t = threading.Thread(target=self._recovery, args=(kind, started), daemon=True)
                t.start()
                checks.append(t)
                next_fault = time.monotonic() + self.fault_every
            time.sleep(1.0 / self.rate)
        for t in checks:
            t.join(90)
        last_change = time.monotonic()
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: all(self._applied(n) >= self.gen[n] for n in names), timeout=120, interval=0.1,
                     message="every change reconciled")
        self.report.settle_seconds = time.monotonic() - last_change
        self.report.stranded = [n for n in names if self._applied(n) < self.gen[n]]
        self._account()
        return self.report

    def _account(self) -> None:
        windows: dict[str, list[tuple[float, float, str]]] = {}
        for line in self.rec.lrange("chaos:windows", 0, -1):
            name, token, pid, enter, end, outcome = line.split()
            windows.setdefault(name, []).append((float(enter), float(end), f"{token}/{pid}/{outcome}"))
            self.report.reconciles += 1
            self.report.fenced += outcome == "fenced"
        for k in self.rec.keys("chaos:enter:*"):  # reconciles that never returned: SIGKILLed
            _, _, pid, token = k.split(":")
            name, enter = (self.rec.get(k) or " 0").split()
            if int(pid) in self.kills:
                end = min(self.kills[int(pid)], float(self.rec.get(f"chaos:lost:{pid}:{token}") or "inf"))
                windows.setdefault(name, []).append((float(enter), end, f"{token}/{pid}/killed"))
        for name, spans in windows.items():
            spans.sort()
            latest_end, latest_token = 0.0, ""
            for start, end, token in spans:
                if start < latest_end:
                    faults = [f"{kind}@{at - start:+.1f}s" for at, kind in self.report.timeline
                              if abs(at - start) < 15]
                    self.report.overlaps.append(f"{name}: token {token} began {latest_end - start:.3f} s "
                                                f"before token {latest_token} ended (faults {faults})")
                if end > latest_end:
                    latest_end, latest_token = end, token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="changes per second")
    parser.add_argument("--fault-every", type=float, default=6.0, help="seconds between faults")
    parser.add_argument("--faults", default=",".join(FAULTS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = Chaos(tmp, args.seconds, args.workers, args.concurrency, args.objects, args.rate,
                       args.fault_every, faults=tuple(f for f in args.faults.split(",") if f)).run()
    print(f"chaos run: {args.seconds:.0f} s, {args.workers} workers x {args.concurrency}, {args.objects} objects, "
          f"lease {LEASE:.0f} s, visibility {VISIBILITY:.0f} s, slow reconciles {3 * max(LEASE, VISIBILITY):.0f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("\n".join(report.lines()))
    if report.stranded or report.overlaps:
        sys.exit(1)


if __name__ == "__main__":
    main()
