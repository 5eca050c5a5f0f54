"""NGINX Plus REST API stand-in (the ``ngx_http_api_module`` upstream endpoints), on aiohttp.

Faithful to the API as described in ``nginx.org/yaml/nginx_api.yaml`` (version 9) for what the NGINX
edge controller uses:

- ``GET /api`` and ``GET /api/``: the supported API versions, ``[1, ..., 9]``;
- ``GET /api/{v}/``: the root endpoint names; an unknown ``{v}`` is ``404 UnknownVersion``;
- ``GET /api/{v}/http/upstreams``: name -> upstream status (peers, keepalive, zombies, zone);
- ``GET|DELETE /api/{v}/http/upstreams/{u}``: one upstream's status / reset its statistics (204);
- ``GET|POST /api/{v}/http/upstreams/{u}/servers``: the server objects / add one (201);
- ``GET|PATCH|DELETE /api/{v}/http/upstreams/{u}/servers/{id}``: one server / modify (200) / remove
  (200 with the remaining servers);
- the same under ``/stream/upstreams`` (stream servers have no ``route`` and no ``drain``).

NGINXaaS' API key check is optional (``api_key=``): every request must then carry
``Authorization: ApiKey <base64(key)>``, else ``401 Unauthorized`` (the error body as above);
``header_log`` shows the ``Authorization`` and ``X-NLK-Version`` headers each request carried.

Paths are accepted with and without a trailing ``/`` and with ``//``. Every error answers
``{"error": {"status", "text", "code"}, "request_id", "href"}`` with the real codes
(``UpstreamNotFound``, ``UpstreamServerNotFound``, ``UnknownVersion``, ``UpstreamStatic``,
``UpstreamBadServerId``, ``UpstreamConfFormatError``, ``UpstreamBadAddress``, ``UpstreamBadWeight``,
``UpstreamBadMaxConns``, ``UpstreamBadMaxFails``, ``UpstreamBadFailTimeout``, ``UpstreamBadSlowStart``,
``UpstreamBadRoute``, ``UpstreamConfNoResolver``, ``UpstreamServerImmutable``, ``EntryExists``,
``JsonError``, ``MethodDisabled``, ``MethodNotSupported``, ``PathNotFound``).

Upstreams are declared up front, as ``upstream NAME { zone ...; }`` blocks in nginx.conf are, so an
unknown upstream is a real ``404 UpstreamNotFound``; an upstream declared ``static`` (no ``zone``)
answers ``400 UpstreamStatic`` on its server endpoints.

Use in-process::

    plus = NginxPlusStandIn(port=0, http_upstreams=["web"], stream_upstreams=["db"]).start()
    plus.url            # "http://127.0.0.1:PORT/api", the base URL clients are configured with
    plus.servers("http", "web")
    plus.stop(); plus.start()   # "down" then back on the same port, state kept

or as a process: ``python -m standins.nginxplus --port 9000 --upstream http:web --upstream stream:db``.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hmac
import ipaddress
import json
import logging
import os
import re
import ssl
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from standins.server import StandInServer

log = logging.getLogger("standins.nginxplus")

HREF = "https://nginx.org/en/docs/http/ngx_http_api_module.html"
KINDS = ("http", "stream")
ROOT_ENDPOINTS = ["nginx", "processes", "connections", "slabs", "http", "stream", "resolvers", "ssl",
                  "workers", "license"]

#: Defaults of a new server, as NGINX Plus returns them (clients compare against exactly these).
SERVER_DEFAULTS: dict[str, Any] = {
    "weight": 1, "max_conns": 0, "max_fails": 1, "fail_timeout": "10s", "slow_start": "0s",
    "route": "", "backup": False, "down": False,
}
_HTTP_FIELDS = ("server", "service", "weight", "max_conns", "max_fails", "fail_timeout", "slow_start",
                "route", "backup", "down", "drain")
_STREAM_FIELDS = ("server", "service", "weight", "max_conns", "max_fails", "fail_timeout", "slow_start",
                  "backup", "down")
_TIME_RE = re.compile(r"^\d+(ms|s|m|h|d|w|M|y)?$")
_MAX_ROUTE = 32


class ApiError(Exception):
    """An error answer: HTTP status, the API's error code and text."""

    def __init__(self, status: int, code: str, text: str) -> None:
        super().__init__(f"{status} {code}: {text}")
        self.status = status
        self.code = code
        self.text = text


@dataclass
class Upstream:
    """One upstream zone: servers by id, the next id to assign, and whether it is static (no zone)."""

    kind: str
    name: str
    static: bool = False
    servers: dict[int, dict[str, Any]] = field(default_factory=dict)
    next_id: int = 0
    #: Writes answered on this upstream (a poller re-reads it only when this moved).
    writes: int = 0
    #: Server id -> its JSON view, serialised once per state of the server (dropped by PATCH and DELETE).
    views: dict[int, bytes] = field(default_factory=dict)

    def listing(self) -> bytes:
        """The JSON of every server view ordered by id (``GET .../servers``, and what a DELETE answers),
        from the views serialised once: 1,000 servers cost a join, not 1,000 ``json.dumps``."""
        parts = []
        for server_id, server in sorted(self.servers.items()):
            view = self.views.get(server_id)
            if view is None:
                view = self.views[server_id] = json.dumps(_server_view(self.kind, server)).encode()
            parts.append(view)
        return b"[" + b",".join(parts) + b"]"


@dataclass(frozen=True)
class RawJSON:
    """An answer body already serialised (the server list of ``GET .../servers`` and of a ``DELETE``)."""

    data: bytes


def _fields_for(kind: str) -> tuple[str, ...]:
    return _HTTP_FIELDS if kind == "http" else _STREAM_FIELDS


def _normalise_address(kind: str, address: Any) -> str:
    """``address`` as NGINX stores it: HTTP gets ``:80`` when no port; stream requires a port.

    Raises ``ApiError(400, UpstreamBadAddress|UpstreamConfNoResolver)``.
    """
    if not isinstance(address, str) or not address:
        raise ApiError(400, "UpstreamConfFormatError", "invalid \"server\" argument")
    if address.startswith("unix:"):
        if len(address) == len("unix:"):
            raise ApiError(400, "UpstreamBadAddress", "invalid address")
        return address
    host, port, has_port = address, "", False
    if address.startswith("["):
        end = address.find("]")
        if end < 0:
            raise ApiError(400, "UpstreamBadAddress", "invalid IPv6 address")
        host, rest = address[1:end], address[end + 1:]
        if rest and not rest.startswith(":"):
            raise ApiError(400, "UpstreamBadAddress", "invalid address")
        has_port, port = bool(rest), rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ApiError(400, "UpstreamBadAddress", "invalid IPv6 address") from None
        host = f"[{host}]"
    elif address.count(":") == 1:
        host, port = address.split(":")
        has_port = True
    elif address.count(":") > 1:
        raise ApiError(400, "UpstreamBadAddress", "invalid address (IPv6 needs brackets)")
    if has_port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ApiError(400, "UpstreamBadAddress", "invalid port")
    elif kind == "stream":
        raise ApiError(400, "UpstreamBadAddress", "no port in server")
    else:
        port = "80"
    if not host.startswith("["):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            # A domain name needs a resolver in the upstream block; the stand-in declares none.
            raise ApiError(400, "UpstreamConfNoResolver", "no resolver defined to resolve " + host) from None
    return f"{host}:{port}"


def _validate_fields(kind: str, body: Any, creating: bool, current: dict[str, Any] | None) -> dict[str, Any]:
    """Checked and normalised server fields from a POST/PATCH body (``id`` is ignored).

    Raises ``ApiError`` with the code NGINX Plus uses for the first bad field.
    """
    if not isinstance(body, dict):
        raise ApiError(400, "UpstreamConfFormatError", "request body must be a JSON object")
    allowed = _fields_for(kind)
    out: dict[str, Any] = {}
    for name, value in body.items():
        if name == "id":
            continue
        if name not in allowed:
            raise ApiError(400, "UpstreamConfFormatError", f"unknown parameter \"{name}\"")
        if isinstance(value, dict | list):
            raise ApiError(400, "UpstreamConfFormatError", f"invalid \"{name}\" argument")
        out[name] = value
    if creating and "server" not in out:
        raise ApiError(400, "UpstreamConfFormatError", "missing \"server\" argument")
    if "server" in out:
        out["server"] = _normalise_address(kind, out["server"])
    for name, code, minimum in (("weight", "UpstreamBadWeight", 1), ("max_conns", "UpstreamBadMaxConns", 0),
                                ("max_fails", "UpstreamBadMaxFails", 0)):
        if name in out:
            value = out[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ApiError(400, code, f"invalid \"{name}\" argument")
    for name, code in (("fail_timeout", "UpstreamBadFailTimeout"), ("slow_start", "UpstreamBadSlowStart")):
        if name in out and (not isinstance(out[name], str) or not _TIME_RE.match(out[name])):
            raise ApiError(400, code, f"invalid \"{name}\" argument")
    if "route" in out and (not isinstance(out["route"], str) or len(out["route"]) > _MAX_ROUTE):
        raise ApiError(400, "UpstreamBadRoute", "invalid \"route\" argument")
    for name in ("backup", "down", "drain"):
        if name in out and not isinstance(out[name], bool):
            raise ApiError(400, "UpstreamConfFormatError", f"invalid \"{name}\" argument")
    if "service" in out and not isinstance(out["service"], str):
        raise ApiError(400, "UpstreamBadService", "invalid \"service\" argument")
    if not creating and current is not None:
        for name in ("backup", "service"):
            if name in out and out[name] != current.get(name, SERVER_DEFAULTS.get(name)):
                raise ApiError(400, "UpstreamConfFormatError", f"\"{name}\" cannot be modified")
        if "server" in out and out["server"] != current["server"] and "service" in current:
            raise ApiError(400, "UpstreamServerImmutable", "server address is immutable")
    return out


def _server_view(kind: str, server: dict[str, Any]) -> dict[str, Any]:
    """A server object in the API's field order, with NGINX's defaults filled in."""
    view: dict[str, Any] = {"id": server["id"], "server": server["server"]}
    if "service" in server:
        view["service"] = server["service"]
    for name in ("weight", "max_conns", "max_fails", "fail_timeout", "slow_start", "route", "backup", "down"):
        if name == "route" and kind == "stream":
            continue
        view[name] = server.get(name, SERVER_DEFAULTS[name])
    if kind == "http" and "drain" in server:
        view["drain"] = server["drain"]
    return view


def _peer_view(kind: str, server: dict[str, Any]) -> dict[str, Any]:
    """The status ("peer") view of a server, as in ``GET /http/upstreams/{u}``."""
    state = "down" if server.get("down") else ("draining" if server.get("drain") else "up")
    peer: dict[str, Any] = {
        "id": server["id"], "server": server["server"], "name": server["server"],
        "backup": server.get("backup", False), "weight": server.get("weight", 1), "state": state,
        "active": 0, "max_conns": server.get("max_conns", 0), "sent": 0, "received": 0, "fails": 0,
        "unavail": 0, "health_checks": {"checks": 0, "fails": 0, "unhealthy": 0}, "downtime": 0,
    }
    if kind == "http":
        peer.update(requests=0, responses={"1xx": 0, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "total": 0})
    else:
        peer.update(connections=0)
    return peer


class PlusState:
    """The upstream zones of one NGINX Plus instance; thread-safe (the test thread reads it)."""

    def __init__(self, http_upstreams: Iterable[str] = (), stream_upstreams: Iterable[str] = (),
                 static_upstreams: Iterable[tuple[str, str]] = (), versions: Iterable[int] = range(1, 10),
                 write: bool = True, unique_servers: bool = False, api_key: str | None = None) -> None:
        self.lock = threading.Lock()
        #: NGINXaaS: when set, every request must carry ``Authorization: ApiKey <base64(api_key)>``;
        #: without it (or with another key) the answer is ``401 Unauthorized`` in the API's error form.
        self.api_key = api_key
        self.upstreams: dict[tuple[str, str], Upstream] = {}
        for name in http_upstreams:
            self.declare("http", name)
        for name in stream_upstreams:
            self.declare("stream", name)
        for kind, name in static_upstreams:
            self.declare(kind, name, static=True)
        self.versions = sorted(set(versions))
        self.write = write
        #: ``True``: a POST of an address already present answers ``409 EntryExists`` (the spec lists
        #: it; real NGINX Plus accepts duplicates, so the default is ``False``).
        self.unique_servers = unique_servers
        self.request_count = 0
        self.request_log: list[tuple[str, str]] = []
        #: ``(method, path, {Authorization, X-NLK-Version})`` of every request, oldest first (only
        #: the headers sent, so tests can see what a client sends); rejected requests included.
        self.header_log: list[tuple[str, str, dict[str, str]]] = []
        self.rejected = 0
        #: Writes (POST, PATCH, DELETE) answered so far: a reader polling for a state can skip the look
        #: while this has not moved.
        self.writes = 0
        #: ``(kind, upstream)`` written since the last :meth:`take_written` (at most one per upstream).
        self._written: set[tuple[str, str]] = set()

    def take_written(self) -> set[tuple[str, str]]:
        """The ``(kind, upstream)`` pairs written since the last call (a poller looks at only those: its
        cost follows the writes, not the number of upstreams, and it keeps the lock and the GIL free for
        the stand-in it shares a process with)."""
        with self.lock:
            written, self._written = self._written, set()
        return written

    def authorized(self, authorization: str | None) -> bool:
        """Whether a request with this ``Authorization`` header may pass (always without :attr:`api_key`)."""
        if not self.api_key:
            return True
        expected = "ApiKey " + base64.b64encode(self.api_key.encode()).decode("ascii")
        return hmac.compare_digest((authorization or "").encode(), expected.encode())

    def declare(self, kind: str, name: str, static: bool = False,
                servers: Iterable[dict[str, Any]] = ()) -> None:
        """Declare an upstream (as an ``upstream`` block would), optionally with configured servers."""
        if kind not in KINDS:
            raise ValueError(f"upstream kind must be http or stream, got {kind!r}")
        with self.lock:
            upstream = Upstream(kind, name, static=static)
            for body in servers:
                fields = _validate_fields(kind, body, creating=True, current=None)
                upstream.servers[upstream.next_id] = {"id": upstream.next_id, **fields}
                upstream.next_id += 1
            self.upstreams[(kind, name)] = upstream

    def upstream_writes(self, kind: str, name: str) -> int:
        """Writes answered on one upstream so far (``KeyError`` if undeclared)."""
        return self.upstreams[(kind, name)].writes

    def addresses(self, kind: str, name: str) -> set[str]:
        """The ``server`` addresses of an upstream (cheap: no server objects built). ``KeyError`` if undeclared."""
        with self.lock:
            return {s["server"] for s in self.upstreams[(kind, name)].servers.values()}

    def servers(self, kind: str, name: str) -> list[dict[str, Any]]:
        """The server objects of an upstream (a deep copy), ordered by id. ``KeyError`` if undeclared."""
        with self.lock:
            upstream = self.upstreams[(kind, name)]
            return [_server_view(kind, s) for _, s in sorted(upstream.servers.items())]

    # -- request handling (called on the event loop thread, under the lock) -------------------------

    def handle(self, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
        """Answer one request below the API prefix: ``(status, json body or None)``, the body of ``GET
        .../servers`` as :class:`RawJSON`. Raises ``ApiError``."""
        if not parts:
            if method != "GET":
                raise ApiError(405, "MethodNotSupported", "method not supported")
            return 200, list(self.versions)
        version = parts[0]
        if not version.isdigit() or int(version) not in self.versions:
            raise ApiError(404, "UnknownVersion", "unknown version")
        rest = parts[1:]
        if not rest:
            self._only(method, "GET")
            return 200, list(ROOT_ENDPOINTS)
        if rest[0] not in KINDS or len(rest) < 2 or rest[1] != "upstreams":
            if len(rest) == 1 and rest[0] in ROOT_ENDPOINTS:
                self._only(method, "GET")
                return 200, self._root(rest[0])
            raise ApiError(404, "PathNotFound", "path not found")
        kind = rest[0]
        if len(rest) == 2:
            self._only(method, "GET")
            return 200, {u.name: self._upstream_view(u) for (k, _), u in sorted(self.upstreams.items())
                         if k == kind}
        upstream = self.upstreams.get((kind, rest[2]))
        if len(rest) == 3:
            self._only(method, "GET", "DELETE")
            upstream = self._zone(upstream, kind)
            if method == "DELETE":
                self._writable()
                return 204, None
            return 200, self._upstream_view(upstream)
        if rest[3] != "servers" or len(rest) > 5:
            raise ApiError(404, "PathNotFound", "path not found")
        if len(rest) == 4:
            self._only(method, "GET", "POST")
            upstream = self._zone(upstream, kind)
            if method == "GET":
                # views serialised once: a sync's GET of 100 servers was most of the stand-in's CPU
                return 200, RawJSON(upstream.listing())
            self._writable()
            fields = _validate_fields(kind, body, creating=True, current=None)
            taken = {s["server"] for s in upstream.servers.values()}
            if self.unique_servers and fields["server"] in taken:
                raise ApiError(409, "EntryExists", "entry exists")
            server = {"id": upstream.next_id, **fields}
            upstream.servers[upstream.next_id] = server
            upstream.next_id += 1
            self.writes += 1
            upstream.writes += 1
            self._written.add((kind, upstream.name))
            return 201, _server_view(kind, server)
        self._only(method, "GET", "PATCH", "DELETE")
        upstream = self._zone(upstream, kind)
        raw_id = rest[4]
        if not raw_id.isdigit():
            raise ApiError(400, "UpstreamBadServerId", "invalid server id")
        found = upstream.servers.get(int(raw_id))
        if found is None:
            raise ApiError(404, "UpstreamServerNotFound", "server not found")
        server = found
        if method == "GET":
            return 200, _server_view(kind, server)
        self._writable()
        self.writes += 1
        upstream.writes += 1
        self._written.add((kind, upstream.name))
        upstream.views.pop(server["id"], None)
        if method == "DELETE":
            del upstream.servers[server["id"]]
            return 200, RawJSON(upstream.listing())
        fields = _validate_fields(kind, body, creating=False, current=server)
        server.update(fields)
        return 200, _server_view(kind, server)

    @staticmethod
    def _only(method: str, *allowed: str) -> None:
        if method not in allowed:
            raise ApiError(405, "MethodNotSupported", "method not supported")

    def _writable(self) -> None:
        if not self.write:
            raise ApiError(405, "MethodDisabled", "method disabled")

    @staticmethod
    def _zone(upstream: Upstream | None, kind: str) -> Upstream:
        if upstream is None:
            raise ApiError(404, "UpstreamNotFound", "upstream not found")
        if upstream.static:
            raise ApiError(400, "UpstreamStatic", "upstream is static")
        return upstream

    def _upstream_view(self, upstream: Upstream) -> dict[str, Any]:
        peers = [_peer_view(upstream.kind, s) for _, s in sorted(upstream.servers.items())]
        view: dict[str, Any] = {"peers": peers, "zombies": 0, "zone": upstream.name}
        if upstream.kind == "http":
            view["keepalive"] = 0
        return view

    def _root(self, name: str) -> Any:
        if name == "nginx":
            return {"version": "1.27.4", "build": "nginx-plus-r34 (reconcilery stand-in)", "generation": 1,
                    "pid": 1, "ppid": 0}
        if name in KINDS:
            return ["upstreams"]
        return {}


class NginxPlusStandIn(StandInServer):
    """A running NGINX Plus API stand-in: an aiohttp server on its own event loop thread.

    Args:
        port: TCP port on ``host`` (0 = any free port, fixed after the first :meth:`start`).
        http_upstreams / stream_upstreams: names of the zone upstreams to declare.
        prefix: the ``location`` of the API (default ``/api``).
        ssl_context: serve HTTPS with this context (e.g. requiring client certificates for mTLS).
        state: share a :class:`PlusState` (otherwise a new one from the upstream lists).

    :meth:`stop` then :meth:`start` makes the host unreachable then brings it back on the same port
    with its state, like an NGINX restart with a ``state`` file.
    """

    thread_name = "nginxplus-standin"

    def __init__(self, port: int = 0, http_upstreams: Iterable[str] = (),
                 stream_upstreams: Iterable[str] = (), host: str = "127.0.0.1", prefix: str = "/api",
                 ssl_context: ssl.SSLContext | None = None,
                 state: PlusState | None = None, **state_options: Any) -> None:
        super().__init__(port, host, ssl_context)
        self.prefix = "/" + prefix.strip("/")
        self.state = state or PlusState(http_upstreams, stream_upstreams, **state_options)

    # -- lifecycle -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API base URL clients are configured with, e.g. ``http://127.0.0.1:9000/api``."""
        return f"{self.base_url}{self.prefix}"

    # -- test helpers ----------------------------------------------------------------------------------

    def servers(self, kind: str, upstream: str) -> list[dict[str, Any]]:
        """The upstream's server objects as ``GET .../servers`` would return them."""
        return self.state.servers(kind, upstream)

    def addresses(self, kind: str, upstream: str) -> list[str]:
        """The sorted ``server`` addresses of an upstream."""
        return sorted(s["server"] for s in self.servers(kind, upstream))

    @property
    def request_count(self) -> int:
        """Requests answered since start (or since :meth:`reset_requests`)."""
        return self.state.request_count

    @property
    def header_log(self) -> list[tuple[str, str, dict[str, str]]]:
        """``(method, path, {Authorization, X-NLK-Version: value})`` of every request, rejected ones included."""
        with self.state.lock:
            return [(m, p, dict(h)) for m, p, h in self.state.header_log]

    @property
    def rejected(self) -> int:
        """Requests answered ``401`` (API key missing or wrong)."""
        return self.state.rejected

    @property
    def request_log(self) -> list[tuple[str, str]]:
        """``(method, path)`` of every request answered, oldest first."""
        with self.state.lock:
            return list(self.state.request_log)

    def reset_requests(self) -> None:
        with self.state.lock:
            self.state.request_count = 0
            self.state.request_log.clear()
            self.state.header_log.clear()
            self.state.rejected = 0

    # -- the aiohttp application --------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_route("*", self.prefix, self._handle)
        app.router.add_route("*", self.prefix + "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        tail = request.path[len(self.prefix):]
        parts = [p for p in tail.split("/") if p]
        body: Any = None
        try:
            if request.method in ("POST", "PATCH"):
                raw = await request.read()
                try:
                    body = json.loads(raw or b"null")
                except (ValueError, UnicodeDecodeError):
                    raise ApiError(415, "JsonError", "json error") from None
            seen = {h: request.headers[h] for h in ("Authorization", "X-NLK-Version") if h in request.headers}
            with self.state.lock:
                self.state.header_log.append((request.method, request.path, seen))
                if not self.state.authorized(request.headers.get("Authorization")):
                    self.state.rejected += 1
                    raise ApiError(401, "Unauthorized", "missing or invalid API key")
                self.state.request_count += 1
                self.state.request_log.append((request.method, request.path))
                status, payload = self.state.handle(request.method, parts, copy.deepcopy(body))
        except ApiError as err:
            return web.json_response(
                {"error": {"status": err.status, "text": err.text, "code": err.code},
                 "request_id": uuid.uuid4().hex, "href": HREF}, status=err.status)
        if status == 204:
            return web.Response(status=204)
        if isinstance(payload, RawJSON):
            return web.Response(body=payload.data, status=status, content_type="application/json")
        return web.json_response(payload, status=status)


def _parse_upstream(value: str) -> tuple[str, str]:
    kind, sep, name = value.partition(":")
    if not sep or kind not in KINDS or not name:
        raise argparse.ArgumentTypeError(f"expected http:NAME or stream:NAME, got {value!r}")
    return kind, name


def main(argv: list[str] | None = None) -> int:
    """``python -m standins.nginxplus --port N --upstream http:NAME --upstream stream:NAME``; runs until
    SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m standins.nginxplus", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--prefix", default="/api")
    parser.add_argument("--upstream", action="append", type=_parse_upstream, default=[],
                        help="declare a zone upstream, http:NAME or stream:NAME (repeatable)")
    parser.add_argument("--read-only", action="store_true", help="answer writes with 405 MethodDisabled")
    parser.add_argument("--api-key-env", default="", metavar="VAR",
                        help="require 'Authorization: ApiKey <base64 of $VAR>' on every request (NGINXaaS)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    standin = NginxPlusStandIn(
        port=args.port, host=args.host, prefix=args.prefix,
        http_upstreams=[n for k, n in args.upstream if k == "http"],
        stream_upstreams=[n for k, n in args.upstream if k == "stream"], write=not args.read_only,
        api_key=os.environ.get(args.api_key_env) if args.api_key_env else None)
    upstreams = ",".join(f"{k}:{n}" for k, n in sorted(standin.state.upstreams))
    return standin.serve_forever(f"nginx plus stand-in: {{url}} upstreams={upstreams}")


if __name__ == "__main__":
    raise SystemExit(main())
