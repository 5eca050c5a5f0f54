"""Hostile bodies against both webhooks (issue 17): oversized, deeply nested and ``[[],...]`` bodies are
answered with a 4xx review of the endpoint's kind, and the server keeps answering; a trickling client
gets 408 and too many at once get 429."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.unit.webhooks.conftest import Served, client, post
from webhooks import server
from webhooks.review import (
    ADMISSION,
    CONVERSION,
    MAX_DEPTH,
    MalformedReview,
    Review,
    json_guard,
    loads,
)

KIND = {"/mutate--v1-pod": "AdmissionReview", "/convert": "ConversionReview"}


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def review_with(value: Any, path: str) -> bytes:
    if path == "/convert":
        request = {"uid": "h-1", "desiredAPIVersion": "gateway.kyma-project.io/v2", "objects": [value]}
        return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                           "request": request}).encode()
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "h-1", "object": value}}).encode()


def empty_lists(size: int) -> bytes:
    """``[[],[],...]`` of about ``size`` bytes: ~22 times its size as Python lists."""
    return b"[" + b"[]," * (size // 3 - 1) + b"[]]"


HOSTILE = [
    ("oversized", lambda path: b'{"a":"' + b"x" * (ADMISSION.max_body_bytes + 10) + b'"}', 413),
    ("deeply nested", lambda path: nested(200_000), 400),
    ("deeply nested inside a review", lambda path: review_with(json.loads(nested(MAX_DEPTH)), path), 400),
    ("empty lists", lambda path: empty_lists(ADMISSION.max_body_bytes - 16), 413),
    ("empty lists inside a review", lambda path: review_with([[]] * 400_000, path), 413),
    ("unbalanced", lambda path: b"[" * 200_000, 400),
]


@pytest.mark.parametrize("which", ["snatch", "conversion"])
@pytest.mark.parametrize(("name", "make", "code"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_bodies_get_a_4xx_review(which: str, name: str, make: Any, code: int,
                                         request: pytest.FixtureRequest, ca: Any) -> None:
    port, path, valid = request.getfixturevalue(which)
    status, answer = post(port, path, make(path), client(ca))
    assert status == code, answer
    assert answer["kind"] == KIND[path]
    response = answer["response"]
    failed = response["status"] if path == "/mutate--v1-pod" else response["result"]
    assert failed["status"] == "Failure" and failed["code"] == code and failed["message"]
    if path == "/mutate--v1-pod":
        assert response["allowed"] is False
    assert post(port, path, valid, client(ca))[0] == 200  # still serving


def test_a_review_request_keeps_its_uid_when_it_is_malformed(conversion: Served, ca: Any) -> None:
    port, path, valid = conversion
    status, answer = post(port, path, {**valid, "request": {"uid": "keep-me", "objects": []}}, client(ca))
    assert status == 400 and answer["response"]["uid"] == "keep-me"
    assert "desiredAPIVersion" in answer["response"]["result"]["message"]


GUARD = [
    ("ordinary", json.dumps({"a": [{"b": "c[{"}] * 10, "d": "\\\"]]]"}).encode(), None),
    ("at the depth limit", nested(MAX_DEPTH), None),
    ("one deeper", nested(MAX_DEPTH + 1), "deeper"),
    ("brackets in strings do not count", json.dumps(["[" * 10_000, "{" * 10_000]).encode(), None),
    ("many empty lists", empty_lists(2 * 1024 * 1024), "parsed"),
    ("many empty objects", b"[" + b"{}," * 400_000 + b"{}]", "parsed"),
    ("many short strings", b"[" + b'"ab",' * 1_200_000 + b'"ab"]', "parsed"),
    ("unmatched", b"]" * 1000, "do not match"),
]


@pytest.mark.parametrize(("name", "body", "fragment"), GUARD, ids=[g[0] for g in GUARD])
def test_json_guard(name: str, body: bytes, fragment: str | None) -> None:
    if fragment is None:
        json_guard(body)
        json.loads(body)
        return
    with pytest.raises(MalformedReview) as caught:
        json_guard(body)
    assert fragment in caught.value.message


def test_loads_needs_utf8_and_never_recurses_too_deep() -> None:
    with pytest.raises(MalformedReview, match="UTF-8"):
        loads('{"a": 1}'.encode("utf-16"))
    with pytest.raises(MalformedReview, match="not JSON"):
        loads(b"{nope")
    assert loads('{"ü": 1}') == {"ü": 1}


def test_guard_is_fast_on_the_largest_body() -> None:
    body = review_with({"data": {f"k{i}": "v" * 40 for i in range(60_000)}}, "/convert")
    assert len(body) < CONVERSION.max_body_bytes
    started = time.perf_counter()
    loads(body)
    assert time.perf_counter() - started < 5.0  # generous: shared CI machines


# ---- time and concurrency bounds, on a plain HTTP endpoint ---------------------------------------------


async def _serve(decide: server.AsyncDecide, limits: server.Limits) -> tuple[Any, int]:
    handler = server.review_endpoint(ADMISSION, decide, limits=limits)
    return await server.listen(server.review_app(ADMISSION, {"/review": handler}), "127.0.0.1", 0)


async def _raw(port: int, head: bytes, body: bytes) -> tuple[int, dict[str, Any]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head + body)
    await writer.drain()
    head_bytes = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    status_line, *headers = head_bytes.decode().split("\r\n")
    length = next(int(h.split(":")[1]) for h in headers if h.lower().startswith("content-length:"))
    data = await asyncio.wait_for(reader.readexactly(length), 10)
    writer.close()
    return int(status_line.split()[1]), json.loads(data)


def _head(length: int) -> bytes:
    return (f"POST /review HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n"
            f"Connection: close\r\n\r\n").encode()


def test_a_trickling_client_gets_408() -> None:
    async def decide(review: Review) -> dict[str, Any]:
        return {"allowed": True}

    async def run() -> tuple[int, dict[str, Any], float]:
        runner, port = await _serve(decide, server.Limits(timeout=0.5))
        try:
            started = time.monotonic()
            status, answer = await _raw(port, _head(1000), b'{"apiVersion"')  # the rest never comes
            return status, answer, time.monotonic() - started
        finally:
            await runner.cleanup()

    status, answer, took = asyncio.run(run())
    assert status == 408 and answer["kind"] == "AdmissionReview" and answer["response"]["status"]["code"] == 408
    assert took < 5


@pytest.mark.parametrize(("pad", "limits"), [
    (0, server.Limits(max_requests=2, queue_timeout=0.2)),
    # large bodies: one answered, one waiting (its body is buffered meanwhile), the third refused at once
    (server.THREAD_PARSE_BYTES, server.Limits(max_large=1, queue_timeout=2.0)),
], ids=["requests", "large requests"])
def test_requests_beyond_the_bound_get_429(pad: int, limits: server.Limits) -> None:
    release = asyncio.Event()

    async def decide(review: Review) -> dict[str, Any]:
        await release.wait()
        return {"allowed": True}

    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "c", "pad": "x" * pad}}).encode()

    async def run() -> list[int]:
        runner, port = await _serve(decide, limits)
        try:
            calls = [asyncio.create_task(_raw(port, _head(len(body)), body)) for _ in range(3)]
            await asyncio.wait(calls, timeout=5, return_when=asyncio.FIRST_COMPLETED)
            release.set()
            return sorted([(await c)[0] for c in calls])
        finally:
            await runner.cleanup()

    assert asyncio.run(run()) == [200, 200, 429]


def test_a_client_trickling_headers_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "KEEPALIVE_SECONDS", 0.5)

    async def decide(review: Review) -> dict[str, Any]:
        return {"allowed": True}

    async def run() -> float:
        runner, port = await _serve(decide, server.Limits())
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            started = time.monotonic()
            for byte in b"POST /review HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
                writer.write(bytes([byte]))
                try:
                    if await asyncio.wait_for(reader.read(1), 0.1) == b"":
                        break
                except TimeoutError:
                    continue
            took = time.monotonic() - started
            writer.close()
            return took
        finally:
            await runner.cleanup()

    assert asyncio.run(run()) < 3.0  # closed at the header deadline, before the headers were done (~4 s)
