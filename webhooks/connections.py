"""A listener that bounds its connections: slots, one deadline each, TLS and plain HTTP on one port.

aiohttp's ``TCPSite`` serves every connection it accepts for as long as the client likes. A listener
that many untrusted clients call (the SKR listener: the runtime watchers of every SKR) runs on
:class:`BoundedServer` instead, which bounds them by :class:`Bounds`:

- at most ``max_connections`` connections are served at once; ``overflow`` more are served by the
  busy handler (an answer such as 503) within ``overflow_seconds``; the rest are closed at once;
- each connection gets ``timeout`` seconds from accept in all: the TLS handshake, the request and its
  body (the handler reads them by :attr:`Connection.deadline`); ``answer_seconds`` past it the
  connection is aborted, whatever it is doing;
- with a TLS context and ``plain``, a connection that does not open with a TLS handshake record is
  served plain HTTP on the same port (kubelet's probes carry no client certificate): the handler
  tells them apart by :attr:`Connection.tls` and :func:`peer_certificate`.

The TLS context is typically :attr:`webhooks.tls.CertificateReloader.context` (client certificates
verified with :func:`webhooks.tls.server_context`'s ``client_ca``). A connection is served by an ``async``
handler over asyncio streams (:mod:`webhooks.exchange` reads one HTTP request from them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509

log = logging.getLogger("reconcilery.webhooks.connections")

#: The first byte of a TLS handshake record (a ClientHello).
HANDSHAKE_RECORD = 0x16


@dataclass(frozen=True)
class Bounds:
    """Bounds of a listener's connections.

    Attributes:
        max_connections: connections served at once.
        timeout: seconds a connection gets from accept: TLS handshake, request and body.
        overflow: connections past ``max_connections`` still answered by the busy handler.
        overflow_seconds: seconds such a connection gets in all.
        answer_seconds: seconds past the deadline for writing the answer; then the connection is aborted.
        plain: with a TLS context, serve a connection that does not start a TLS handshake as plain HTTP.
    """

    max_connections: int = 32
    timeout: float = 10.0
    overflow: int = 4
    overflow_seconds: float = 2.0
    answer_seconds: float = 2.0
    plain: bool = False


@dataclass(frozen=True)
class Connection:
    """One accepted connection: ``peer`` address, whether it speaks ``tls``, whether it is ``busy`` (an
    overflow connection) and its ``deadline`` (``loop.time()`` seconds)."""

    peer: str
    tls: bool
    busy: bool
    deadline: float


#: An ``async`` handler of one connection over streams; the connection is closed when it returns.
StreamHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, Connection], Awaitable[None]]


def peer_certificate(writer: asyncio.StreamWriter) -> x509.Certificate | None:
    """The client certificate the peer presented and the context verified (``None``: plain, or none)."""
    obj = writer.get_extra_info("ssl_object")
    der = obj.getpeercert(binary_form=True) if obj is not None else None
    return x509.load_der_x509_certificate(der) if der else None


class BoundedServer:
    """Serves connections on ``host:port`` with ``handle`` (``busy`` for overflow connections), bounded.

    Args:
        handle: the handler of a served connection.
        busy: the handler of an overflow connection (e.g. one that answers 503).
        host, port: listen address; ``port=0`` picks a free one (see :attr:`port` once started).
        ssl_context: TLS for every connection (with ``bounds.plain``: for those that start a handshake);
            ``None``: plain only.
        bounds: :class:`Bounds`.
        on_refused: called with the reason of each connection refused before its handler ran: ``busy``
            (closed at once), ``tls`` (handshake failed), ``timeout`` (nothing arrived in time) (metrics).
        name: what the listener is (a :class:`webhooks.Listener`'s name).
        limit: the stream reader's buffer and line limit in bytes.
    """

    def __init__(self, handle: StreamHandler, busy: StreamHandler, host: str, port: int, *,
                 ssl_context: ssl.SSLContext | None = None, bounds: Bounds | None = None,
                 on_refused: Callable[[str], None] | None = None, name: str = "bounded",
                 limit: int = 64 * 1024) -> None:
        self.name = name
        self.handle, self.busy = handle, busy
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.bounds = bounds or Bounds()
        self.on_refused = on_refused
        self.limit = limit
        self.served = 0  # connections holding a slot
        self.overflowing = 0  # overflow connections
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        """Bind and accept. Raises ``OSError`` when the port cannot be bound."""
        sock = socket.create_server((self.host, self.port), backlog=128)
        sock.setblocking(False)
        self._sock, self.port = sock, int(sock.getsockname()[1])
        self._accepting = asyncio.create_task(self._accept(sock))

    async def stop(self) -> None:
        """Stop accepting and abort every open connection (idempotent)."""
        if self._accepting is not None:
            self._accepting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._accepting
            self._accepting = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for writer in list(self._open):
            writer.transport.abort()

    def _refused(self, reason: str) -> None:
        if self.on_refused is not None:
            self.on_refused(reason)

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    client, address = await loop.sock_accept(sock)
                except OSError as exc:  # out of file descriptors: let connections end first
                    log.warning("accept failed error=%s", exc)
                    await asyncio.sleep(0.1)
                    continue
                busy = self.served >= self.bounds.max_connections
                if busy and self.overflowing >= self.bounds.overflow:
                    self._refused("busy")
                    client.close()
                    continue
                if busy:
                    self.overflowing += 1
                else:
                    self.served += 1
                task = asyncio.create_task(self._connect(client, str(address[0]), busy))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:  # connections still in their handshake end with the listener
            for task in tasks:
                task.cancel()

    def _release(self, busy: bool) -> None:
        if busy:
            self.overflowing -= 1
        else:
            self.served -= 1

    async def _connect(self, sock: socket.socket, peer: str, busy: bool) -> None:
        """Sniff and handshake one connection, then hand it to its handler, which holds the slot."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.bounds.overflow_seconds if busy else self.bounds.timeout)
        try:
            tls = self.ssl_context is not None
            if tls and self.bounds.plain:
                first = await _peek(sock, deadline)
                if not first:
                    raise ConnectionResetError("closed before a request")
                tls = first[0] == HANDSHAKE_RECORD
            connection = Connection(peer, tls, busy, deadline)

            def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Awaitable[None]:
                return self._serve(reader, writer, connection)

            protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader(limit=self.limit), connected)
            options: dict[str, Any] = {}
            if tls:
                options = {"ssl": self.ssl_context, "ssl_handshake_timeout": max(0.01, deadline - loop.time())}
            await loop.connect_accepted_socket(lambda: protocol, sock, **options)
            return  # the handler releases the slot
        except asyncio.CancelledError:
            pass
        except TimeoutError:
            self._refused("timeout")
        except ConnectionResetError:
            pass
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError; so is a handshake past the deadline
            self._refused("tls")
            log.info("TLS handshake refused peer=%s error=%s", peer, exc)
        sock.close()
        self._release(busy)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
        # past the deadline and the answer's grace the connection is aborted, whatever the handler does
        abort = asyncio.get_running_loop().call_at(conn.deadline + self.bounds.answer_seconds,
                                                   writer.transport.abort)
        self._open.add(writer)
        try:
            await (self.busy if conn.busy else self.handle)(reader, writer, conn)
        except Exception:  # a connection never takes the listener down
            log.exception("connection handler failed peer=%s", conn.peer)
        finally:
            abort.cancel()
            self._open.discard(writer)
            writer.close()
            self._release(conn.busy)

    def url(self, path: str = "") -> str:
        """``scheme://host:port<path>`` (``https`` with a TLS context; a wildcard host becomes loopback)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"{'https' if self.ssl_context is not None else 'http'}://{host}:{self.port}{path}"


async def _peek(sock: socket.socket, deadline: float) -> bytes:
    """The first byte the client sends, left in the socket (``b""``: it closed). Raises ``TimeoutError``
    when nothing arrives by ``deadline``."""
    loop = asyncio.get_running_loop()
    readable = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(sock.fileno(), ready)
    try:
        async with asyncio.timeout_at(deadline):
            await readable
    finally:
        loop.remove_reader(sock.fileno())
    try:
        return sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return b""
