"""SKR clusters on their own dev API server process, for ``bench/skr_sweep.py --apiservers N``.

``python -m bench.skr_shard --port P --templates FILE --skrs S --shard k --shards N --providers aws``
serves fleet SKRs ``k, k + N, k + 2N, ...`` (below ``S``) at ``http://127.0.0.1:P/clusters/<kyma>``, one
:class:`kubedev.DevAPIServer` (kubedev's server, unchanged) in this process. The clusters are seeded in
this process before it listens, as the bench's own process seeds them (:func:`bench.skr_fleet.seed_cluster`
and a clone of the provider's steady template, ``FILE`` holding :func:`bench.skr_fleet.template_to_json`
per provider): store calls, no HTTP. The KCP side of each SKR (its kubeconfig Secret pointing here, Scope,
KCP mirrors) is the bench's.

Control over stdin and stdout, one JSON line each way: once listening the process writes ``{"ready": url,
"seeded": n, "seed_s": s}``; then answers ``counts`` with ``{"requests": n, "verbs": {...}}`` (summed over
its clusters, :meth:`DevAPIServer.request_counts`) and ``marks`` with ``{"starts": {kyma: [t, ...]},
"requests": {kyma: [t, ...]}}`` (``time.monotonic()``, one clock for every process of the machine: each
connect's start, the installer's read of the IpRange CRD, and every request's arrival; cleared by the
read). It exits on end of input (its parent is gone) or SIGTERM.

:class:`ShardProcess` starts one such process and talks to it; :class:`ShardedSkrs` is a fleet of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]

from bench import procstat, skr_fleet  # noqa: E402
from kubedev import DevAPIServer  # noqa: E402
from kubedev.server import kubeconfig_dict  # noqa: E402

__all__ = ["START_MARKER", "ShardProcess", "ShardedSkrs", "record_marks", "shard_of"]

#: A connect's start in an SKR cluster: the installer's one list of our CRDs (by label), which every connect
#: makes once, right after its readiness check (it read the IpRange CRD by name before the list).
START_MARKER = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def shard_of(i: int, shards: int) -> int:
    """The server (0-based) of fleet SKR ``i`` among ``shards``: by index, round robin."""
    return i % shards


def record_marks(server: DevAPIServer, starts: dict[str, list[float]], requests: dict[str, list[float]],
                 lock: threading.Lock | None = None) -> None:
    """Record, per SKR cluster of ``server``, each connect's start (:data:`START_MARKER`) in ``starts`` and
    every request's arrival in ``requests`` (``time.monotonic()``): a bench-side wrapper of each cluster's
    handler. ``lock``: taken around the appends (when another thread reads the lists meanwhile)."""
    for name in server.clusters.names():
        handler = server.clusters.handler(name)
        assert handler is not None
        original = handler.dispatch
        own_starts, own_requests = starts[name], requests[name]

        async def dispatch(request: Any, path: str | None = None, _original: Any = original,
                           _starts: list[float] = own_starts, _requests: list[float] = own_requests) -> Any:
            now = time.monotonic()
            is_start = request.method == "GET" and (path or "").endswith(START_MARKER)
            if lock is not None:
                with lock:
                    _requests.append(now)
                    if is_start:
                        _starts.append(now)
            else:
                _requests.append(now)
                if is_start:
                    _starts.append(now)
            return await _original(request, path)

        handler.dispatch = dispatch  # type: ignore[method-assign]


def _serve(args: argparse.Namespace) -> None:
    providers = [p for p in args.providers.split(",") if p]
    raw = json.loads(Path(args.templates).read_text())
    server = DevAPIServer(port=args.port)
    started = time.perf_counter()
    templates: dict[str, skr_fleet.Template] = {}
    seeded = 0
    for i in range(args.shard, args.skrs, args.shards):
        kyma, provider = skr_fleet.kyma_name(i), providers[i % len(providers)]
        store = server.clusters.add(kyma)
        skr_fleet.seed_cluster(store, provider)
        if provider not in templates:
            templates[provider] = skr_fleet.template_from_json(raw[provider], store)
        skr_fleet.clone_skr(store, templates[provider], kyma, i)
        seeded += 1
    seed_s = time.perf_counter() - started
    starts: dict[str, list[float]] = defaultdict(list)
    requests: dict[str, list[float]] = defaultdict(list)
    record_marks(server, starts, requests)  # appends on the server's loop only: no lock
    server.start()
    _answer({"ready": server.url, "seeded": seeded, "seed_s": round(seed_s, 2)})

    def marks() -> dict[str, Any]:
        out = {"starts": {k: list(v) for k, v in starts.items() if v},
               "requests": {k: list(v) for k, v in requests.items() if v}}
        for v in (*starts.values(), *requests.values()):
            v.clear()  # the wrappers hold these lists: clear them, never replace them
        return out

    try:
        for line in sys.stdin:
            op = line.strip()
            if op == "counts":
                _answer({"requests": server.request_count("*"), "verbs": server.request_counts("*")})
            elif op == "marks":
                _answer(server.call(marks, timeout=None))
            elif op:
                _answer({"error": f"unknown command {op!r}"})
    finally:
        server.stop()


def _answer(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class ShardProcess:
    """One SKR server process (this module's ``main``) serving fleet SKRs ``shard, shard + shards, ...``
    below ``skrs`` on ``port``; :meth:`ask` sends one command and returns its answer. Stop it with
    :meth:`stop` (SIGTERM to its process group)."""

    def __init__(self, port: int, templates: Path, skrs: int, shard: int, shards: int, providers: list[str],
                 log: Path) -> None:
        self.port = port
        self.shard = shard
        self.url = f"http://127.0.0.1:{port}"
        self._log: IO[bytes] = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.skr_shard", "--port", str(port), "--templates", str(templates),
             "--skrs", str(skrs), "--shard", str(shard), "--shards", str(shards), "--providers", ",".join(providers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, cwd=ROOT, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        self._lock = threading.Lock()
        self.ready: dict[str, Any] = {}

    def wait_ready(self) -> dict[str, Any]:
        """Block until the process listens; returns its ready line. Raises ``RuntimeError`` if it died."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"SKR server {self.shard} exited with {self.proc.wait()}; see its log")
        self.ready = json.loads(line)
        return self.ready

    def ask(self, op: str) -> dict[str, Any]:
        """Send command ``op`` and return the answer (a dict)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self._lock:
            self.proc.stdin.write(op.encode() + b"\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"SKR server {self.shard} is gone")
        return dict(json.loads(line))

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL after 10 s) and close its pipes and log."""
        from tests.fixtures.processes import stop_process

        stop_process(self.proc)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self._log.close()


class ShardedSkrs:
    """The fleet's SKR clusters on ``shards`` server processes (SKR ``i`` on :func:`shard_of`), started
    together; each seeds its own SKRs from ``templates`` (provider -> template). Use :meth:`start` then
    :meth:`wait_ready`; :meth:`url` names SKR ``i``'s server."""

    def __init__(self, shards: int, skrs: int, providers: list[str], templates: dict[str, skr_fleet.Template],
                 logdir: Path, ports: list[int]) -> None:
        path = logdir / "templates.json"
        path.write_text(json.dumps({p: skr_fleet.template_to_json(t) for p, t in templates.items()}))
        self.shards = shards
        self.processes = [ShardProcess(ports[k], path, skrs, k, shards, providers, logdir / f"apiserver-{k}.log")
                          for k in range(shards)]

    def url(self, i: int) -> str:
        """The server URL of fleet SKR ``i``."""
        return self.processes[shard_of(i, self.shards)].url

    def wait_ready(self) -> float:
        """Block until every process listens; returns the slowest one's seed seconds."""
        return max(float(p.wait_ready()["seed_s"]) for p in self.processes)

    @property
    def pids(self) -> list[int]:
        """The server processes' pids."""
        return [p.proc.pid for p in self.processes]

    def counts(self) -> tuple[int, dict[str, int]]:
        """Requests served so far over every SKR cluster, in all and by verb."""
        total, verbs = 0, Counter[str]()
        for p in self.processes:
            answer = p.ask("counts")
            total += int(answer["requests"])
            verbs.update(answer["verbs"])
        return total, dict(verbs)

    def marks(self) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        """Per SKR, connect starts and request arrival times since the last call (which they clear)."""
        starts: dict[str, list[float]] = defaultdict(list)
        requests: dict[str, list[float]] = defaultdict(list)
        for p in self.processes:
            answer = p.ask("marks")
            starts.update(answer["starts"])
            requests.update(answer["requests"])
        return starts, requests

    def cpu_seconds(self) -> float:
        """CPU seconds used so far by the server processes."""
        return procstat.cpu_seconds(self.pids)

    def stop(self) -> None:
        """Stop every server process."""
        for p in self.processes:
            p.stop()


def kubeconfig_of(url: str, kyma: str) -> dict[str, Any]:
    """The kubeconfig of SKR ``kyma`` served by the dev API server at ``url``."""
    return kubeconfig_dict(f"{url}/clusters/{kyma}", "dev", kyma)


def main() -> None:
    """Parse the arguments and serve (see the module doc)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--templates", required=True, help="JSON file: provider -> skr_fleet.template_to_json")
    parser.add_argument("--skrs", type=int, required=True, help="fleet size (SKRs 0 .. skrs - 1)")
    parser.add_argument("--shard", type=int, default=0, help="this server's number (0-based)")
    parser.add_argument("--shards", type=int, default=1, help="servers in all")
    parser.add_argument("--providers", default="aws", help="the fleet's providers, round robin")
    _serve(parser.parse_args())


if __name__ == "__main__":
    main()
