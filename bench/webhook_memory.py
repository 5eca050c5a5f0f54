"""Peak RSS of the webhook process under the largest bodies it accepts (and some it refuses).

Starts what ``reconcilery webhook`` serves, in a separate process: the Snatch admission webhook
(``/mutate--v1-pod``, a fixed cluster view) and the API Gateway's ``/convert`` listener, both with dev
certificates. Then, body by body, it resets the process's peak RSS (``/proc/<pid>/clear_refs``), sends
the body ``--concurrent`` times at once to the endpoint, and prints the answer and the peak RSS
(``VmHWM``) above the idle RSS.

    .venv/bin/python bench/webhook_memory.py [--concurrent 8]

Bodies: the largest accepted ones (a Pod padded with one annotation; a Pod with as many env vars as
fit; ``[[],[],...]`` as large as the JSON guard lets through; a ConversionReview of as many APIRules
as fit) and refused ones (``[[],...]`` of the full body limit, 200,000 nesting levels).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import ssl
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.webhook import free_port, snatch_server, wait_listening
from tasks.snatch.mutate import admission_review
from webhooks.review import ADMISSION, CONTAINER_COST, CONVERSION, MAX_PARSED_BYTES, VALUE_COST, MiB

G = "gateway.kyma-project.io"
POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "kyma-system"},
                       "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}
APIRULE: dict[str, Any] = {
    "apiVersion": f"{G}/v2alpha1", "kind": "APIRule",
    "metadata": {"name": "r", "namespace": "shop", "uid": "u", "resourceVersion": "1",
                 "annotations": {f"{G}/original-version": "v2"}},
    "spec": {"hosts": ["orders.example.com"], "service": {"name": "orders", "port": 8080},
             "gateway": "kyma-system/kyma-gateway",
             "rules": [{"path": "/orders/{**}", "methods": ["GET", "POST"],
                        "jwt": {"authentications": [{"issuer": "https://issuer", "jwksUri": "https://issuer/jwks"}]}},
                       {"path": "/health", "methods": ["GET"], "noAuth": True}]},
}


def _serve(cert_dir: str, mutate_port: int, convert_port: int) -> None:
    import logging

    from tasks.apigateway.webhook import ConversionWebhook
    from webhooks.certificates import KeyPair

    logging.basicConfig(level=logging.ERROR)
    snatch = snatch_server(cert_dir, mutate_port)
    secret = {"data": KeyPair.from_dir(cert_dir).secret_data()}
    conversion = ConversionWebhook(lambda: secret, host="127.0.0.1", port=convert_port)

    async def main() -> None:
        await snatch.start()
        await conversion.start()
        await asyncio.Event().wait()

    asyncio.run(main())


def _status(pid: int, field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of ``pid`` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def _admission(obj: Any) -> bytes:
    return json.dumps(admission_review(obj) if isinstance(obj, dict) else {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "m", "operation": "CREATE", "object": obj}}, separators=(",", ":")).encode()


def _conversion(objects: list[Any]) -> bytes:
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "request": {"uid": "c", "desiredAPIVersion": f"{G}/v1beta1", "objects": objects}},
                      separators=(",", ":")).encode()


def _largest(build: Callable[[int], bytes], limit: int) -> bytes:
    """``build(n)`` for the largest ``n`` whose body is at most ``limit`` bytes (bisection)."""
    low, high = 1, 1
    while len(build(high)) <= limit:
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if len(build(mid)) <= limit else (low, mid)
    return build(low)


def bodies() -> list[tuple[str, str, bytes]]:
    """``(name, path, body)`` of every case."""
    admission_limit, conversion_limit = ADMISSION.max_body_bytes, CONVERSION.max_body_bytes
    padded = _largest(lambda n: _admission({**POD, "metadata": {**POD["metadata"], "annotations": {
        "pad": "x" * n}}}), admission_limit)
    env = _largest(lambda n: _admission({**POD, "spec": {"containers": [{"name": "c", "image": "nginx", "env": [
        {"name": f"VAR_{i:06d}", "value": f"value-{i:06d}"} for i in range(n)]}]}}), admission_limit)
    # [[],...]: as many lists as the guard's estimate lets through (each list is a container and a value)
    lists = int(MAX_PARSED_BYTES / (CONTAINER_COST + VALUE_COST)) - 1000
    empty = _admission([[] for _ in range(lists)])
    apirules = _largest(lambda n: _conversion([{**APIRULE, "metadata": {**APIRULE["metadata"], "name": f"r{i}"}}
                                               for i in range(n)]), conversion_limit)
    refused_lists = b"[" + b"[]," * (admission_limit // 3 - 2) + b"[]]"
    nested = b"[" * 200_000 + b"]" * 200_000
    return [
        ("Pod with one big annotation", "/mutate--v1-pod", padded),
        ("Pod with many env vars", "/mutate--v1-pod", env),
        ("[[],...] as large as accepted", "/mutate--v1-pod", empty),
        ("[[],...] as large as accepted", "/convert", _conversion([[] for _ in range(lists)])),
        ("APIRules, as many as fit", "/convert", apirules),
        ("[[],...] of the whole limit (refused)", "/mutate--v1-pod", refused_lists),
        ("[[],...] of the whole limit (refused)", "/convert", refused_lists),
        ("200,000 levels deep (refused)", "/convert", nested),
    ]


async def _send(port: int, path: str, body: bytes, ctx: ssl.SSLContext, times: int) -> list[str]:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        async def one() -> str:
            async with session.post(f"https://localhost:{port}{path}", data=body,
                                    headers={"Content-Type": "application/json"}) as resp:
                answer = await resp.json(content_type=None)
                response = answer.get("response", {})
                failed = response.get("status") if path == "/mutate--v1-pod" else response.get("result")
                detail = (failed or {}).get("message", "")[:60] if resp.status != 200 else "ok"
                return f"{resp.status} {detail}"

        return list(await asyncio.gather(*(one() for _ in range(times))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrent", type=int, default=8, help="copies of each body sent at once (default 8)")
    args = parser.parse_args()

    from tasks.snatch.certs import ensure_dev_certs

    cases = bodies()
    with tempfile.TemporaryDirectory(prefix="webhook-memory-") as tmp:
        dev = ensure_dev_certs(tmp)
        mutate_port, convert_port = free_port(), free_port()
        proc = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(str(dev.cert_dir), mutate_port, convert_port), daemon=True)
        proc.start()
        try:
            for port in (mutate_port, convert_port):
                wait_listening(port, proc, timeout=30)
            assert proc.pid is not None
            ctx = ssl.create_default_context(cafile=str(dev.ca_path))
            idle = _status(proc.pid, "VmRSS")
            print(f"webhook process pid={proc.pid} idle RSS {idle / MiB:.0f} MiB; body limit "
                  f"{ADMISSION.max_body_bytes / MiB:.0f} MiB (admission), {CONVERSION.max_body_bytes / MiB:.0f} MiB "
                  f"(conversion); {args.concurrent} copies of each body at once")
            for name, path, body in cases:
                resettable = _reset_peak(proc.pid)
                before = _status(proc.pid, "VmRSS")
                answers = asyncio.run(_send(mutate_port if path == "/mutate--v1-pod" else convert_port, path, body,
                                            ctx, args.concurrent))
                peak = _status(proc.pid, "VmHWM")
                summary = ", ".join(sorted(set(answers)))
                print(f"{name:40s} {path:16s} {len(body) / MiB:5.2f} MiB  peak RSS {peak / MiB:6.0f} MiB "
                      f"(+{(peak - (before if resettable else idle)) / MiB:.0f} MiB)  {summary}")
            print(f"alive after all: {proc.is_alive()}")
        finally:
            proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()


if __name__ == "__main__":
    main()
