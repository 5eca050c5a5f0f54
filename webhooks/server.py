"""The HTTPS side of the review skeleton (aiohttp): the review endpoint and the listener plumbing.

:func:`review_endpoint` reads a request body (bounded), parses it with :func:`webhooks.review.parse`
(in a worker thread when it is large), awaits the domain's decision and answers the review;
:func:`listen` serves an application on a host and port with a TLS context from
:class:`webhooks.tls.CertificateReloader`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from webhooks.review import (
    MalformedReview,
    Review,
    ReviewKind,
    answer,
    failure_response,
    malformed_answer,
    parse,
)

log = logging.getLogger("reconcilery.webhooks.server")

#: Bodies larger than this are parsed in a worker thread, so the event loop keeps serving.
THREAD_PARSE_BYTES = 64 * 1024

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
        return await asyncio.to_thread(parse, body, kind, content_type)
    return parse(body, kind, content_type)


def review_endpoint(kind: ReviewKind, decide: AsyncDecide, *, check_content_type: bool = True,
                    on_malformed: Callable[[MalformedReview], None] | None = None) -> Handler:
    """The aiohttp handler of a review path (``POST``): the skeleton of :mod:`webhooks.review` over HTTP.

    Answers 200 with the review (a decision that raises: a failed review, logged), or the
    malformed answer with its 4xx status. ``on_malformed`` (metrics, logs) is called for each
    malformed request. The application's ``client_max_size`` must exceed ``kind.max_body_bytes``
    (:func:`review_app` sets it).
    """
    async def handle(http: web.Request) -> web.Response:
        try:
            review = await read_review(http, kind, check_content_type)
            try:
                response = await decide(review)
            except MalformedReview:
                raise
            except Exception as exc:  # a bug must not become a 5xx: the API server reports the message
                log.exception("%s decision failed uid=%s", kind.kind, review.uid)
                response = failure_response(kind, f"internal error: {exc!r}", 500)
        except MalformedReview as exc:
            if on_malformed is not None:
                on_malformed(exc)
            else:
                log.warning("malformed %s status=%d error=%s", kind.kind, exc.status, exc.message)
            return _json(malformed_answer(kind, exc), exc.status)
        return _json(answer(review, response))

    return handle


def review_app(kind: ReviewKind, routes: dict[str, Handler]) -> web.Application:
    """An application whose ``POST`` routes (path -> handler) answer reviews of ``kind``."""
    app = web.Application(client_max_size=kind.max_body_bytes + 1)
    for path, handler in routes.items():
        app.router.add_post(path, handler)
    return app


async def listen(app: web.Application, host: str, port: int,
                 ssl_context: ssl.SSLContext | None = None) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on ``host:port`` (``0``: a free port). Returns the runner (``cleanup()`` stops it)
    and the bound port. Raises ``OSError`` when the port cannot be bound (the runner is cleaned up)."""
    runner = web.AppRunner(app, access_log=None)
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
