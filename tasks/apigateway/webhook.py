"""The APIRule conversion webhook: ``POST /convert`` answering ConversionReviews over HTTPS.

As api-gateway's manager (controller-runtime's conversion webhook on port 9443, behind the Service
``kyma-system/api-gateway-webhook-service``): the request's objects are converted with
:func:`tasks.apigateway.conversion.convert` to ``desiredAPIVersion``; the answer has the request's
uid and the review's apiVersion (``apiextensions.k8s.io/v1`` or ``v1beta1``), ``result.status``
``Success``, or ``Failure`` with the message of the first object that could not be converted. A body
that is not a ConversionReview is a 400 with a ``Status`` (controller-runtime answers 400 too); no
input ends in a 5xx.

The serving certificate is the one the Certificate controller keeps in the Secret
``kyma-system/api-gateway-webhook-certificate`` (:mod:`tasks.apigateway.certificate`): like the
original, which serves the Secret's pair from memory, the listener reads the Secret through the
Kubernetes API and polls it (``poll_interval``), loading a new pair into the live ``SSLContext`` in
place; until a pair is loaded TLS handshakes fail and ``ready`` is false.

The listener registers with :mod:`webhooks`, so ``reconcilery webhook`` serves it next to the Snatch
webhook (on the process's ``--host`` and with its ``--kubeconfig``). Settings (environment):
``RECONCILERY_APIGATEWAY_WEBHOOK_PORT`` (9444; ``-1`` disables it), ``RECONCILERY_APIGATEWAY_WEBHOOK_HOST``
(overrides ``--host``), ``RECONCILERY_APIGATEWAY_CERT_POLL_SECONDS`` (10). A port that cannot be bound
is logged and the process keeps serving the Snatch webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from tasks.apigateway import certificate
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.conversion import ConversionError, convert
from webhooks import register

log = logging.getLogger("reconcilery.apigateway.webhook")

CONVERT_PATH = "/convert"
DEFAULT_PORT = 9444
REVIEW_API_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
MAX_BODY_BYTES = 32 * 1024 * 1024


class MalformedReview(Exception):
    """The body is not a ConversionReview request (answered with HTTP 400)."""


def _status(message: str, code: int = 400) -> dict[str, Any]:
    reason = {400: "BadRequest", 413: "RequestEntityTooLarge"}.get(code, "BadRequest")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def parse_review(body: bytes) -> tuple[str, str, str, list[Any]]:
    """``(review apiVersion, uid, desiredAPIVersion, objects)`` of a ConversionReview request.

    Raises :class:`MalformedReview` for anything else.
    """
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReview(f"the request body is not JSON: {exc}") from None
    if not isinstance(review, dict):
        raise MalformedReview("the request body is not a JSON object")
    if review.get("apiVersion") not in REVIEW_API_VERSIONS or review.get("kind") != "ConversionReview":
        raise MalformedReview(f"expected a ConversionReview of {' or '.join(REVIEW_API_VERSIONS)}, got "
                              f"{review.get('apiVersion')!r}/{review.get('kind')!r}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("conversion request is missing")
    uid, desired, objects = request.get("uid"), request.get("desiredAPIVersion"), request.get("objects")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview("conversion request has no uid")
    if not isinstance(desired, str) or not desired:
        raise MalformedReview("conversion request has no desiredAPIVersion")
    if not isinstance(objects, list):
        raise MalformedReview("conversion request has no objects list")
    return str(review["apiVersion"]), uid, desired, objects


def review_response(body: bytes) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, JSON answer)`` for a request body; never raises."""
    try:
        api_version, uid, desired, objects = parse_review(body)
    except MalformedReview as exc:
        return 400, _status(str(exc))
    response: dict[str, Any] = {"uid": uid}
    try:
        response["convertedObjects"] = [convert(obj, desired) for obj in objects]
        response["result"] = {"status": "Success", "metadata": {}}
    except ConversionError as exc:
        response["result"] = {"status": "Failure", "message": str(exc), "metadata": {}}
    except Exception as exc:  # a bug must not become a 5xx: the API server reports the message
        log.exception("conversion failed uid=%s", uid)
        response["result"] = {"status": "Failure", "message": f"internal error: {exc!r}", "metadata": {}}
    return 200, {"apiVersion": api_version, "kind": "ConversionReview", "response": response}


async def handle_convert(request: web.Request) -> web.Response:
    """The aiohttp handler of ``POST /convert``."""
    started = time.perf_counter()
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return web.json_response(_status("request body too large", 413), status=413)
    status, answer = await asyncio.to_thread(review_response, body) if len(body) > 65536 else review_response(body)
    if status != 200:
        log.warning("malformed conversion review status=%d message=%s", status, answer.get("message"))
    else:
        result = answer["response"]["result"]
        log.info("conversion uid=%s objects=%d result=%s ms=%.1f", answer["response"]["uid"],
                 len(answer["response"].get("convertedObjects") or []), result["status"],
                 (time.perf_counter() - started) * 1000)
    return web.json_response(answer, status=status)


def conversion_app() -> web.Application:
    """The HTTP application: ``POST /convert`` and ``GET /healthz``."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(CONVERT_PATH, handle_convert)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/healthz", healthz)
    return app


# ---- the listener ----------------------------------------------------------------------------------


def server_context() -> ssl.SSLContext:
    """An empty TLS server context (TLS 1.2+, ``http/1.1``); :class:`SecretCertificate` fills it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class SecretCertificate:
    """Keeps :attr:`context` loaded with the pair of the webhook certificate Secret.

    ``read_secret`` returns the Secret (a dict) or ``None``; it runs in a worker thread.
    """

    def __init__(self, read_secret: Callable[[], dict[str, Any] | None]) -> None:
        self.read_secret = read_secret
        self.context = server_context()
        self.loaded: tuple[bytes, bytes] | None = None
        self._scratch = tempfile.TemporaryDirectory(prefix="apigateway-tls-")

    def load(self, secret: dict[str, Any] | None) -> bool:
        """Load the Secret's pair if it changed and is usable; returns whether a new pair is served."""
        cert_pem, key_pem = certificate.decode_secret_data(secret)
        if not cert_pem or not key_pem or self.loaded == (cert_pem, key_pem):
            return False
        crt, key = Path(self._scratch.name) / "tls.crt", Path(self._scratch.name) / "tls.key"
        key.touch(mode=0o600)
        crt.write_bytes(cert_pem)
        key.write_bytes(key_pem)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(crt, key)
        except (ssl.SSLError, ValueError) as exc:
            log.error("webhook certificate unusable secret=%s/%s error=%s", *certificate.SECRET, exc)
            return False
        self.context.load_cert_chain(crt, key)  # on the loop thread: no handshake sees half a pair
        self.loaded = (cert_pem, key_pem)
        log.info("webhook certificate loaded secret=%s/%s not_after=%s", *certificate.SECRET,
                 certificate.not_after(cert_pem).isoformat())
        return True

    async def refresh(self) -> bool:
        """Read the Secret (in a thread) and load it; errors are logged, the old pair stays."""
        try:
            secret = await asyncio.to_thread(self.read_secret)
        except Exception as exc:
            log.warning("webhook certificate secret not readable secret=%s/%s error=%r", *certificate.SECRET, exc)
            return False
        return self.load(secret)

    def close(self) -> None:
        self._scratch.cleanup()


def _secret_reader(kube_factory: Callable[[], Any]) -> Callable[[], dict[str, Any] | None]:
    holder: list[Any] = []

    def read() -> dict[str, Any] | None:
        from kube import resources

        if not holder:
            holder.append(kube_factory())
        namespace, name = certificate.SECRET
        secret: dict[str, Any] | None = holder[0].get(resources.SECRET, name, namespace=namespace)
        return secret

    return read


class ConversionWebhook:
    """The ``/convert`` HTTPS listener (a :class:`webhooks.Listener`).

    Args:
        read_secret: returns the certificate Secret (or ``None``); blocking, runs in a thread.
        host, port: listen address; ``port=0`` picks a free one (see :attr:`port`).
        poll_interval: seconds between Secret reads.
    """

    name = "apigateway-conversion"

    def __init__(self, read_secret: Callable[[], dict[str, Any] | None], host: str = "0.0.0.0",
                 port: int = DEFAULT_PORT, poll_interval: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.poll_interval = poll_interval
        self.certificate = SecretCertificate(read_secret)
        self._runner: web.AppRunner | None = None
        self._poller: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        """Listening with a certificate loaded."""
        return self._runner is not None and self.certificate.loaded is not None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"https://{host}:{self.port}{CONVERT_PATH}"

    async def start(self) -> None:
        await self.certificate.refresh()
        runner = web.AppRunner(conversion_app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self.certificate.context, shutdown_timeout=5.0)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        self._poller = asyncio.create_task(self._poll())
        log.info("conversion webhook serving host=%s port=%d path=%s certificate_loaded=%s", self.host, self.port,
                 CONVERT_PATH, self.certificate.loaded is not None)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval if self.certificate.loaded else min(1.0, self.poll_interval))
            await self.certificate.refresh()

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.certificate.close()


def build(kubeconfig: str | None = None, host: str | None = None, port: int | None = None,
          poll_interval: float | None = None) -> ConversionWebhook | None:
    """The listener with the process settings (``None`` when ``RECONCILERY_APIGATEWAY_WEBHOOK_PORT``
    is negative). ``kubeconfig`` ``None``: the local cluster (:func:`kube.client_for`)."""
    settings = domain_settings.current()
    if port is None:
        port = settings.webhook_port
    if port < 0:
        return None

    def kube_factory() -> Any:
        from kube import Kube, client_for
        from kube.kubeconfig import from_kubeconfig

        if kubeconfig:
            return Kube(from_kubeconfig(kubeconfig), cluster="local", timeout=5.0)
        return client_for("local")

    return ConversionWebhook(
        _secret_reader(kube_factory),
        host=settings.webhook_host or host or "0.0.0.0",
        port=port,
        poll_interval=poll_interval if poll_interval is not None else settings.cert_poll,
    )


register(ConversionWebhook.name, build)
