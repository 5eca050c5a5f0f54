"""What the Azure Resource Manager stand-in's request handlers share: the ARM error answer, a
long-running operation, and the state a resource provider's handler works on (:class:`ArmState`), so the
Network/Resources handlers (:mod:`standins.azure`) and the Cache for Redis ones
(:mod:`standins.azure_redis`) import this and not each other."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ArmError", "ArmState", "AsyncOp", "now"]


def now() -> str:
    """The current time, ISO 8601 in UTC (ARM's timestamps)."""
    return datetime.datetime.now(datetime.UTC).isoformat()


class ArmError(Exception):
    """An ARM error answer: HTTP ``status``, ARM ``code`` and ``message`` (``retry_after``: a 429's header)."""

    def __init__(self, status: int, code: str, message: str, retry_after: str | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


@dataclass
class AsyncOp:
    """A long-running ARM operation on one resource (``kind`` ``put``/``delete``)."""

    op_id: str
    kind: str
    key: str
    done_at: float
    error: tuple[str, str] | None = None
    status: str = "InProgress"
    started: str = field(default_factory=now)


class ArmState(Protocol):
    """What a resource provider's handler reads and writes of the stand-in's state (keys are lower-cased
    resource ids; ``history``: ``(kind, id)`` of every write that changed state)."""

    groups: dict[str, dict[str, Any]]
    resources: dict[str, dict[str, Any]]
    history: list[tuple[str, str]]

    def _advance(self) -> None: ...

    def _start(self, kind: str, key: str, name: str) -> AsyncOp: ...
