"""The APIRule conversion webhook: ``POST /convert`` answering ConversionReviews over HTTPS.

As api-gateway's manager (controller-runtime's conversion webhook on port 9443, behind the Service
``kyma-system/api-gateway-webhook-service``): the request's objects are converted with
:func:`tasks.apigateway.conversion.convert` to ``desiredAPIVersion``; the answer has the request's
uid and the review's apiVersion (``apiextensions.k8s.io/v1`` or ``v1beta1``), ``result.status``
``Success``, or ``Failure`` with the message of the first object that could not be converted. A body
that is not a ConversionReview is a 4xx (400; 413 past :data:`MAX_BODY_BYTES` or a JSON that would
parse too large) with a ConversionReview whose ``result`` is ``Failure`` (controller-runtime answers
400 too); no input ends in a 5xx. Body size, JSON depth, time and concurrency are bounded
(:mod:`webhooks.server`).

The serving certificate is the one the Certificate controller keeps in the Secret
``kyma-system/api-gateway-webhook-certificate`` (:mod:`tasks.apigateway.certificate`): like the
original, which serves the Secret's pair from memory, the listener reads the Secret through the
Kubernetes API and polls it (``poll_interval``), serving a new pair to every new handshake
(:class:`webhooks.tls.CertificateReloader`; TLS 1.3 minimum, as every webhook of the house);
until a pair is loaded TLS handshakes fail and ``ready`` is false. The review handling is
:mod:`webhooks.review`'s skeleton: this module keeps the decision (:func:`convert_objects`) and routes.

The listener registers with :mod:`webhooks`, so ``reconcilery webhook`` serves it next to the Snatch
webhook (on the process's ``--host`` and with its ``--kubeconfig``). Settings (environment):
``RECONCILERY_APIGATEWAY_WEBHOOK_PORT`` (9444; ``-1`` disables it), ``RECONCILERY_APIGATEWAY_WEBHOOK_HOST``
(overrides ``--host``), ``RECONCILERY_APIGATEWAY_CERT_POLL_SECONDS`` (10). A port that cannot be bound
is logged and the process keeps serving the Snatch webhook.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kube import resources
from tasks.apigateway import certificate
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.conversion import ConversionError, convert
from webhooks import register
from webhooks import review as reviews
from webhooks import server as review_server
from webhooks.certificates import KeyPair
from webhooks.clients import kube_factory
from webhooks.review import MalformedReview, Review
from webhooks.tls import CertificateReloader

log = logging.getLogger("reconcilery.apigateway.webhook")

CONVERT_PATH = "/convert"
DEFAULT_PORT = 9444
#: The reviews ``/convert`` answers: ``apiextensions.k8s.io/v1`` and ``v1beta1`` ConversionReviews.
REVIEW = reviews.CONVERSION
MAX_BODY_BYTES = REVIEW.max_body_bytes
#: Reviews with more objects than this are converted in a worker thread (the loop keeps serving).
THREAD_OBJECTS = 64

__all__ = ["CONVERT_PATH", "ConversionWebhook", "MalformedReview", "build", "conversion_app", "convert_objects",
           "review_response"]


def convert_objects(review: Review) -> dict[str, Any]:
    """The ``response`` fields for a ConversionReview: every object converted to ``desiredAPIVersion``
    (``result.status`` ``Success``), or ``Failure`` with the message of the first object that could not
    be converted. Raises :class:`MalformedReview` when the request has no ``desiredAPIVersion`` or
    ``objects`` list."""
    desired, objects = reviews.conversion_request(review)
    try:
        return {"convertedObjects": [convert(obj, desired) for obj in objects],
                "result": {"status": "Success", "metadata": {}}}
    except ConversionError as exc:
        return reviews.failure_response(REVIEW, str(exc))


def review_response(body: bytes) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, JSON answer)`` for a request body; never raises."""
    return reviews.respond(body, REVIEW, convert_objects)


async def _decide(review: Review) -> dict[str, Any]:
    started = time.perf_counter()
    objects = review.request.get("objects")
    many = isinstance(objects, list) and len(objects) > THREAD_OBJECTS
    response = await review_server.in_worker(convert_objects, review) if many else convert_objects(review)
    log.info("conversion uid=%s objects=%d result=%s ms=%.1f", review.uid, len(response.get("convertedObjects") or []),
             response["result"]["status"], (time.perf_counter() - started) * 1000)
    return response


def conversion_app() -> web.Application:
    """The HTTP application: ``POST /convert`` (its own concurrency bounds) and ``GET /healthz``."""
    handle_convert = review_server.review_endpoint(REVIEW, _decide, check_content_type=False)
    app = review_server.review_app(REVIEW, {CONVERT_PATH: handle_convert})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/healthz", healthz)
    return app


# ---- the listener ----------------------------------------------------------------------------------


def secret_pair(secret: dict[str, Any] | None) -> KeyPair | None:
    """The serving pair of the certificate Secret (``None`` while it has no ``tls.crt`` and ``tls.key``)."""
    cert_pem, key_pem = certificate.decode_secret_data(secret)
    return KeyPair(cert_pem, key_pem) if cert_pem and key_pem else None


def _secret_reader(kube_factory: Callable[[], Any]) -> Callable[[], dict[str, Any] | None]:
    holder: list[Any] = []

    def read() -> dict[str, Any] | None:
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
        poll_interval: seconds between Secret reads (at most 1 s until a pair is loaded).
    """

    name = "apigateway-conversion"

    def __init__(self, read_secret: Callable[[], dict[str, Any] | None], host: str = "0.0.0.0",
                 port: int = DEFAULT_PORT, poll_interval: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.certificate = CertificateReloader(lambda: secret_pair(read_secret()), "secret {}/{}".format(
            *certificate.SECRET), poll_interval=poll_interval)
        self._runner: web.AppRunner | None = None

    @property
    def ready(self) -> bool:
        """Listening with a certificate loaded."""
        return self._runner is not None and self.certificate.loaded

    @property
    def url(self) -> str:
        return review_server.url(self.host, self.port, CONVERT_PATH)

    async def start(self) -> None:
        """Read the certificate Secret (a missing or unusable pair is logged: handshakes fail until one
        is loaded) and listen. Raises ``OSError`` when the port cannot be bound."""
        await self.certificate.refresh()
        self._runner, self.port = await review_server.listen(conversion_app(), self.host, self.port,
                                                             self.certificate.context)
        self.certificate.start()
        log.info("conversion webhook serving host=%s port=%d path=%s certificate_loaded=%s", self.host, self.port,
                 CONVERT_PATH, self.certificate.loaded)

    async def stop(self) -> None:
        """Stop polling and listening (idempotent)."""
        await self.certificate.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def build(kubeconfig: str | None = None, host: str | None = None, port: int | None = None,
          poll_interval: float | None = None) -> ConversionWebhook | None:
    """The listener with the process settings (``None`` when ``RECONCILERY_APIGATEWAY_WEBHOOK_PORT``
    is negative). ``kubeconfig`` ``None``: the local cluster (:func:`kube.client_for`)."""
    settings = domain_settings.current()
    if port is None:
        port = settings.webhook_port
    if port < 0:
        return None

    return ConversionWebhook(
        _secret_reader(kube_factory(kubeconfig)),
        host=settings.webhook_host or host or "0.0.0.0",
        port=port,
        poll_interval=poll_interval if poll_interval is not None else settings.cert_poll,
    )


register(ConversionWebhook.name, build)
