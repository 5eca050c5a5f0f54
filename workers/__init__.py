"""The engine every controller runs on: registrations, the Redis workqueue, the Celery app.

Import :mod:`workers.app` only in processes that talk to Celery; the rest is importable anywhere.
"""

from workers.controller import (
    LOCAL_CLUSTER,
    Backoff,
    Controller,
    Key,
    Result,
    ResultKind,
    TerminalError,
    registry,
)

__all__ = ["LOCAL_CLUSTER", "Backoff", "Controller", "Key", "Result", "ResultKind", "TerminalError", "registry"]
