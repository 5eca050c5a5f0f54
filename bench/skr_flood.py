# mypy: disable-error-code="union-attr, arg-type"
"""One SKR floods the shared cloud-skr worker: ``python bench/skr_flood.py [--objects 400] [--kib 200]
[--max-bytes 67108864]``.

The cloud test environment (dev API server with KCP, Garden and SKR clusters, Redis, moto, one
``reconcilery worker`` per Cloud queue, beat, watcher) with two active SKRs. The attacker's SKR gets
``--objects`` IpRanges with a ``--kib`` KiB annotation each (the issue's OOM: 2,000 x 256 KiB against
a 512 Mi worker). Its next connect reads past the remote read limits (``--max-bytes``, default the
setting's 64 MiB) and must fail with a ``Read limits`` condition on its SkrStatus and a Warning Event,
while the worker process survives and the other SKR keeps being connected. Printed: the cloud-skr
worker's RSS before the flood and its peak while the attacker's connects ran (sampled every 20 ms
from /proc), how long the refusal took, the condition, and whether the other SKR kept cycling.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kube import resources  # noqa: E402
from tasks.cloud import names  # noqa: E402


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """``field`` of /proc/<pid>/status in KiB (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


@dataclass
class FloodReport:
    objects: int
    kib: int
    rss_before_mib: float
    rss_peak_mib: float
    refused_after: float
    condition: dict[str, Any]
    event: str
    worker_alive: bool
    other_connects: int

    def lines(self) -> list[str]:
        return [
            f"flood: {self.objects} IpRanges x {self.kib} KiB = {self.objects * self.kib / 1024:.0f} MiB in one SKR",
            f"cloud-skr worker RSS: {self.rss_before_mib:.0f} MiB before, peak {self.rss_peak_mib:.0f} MiB "
            f"during the attacker's connects",
            f"connect refused {self.refused_after:.1f} s after the flood: {self.condition.get('outcomes')}",
            f"event: {self.event}",
            f"worker alive: {self.worker_alive}; the other SKR's connects meanwhile: {self.other_connects}",
        ]


def _connections(env: Any, kyma: str) -> int:
    status = env.kcp_get(names.SKR_STATUS, kyma)
    return len(((status or {}).get("spec") or {}).get("pastConnections") or [])


def _refusal(env: Any, kyma: str) -> dict[str, Any] | None:
    status = env.kcp_get(names.SKR_STATUS, kyma)
    for cond in ((status or {}).get("spec") or {}).get("conditions") or []:
        if cond.get("title") == "Read limits" and not cond.get("ok"):
            return dict(cond)
    return None


def flood(env: Any, objects: int, kib: int) -> FloodReport:
    """Run the scenario on a started cloud environment (``tests.integration.cloud.conftest.CloudEnv``)."""
    victim = env.runtime()
    attacker = env.runtime()
    for rt in (victim, attacker):
        env.wait(lambda rt=rt: _connections(env, rt.kyma) >= 1, timeout=120, message="first connect")
    worker = env.workers.procs[1]  # cloud-kcp first, then cloud-skr
    before = rss_kib(worker.pid)
    pad = "x" * (kib * 1024 - 200)

    def create(i: int) -> None:
        attacker.skr.create(names.SKR_IPRANGE, {"metadata": {
            "name": f"flood-{i}-{uuid.uuid4().hex[:4]}", "annotations": {"flood": pad}}, "spec": {}})

    peak = before
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.02):
            peak = max(peak, rss_kib(worker.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(objects)))
    flooded = time.monotonic()
    others = _connections(env, victim.kyma)
    condition = env.wait(lambda: _refusal(env, attacker.kyma), timeout=180, message="the refused connect's condition")
    refused_after = time.monotonic() - flooded
    env.wait(lambda: _connections(env, victim.kyma) >= others + 2, timeout=120, message="the other SKR cycles on")
    time.sleep(1.0)
    done.set()
    sampler.join()
    event = ""
    for ev in env.kcp.list(resources.EVENT, names.KCP_NAMESPACE):
        if ev.get("reason") == "ReadLimitExceeded" and (ev.get("involvedObject") or {}).get("name") == attacker.kyma:
            event = f"{ev.get('type')} {ev.get('reason')}: {ev.get('message')}"[:200]
    return FloodReport(objects, kib, before / 1024, peak / 1024, refused_after, condition, event,
                       worker.poll() is None, _connections(env, victim.kyma) - others)


class _TmpFactory:
    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=400)
    parser.add_argument("--kib", type=int, default=200)
    parser.add_argument("--max-bytes", type=int, default=0, help="RECONCILERY_REMOTE_LIST_MAX_BYTES (0: default)")
    args = parser.parse_args()
    from tests.integration.cloud import conftest

    if args.max_bytes:
        conftest.CLOUD_ENV["RECONCILERY_REMOTE_LIST_MAX_BYTES"] = str(args.max_bytes)
    moto = conftest.moto_endpoint.__wrapped__()
    endpoint = next(moto)
    env_gen = conftest.cloud.__wrapped__(endpoint, _TmpFactory())
    env = next(env_gen)
    try:
        report = flood(env, args.objects, args.kib)
    finally:
        env_gen.close()
        moto.close()
    print("\n".join(report.lines()))


if __name__ == "__main__":
    main()
