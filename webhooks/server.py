"""The HTTPS side of the review skeleton (aiohttp): the review endpoint and the listener plumbing.

:func:`review_endpoint` reads a request body (bounded), parses it with :func:`webhooks.review.parse`
(in a worker thread when it is large), awaits the domain's decision and answers the review;
:func:`listen` serves an application on a host and port with a TLS context from
:class:`webhooks.tls.CertificateReloader`.

Every review endpoint is bounded (:class:`Limits`): a request gets ``timeout`` seconds in all (reading
its body included: a client that trickles is answered 408), at most ``max_requests`` are answered at
once (others wait up to ``queue_timeout``, then get 429) and at most ``max_large`` of them have large
bodies (as many more may wait; the rest get 429 at once, since a waiting connection's body is buffered),
so memory stays near ``max_large`` x (body + parsed body) + 2 x ``max_large`` bodies whatever the
clients send. Idle keep-alive connections, and connections whose headers do not arrive, close after
:data:`KEEPALIVE_SECONDS`. Every such refusal is a review of the
endpoint's kind with a failed status, as malformed bodies are.

Every review endpoint is counted and timed under the fixed name of its webhook (``snatch``,
``apirule-conversion``, ``apirule-v1beta1``: the ``webhook`` argument of :func:`review_endpoint`, else the
name :func:`review_app` gives its application):

- ``reconcilery_webhook_requests_total{webhook,code}``: answers by the code the API server acts on
  (:func:`webhooks.review.answer_code`: 200, 403 refused, 500 a decision that raised, 400/408/413/429);
- ``reconcilery_webhook_request_seconds{webhook}``: seconds from the request's headers to its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from kube.toolkit.metrics import counter, histogram
from webhooks.review import (
    MalformedReview,
    Review,
    ReviewKind,
    answer,
    answer_code,
    failure_response,
    malformed_answer,
    parse,
)

log = logging.getLogger("reconcilery.webhooks.server")

#: Bodies larger than this are parsed in a worker thread, so the event loop keeps serving; they are
#: also the "large" requests of :attr:`Limits.max_large`.
THREAD_PARSE_BYTES = 64 * 1024
#: Seconds an idle keep-alive connection stays open (aiohttp's default is an hour); aiohttp also closes a
#: connection whose request headers are not complete within it (a client trickling headers).
KEEPALIVE_SECONDS = 60.0

#: Name of a webhook whose endpoint and application give none (a label value like the others).
UNNAMED = "unnamed"
WEBHOOK_NAME: web.AppKey[str] = web.AppKey("reconcilery_webhook_name", str)

REQUESTS = counter(
    "reconcilery_webhook_requests_total",
    "Admission and conversion reviews answered, by webhook and the code the API server acts on (200; 403 "
    "refused; 500 a decision that raised; 400, 408, 413, 429 malformed, late or too many).", ["webhook", "code"])
REQUEST_SECONDS = histogram(
    "reconcilery_webhook_request_seconds", "Seconds from a review's request headers to its answer, by webhook.",
    ["webhook"], buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))

T = TypeVar("T")
# One thread for all large work of the process: each thread that allocates gets its own glibc malloc
# arena, and memory freed in one arena is not reused by the others (RSS grew per executor thread).
_large_work = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-large")


async def in_worker(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the process's one thread for large parses and decisions (the loop keeps serving)."""
    return await asyncio.get_running_loop().run_in_executor(_large_work, fn, *args)


@dataclass(frozen=True)
class Limits:
    """Bounds of one review endpoint.

    Attributes:
        timeout: seconds for a whole request (body read, parse, decision); the API server gives a
            conversion webhook 30 s and an admission webhook its ``timeoutSeconds`` (at most 30 s).
        max_requests: requests answered at once.
        max_large: of those, requests whose body exceeds :data:`THREAD_PARSE_BYTES` (or has no
            Content-Length).
        queue_timeout: seconds a request waits for one of ``max_requests`` before a 429.
    """

    timeout: float = 30.0
    max_requests: int = 32
    #: one at a time: the largest accepted body costs ~70 MiB over the idle ~75 MiB process
    #: (bench/webhook_memory.py), and the webhook Deployment's limit is 256 Mi
    max_large: int = 1
    queue_timeout: float = 1.0

#: The domain's decision, awaited: the ``response`` fields for a parsed review (without ``uid``).
AsyncDecide = Callable[[Review], Awaitable[dict[str, Any]]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(body).encode(), status=status, content_type="application/json")


async def read_review(http: web.Request, kind: ReviewKind, check_content_type: bool = True) -> Review:
    """Read and parse the review of ``http``. Raises :class:`MalformedReview` (400, 413)."""
    try:
        body = await http.read()
    except web.HTTPRequestEntityTooLarge:
        raise MalformedReview(f"request body exceeds {kind.max_body_bytes} bytes", status=413) from None
    content_type = http.headers.get("Content-Type", "") if check_content_type else None
    if len(body) > THREAD_PARSE_BYTES:
        return await in_worker(parse, body, kind, content_type)
    return parse(body, kind, content_type)


class _Slots:
    """The concurrency bounds of one endpoint (created lazily: semaphores belong to the serving loop)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._all: asyncio.Semaphore | None = None
        self._large: asyncio.Semaphore | None = None
        self._large_waiting = 0

    async def _acquire(self, slots: asyncio.Semaphore, what: str) -> None:
        try:
            await asyncio.wait_for(slots.acquire(), self.limits.queue_timeout)
        except TimeoutError:
            raise MalformedReview(f"too many {what} at once; retry", 429) from None

    @contextlib.asynccontextmanager
    async def hold(self, large: bool) -> AsyncIterator[None]:
        """Hold a slot (and a large one when ``large``). Raises :class:`MalformedReview` 429 when none
        frees within ``queue_timeout``, or at once when ``max_large`` large requests already wait: a
        waiting connection's body is buffered while it waits."""
        if self._all is None or self._large is None:
            self._all = asyncio.Semaphore(self.limits.max_requests)
            self._large = asyncio.Semaphore(self.limits.max_large)
        await self._acquire(self._all, "requests")
        try:
            if not large:
                yield
                return
            if not self._large.locked():
                await self._large.acquire()  # free: no wait
            elif self._large_waiting >= self.limits.max_large:
                raise MalformedReview("too many large requests at once; retry", 429)
            else:
                self._large_waiting += 1
                try:
                    await self._acquire(self._large, "large requests")
                finally:
                    self._large_waiting -= 1
            try:
                yield
            finally:
                self._large.release()
        finally:
            self._all.release()


def review_endpoint(kind: ReviewKind, decide: AsyncDecide, *, check_content_type: bool = True,
                    on_malformed: Callable[[MalformedReview], None] | None = None,
                    limits: Limits | None = None, webhook: str | None = None) -> Handler:
    """The aiohttp handler of a review path (``POST``): the skeleton of :mod:`webhooks.review` over HTTP.

    Answers 200 with the review (a decision that raises: a failed review, logged), or a review with a
    failed status and a 4xx: 400/413 for a malformed body, 408 past ``limits.timeout``, 429 when
    ``limits.max_requests`` are busy. ``on_malformed`` (metrics, logs) is called for each of those.
    The application's ``client_max_size`` must exceed ``kind.max_body_bytes`` (:func:`review_app`).
    Every answer is counted and timed (module doc) under ``webhook``, else the application's name
    (:func:`review_app`), else :data:`UNNAMED`.
    """
    bounds = limits or Limits()
    slots = _Slots(bounds)

    async def answered(http: web.Request) -> dict[str, Any]:
        review = await read_review(http, kind, check_content_type)
        try:
            response = await decide(review)
        except MalformedReview:
            raise
        except Exception as exc:  # a bug must not become a 5xx: the API server reports the message
            log.exception("%s decision failed uid=%s", kind.kind, review.uid)
            response = failure_response(kind, f"internal error: {exc!r}", 500)
        return answer(review, response)

    async def handle(http: web.Request) -> web.Response:
        started = time.perf_counter()
        name = webhook or http.app.get(WEBHOOK_NAME) or UNNAMED
        status, body = await answered_or_refused(http)
        REQUESTS.labels(name, answer_code(status, body)).inc()
        response = _json(body, status)
        if status in (408, 413, 429):  # the rest of the body is not read: do not reuse the connection
            response.force_close()
        REQUEST_SECONDS.labels(name).observe(time.perf_counter() - started)
        return response

    async def answered_or_refused(http: web.Request) -> tuple[int, dict[str, Any]]:
        large = http.content_length is None or http.content_length > THREAD_PARSE_BYTES
        try:
            try:
                async with asyncio.timeout(bounds.timeout), slots.hold(large):
                    body = await answered(http)
            except TimeoutError:
                raise MalformedReview(f"request not answered within {bounds.timeout:g} s", 408) from None
        except MalformedReview as exc:
            if on_malformed is not None:
                on_malformed(exc)
            else:
                log.warning("malformed %s status=%d error=%s", kind.kind, exc.status, exc.message)
            return exc.status, malformed_answer(kind, exc)
        return 200, body

    return handle


def review_app(kind: ReviewKind, routes: dict[str, Handler], webhook: str = "",
               max_body_bytes: int | None = None) -> web.Application:
    """An application whose ``POST`` routes (path -> handler) answer reviews of ``kind``; ``webhook``
    names its endpoints that name no webhook themselves (metrics); ``max_body_bytes`` (default
    ``kind.max_body_bytes``) is the largest body of any of its routes."""
    app = web.Application(client_max_size=max(kind.max_body_bytes, max_body_bytes or 0) + 1)
    if webhook:
        app[WEBHOOK_NAME] = webhook
    for path, handler in routes.items():
        app.router.add_post(path, handler)
    return app


async def listen(app: web.Application, host: str, port: int,
                 ssl_context: ssl.SSLContext | None = None) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on ``host:port`` (``0``: a free port). Returns the runner (``cleanup()`` stops it)
    and the bound port. Raises ``OSError`` when the port cannot be bound (the runner is cleaned up)."""
    # lingering: how long the unread rest of a refused body is drained before closing (aiohttp: 10 s)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=KEEPALIVE_SECONDS, lingering_time=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context, shutdown_timeout=5.0)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    sockets = getattr(site._server, "sockets", None) or []
    return runner, int(sockets[0].getsockname()[1]) if sockets else port


def url(host: str, port: int, path: str, scheme: str = "https") -> str:
    """``scheme://host:port/path`` with a wildcard listen address replaced by loopback."""
    host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"{scheme}://{host}:{port}{path}"
