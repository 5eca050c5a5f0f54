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
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("reconcilery.webhooks.review")

MiB = 1024 * 1024

#: The API server reads at most 3 MiB of a request body (k8s.io/apiserver/pkg/server/config.go,
#: ``MaxRequestBodyBytes: int64(3 * 1024 * 1024)``: twice etcd's 1.5 MiB request limit, since JSON is
#: converted to protobuf for storage), so no object it admits or converts is larger.
API_SERVER_MAX_OBJECT_BYTES = 3 * MiB
#: What a review carries besides its objects (userInfo, kind, options, ...): controller-runtime's
#: admission webhook budgets 1 MiB for it (pkg/webhook/admission/http.go, ``maxRequestSize``).
ENVELOPE_BYTES = 1 * MiB
#: Deepest nesting of a review accepted: a Pod review nests about 14 levels, an APIRule review about 12.
MAX_DEPTH = 100
#: Upper bound of the memory a parsed body may take (estimated before parsing, see :func:`json_guard`).
MAX_PARSED_BYTES = 64 * MiB
#: Estimated bytes per parsed container (a dict with a few keys, or a list) and per other value.
CONTAINER_COST = 200
VALUE_COST = 64


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


#: An AdmissionReview of a CREATE carries one object; UPDATE adds ``oldObject`` (controller-runtime's 7 MiB
#: is two 3 MiB objects + 1 MiB). Webhooks that admit UPDATEs use :func:`dataclasses.replace` with 7 MiB.
ADMISSION = ReviewKind("AdmissionReview", ("admission.k8s.io/v1",), API_SERVER_MAX_OBJECT_BYTES + ENVELOPE_BYTES)
#: A ConversionReview carries one object (a GET) or one LIST page (every object of the page in one review,
#: apiextensions-apiserver's webhook converter): one object of the API server's bound, or a page of some
#: 2,500 APIRules of 1.5 KiB. A larger unpaged LIST of a converted version fails as a webhook error.
CONVERSION = ReviewKind("ConversionReview", ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"),
                        API_SERVER_MAX_OBJECT_BYTES + ENVELOPE_BYTES)


class MalformedReview(ValueError):
    """The body is not a review of the expected kind; ``status`` is the HTTP status to answer (400, 413).

    ``api_version`` and ``uid`` are the request's when they could be read (echoed in the answer).
    """

    def __init__(self, message: str, status: int = 400, *, api_version: str | None = None, uid: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.api_version = api_version
        self.uid = uid


@dataclass(frozen=True)
class Review:
    """A parsed review request: ``request`` is the review's ``request`` object (its ``uid`` checked)."""

    kind: ReviewKind
    api_version: str
    uid: str
    request: dict[str, Any]


# A JSON string: quotes around anything but quotes and backslashes, or escapes (the unrolled form, linear).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_guard(body: bytes, max_depth: int = MAX_DEPTH, max_parsed_bytes: int = MAX_PARSED_BYTES) -> None:
    """Check, before parsing, that ``body`` (UTF-8 JSON) nests at most ``max_depth`` levels and parses
    into at most about ``max_parsed_bytes`` of memory; raises :class:`MalformedReview` otherwise.

    ``json.loads`` recurses once per level (deep nesting raises ``RecursionError``), and small tokens
    grow: ``[[],[],...]`` takes ~22 times its size as Python lists. The check runs at C speed: strings are
    blanked out, the containers (``[``, ``{``) and values (``,`` + 1) are counted and priced at
    :data:`CONTAINER_COST` / :data:`VALUE_COST` bytes (413 over budget), and the brackets alone are
    reduced ``max_depth`` times by removing innermost pairs (400 when pairs are left: deeper; or when
    more than ``max_depth`` unmatched ones are left; a few are left to ``json.loads`` to report).
    """
    blanked = _STRING.sub(b'""', body)
    containers = blanked.count(b"[") + blanked.count(b"{")
    values = blanked.count(b",") + 1
    estimate = containers * CONTAINER_COST + values * VALUE_COST
    if estimate > max_parsed_bytes:
        raise MalformedReview(f"request body has {containers} arrays/objects and {values} values: it would take "
                              f"~{estimate // MiB} MiB parsed, more than {max_parsed_bytes // MiB} MiB", status=413)
    brackets = blanked.translate(None, _NOT_BRACKETS).replace(b"{", b"[").replace(b"}", b"]")
    for _ in range(max_depth):
        if not brackets:
            return
        brackets = brackets.replace(b"[]", b"")
    if b"[]" in brackets:
        raise MalformedReview(f"request body is nested deeper than {max_depth} levels")
    if len(brackets) > max_depth:  # unmatched, too many to let json.loads find them recursively
        raise MalformedReview("request body is not JSON: its brackets do not match")


def loads(body: bytes | str) -> Any:
    """The JSON value of ``body`` (UTF-8), checked by :func:`json_guard` first.

    Raises :class:`MalformedReview` (400: not UTF-8 JSON, too deep; 413: too large parsed).
    """
    if isinstance(body, str):
        try:
            body = body.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MalformedReview(f"request body is not UTF-8: {exc}") from None
    if json.detect_encoding(body) not in ("utf-8", "utf-8-sig"):
        raise MalformedReview("request body is not UTF-8 JSON")
    json_guard(body)
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReview(f"request body is not JSON: {exc}") from None
    except RecursionError:  # json_guard bounds the depth far below the limit; kept as a last line
        raise MalformedReview("request body is nested too deeply") from None


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
        raise MalformedReview(f"{kind.kind} has no request", api_version=str(api_version))
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview(f"{kind.kind} request has no uid", api_version=str(api_version))
    return Review(kind, str(api_version), uid, request)


def conversion_request(review: Review) -> tuple[str, list[Any]]:
    """``(desiredAPIVersion, objects)`` of a ConversionReview. Raises :class:`MalformedReview` (400)."""
    desired, objects = review.request.get("desiredAPIVersion"), review.request.get("objects")
    if not isinstance(desired, str) or not desired:
        raise MalformedReview("conversion request has no desiredAPIVersion", api_version=review.api_version,
                              uid=review.uid)
    if not isinstance(objects, list):
        raise MalformedReview("conversion request has no objects list", api_version=review.api_version,
                              uid=review.uid)
    return desired, objects


def answer(review: Review, response: dict[str, Any]) -> dict[str, Any]:
    """The review answering ``review``: ``response`` with the request's ``uid`` first, in the request's
    ``apiVersion``."""
    return {"apiVersion": review.api_version, "kind": review.kind.kind, "response": {"uid": review.uid, **response}}


_REASONS = {400: "BadRequest", 408: "Timeout", 413: "RequestEntityTooLarge", 429: "TooManyRequests",
            500: "InternalError", 503: "ServiceUnavailable"}


def failure_response(kind: ReviewKind, message: str, code: int | None = None) -> dict[str, Any]:
    """The ``response`` fields of a failed review: an AdmissionReview that denies with ``status``, a
    ConversionReview whose ``result`` is ``Failure`` (the API server reports ``message``); both a
    ``metav1.Status``, with ``reason`` and ``code`` when ``code`` is given."""
    failed: dict[str, Any] = {"metadata": {}, "status": "Failure", "message": message}
    if code is not None:
        failed |= {"reason": _REASONS.get(code, "BadRequest"), "code": code}
    if kind.kind == CONVERSION.kind:
        return {"result": failed}
    return {"allowed": False, "status": failed}


def malformed_answer(kind: ReviewKind, exc: MalformedReview) -> dict[str, Any]:
    """The review answering a malformed request (sent with HTTP ``exc.status``, a 4xx): a review of
    ``kind`` with a failed status, the request's ``apiVersion`` and ``uid`` when they could be read
    (else the kind's first version and ``""``)."""
    return {"apiVersion": exc.api_version or kind.api_versions[0], "kind": kind.kind,
            "response": {"uid": exc.uid, **failure_response(kind, exc.message, exc.status)}}


def answer_code(http_status: int, body: Any) -> str:
    """The ``code`` label of ``reconcilery_webhook_requests_total`` for one answer (pure): the code the
    API server acts on. For an HTTP 200 that is the review's own status code when it carries one
    (``response.status.code`` of an AdmissionReview, ``response.result.code`` of a ConversionReview:
    ``403`` for a refusal, ``500`` for a decision that raised), else ``200``; for any other HTTP status
    that status (``400``, ``408``, ``413``, ``429``). Always a decimal string of a bounded set."""
    if http_status == 200 and isinstance(body, dict):
        response = body.get("response")
        if isinstance(response, dict):
            status = response.get("status") or response.get("result")
            code = status.get("code") if isinstance(status, dict) else None
            if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
                return str(code)
    return str(http_status)


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
