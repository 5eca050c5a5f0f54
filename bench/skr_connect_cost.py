# mypy: disable-error-code="index"
"""Worker CPU and requests of one steady SKR connect: ``python bench/skr_connect_cost.py [--skrs 40]
[--providers aws,gcp,azure] [--kinds all] [--profile N]``.

The measurement of docs/cloud.md (issue 31), on its own: one dev API server (its own thread) holds the
KCP and ``--skrs`` SKRs per provider, each a clone of a template brought to its steady state by the real
connect (``bench/skr_fleet.py``, as ``bench/skr_sweep.py --kinds all`` seeds them); every SKR is then
connected once by the connect controller's reconcile (``tasks.cloud.skr.connect.reconcile``, rotation
included) on this one thread, ``time.thread_time`` around each, and the requests each connect made are
the dev API server's counts (KCP and SKR, reads and writes). The first connect of each provider warms
the process (imports, parsed CRDs) and is not counted. ``--profile N`` prints the top N functions of a
``cProfile`` of the measured connects (cumulative time). Ends with one JSON line per provider.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import skr_fleet, skr_sweep  # noqa: E402
from kubedev import DevAPIServer  # noqa: E402
from reconcilery.localredis import LocalRedis  # noqa: E402
from tests.fixtures.processes import free_port  # noqa: E402

READS = ("GET", "LIST")


def _reads(counts: dict[str, int]) -> int:
    return sum(counts.get(v, 0) for v in READS)


def _writes(counts: dict[str, int]) -> int:
    return sum(counts.get(v, 0) for v in skr_fleet.WRITE_VERBS)


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)
            if after.get(k, 0) != before.get(k, 0)}


def _record_paths(server: DevAPIServer, seen: list[str]) -> None:
    """Record ``"<cluster> <method> <path>?<query>"`` of every request the server serves into ``seen``."""
    handlers = [("kcp", server._app[skr_sweep_state_key()]["handler"])]  # bench only
    handlers += [(name, server.clusters.handler(name)) for name in server.clusters.names()]
    for name, handler in handlers:
        original = handler.dispatch

        async def dispatch(request: Any, path: str | None = None, _original: Any = original, _name: str = name) -> Any:
            seen.append(f"{_name} {request.method} {path or request.path}?{request.query_string}")
            return await _original(request, path)

        handler.dispatch = dispatch


def skr_sweep_state_key() -> Any:
    from kubedev import server as devserver

    return devserver._STATE_KEY  # bench only


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skrs", type=int, default=40, help="SKRs per provider (each connected once)")
    parser.add_argument("--providers", default="aws")
    parser.add_argument("--kinds", choices=("all", "iprange"), default="all")
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions of a cProfile")
    parser.add_argument("--paths", action="store_true", help="print the requests of each provider's last connect")
    args = parser.parse_args()
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"skr-connect-cost-{os.getpid()}"
    logdir.mkdir(parents=True, exist_ok=True)
    local_redis = LocalRedis(free_port(), workdir=str(logdir / "redis")).start()
    server = DevAPIServer(port=0).start()
    try:
        server.call(lambda: skr_sweep.seed_kcp(server))
        server.write_kubeconfig(logdir / "kubeconfig")
        templates = skr_sweep.bootstrap_templates(server, local_redis.url, logdir, providers, args.kinds)
        kymas = server.call(lambda: skr_sweep.seed(server, args.skrs * len(providers), providers, templates),
                            timeout=None)
        from workers.logs import configure_logging

        configure_logging("WARNING")  # as the fleet's workers (-l WARNING): the info line of each connect is dropped
        from tasks.cloud import settings
        from tasks.cloud.skr import connect
        from tasks.cloud.sweep import rotation
        from workers.controller import Key

        rot = rotation(settings.current())
        for kyma in kymas:
            rot.activate(kyma)
        profiler = cProfile.Profile(time.thread_time) if args.profile else None  # CPU, not wall
        seen: list[str] = []
        if args.paths:
            _record_paths(server, seen)
        load = os.getloadavg()[0]
        for provider in providers:
            mine = [k for k, p in kymas.items() if p == provider]
            cpu: list[float] = []
            kcp: dict[str, int] = {}
            skr: dict[str, int] = {}
            for n, kyma in enumerate(mine):
                seen.clear()
                before_kcp, before_skr = server.request_counts(), server.request_counts(kyma)
                if profiler is not None and n:
                    profiler.enable()
                started = time.thread_time()
                result = connect.reconcile(Key("local", "kcp-system", kyma))
                spent = time.thread_time() - started
                if profiler is not None:
                    profiler.disable()
                assert result.outcome.name == "SUCCESS", (kyma, result)
                if n == 0:
                    continue  # warm-up
                cpu.append(spent)
                for total, after, before in ((kcp, server.request_counts(), before_kcp),
                                             (skr, server.request_counts(kyma), before_skr)):
                    for verb, count in _delta(after, before).items():
                        total[verb] = total.get(verb, 0) + count
                if n == len(mine) - 1 and args.paths:
                    print(f"requests of the connect of {kyma}:")
                    for line in seen:
                        print("  ", line)
            c = max(1, len(cpu))
            cpu.sort()
            print(f"{provider}: {len(cpu)} connects, worker CPU per connect mean {sum(cpu) / c * 1000:.2f} ms, "
                  f"min {cpu[0] * 1000:.2f}, p50 {cpu[len(cpu) // 2] * 1000:.2f}, "
                  f"p90 {cpu[len(cpu) * 9 // 10] * 1000:.2f} ms; KCP {dict(sorted(kcp.items()))}, "
                  f"SKR {dict(sorted(skr.items()))} (in all); load {load:.2f} before, {os.getloadavg()[0]:.2f} after")
            print(json.dumps({"provider": provider, "connects": len(cpu), "kinds": args.kinds,
                              "worker_cpu_ms_per_connect": round(sum(cpu) / c * 1000, 2),
                              "worker_cpu_ms_p50": round(cpu[len(cpu) // 2] * 1000, 2),
                              "worker_cpu_ms_min": round(cpu[0] * 1000, 2),
                              "kcp_reads_per_connect": round(_reads(kcp) / c, 2),
                              "kcp_writes_per_connect": round(_writes(kcp) / c, 2),
                              "skr_reads_per_connect": round(_reads(skr) / c, 2),
                              "skr_writes_per_connect": round(_writes(skr) / c, 2),
                              "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}))
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
    finally:
        from informers import informer

        informer.reset()  # the KCP informers the connects started (tasks.cloud.reads), before their server
        server.stop()
        local_redis.stop()


if __name__ == "__main__":
    main()
