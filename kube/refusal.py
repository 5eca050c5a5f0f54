"""What a refused request means, for every client of every external system (pure).

One protocol classifies the errors of all clients (the Kubernetes API, AWS, GCP, Azure, NGINX Plus):
each client layer's error type is a :class:`Refusal` and answers its :class:`Failure`, a plain value
that a pure plan reads and :func:`kube.toolkit.execute` acts on:

==============  =====================================================================================
``retry``       transient (no answer, a 5xx, a timeout): the same request may succeed later; by
                default the reconcile comes back after ``delay`` seconds (or with backoff) and the
                status is left as it is.
``throttled``   the server asked to slow down (HTTP 429, AWS ``Throttling``): back after ``delay``.
``not_found``   what the request addressed does not exist (HTTP 404): a delete of it is done.
``refused``     a definite answer a retry cannot change (4xx, a validation error): the plan says what
                it means for the object (an Error condition with ``message``), or the reconcile fails.
==============  =====================================================================================

Lowest layer: imports nothing of ours (the Kubernetes client's errors build on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Failure", "FailureKind", "HttpStatus", "Refusal"]

FailureKind = Literal["retry", "throttled", "not_found", "refused"]


class HttpStatus:
    """What an answer's HTTP ``status`` (0 when no answer came) says: a mixin of the cloud clients' error
    types and of the refusals their plans read."""

    status: int

    @property
    def too_many_requests(self) -> bool:
        """HTTP 429."""
        return self.status == 429

    @property
    def conflict(self) -> bool:
        """HTTP 409."""
        return self.status == 409

    @property
    def not_found(self) -> bool:
        """HTTP 404."""
        return self.status == 404


@dataclass(frozen=True)
class Failure(HttpStatus):
    """A refused request, classified.

    Attributes:
        kind: ``retry``, ``throttled``, ``not_found`` or ``refused`` (module doc).
        status: the HTTP status of the answer (0: no answer came).
        code: the API's own error code (AWS ``InvalidVpcID.NotFound``, Azure ``ResourceNotFound``,
            Kubernetes ``AlreadyExists``), ``""`` when it gave none.
        message: the API's own words (what conditions quote).
        text: the error as its client prints it (``str(err)``, e.g. Azure's ``(Code) message``).
        delay: seconds to wait before the next attempt when the client layer knows (a transient error's
            wait, a 429's ``Retry-After``); ``None``: the caller's default.
    """

    kind: FailureKind
    status: int = 0
    code: str = ""
    message: str = ""
    text: str = ""
    delay: float | None = None

    @classmethod
    def of_http(cls, status: int, message: str = "", *, code: str = "", text: str = "",
                delay: float | None = None) -> Failure:
        """The failure an HTTP ``status`` means: 0 or 5xx ``retry``, 429 ``throttled``, 404 ``not_found``,
        any other ``refused``."""
        kind: FailureKind
        if status == 0 or status >= 500:
            kind = "retry"
        elif status == 429:
            kind = "throttled"
        elif status == 404:
            kind = "not_found"
        else:
            kind = "refused"
        return cls(kind, status, code, message, text or message, delay)

    @property
    def retryable(self) -> bool:
        """Transient: ``retry`` or ``throttled`` (the same request may succeed later)."""
        return self.kind in ("retry", "throttled")

    @property
    def not_found(self) -> bool:
        """What the request addressed does not exist."""
        return self.kind == "not_found"

    def __str__(self) -> str:
        return self.text or self.message or f"{self.kind} ({self.status})"


class Refusal(Exception):
    """Base of every client layer's error for a refused request: it answers its :attr:`failure`
    (subclasses override the property)."""

    @property
    def failure(self) -> Failure:
        """The classified failure; a subclass that does not say is ``refused`` with its text."""
        return Failure("refused", message=str(self), text=str(self))
