"""API errors as the real API server words them (``k8s.io/apimachinery/pkg/api/errors``).

Each constructor returns an :class:`ApiError` whose :meth:`ApiError.status` is the ``Status`` body.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "invalid",
    "invalid_causes",
    "method_not_allowed",
    "not_found",
    "resource_not_found",
    "unsupported_media_type",
]


class ApiError(Exception):
    """An API failure: HTTP ``code``, machine ``reason``, human ``message``, optional ``details``."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``Status`` object (``kind: Status``, ``status: Failure``) for the response body."""
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason}
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    """404 ``configmaps "x" not found``."""
    return ApiError(404, "NotFound", f'{_qualified(group, plural)} "{name}" not found',
                    _details(group, plural, name))


def resource_not_found() -> ApiError:
    """404 for a URL that names no served resource."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, plural: str, name: str) -> ApiError:
    """409 ``configmaps "x" already exists``."""
    return ApiError(409, "AlreadyExists", f'{_qualified(group, plural)} "{name}" already exists',
                    _details(group, plural, name))


def conflict(group: str, plural: str, name: str, why: str | None = None) -> ApiError:
    """409 Conflict for a stale ``resourceVersion`` (or failed precondition ``why``)."""
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
                    _details(group, plural, name))


def invalid(group: str, kind: str, name: str, field: str, cause_reason: str, message: str) -> ApiError:
    """422 Invalid with one cause, e.g. ``ConfigMap "" is invalid: metadata.name: Required value: ...``."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [{"reason": cause_reason, "message": message, "field": field}]
    return ApiError(422, "Invalid", f'{kind}{"." + group if group else ""} "{name}" is invalid: {field}: {message}',
                    details)


def bad_request(message: str) -> ApiError:
    """400 BadRequest."""
    return ApiError(400, "BadRequest", message)


def forbidden(group: str, plural: str, name: str, why: str) -> ApiError:
    """403 Forbidden, e.g. creating in a namespace that is being terminated."""
    return ApiError(403, "Forbidden", f'{_qualified(group, plural)} "{name}" is forbidden: {why}',
                    _details(group, plural, name))


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    """405 MethodNotAllowed."""
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(content_type: str) -> ApiError:
    """415 UnsupportedMediaType (e.g. a strategic merge patch on a custom resource)."""
    return ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - accepted media '
                    f'types include: application/json-patch+json, application/merge-patch+json, '
                    f'application/apply-patch+yaml (got "{content_type}")', {})


def expired(requested: int, oldest: int) -> ApiError:
    """410 Gone for a watch from a resourceVersion older than the event log."""
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def invalid_causes(group: str, kind: str, name: str, causes: list[dict[str, str]], message: str) -> ApiError:
    """422 Invalid with several causes (``{reason, message, field}``); ``message`` is the aggregate,
    e.g. ``[spec.a: Required value, spec.b: Invalid value: ...]``."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = causes
    return ApiError(422, "Invalid", f'{kind}{"." + group if group else ""} "{name}" is invalid: {message}', details)
