"""Admission latency and throughput of the Snatch webhook at N concurrent clients.

Starts a webhook on 127.0.0.1 in a separate process (dev certificates, a fixed cluster view: a Kyma
pool node exists and the Pods' namespace is managed, so every request is mutated), then N aiohttp
clients send AdmissionReviews over HTTPS for a few seconds. Prints p50/p99 latency and requests/s.

    .venv/bin/python bench/webhook.py [--clients 50] [--duration 4] [--fresh-connections]

``--fresh-connections`` opens a new TLS connection per request (the API server normally keeps
connections alive, the default here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.snatch.mutate import MANAGED_BY_LABEL, admission_review

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "bench", "namespace": "kyma-system", "labels": {"app": "bench"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {}}],
             "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                 {"weight": 50, "preference": {"matchExpressions": [
                     {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}]}}]}}},
}


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: Any, timeout: float = 20.0) -> None:
    """Wait until ``127.0.0.1:port`` accepts connections; ``SystemExit`` when ``proc`` died or time is up."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline or not proc.is_alive():
                raise SystemExit("webhook did not start") from None
            time.sleep(0.05)


def snatch_server(cert_dir: str, port: int, health_port: int = 0) -> Any:
    """A Snatch :class:`tasks.snatch.webhook.SnatchWebhook` on 127.0.0.1 that mutates every Pod of
    ``kyma-system`` (a fixed cluster view), without metrics."""
    from tasks.snatch.clusterview import StaticClusterView
    from tasks.snatch.webhook import SnatchWebhook

    view = StaticClusterView(True, {"kyma-system": {MANAGED_BY_LABEL: "kyma"}})
    return SnatchWebhook(cert_dir, "cpu-worker-0", view, host="127.0.0.1", port=port, health_port=health_port,
                         metrics_port=-1)


def _serve(cert_dir: str, port: int, health_port: int) -> None:
    import logging

    logging.basicConfig(level=logging.WARNING)
    server = snatch_server(cert_dir, port, health_port)

    async def main() -> None:
        await server.start()
        await asyncio.Event().wait()

    asyncio.run(main())


async def _load(url: str, ca: str, clients: int, duration: float, fresh: bool) -> tuple[list[float], int, float]:
    import aiohttp

    ctx = ssl.create_default_context(cafile=ca)
    body = json.dumps(admission_review(POD)).encode()
    headers = {"Content-Type": "application/json"}
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=clients, ssl=ctx, force_close=fresh)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def warm() -> None:
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()

        await asyncio.gather(*(warm() for _ in range(clients)))  # open the connections first
        started = time.perf_counter()
        deadline = started + duration

        async def client() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                try:
                    async with session.post(url, data=body, headers=headers) as resp:
                        data = await resp.json()
                        if resp.status != 200 or "patch" not in data["response"]:
                            errors += 1
                            continue
                except aiohttp.ClientError:
                    errors += 1
                    continue
                latencies.append(time.perf_counter() - t0)

        await asyncio.gather(*(client() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return latencies, errors, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=4.0, help="seconds of load (default 4)")
    parser.add_argument("--fresh-connections", action="store_true", help="new TLS connection per request")
    args = parser.parse_args()

    from tasks.snatch.certs import ensure_dev_certs

    with tempfile.TemporaryDirectory(prefix="snatch-bench-") as tmp:
        dev = ensure_dev_certs(tmp)
        port, health = free_port(), free_port()
        proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(str(dev.cert_dir), port, health),
                                                            daemon=True)
        proc.start()
        try:
            wait_listening(port, proc)
            url = f"https://localhost:{port}/mutate--v1-pod"
            latencies, errors, elapsed = asyncio.run(
                _load(url, str(dev.ca_path), args.clients, args.duration, args.fresh_connections))
        finally:
            proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
    if not latencies:
        raise SystemExit(f"no successful request ({errors} errors)")
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    mode = "fresh TLS connection per request" if args.fresh_connections else "keep-alive"
    print(f"snatch webhook: {args.clients} concurrent clients, {mode}, {elapsed:.1f} s")
    print(f"requests: {len(latencies)} ok, {errors} errors")
    print(f"latency p50: {p50:.2f} ms  p99: {p99:.2f} ms")
    print(f"throughput: {len(latencies) / elapsed:.0f} requests/s")


if __name__ == "__main__":
    main()
