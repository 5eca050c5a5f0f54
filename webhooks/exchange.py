"""One HTTP/1.x request per connection over asyncio streams, for small listeners on :mod:`webhooks.connections`.

A listener that answers tiny requests (the SKR listener's runtime-watcher events) needs no keep-alive,
no chunked bodies and no parser that answers on its own: :func:`read_head` reads the request line and
headers by the connection's deadline, :func:`content_length` decides the body's length before any of it
is read (only ``Content-Length``, bounded), :func:`read_body` reads it by the deadline and
:func:`respond` answers ``text/plain`` with ``Connection: close`` (HTTP/1.0, as ``http.server`` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import http.client
import io
from collections.abc import Mapping
from dataclasses import dataclass

#: Seconds the answer gets to be written, past the connection's deadline too.
ANSWER_SECONDS = 2.0


@dataclass(frozen=True)
class Answer:
    """An HTTP ``status`` and a ``message`` (the text body; ``""``: none)."""

    status: int
    message: str = ""


@dataclass(frozen=True)
class Head:
    """A request line and its headers (names as sent; :meth:`header` looks them up case-insensitively)."""

    method: str
    target: str
    headers: Mapping[str, str]

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), ``None`` when absent."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


class Refused(Exception):
    """A request that is answered (:attr:`answer`) or, without one, closed."""

    def __init__(self, answer: Answer | None, reason: str) -> None:
        super().__init__(reason)
        self.answer, self.reason = answer, reason


async def read_head(reader: asyncio.StreamReader, deadline: float) -> Head:
    """Read the request line and headers by ``deadline`` (``loop.time()``).

    Raises :class:`Refused`: reason ``timeout`` (nothing complete by the deadline; no answer), ``closed``
    (the client went away; no answer), ``bad_request`` (400 for a malformed request line, 431 past the
    reader's limit).
    """
    try:
        async with asyncio.timeout_at(deadline):
            raw = await reader.readuntil(b"\r\n\r\n")
    except TimeoutError:
        raise Refused(None, "timeout") from None
    except asyncio.LimitOverrunError:
        raise Refused(Answer(431, "Request header fields too large"), "bad_request") from None
    except (asyncio.IncompleteReadError, OSError):
        raise Refused(None, "closed") from None
    line, _, rest = raw.partition(b"\r\n")
    words = line.decode("latin-1").split()
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        raise Refused(Answer(400, "Bad request syntax"), "bad_request")
    try:
        headers = http.client.parse_headers(io.BytesIO(rest))
    except http.client.HTTPException:
        raise Refused(Answer(400, "Bad request headers"), "bad_request") from None
    return Head(words[0], words[1], dict(headers.items()))


def content_length(method: str, headers: Mapping[str, str], limit: int) -> Answer | int:
    """The body length to read (pure): an ``int``, or the refusal (411 missing for POST or chunked, 400 not
    a number or negative, 413 over ``limit`` bytes)."""
    lower = {k.lower(): v for k, v in headers.items()}
    if "transfer-encoding" in lower:
        return Answer(411, "Transfer-Encoding is not supported: send a Content-Length")
    raw = lower.get("content-length")
    if raw is None:
        return Answer(411, "Content-Length required") if method == "POST" else 0
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit():
        return Answer(400, "invalid Content-Length")
    length = int(raw)
    if length > limit:
        return Answer(413, f"Body size greater than {limit} bytes is not allowed")
    return length


async def read_body(reader: asyncio.StreamReader, length: int, deadline: float) -> bytes:
    """Read ``length`` bytes by ``deadline``. Raises :class:`Refused`: ``timeout`` (408) or ``closed``
    (fewer bytes, then the end; no answer)."""
    try:
        async with asyncio.timeout_at(deadline):
            return await reader.readexactly(length) if length else b""
    except TimeoutError:
        raise Refused(Answer(408, "request body not received in time"), "timeout") from None
    except (asyncio.IncompleteReadError, OSError):
        raise Refused(None, "closed") from None


async def respond(writer: asyncio.StreamWriter, answer: Answer) -> None:
    """Write ``answer`` (``text/plain``, the message and a newline) with ``Connection: close``, within
    :data:`ANSWER_SECONDS`; a client that is gone or does not read is left (never raises)."""
    payload = (answer.message + "\n").encode() if answer.message else b""
    try:
        reason = http.HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    head = (f"HTTP/1.0 {answer.status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
    with contextlib.suppress(OSError, TimeoutError):
        writer.write(head.encode("latin-1") + payload)
        async with asyncio.timeout(ANSWER_SECONDS):
            await writer.drain()
