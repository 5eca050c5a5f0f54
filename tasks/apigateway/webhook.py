"""The APIRule webhooks on one HTTPS listener: ``POST /convert`` answering ConversionReviews, and
``POST /validate-gateway-kyma-project-io-v1beta1-apirule`` answering AdmissionReviews of v1beta1 APIRules.

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

The v1beta1 admission webhook (api-gateway 3.4.0's ``internal/webhook/gateway/v1beta1``, served by the
original's manager on the same port as the conversion webhook) refuses CREATE, UPDATE and DELETE of
v1beta1 APIRules with "v1beta1 APIRule version is no longer supported, please use v2 instead" unless
v1beta1 access is allowed (``RECONCILERY_APIRULE_V1BETA1_ACCESS``, the controller's own decision), and
counts every such request in ``api_gateway_apirule_v1beta1_{create,update,delete}_actions_total`` (the
decision: :mod:`tasks.apigateway.v1beta1.admission`). AdmissionReview ``admission.k8s.io/v1`` only, bodies
up to two objects of the API server's bound plus the envelope (an UPDATE), the API server's default 10 s
per request.

Both endpoints count in ``reconcilery_webhook_requests_total{webhook,code}`` and
``reconcilery_webhook_request_seconds{webhook}`` (:mod:`webhooks.server`) as ``apirule-conversion`` and
``apirule-v1beta1``.

The listener registers with :mod:`webhooks`, so ``reconcilery webhook`` serves it next to the Snatch
webhook (on the process's ``--host`` and with its ``--kubeconfig``). Settings (environment):
``RECONCILERY_APIGATEWAY_WEBHOOK_PORT`` (9444; ``-1`` disables it), ``RECONCILERY_APIGATEWAY_WEBHOOK_HOST``
(overrides ``--host``), ``RECONCILERY_APIGATEWAY_CERT_POLL_SECONDS`` (10). A port that cannot be bound
is logged and the process keeps serving the Snatch webhook.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kube import resources
from kube.toolkit.metrics import counter
from tasks.apigateway import certificate
from tasks.apigateway import settings as domain_settings
from tasks.apigateway.conversion import ConversionError, convert
from tasks.apigateway.v1beta1 import admission as v1beta1_admission
from webhooks import register
from webhooks import review as reviews
from webhooks import server as review_server
from webhooks.certificates import KeyPair
from webhooks.clients import kube_factory
from webhooks.review import MalformedReview, Review
from webhooks.tls import CertificateReloader

log = logging.getLogger("reconcilery.apigateway.webhook")

CONVERT_PATH = "/convert"
V1BETA1_PATH = v1beta1_admission.PATH
DEFAULT_PORT = 9444
#: The ``webhook`` label of each endpoint's request metrics.
CONVERSION_NAME, V1BETA1_NAME = "apirule-conversion", "apirule-v1beta1"
#: The AdmissionReviews the v1beta1 endpoint answers: an UPDATE carries the object and the old one.
ADMISSION_REVIEW = dataclasses.replace(
    reviews.ADMISSION, max_body_bytes=2 * reviews.API_SERVER_MAX_OBJECT_BYTES + reviews.ENVELOPE_BYTES)
#: The API server's default ``timeoutSeconds`` of an admission webhook (the original's configuration sets none).
ADMISSION_LIMITS = review_server.Limits(timeout=10.0)
#: The reviews ``/convert`` answers: ``apiextensions.k8s.io/v1`` and ``v1beta1`` ConversionReviews.
REVIEW = reviews.CONVERSION
MAX_BODY_BYTES = REVIEW.max_body_bytes
#: Reviews with more objects than this are converted in a worker thread (the loop keeps serving).
THREAD_OBJECTS = 64

__all__ = ["CONVERT_PATH", "V1BETA1_PATH", "ConversionWebhook", "MalformedReview", "build", "conversion_app",
           "convert_objects", "review_response", "v1beta1_review", "v1beta1_webhook_configuration"]

#: api-gateway's counters (``internal/webhook/gateway/v1beta1``): every v1beta1 request received, allowed or not.
V1BETA1_ACTIONS = {
    "create": counter("api_gateway_apirule_v1beta1_create_actions_total",
                      "The total number of APIRule v1beta1 CREATE actions received"),
    "update": counter("api_gateway_apirule_v1beta1_update_actions_total",
                      "The total number of APIRule v1beta1 UPDATE actions received"),
    "delete": counter("api_gateway_apirule_v1beta1_delete_actions_total",
                      "The total number of APIRule v1beta1 DELETE actions received"),
}


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


#: The webhook entry of api-gateway's ``config/admission-webhook/manifests.yaml`` (its clientConfig aside).
V1BETA1_WEBHOOK = "v1beta1-admission.apirule.gateway.kyma-project.io"


#: api-gateway's webhook Service port (``api-gateway-webhook-service``; the listener's port behind it).
SERVICE_PORT = 9443


def v1beta1_webhook_configuration(ca_bundle: str | None = None,
                                  client_config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration ``api-gateway-validating-webhook-configuration`` of the v1beta1
    webhook: ``client_config`` (default the Service ``kyma-system/api-gateway-webhook-service`` port 9443,
    path :data:`V1BETA1_PATH`) with ``ca_bundle`` (base64 PEM) when given; as the original's
    (``failurePolicy: Fail``, ``sideEffects: None``, ``matchPolicy: Exact``, v1beta1 APIRules on CREATE,
    UPDATE and DELETE, AdmissionReview v1, every namespace, the API server's default timeout)."""
    client = dict(client_config or {"service": {"name": certificate.SERVICE_NAME, "namespace": "kyma-system",
                                                "path": V1BETA1_PATH, "port": SERVICE_PORT}})
    if ca_bundle:
        client["caBundle"] = ca_bundle
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": certificate.VALIDATING_WEBHOOK_CONFIGURATION,
                     "labels": {"app.kubernetes.io/part-of": "reconcilery",
                                "app.kubernetes.io/component": "apigateway"}},
        "webhooks": [{
            "name": V1BETA1_WEBHOOK, "admissionReviewVersions": ["v1"], "clientConfig": client,
            "failurePolicy": "Fail", "matchPolicy": "Exact", "sideEffects": "None",
            "rules": [{"apiGroups": ["gateway.kyma-project.io"], "apiVersions": ["v1beta1"],
                       "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["apirules"]}],
        }],
    }


def v1beta1_review(review: Review, access: bool) -> dict[str, Any]:
    """The ``response`` fields for an AdmissionReview of a v1beta1 APIRule (``access``: v1beta1 access is
    allowed); moves the operation's counter (:mod:`tasks.apigateway.v1beta1.admission`)."""
    verdict = v1beta1_admission.decide_request(review.request, access)
    if verdict.counted is not None:
        V1BETA1_ACTIONS[verdict.counted].inc()
    if not verdict.allowed:
        request = review.request
        log.info("v1beta1 apirule refused uid=%s operation=%s code=%d", review.uid,
                 request.get("operation") if isinstance(request.get("operation"), str) else "?", verdict.code)
    return verdict.response()


def _access_of(access: bool | Callable[[], bool] | None) -> Callable[[], bool]:
    if access is None:
        return lambda: domain_settings.current().v1beta1_access
    if callable(access):
        return access
    return lambda: access


def conversion_app(v1beta1_access: bool | Callable[[], bool] | None = None) -> web.Application:
    """The HTTP application: ``POST /convert`` and ``POST`` :data:`V1BETA1_PATH` (each with its own
    concurrency bounds) and ``GET /healthz``. ``v1beta1_access``: whether v1beta1 APIRules are allowed
    (or a callable asked on every review; a callable that raises refuses, as the original does when it
    cannot check); ``None``: this process's ``RECONCILERY_APIRULE_V1BETA1_ACCESS``."""
    access = _access_of(v1beta1_access)

    async def decide_v1beta1(review: Review) -> dict[str, Any]:
        try:
            allowed = bool(access())
        except Exception:  # fail closed, as the original's access check
            log.exception("v1beta1 access could not be decided uid=%s", review.uid)
            allowed = False
        return v1beta1_review(review, allowed)

    handle_convert = review_server.review_endpoint(REVIEW, _decide, check_content_type=False, webhook=CONVERSION_NAME)
    handle_v1beta1 = review_server.review_endpoint(ADMISSION_REVIEW, decide_v1beta1, limits=ADMISSION_LIMITS,
                                                   webhook=V1BETA1_NAME)
    app = review_server.review_app(REVIEW, {CONVERT_PATH: handle_convert, V1BETA1_PATH: handle_v1beta1},
                                   max_body_bytes=ADMISSION_REVIEW.max_body_bytes)

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
    """The HTTPS listener of ``/convert`` and the v1beta1 admission webhook (a :class:`webhooks.Listener`).

    Args:
        read_secret: returns the certificate Secret (or ``None``); blocking, runs in a thread.
        host, port: listen address; ``port=0`` picks a free one (see :attr:`port`).
        poll_interval: seconds between Secret reads (at most 1 s until a pair is loaded).
        v1beta1_access: whether v1beta1 APIRules are allowed (:func:`conversion_app`); ``None``: this
            process's setting.
    """

    name = "apigateway-conversion"

    def __init__(self, read_secret: Callable[[], dict[str, Any] | None], host: str = "0.0.0.0",
                 port: int = DEFAULT_PORT, poll_interval: float = 10.0,
                 v1beta1_access: bool | Callable[[], bool] | None = None) -> None:
        self.host = host
        self.v1beta1_access = v1beta1_access
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
        """The conversion webhook's URL."""
        return review_server.url(self.host, self.port, CONVERT_PATH)

    @property
    def v1beta1_url(self) -> str:
        """The v1beta1 admission webhook's URL."""
        return review_server.url(self.host, self.port, V1BETA1_PATH)

    async def start(self) -> None:
        """Read the certificate Secret (a missing or unusable pair is logged: handshakes fail until one
        is loaded) and listen. Raises ``OSError`` when the port cannot be bound."""
        await self.certificate.refresh()
        app = conversion_app(self.v1beta1_access)
        self._runner, self.port = await review_server.listen(app, self.host, self.port, self.certificate.context)
        self.certificate.start()
        log.info("apirule webhooks serving host=%s port=%d paths=%s,%s certificate_loaded=%s", self.host,
                 self.port, CONVERT_PATH, V1BETA1_PATH, self.certificate.loaded)

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
