"""NGINX Plus REST API client (the only code that talks to NGINX Plus), on ``requests``.

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
import logging
import ssl
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import certifi
import requests
import urllib3
from requests.adapters import HTTPAdapter

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


class PlusAPIError(PlusError):
    """An error answer from the API.

    Attributes: ``status`` and ``code`` from the JSON error body (``status`` falls back to the HTTP
    status when the body is not the API's error JSON), ``text``, ``request_id``, ``href``,
    ``http_status``, ``method``, ``url``, ``retry_after`` (seconds of a ``Retry-After`` header, else ``None``).
    """

    def __init__(self, method: str, url: str, expected: int, response: requests.Response) -> None:
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
    def answered(cls, method: str, url: str, expected: int, response: requests.Response) -> PlusAPIError:
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


class _ContextAdapter(HTTPAdapter):
    """Connects with the reloader's current ``SSLContext`` (and nothing else: no certifi bundle added); a
    new context gets a pool of its own, so open connections keep theirs."""

    def __init__(self, reloader: CertificateReloader) -> None:
        self._reloader = reloader
        super().__init__(pool_connections=4, pool_maxsize=4)

    def build_connection_pool_key_attributes(self, request: Any, verify: Any, cert: Any = None) -> Any:
        host_params, _ = super().build_connection_pool_key_attributes(request, verify, cert)
        return host_params, {"ssl_context": self._reloader.current}

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        return None  # verification is the context's business


_local = threading.local()
_versions: dict[str, int] = {}
_versions_lock = threading.Lock()


def _session(tls: TLSMaterial) -> requests.Session:
    """A keep-alive session per thread, TLS mode and Secrets (sessions are not shared between threads),
    connecting with :func:`certificates` loaded with ``tls``. Raises :class:`PlusError` (see there)."""
    reloader = certificates(tls)
    sessions: dict[tuple[TLSMode, str], requests.Session] = _local.__dict__.setdefault("sessions", {})
    key = (tls.mode, tls.source)
    session = sessions.get(key)
    if session is None:
        if tls.mode is TLSMode.NO_TLS:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        session = requests.Session()
        session.trust_env = False  # no proxies from the environment between us and NGINX Plus
        session.mount("https://", _ContextAdapter(reloader))
        session.headers.update({"Accept": "application/json"})
        sessions[key] = session
    return session


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
        self._headers: dict[str, str] = {}
        if nlk_version is not None:
            self._headers["X-NLK-Version"] = nlk_version
        if api_key:
            self._headers["Authorization"] = "ApiKey " + base64.b64encode(api_key.encode()).decode("ascii")

    def __repr__(self) -> str:
        return f"PlusClient({self.base_url!r}, api_key={'set' if 'Authorization' in self._headers else 'unset'})"

    # -- plumbing ----------------------------------------------------------------------------------

    def _send(self, method: str, url: str, expected: int, body: Any = None) -> Any:
        self.requests_made += 1
        try:
            response = _session(self.tls).request(method, url, json=body, timeout=self.timeout,
                                                  headers=self._headers or None)
        except requests.exceptions.SSLError as exc:
            self._count_error("unreachable")
            raise PlusUnreachable(f"{method} {url}: TLS failed ({self.tls.mode.value}): {exc}") from None
        except (requests.ConnectionError, requests.Timeout) as exc:
            self._count_error("unreachable")
            raise PlusUnreachable(f"{method} {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code != expected:
            self._count_error(str(response.status_code))
            error = PlusAPIError.answered(method, url, expected, response)
            if error.code == "UnknownVersion":
                with _versions_lock:
                    _versions.pop(self.base_url, None)
            raise error
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
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

    def delete_server(self, protocol: str, upstream: str, server_id: int) -> list[dict[str, Any]]:
        """``DELETE .../servers/{id}/`` (200): the remaining servers."""
        url = self._url(protocol, upstream, "servers", server_id, trailing=True)
        return list(self._send("DELETE", url, 200) or [])
