"""Errors of the Kubernetes layer, and the pure mapping from an HTTP answer to them.

- :class:`ApiError`: any non-2xx answer or a transport failure (``status`` 0).
- :class:`NotFound`: 404 for an object.
- :class:`ResourceMissing`: 404 because the kind itself is not served (CRD deleted or never
  installed); a subclass of :class:`NotFound` so ``delete`` can ignore both.
- :class:`Conflict`: 409 (stale ``resourceVersion`` on update, or ``AlreadyExists`` on create).
- :class:`Gone`: 410 (a watch or list ``resourceVersion`` too old: relist).
- :class:`ReadLimitExceeded`: an answer of an untrusted cluster (an SKR) past a bound of its client's
  :class:`~kube.client.ReadLimits` (objects or bytes of a list, bytes of one answer, pages) or past its
  total deadline: nothing more is read, so one cluster cannot exhaust the worker's memory or time.
"""

from __future__ import annotations

import json
from typing import Any

from kube.refusal import Failure, Refusal


class ApiError(Refusal):
    """A failed API call. ``status`` is the HTTP code (0: no answer), ``reason`` the Status reason
    (``"NotFound"``, ``"Conflict"``, ``"AlreadyExists"``, ``"Invalid"``, ...), ``message`` the
    server's words, ``body`` the decoded Status object (``{}`` if the answer was not JSON).
    :attr:`failure` classifies it by its status (:meth:`kube.refusal.Failure.of_http`, ``code`` the reason)."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @property
    def failure(self) -> Failure:
        """The classified failure (``retry`` for no answer or a 5xx, ``throttled`` for 429, ...)."""
        return Failure.of_http(self.status, self.message, code=self.reason, text=str(self))


class NotFound(ApiError):
    """404 for an object (or its namespace)."""


class ResourceMissing(NotFound):
    """The kind is not served by the API server (its CRD is gone or was never installed)."""


class Conflict(ApiError):
    """409: the object changed since it was read (``reason="Conflict"``) or already exists
    (``reason="AlreadyExists"``)."""


class Gone(ApiError):
    """410: the requested ``resourceVersion`` is older than the server keeps; list again."""


class ReadLimitExceeded(ApiError):
    """An answer past a bound of the client's read limits (``reason`` ``"TooManyObjects"``,
    ``"TooLarge"``, ``"TooManyPages"`` or ``"DeadlineExceeded"``; ``status`` 0: no answer was used)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(0, reason, message)


_KIND_MISSING_MESSAGES = ("the server could not find the requested resource", "404 page not found")


def decode_status(raw: bytes | str) -> dict[str, Any]:
    """The Status object of an error answer, or ``{}`` when the body is not a JSON object."""
    try:
        decoded = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def error_for(status: int, raw: bytes | str, name: str | None = None) -> ApiError:
    """The error for a non-2xx answer ``status`` with body ``raw``.

    A 404 is :class:`ResourceMissing` when the server says the resource type is missing: its body
    is not a Status (the Go mux's ``404 page not found``), says "the server could not find the
    requested resource", or the request named no object (a collection of a served kind never 404s);
    otherwise :class:`NotFound`. ``name`` is the object the request addressed, if any.
    """
    body = decode_status(raw)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    message = str(body.get("message") or text.strip() or f"HTTP {status}")
    reason = str(body.get("reason") or "")
    if status == 404:
        details = body.get("details") or {}
        kind_missing = (
            body.get("kind") != "Status"
            or any(m in message for m in _KIND_MISSING_MESSAGES)
            or (name is None and not details.get("name"))
        )
        if kind_missing:
            return ResourceMissing(404, reason or "NotFound", message, body)
        return NotFound(404, reason or "NotFound", message, body)
    if status == 409:
        return Conflict(409, reason or "Conflict", message, body)
    if status == 410:
        return Gone(410, reason or "Expired", message, body)
    return ApiError(status, reason or _default_reason(status), message, body)


def _default_reason(status: int) -> str:
    return {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 422: "Invalid", 429: "TooManyRequests",
            500: "InternalError", 503: "ServiceUnavailable"}.get(status, "Unknown")
