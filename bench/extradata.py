"""Cost of rendering a Redis instance's ``authSecret.extraData`` templates (prints numbers).

    .venv/bin/python -m bench.extradata [--size 40000] [--values 8]

Issue 27's attack: ``--values`` templates of ``"{{"`` x ``--size`` (80 KB each by default) rendered by
:func:`tasks.cloud.skr.redisinstance_plan.render_extra_data`, as an SKR turn would if the CRD's bounds
were not there (one scan per template, linear; the regex it replaced took 33 s per 80 KB value). Then
the same for well-formed templates (``{{.host}}:{{.port}}`` repeated to the same size), and the whole
auth Secret of an instance at the CRD's bounds (64 keys of 4096 characters).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.cloud.skr.redisinstance_plan import (  # noqa: E402
    EXTRA_DATA_MAX_KEYS,
    EXTRA_DATA_MAX_LENGTH,
    auth_secret,
    render_extra_data,
)

DATA = {"host": "10.0.0.5", "port": "6379", "authString": "s3cret"}


def timed(what: str, run: Callable[[], object], repeat: int = 5) -> None:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    print(f"{what:<58} {best * 1000:9.2f} ms (best of {repeat})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40_000, help="repetitions of the attack's '{{'")
    parser.add_argument("--values", type=int, default=8, help="templates")
    args = parser.parse_args()
    flood = {f"v{i}": "{{" * args.size for i in range(args.values)}
    fields = {f"v{i}": ("{{.host}}:{{.port}} " * (2 * args.size // 20))[:2 * args.size] for i in range(args.values)}
    at_bounds = {f"k{i}": ("{{.host}}:{{.port}} " * 300)[:EXTRA_DATA_MAX_LENGTH] for i in range(EXTRA_DATA_MAX_KEYS)}
    obj = {"metadata": {"name": "cache", "namespace": "apps"},
           "spec": {"authSecret": {"extraData": at_bounds}}}
    kb = 2 * args.size // 1024
    timed(f"{args.values} x '{{{{' x {args.size} ({kb} KB each)", lambda: render_extra_data(flood, DATA))
    timed(f"{args.values} x field actions ({kb} KB each)", lambda: render_extra_data(fields, DATA))
    timed(f"auth Secret, {EXTRA_DATA_MAX_KEYS} keys x {EXTRA_DATA_MAX_LENGTH} chars (the CRD's bounds)",
          lambda: auth_secret(obj, "0b0c5bd2-54a4-4a4e-9d4e-3c1f4b2f6a10", {"primaryEndpoint": "10.0.0.5:6379"}))


if __name__ == "__main__":
    main()
