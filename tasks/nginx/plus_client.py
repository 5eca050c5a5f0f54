"""NGINX Plus REST API client (the only code that talks to NGINX Plus), on ``urllib3`` (keep-alive pools per process).

Covers what the edge needs from ``ngx_http_api_module``: version negotiation (``GET <base>`` lists
the versions; the highest one this client speaks is used and remembered per base URL) and the
server endpoints of HTTP and stream upstreams, with the paths nginx-plus-go-client uses
(``servers`` to list, ``servers/`` to add, ``servers/{id}/`` to modify or remove).

Errors are :class:`kube.refusal.Refusal` s, each classified by its ``failure`` (the one protocol
:func:`kube.toolkit.execute` reads): :class:`PlusAPIError` for an error answer (status and code read
from the JSON error body, as nginx-plus-go-client v2.4 does; ``retry`` for a 5xx, ``throttled`` for a 429
with its ``Retry-After``, ``not_found`` for a 404 such as :class:`UpstreamMissing`, else ``refused``, e.g.
:class:`PlusUnauthorized`), :class:`PlusUnreachable` (``retry``) for connection failures and timeouts,
:class:`PlusUnsupportedVersion` (``refused``) when the host speaks none of our versions. TLS follows the settings'
:class:`~tasks.nginx.settings.TLSMode`, with one live client context per mode and Secrets, kept by the
house's one certificate reloader (:func:`certificates`). The PEM material never leaves memory except for
a client key pair, which ``ssl`` can only load from files: it is written to a private temp file and
removed at once (:func:`webhooks.tls.load_pair`).
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import quote

import certifi
import urllib3

import fencing
from kube.refusal import Failure, Refusal
from tasks.nginx.settings import TLSMaterial, TLSMode
from webhooks.certificates import CertificateError, KeyPair
from webhooks.tls import CertificateReloader, Material

log = logging.getLogger("tasks.nginx.plus_client")

#: API versions this client speaks (the server fields it uses exist from version 4 on).
SUPPORTED_VERSIONS = range(4, 10)
#: (connect, read) timeouts in seconds; the original used 10 s for the whole request.
DEFAULT_TIMEOUT = (3.0, 10.0)
PROTOCOLS = ("http", "stream")


class PlusError(Refusal):
    """Any failure talking to an NGINX Plus host (``refused`` unless a subclass says otherwise)."""


class PlusUnreachable(PlusError):
    """The host did not answer (connection refused, DNS, TLS handshake, timeout): ``retry``."""

    @property
    def failure(self) -> Failure:
        """``retry`` without an HTTP status (no answer came)."""
        return Failure("retry", 0, message=str(self), text=str(self))


class PlusUnsupportedVersion(PlusError):
    """``GET <base>`` did not list any version this client speaks (or was not a version list)."""


class Answered(Protocol):
    """What :class:`PlusAPIError` reads of an answer (:class:`Answer`; a ``requests.Response`` has it too)."""

    status_code: int

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


class PlusAPIError(PlusError):
    """An error answer from the API.

    Attributes: ``status`` and ``code`` from the JSON error body (``status`` falls back to the HTTP
    status when the body is not the API's error JSON), ``text``, ``request_id``, ``href``,
    ``http_status``, ``method``, ``url``, ``retry_after`` (seconds of a ``Retry-After`` header, else ``None``).
    """

    def __init__(self, method: str, url: str, expected: int, response: Answered) -> None:
        self.method, self.url, self.http_status = method, url, response.status_code
        wait = response.headers.get("Retry-After", "")
        self.retry_after = float(wait) if wait.isdigit() else None
        self.status, self.code, self.text, self.request_id, self.href = response.status_code, "", "", "", ""
        try:
            body = response.json()
            error = body["error"]
            self.status = int(error.get("status", response.status_code))
            self.code = str(error.get("code", ""))
            self.text = str(error.get("text", ""))
            self.request_id = str(body.get("request_id", ""))
            self.href = str(body.get("href", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            self.text = response.text[:200]
        super().__init__(
            f"{method} {url}: expected {expected} response, got {response.status_code}: "
            f"error.status={self.status}; error.text={self.text}; error.code={self.code}; "
            f"request_id={self.request_id}; href={self.href}")


    @property
    def failure(self) -> Failure:
        """Classified by the HTTP status (:meth:`kube.refusal.Failure.of_http`), ``code`` the API's."""
        return Failure.of_http(self.http_status, self.text, code=self.code, text=str(self), delay=self.retry_after)

    @classmethod
    def answered(cls, method: str, url: str, expected: int, response: Answered) -> PlusAPIError:
        """The error of an unexpected answer: :class:`PlusUnauthorized` for 401/403,
        :class:`UpstreamMissing` for ``UpstreamNotFound``, else a :class:`PlusAPIError`."""
        if response.status_code in (401, 403):
            return PlusUnauthorized(method, url, expected, response)
        error = cls(method, url, expected, response)
        return UpstreamMissing(method, url, expected, response) if error.code == UpstreamMissing.CODE else error


class PlusUnauthorized(PlusAPIError):
    """``401``/``403``: the host wants an API key (NGINXaaS) and got none or a wrong one (``refused``)."""


class UpstreamMissing(PlusAPIError):
    """``404 UpstreamNotFound``: the host has no (zone) upstream of that name and protocol (``not_found``)."""

    CODE = "UpstreamNotFound"


def _builder(mode: TLSMode) -> Callable[[bytes], ssl.SSLContext]:
    """Builds the empty client context of ``mode`` for a CA bundle (see :class:`~tasks.nginx.settings.TLSMode`)."""
    def build(ca_pem: bytes) -> ssl.SSLContext:
        if mode in (TLSMode.SS_TLS, TLSMode.SS_MTLS):
            return ssl.create_default_context(cadata=ca_pem.decode("ascii", "replace"))
        context = ssl.create_default_context()
        if mode is TLSMode.NO_TLS:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context.load_verify_locations(certifi.where())
        return context

    return build


def _material(tls: TLSMaterial) -> Material:
    pair = None
    if tls.mode.needs_client_cert:
        assert tls.client_cert_pem is not None and tls.client_key_pem is not None
        pair = KeyPair(tls.client_cert_pem.reveal(), tls.client_key_pem.reveal())
    trust = b""
    if tls.mode in (TLSMode.SS_TLS, TLSMode.SS_MTLS):
        assert tls.ca_pem is not None
        trust = tls.ca_pem.reveal()
    return Material(pair, trust)


_reloaders: dict[tuple[TLSMode, str], CertificateReloader] = {}
_reloaders_lock = threading.Lock()


def certificates(tls: TLSMaterial) -> CertificateReloader:
    """The live client context of ``tls``'s mode and Secrets (one per process), loaded with ``tls``'s PEM
    material: the one certificate reloader of the house (:class:`webhooks.tls.CertificateReloader`), fed
    by the Secrets every sync reads, so new connections use changed certificates at once.

    Raises :class:`PlusError` when the material does not load (message without the material); the
    context keeps the material it had.
    """
    with _reloaders_lock:
        reloader = _reloaders.get((tls.mode, tls.source))
        if reloader is None:
            reloader = CertificateReloader(None, f"nginx tls-mode {tls.mode.value} secrets {tls.source or '-'}",
                                           build=_builder(tls.mode))
            _reloaders[(tls.mode, tls.source)] = reloader
    try:
        reloader.swap(_material(tls))
    except CertificateError as exc:
        cause = exc.__cause__
        raise PlusError(f"tls-mode {tls.mode.value}: cannot load the certificates: {type(cause).__name__}: "
                        f"{getattr(cause, 'reason', None) or 'invalid PEM'}") from None
    return reloader


_versions: dict[str, int] = {}
_versions_lock = threading.Lock()
_pools: dict[tuple[TLSMode, str], urllib3.PoolManager] = {}
_pools_lock = threading.Lock()
#: Keep-alive connections kept per host and TLS context (a worker's threads; more are opened and closed).
POOL_SIZE = 16


class Answer:
    """An HTTP answer as :class:`PlusAPIError` reads it (the attributes of ``requests.Response`` it uses).

    Attributes: ``status_code`` (int), ``headers`` (case-insensitive mapping), ``content`` (bytes).
    """

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (invalid bytes replaced)."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON; raises ``ValueError`` when it is not."""
        return json.loads(self.content)


def _pool(tls: TLSMaterial) -> tuple[urllib3.PoolManager, ssl.SSLContext | None]:
    """The process's keep-alive connection pools for ``tls``'s mode and Secrets (thread-safe, shared by the
    worker's threads) and the current client context of :func:`certificates`: a new context gets pools of
    its own (it is part of the pool key), so open connections keep theirs. Raises :class:`PlusError`."""
    context = certificates(tls).current
    key = (tls.mode, tls.source)
    with _pools_lock:
        manager = _pools.get(key)
        if manager is None:
            if tls.mode is TLSMode.NO_TLS:
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            # no proxies from the environment between us and NGINX Plus: urllib3 reads none
            manager = urllib3.PoolManager(num_pools=64, maxsize=POOL_SIZE, block=False)
            _pools[key] = manager
    return manager, context


def forget_versions() -> None:
    """Forget the negotiated API versions (tests; a host that was replaced)."""
    with _versions_lock:
        _versions.clear()


class PlusClient:
    """One NGINX Plus host's API.

    Args:
        base_url: the API location, e.g. ``http://10.1.1.4:9000/api`` (a trailing ``/`` is ignored).
        tls: TLS material for the settings' mode (default ``no-tls``).
        timeout: ``(connect, read)`` seconds.
        api_version: skip negotiation and use this version.
        api_key: NGINXaaS dataplane API key: every request carries ``Authorization: ApiKey
            <base64(key)>`` (as nginx/nginx-loadbalancer-kubernetes v1.2); ``""``/``None``: no header.
        nlk_version: when not ``None``, every request carries ``X-NLK-Version: <value>`` (the
            original's version header, sent to its NGINXaaS hosts).

    ``guard``: called before every write (POST, PATCH, DELETE) after :func:`fencing.check` (the running
    reconcile's lease); a sync sets it to its sync lock's check (:class:`tasks.nginx.synclock.Lease`),
    whose ``FenceError`` stops the writes.

    ``requests_made`` counts the HTTP requests this client sent (version negotiation included);
    ``error_answers`` counts the failed ones by the answer's HTTP status (``"404"``, ...), or
    ``"unreachable"`` when no answer came (``reconcilery_nginx_plus_errors_total``'s ``code``).
    """

    def __init__(self, base_url: str, tls: TLSMaterial | None = None,
                 timeout: tuple[float, float] = DEFAULT_TIMEOUT, api_version: int | None = None,
                 api_key: str | None = None, nlk_version: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.tls = tls or TLSMaterial()
        self.timeout = timeout
        self._version = api_version
        self.requests_made = 0
        self.error_answers: dict[str, int] = {}
        self._timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        self._headers: dict[str, str] = {}
        if nlk_version is not None:
            self._headers["X-NLK-Version"] = nlk_version
        if api_key:
            self._headers["Authorization"] = "ApiKey " + base64.b64encode(api_key.encode()).decode("ascii")
        self._base_headers = {"Accept": "application/json", "Connection": "keep-alive", **self._headers}
        self._json_headers = {**self._base_headers, "Content-Type": "application/json"}
        self.guard: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"PlusClient({self.base_url!r}, api_key={'set' if 'Authorization' in self._headers else 'unset'})"

    # -- plumbing ----------------------------------------------------------------------------------

    def _send(self, method: str, url: str, expected: int, body: Any = None, parse: bool = True) -> Any:
        # urllib3 directly, over the process's keep-alive pools: requests' per-call session merging,
        # hooks and cookie handling cost more than the request itself (docs/nginx.md, Performance)
        if method != "GET":
            fencing.check()
            if self.guard is not None:
                self.guard()
        self.requests_made += 1
        headers = self._json_headers if body is not None else self._base_headers
        payload = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        manager, context = _pool(self.tls)
        try:
            pool = manager.connection_from_url(url, pool_kwargs={"ssl_context": context})
            response = pool.urlopen(method, url, body=payload, headers=headers, timeout=self._timeout,
                                    retries=False, redirect=False, assert_same_host=False)
        except urllib3.exceptions.SSLError as exc:
            self._count_error("unreachable")
            raise PlusUnreachable(f"{method} {url}: TLS failed ({self.tls.mode.value}): {exc}") from None
        except urllib3.exceptions.HTTPError as exc:
            self._count_error("unreachable")
            raise PlusUnreachable(f"{method} {url}: {type(exc).__name__}: {exc}") from None
        if response.status != expected:
            self._count_error(str(response.status))
            error = PlusAPIError.answered(method, url, expected, Answer(response.status, response.headers,
                                                                        response.data))
            if error.code == "UnknownVersion":
                with _versions_lock:
                    _versions.pop(self.base_url, None)
            raise error
        content = response.data
        if response.status == 204 or not content or not parse:
            return None
        try:
            return json.loads(content)
        except ValueError:
            raise PlusError(f"{method} {url}: answer is not JSON") from None

    def _count_error(self, code: str) -> None:
        self.error_answers[code] = self.error_answers.get(code, 0) + 1

    def api_version(self) -> int:
        """The highest version both sides speak: ``GET <base_url>`` once per base URL and process.

        Raises :class:`PlusUnsupportedVersion`, :class:`PlusAPIError`, :class:`PlusUnreachable`.
        """
        if self._version is not None:
            return self._version
        with _versions_lock:
            known = _versions.get(self.base_url)
        if known is None:
            listed = self._send("GET", self.base_url, 200)
            if not isinstance(listed, list) or not all(isinstance(v, int) for v in listed):
                raise PlusUnsupportedVersion(f"GET {self.base_url}: expected a list of API versions, got "
                                             f"{str(listed)[:100]!r}")
            common = set(listed) & set(SUPPORTED_VERSIONS)
            if not common:
                raise PlusUnsupportedVersion(
                    f"{self.base_url} speaks API versions {listed}; this client needs one of "
                    f"{SUPPORTED_VERSIONS.start}..{SUPPORTED_VERSIONS.stop - 1}")
            known = max(common)
            with _versions_lock:
                _versions[self.base_url] = known
        self._version = known
        return known

    def _url(self, protocol: str, *parts: str | int, trailing: bool = False) -> str:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be http or stream, got {protocol!r}")
        path = "/".join(quote(str(p), safe="") for p in parts)
        return f"{self.base_url}/{self.api_version()}/{protocol}/upstreams/{path}" + ("/" if trailing else "")

    # -- endpoints ---------------------------------------------------------------------------------

    def versions(self) -> list[int]:
        """``GET <base_url>``: the versions the host lists."""
        return list(self._send("GET", self.base_url, 200))

    def list_upstreams(self, protocol: str) -> dict[str, Any]:
        """``GET /{v}/{protocol}/upstreams``: upstream name -> status object."""
        return dict(self._send("GET", self._url(protocol).rstrip("/"), 200))

    def list_servers(self, protocol: str, upstream: str) -> list[dict[str, Any]]:
        """``GET .../upstreams/{u}/servers``: the server objects (``404 UpstreamNotFound`` if undeclared)."""
        return list(self._send("GET", self._url(protocol, upstream, "servers"), 200))

    def get_server(self, protocol: str, upstream: str, server_id: int) -> dict[str, Any]:
        """``GET .../servers/{id}``."""
        return dict(self._send("GET", self._url(protocol, upstream, "servers", server_id), 200))

    def add_server(self, protocol: str, upstream: str, server: dict[str, Any]) -> dict[str, Any]:
        """``POST .../servers/`` (201): the created server object with its ``id``."""
        return dict(self._send("POST", self._url(protocol, upstream, "servers", trailing=True), 201, server))

    def update_server(self, protocol: str, upstream: str, server_id: int, fields: dict[str, Any]
                      ) -> dict[str, Any]:
        """``PATCH .../servers/{id}/`` (200): the updated server object."""
        url = self._url(protocol, upstream, "servers", server_id, trailing=True)
        return dict(self._send("PATCH", url, 200, fields))

    def delete_server(self, protocol: str, upstream: str, server_id: int, remaining: bool = True
                      ) -> list[dict[str, Any]]:
        """``DELETE .../servers/{id}/`` (200): the remaining servers; ``remaining=False``: ``[]`` without
        parsing them (a sync deleting 100 of 1,000 servers would parse 100 lists of ~1,000)."""
        url = self._url(protocol, upstream, "servers", server_id, trailing=True)
        return list(self._send("DELETE", url, 200, parse=remaining) or [])
