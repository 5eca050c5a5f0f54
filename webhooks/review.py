"""The AdmissionReview / ConversionReview skeleton (pure): parse a review, let the domain decide, answer.

Every webhook of the house answers the same way (controller-runtime's ``admission.Webhook`` and
``conversion.Webhook`` do the same for Go webhooks):

1. :func:`parse` checks the body: size, JSON, ``apiVersion`` / ``kind`` of the review, a ``request``
   with a ``uid``; anything else is a :class:`MalformedReview` with its HTTP status (400, 413);
2. the domain's decision function turns the :class:`Review` into the ``response`` fields (a patch,
   converted objects, ...);
3. :func:`answer` wraps them with the request's ``uid`` in a review of the request's ``apiVersion``;
   a decision that raises is answered as a review with a failed status (:func:`failure_response`),
   never as an HTTP 500.

:func:`respond` is the three steps for a synchronous decision; :mod:`webhooks.server` runs them for
an asynchronous one over HTTPS.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("reconcilery.webhooks.review")

MiB = 1024 * 1024


@dataclass(frozen=True)
class ReviewKind:
    """One kind of review a webhook answers.

    Attributes:
        kind: ``AdmissionReview`` or ``ConversionReview``.
        api_versions: the review versions accepted (the answer echoes the request's).
        max_body_bytes: the largest request body accepted (larger: HTTP 413).
    """

    kind: str
    api_versions: tuple[str, ...]
    max_body_bytes: int


ADMISSION = ReviewKind("AdmissionReview", ("admission.k8s.io/v1",), 7 * MiB)
CONVERSION = ReviewKind("ConversionReview", ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"), 32 * MiB)


class MalformedReview(ValueError):
    """The body is not a review of the expected kind; ``status`` is the HTTP status to answer (400, 413)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Review:
    """A parsed review request: ``request`` is the review's ``request`` object (its ``uid`` checked)."""

    kind: ReviewKind
    api_version: str
    uid: str
    request: dict[str, Any]


def loads(body: bytes | str) -> Any:
    """The JSON value of ``body``. Raises :class:`MalformedReview` (400) when it is not JSON."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReview(f"request body is not JSON: {exc}") from None


def parse(body: bytes | str | Any, kind: ReviewKind, content_type: str | None = None) -> Review:
    """Decode a review request body.

    ``body`` is the raw HTTP body (or an already decoded JSON value); ``content_type`` the request's
    header (``None`` skips the check). Raises :class:`MalformedReview` (status 400; 413 when the body
    exceeds ``kind.max_body_bytes``) for a wrong content type, an empty body, invalid JSON, a wrong
    ``apiVersion`` / ``kind``, or a missing ``request`` / ``request.uid``.
    """
    if content_type is not None:
        media = content_type.split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise MalformedReview(f"contentType={content_type}, expected application/json")
    if isinstance(body, bytes | str):
        if len(body) > kind.max_body_bytes:
            raise MalformedReview(f"request body exceeds {kind.max_body_bytes} bytes", status=413)
        if not body.strip():
            raise MalformedReview("request body is empty")
        review = loads(body)
    else:
        review = body
    if not isinstance(review, dict):
        raise MalformedReview(f"{kind.kind} must be a JSON object")
    api_version = review.get("apiVersion")
    if api_version not in kind.api_versions or review.get("kind") != kind.kind:
        raise MalformedReview(f"expected apiVersion {' or '.join(kind.api_versions)} kind {kind.kind}, "
                              f"got {api_version!r} {review.get('kind')!r}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReview(f"{kind.kind} has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview(f"{kind.kind} request has no uid")
    return Review(kind, str(api_version), uid, request)


def conversion_request(review: Review) -> tuple[str, list[Any]]:
    """``(desiredAPIVersion, objects)`` of a ConversionReview. Raises :class:`MalformedReview` (400)."""
    desired, objects = review.request.get("desiredAPIVersion"), review.request.get("objects")
    if not isinstance(desired, str) or not desired:
        raise MalformedReview("conversion request has no desiredAPIVersion")
    if not isinstance(objects, list):
        raise MalformedReview("conversion request has no objects list")
    return desired, objects


def answer(review: Review, response: dict[str, Any]) -> dict[str, Any]:
    """The review answering ``review``: ``response`` with the request's ``uid`` first, in the request's
    ``apiVersion``."""
    return {"apiVersion": review.api_version, "kind": review.kind.kind, "response": {"uid": review.uid, **response}}


_REASONS = {400: "BadRequest", 408: "Timeout", 413: "RequestEntityTooLarge", 429: "TooManyRequests",
            500: "InternalError", 503: "ServiceUnavailable"}


def status(message: str, code: int = 400) -> dict[str, Any]:
    """A ``metav1.Status`` of failure with ``message`` and HTTP ``code``."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": _REASONS.get(code, "BadRequest"), "code": code}


def failure_response(kind: ReviewKind, message: str, code: int = 500) -> dict[str, Any]:
    """The ``response`` fields of a failed review: an AdmissionReview that denies with ``status``, a
    ConversionReview whose ``result`` is ``Failure`` (the API server reports ``message``)."""
    if kind.kind == CONVERSION.kind:
        return {"result": {"status": "Failure", "message": message, "metadata": {}}}
    failed = status(message, code)
    return {"allowed": False, "status": {k: failed[k] for k in ("metadata", "status", "message", "reason", "code")}}


def malformed_answer(kind: ReviewKind, exc: MalformedReview) -> dict[str, Any]:
    """The body answering a malformed request (with HTTP ``exc.status``): a ``Status``."""
    return status(exc.message, exc.status)


#: The domain's decision: the ``response`` fields for a parsed review (without ``uid``).
Decide = Callable[[Review], dict[str, Any]]


def decided(review: Review, decide: Decide) -> dict[str, Any]:
    """``decide(review)`` answered as a review; an exception is a failed review (logged), never raised."""
    try:
        response = decide(review)
    except MalformedReview:
        raise
    except Exception as exc:  # a bug must not become a 5xx: the API server reports the message
        log.exception("%s decision failed uid=%s", review.kind.kind, review.uid)
        response = failure_response(review.kind, f"internal error: {exc!r}", 500)
    return answer(review, response)


def respond(body: bytes | str | Any, kind: ReviewKind, decide: Decide,
            content_type: str | None = None) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, JSON answer)`` for a request body and a synchronous decision; never raises."""
    try:
        review = parse(body, kind, content_type)
        return 200, decided(review, decide)
    except MalformedReview as exc:
        return exc.status, malformed_answer(kind, exc)
