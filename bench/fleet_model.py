"""The fleet on paper: worker processes, Redis load and API requests of 100,000 SKRs and the other
domains at their issue-31 sizes, from measured costs given as arguments.

    python bench/fleet_model.py [--skrs 100000] [--connect 10] [--revisit 300] [--cpu-ms-per-connect 6] ...

Every input is a parameter whose default is a measurement of this repository (the source is in its
help): the Redis costs from ``bench/redis_cost.py``, the worker CPU per connect from
``bench/skr_sweep.py`` (5-7 ms), the API requests per steady connect from docs/cloud.md. Inputs that
were not measured (the CPU of a KCP or NGINX resync reconcile) say so in their help; pass better numbers
when there are some. Prints one row per load, the totals, where one Redis shard saturates, and one JSON
line. Nothing is run: this is arithmetic (the pure :func:`model`), unit-tested in
``tests/unit/test_fleet_model.py``.

The loads:

- **SKR connects**: ``skrs / revisit`` connects per second (each SKR once per ``revisit``), each in flight
  ``connect`` seconds, each costing ``cpu_ms_per_connect`` of worker CPU, the Redis of one steady connect
  (sweep, fetch, the reconcile's rotation calls, done) and its KCP and SKR requests;
- **KCP objects of the SKRs**: the ``cloud-kcp`` keys every SKR brings (its Kyma, resynced every 600 s,
  its Scope every 1,800 s, and ``kcp_kinds`` KCP mirrors resynced every ``kcp_resync``), each a workqueue
  key (add, fetch, done);
- **APIRules**: ``apirules`` resynced every ``apirule_resync`` (live changes are few beside it);
- **NGINX edge**: ``services x hosts`` keys resynced every ``nginx_resync``; a Node change enqueues all
  of them at once (a burst, shown apart).

Worker processes: a process runs its reconciles on threads under one GIL, so it gives at most
``core_share`` of a core, and holds at most ``in_flight_per_process`` reconciles (the memory bound of
issue 31: 700 connects in flight in 1 GiB); a domain needs the larger of the two counts. Redis: one
shard is one core; it is planned to ``headroom`` of it (0.5: half a core, so a Node burst or a resync
storm does not saturate it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: The Kyma and Scope controllers' resync intervals (tasks/cloud/controller.py), seconds.
KYMA_RESYNC = 600.0
SCOPE_RESYNC = 1800.0
#: Redis commands per held key and renewal (``renew.lua``: HGET, ZADD; bench/redis_cost.py).
RENEW_CMDS = 2.25


@dataclass(frozen=True)
class Inputs:
    """The model's inputs (seconds, milliseconds of CPU, microseconds of Redis CPU; counts per unit)."""

    skrs: int = 100_000
    connect: float = 10.0
    revisit: float = 300.0
    cpu_ms_per_connect: float = 10.4
    kcp_requests_per_connect: float = 3.0
    skr_requests_per_connect: float = 13.0
    kcp_kinds: int = 4
    kcp_resync: float = 600.0
    kcp_cpu_ms: float = 5.0
    kcp_requests_per_resync: float = 1.0
    apirules: int = 100_000
    apirule_resync: float = 1800.0
    apirule_cpu_ms: float = 7.0
    apirule_requests_per_resync: float = 1.0
    nginx_services: int = 1000
    nginx_hosts: int = 4
    nginx_resync: float = 300.0
    nginx_cpu_ms: float = 2.0
    nginx_plus_requests_per_resync: float = 1.0
    redis_us_per_key: float = 160.0
    redis_cmds_per_key: float = 38.0
    redis_trips_per_key: float = 2.0
    redis_us_per_connect: float = 325.0
    redis_cmds_per_connect: float = 61.0
    redis_trips_per_connect: float = 6.0
    redis_us_per_renewal: float = 8.0
    redis_us_per_audited_key: float = 0.56
    lease: float = 10.0
    audit_interval: float = 2.0
    core_share: float = 0.8
    in_flight_per_process: int = 700
    headroom: float = 0.5


_HELP = {
    "skrs": "active SKRs",
    "connect": "seconds one connect runs (the original's 10-20 s)",
    "revisit": "seconds between two connects of one SKR (the target: 300)",
    "cpu_ms_per_connect": "worker CPU ms per steady connect (bench/skr_sweep.py --kinds all: 10.4 ms)",
    "kcp_requests_per_connect": "KCP API requests per steady connect (docs/cloud.md, every GA kind on AWS: 3)",
    "skr_requests_per_connect": "SKR API requests per steady connect (docs/cloud.md, every GA kind on AWS: 13)",
    "kcp_kinds": "KCP mirror objects per SKR resynced every --kcp-resync (IpRange, VpcPeering, Nfs, Redis)",
    "kcp_resync": "seconds between resyncs of a KCP Cloud object (tasks/cloud/registry.py: 600)",
    "kcp_cpu_ms": "worker CPU ms per unchanged KCP resync reconcile (NOT measured: an estimate)",
    "kcp_requests_per_resync": "KCP requests per unchanged KCP resync reconcile (the GET; estimate)",
    "apirules": "APIRules",
    "apirule_resync": "seconds between resyncs of every APIRule (RECONCILERY_APIRULE_RESYNC_SECONDS)",
    "apirule_cpu_ms": "worker CPU ms per APIRule resync (a create's 6.5-7.1 ms: an upper bound)",
    "apirule_requests_per_resync": "API requests per unchanged APIRule resync (docs/apigateway.md: 1 GET)",
    "nginx_services": "Services of the NGINX edge",
    "nginx_hosts": "NGINX Plus hosts (keys = services x hosts)",
    "nginx_resync": "seconds between resyncs of every NGINX key (RECONCILERY_NGINX_RESYNC_SECONDS: 300)",
    "nginx_cpu_ms": "worker CPU ms per converged NGINX resync (NOT measured: an estimate)",
    "nginx_plus_requests_per_resync": "NGINX Plus requests per converged resync (docs/nginx.md: one GET)",
    "redis_us_per_key": "Redis CPU us per key, add + fetch(limit 1) + done (bench/redis_cost.py)",
    "redis_cmds_per_key": "Redis commands per key incl. inside scripts (bench/redis_cost.py)",
    "redis_trips_per_key": "client round trips per key (bench/redis_cost.py: fetch, done)",
    "redis_us_per_connect": "Redis CPU us per steady SKR connect (bench/redis_cost.py)",
    "redis_cmds_per_connect": "Redis commands per steady SKR connect incl. inside scripts (bench/redis_cost.py)",
    "redis_trips_per_connect": "client round trips per steady SKR connect (bench/redis_cost.py)",
    "redis_us_per_renewal": "Redis CPU us per held key per renewal (bench/redis_cost.py)",
    "redis_us_per_audited_key": "Redis CPU us per held key per dispatcher audit (bench/redis_cost.py: "
                                "1.9 ms per audit with 3,400 held)",
    "lease": "seconds of a lease (RECONCILERY_LEASE_SECONDS); renewed every third of it",
    "audit_interval": "seconds between a dispatcher's audits (workers/dispatch.py: 2)",
    "core_share": "share of a core one worker process (one GIL) can use",
    "in_flight_per_process": "reconciles one process holds at most (issue 31: 700 connects in 1 GiB)",
    "headroom": "share of one Redis core a shard is planned to (the rest absorbs bursts)",
}


@dataclass(frozen=True)
class Row:
    """One load: keys (or connects) per second, in flight, worker cores and processes, Redis CPU
    (us per second), commands and round trips per second, API requests per second (KCP or the domain's
    cluster; SKRs in all)."""

    load: str
    per_s: float
    in_flight: float
    cores: float
    processes: int
    redis_us_per_s: float
    redis_cmds_per_s: float
    redis_trips_per_s: float
    kcp_requests_per_s: float
    other_requests_per_s: float


@dataclass(frozen=True)
class Model:
    """The rows, their totals, and the Redis shard: share of one core used, shards needed at
    ``headroom``, and how many times the whole load one shard carries at ``headroom`` and at 100 %."""

    rows: list[Row]
    total: Row
    redis_core_share: float
    shards: int
    scale_at_headroom: float
    scale_at_saturation: float
    nginx_burst_keys: int
    nginx_burst_redis_s: float


def _processes(cores: float, in_flight: float, i: Inputs) -> int:
    return max(1, math.ceil(cores / i.core_share), math.ceil(in_flight / i.in_flight_per_process))


def _keys_row(i: Inputs, load: str, per_s: float, cpu_ms: float, seconds: float, requests: float,
              kcp: bool) -> Row:
    """A load of plain workqueue keys: ``per_s`` reconciles of ``cpu_ms`` lasting ``seconds``."""
    in_flight = per_s * seconds
    cores = per_s * cpu_ms / 1000
    return Row(load, per_s, in_flight, cores, _processes(cores, in_flight, i), per_s * i.redis_us_per_key,
               per_s * i.redis_cmds_per_key, per_s * i.redis_trips_per_key,
               per_s * requests if kcp else 0.0, 0.0 if kcp else per_s * requests)


def model(i: Inputs) -> Model:
    """The loads of :class:`Inputs` (see the module doc). Raises ``ValueError`` when a connect takes
    longer than the revisit interval (an SKR could not be revisited in time by any number of workers:
    one SKR is connected by one worker at a time) or an input is not positive where it must be."""
    if i.connect > i.revisit:
        raise ValueError(f"a connect ({i.connect} s) longer than the revisit interval ({i.revisit} s)")
    for name in ("revisit", "kcp_resync", "apirule_resync", "nginx_resync", "lease", "audit_interval",
                 "core_share", "headroom"):
        if getattr(i, name) <= 0:
            raise ValueError(f"{name} must be positive")
    connects = i.skrs / i.revisit
    in_flight = connects * i.connect
    cores = connects * i.cpu_ms_per_connect / 1000
    skr = Row("SKR connects", connects, in_flight, cores, _processes(cores, in_flight, i),
              connects * i.redis_us_per_connect, connects * i.redis_cmds_per_connect,
              connects * i.redis_trips_per_connect, connects * i.kcp_requests_per_connect,
              connects * i.skr_requests_per_connect)
    kcp_per_s = i.skrs * (1 / KYMA_RESYNC + 1 / SCOPE_RESYNC + i.kcp_kinds / i.kcp_resync)
    kcp = _keys_row(i, "KCP objects of the SKRs", kcp_per_s, i.kcp_cpu_ms, i.kcp_cpu_ms / 1000,
                    i.kcp_requests_per_resync, kcp=True)
    api = _keys_row(i, "APIRules (resync)", i.apirules / i.apirule_resync, i.apirule_cpu_ms,
                    i.apirule_cpu_ms / 1000, i.apirule_requests_per_resync, kcp=False)
    nginx_keys = i.nginx_services * i.nginx_hosts
    nginx = _keys_row(i, "NGINX edge (resync)", nginx_keys / i.nginx_resync, i.nginx_cpu_ms, i.nginx_cpu_ms / 1000,
                      i.nginx_plus_requests_per_resync, kcp=False)
    rows = [skr, kcp, api, nginx]
    held = sum(r.in_flight for r in rows)
    processes = sum(r.processes for r in rows)
    # leases: every held key is renewed every third of a lease (one call per process); audits: each
    # dispatcher walks the held keys of its own queue every audit_interval
    audited = sum(r.processes / i.audit_interval * r.in_flight for r in rows)
    rows.append(Row("leases (renewals) and audits", 0.0, 0.0, 0.0, 0,
                    held * (3 / i.lease) * i.redis_us_per_renewal + audited * i.redis_us_per_audited_key,
                    held * (3 / i.lease) * RENEW_CMDS + audited,
                    processes * (1 / i.audit_interval + 3 / i.lease), 0.0, 0.0))
    total = Row("total", sum(r.per_s for r in rows), held, sum(r.cores for r in rows), processes,
                *(sum(getattr(r, f) for r in rows) for f in ("redis_us_per_s", "redis_cmds_per_s",
                                                            "redis_trips_per_s", "kcp_requests_per_s",
                                                            "other_requests_per_s")))
    share = total.redis_us_per_s / 1e6
    return Model(rows, total, share, max(1, math.ceil(share / i.headroom)),
                 i.headroom / share if share else math.inf, 1 / share if share else math.inf,
                 nginx_keys, nginx_keys * i.redis_us_per_key / 1e6)


def table(m: Model) -> str:
    """The model as a text table."""
    head = (f"{'load':<30} {'per s':>8} {'in flight':>9} {'cores':>6} {'procs':>5} {'Redis ms/s':>10} "
            f"{'cmds/s':>8} {'trips/s':>8} {'KCP req/s':>9} {'other req/s':>11}")
    lines = [head, "-" * len(head)]
    for r in [*m.rows, m.total]:
        lines.append(f"{r.load:<30} {r.per_s:>8,.0f} {r.in_flight:>9,.0f} {r.cores:>6.2f} {r.processes:>5} "
                     f"{r.redis_us_per_s / 1000:>10.1f} {r.redis_cmds_per_s:>8,.0f} {r.redis_trips_per_s:>8,.0f} "
                     f"{r.kcp_requests_per_s:>9,.0f} {r.other_requests_per_s:>11,.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in fields(Inputs):
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default,
                        help=f"{_HELP[f.name]} (default {f.default})")
    args = ap.parse_args(argv)
    i = Inputs(**vars(args))
    m = model(i)
    print(table(m))
    print(f"\nOne Redis shard (one core): {m.redis_core_share * 100:.1f} % used; planned to "
          f"{i.headroom * 100:.0f} %: {m.shards} shard(s); one shard carries {m.scale_at_headroom:.1f}x this load "
          f"at {i.headroom * 100:.0f} % and {m.scale_at_saturation:.1f}x at saturation "
          f"(~{i.skrs * m.scale_at_saturation:,.0f} SKRs with the other domains scaled alike).")
    print(f"A Node change of the NGINX edge enqueues {m.nginx_burst_keys:,} keys at once: "
          f"{m.nginx_burst_redis_s * 1000:.0f} ms of Redis CPU.")
    print(json.dumps({"inputs": asdict(i), "rows": [asdict(r) for r in m.rows], "total": asdict(m.total),
                      "redis_core_share": round(m.redis_core_share, 4), "shards": m.shards,
                      "scale_at_headroom": round(m.scale_at_headroom, 2),
                      "scale_at_saturation": round(m.scale_at_saturation, 2)}))


if __name__ == "__main__":
    main()
