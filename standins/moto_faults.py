"""The one way our additions to moto's responders answer an AWS fault."""

from __future__ import annotations

__all__ = ["fault"]


def fault(code: str, message: str, status: int = 400) -> Exception:
    """A moto ``ServiceException`` that moto serializes as AWS's error ``code`` with ``message`` and HTTP
    ``status`` (raised from an action added to a moto responder: standins/elasticache.py,
    standins/awsbackup.py)."""
    from moto.core.exceptions import ServiceException

    class _Fault(ServiceException):
        pass

    error = _Fault(message)
    error.code = code
    error.http_status_code = status  # type: ignore[attr-defined]
    return error
