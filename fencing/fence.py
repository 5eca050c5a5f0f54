"""One reconcile's fence: its lease and its deadline, visible to every I/O layer.

The workqueue hands a key to one reconcile at a time under a fencing token and a lease (see
``workers.dispatch``). While the reconcile runs, its :class:`Fence` is the current one of the thread
(a ``contextvars`` variable), so the layers that write to the outside world can ask, without being
passed anything:

- :func:`check` before a write: raises :class:`LeaseLost` once the lease may have been taken over
  (another worker may be reconciling the key now) and :class:`DeadlineExceeded` past the deadline;
- :func:`timeout` for a request's timeout: the default, bounded by what is left of both.

Outside a reconcile (watchers, CLI, tests) there is no fence: :func:`check` passes and
:func:`timeout` returns the default. This package is the lowest layer: it imports nothing of ours.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


class FenceError(Exception):
    """The running reconcile must stop writing."""


class LeaseLost(FenceError):
    """The reconcile's lease expired or was taken over: another worker may hold the key now."""


class DeadlineExceeded(FenceError):
    """The reconcile ran past its deadline (``Controller.timeout``); it ends as an error with backoff."""


@dataclass
class Fence:
    """One reconcile's fence.

    Attributes:
        token: the fencing token the workqueue handed out (strictly increasing per queue).
        deadline: ``time.monotonic()`` value after which the reconcile must stop.
        valid_until: ``time.monotonic()`` value until which the lease is surely ours: set from the
            time a renewal was *sent* plus the lease length minus a safety margin, so it expires
            locally before it can expire in Redis (assumption: clock rates differ by less than the
            margin; clocks need not agree).
    """

    token: str
    deadline: float
    valid_until: float
    _lost: threading.Event = field(default_factory=threading.Event, repr=False)
    reason: str = ""
    #: Wall-clock time (``time.time()``) from which the lease was no longer trusted, once lost.
    lost_at: float | None = None

    @property
    def lost(self) -> bool:
        """True once the lease is gone (told by a failed renewal or expired locally)."""
        now = time.monotonic()
        if not self._lost.is_set() and now >= self.valid_until:
            self.mark_lost("lease expired before it could be renewed", at=time.time() - (now - self.valid_until))
        return self._lost.is_set()

    def mark_lost(self, reason: str, at: float | None = None) -> None:
        """Record that the lease is gone (called by the lease keeper); ``at``: since when (wall clock)."""
        if not self._lost.is_set():
            self.reason = reason
            if at is None:  # no later than the end of the lease as this process trusted it
                wall, mono = time.time(), time.monotonic()
                at = min(wall, wall - (mono - self.valid_until))
            self.lost_at = at
            self._lost.set()

    def extend(self, valid_until: float) -> None:
        """A renewal sent at ``valid_until - lease + margin`` succeeded."""
        if not self._lost.is_set():
            self.valid_until = max(self.valid_until, valid_until)

    def remaining(self, write: bool = False) -> float:
        """Seconds until the deadline (``write``: or the end of the lease, whichever is first); may
        be <= 0. A read may outlive the current lease (it is renewed meanwhile); a write must not."""
        end = min(self.deadline, self.valid_until) if write else self.deadline
        return end - time.monotonic()

    def check(self) -> None:
        """Raise :class:`LeaseLost` or :class:`DeadlineExceeded` when the reconcile must stop writing."""
        if self.lost:
            raise LeaseLost(f"lease of token {self.token} lost: {self.reason}")
        if time.monotonic() >= self.deadline:
            raise DeadlineExceeded(f"reconcile deadline passed (token {self.token})")


_current: contextvars.ContextVar[Fence | None] = contextvars.ContextVar("reconcilery_fence", default=None)


def current() -> Fence | None:
    """The fence of the reconcile running in this context, or None outside a reconcile."""
    return _current.get()


@contextmanager
def fenced(fence: Fence) -> Iterator[Fence]:
    """Make ``fence`` the current one for the duration of the ``with`` block."""
    token = _current.set(fence)
    try:
        yield fence
    finally:
        _current.reset(token)


def check() -> None:
    """Raise :class:`FenceError` if the current reconcile must stop writing; no-op outside one."""
    fence = _current.get()
    if fence is not None:
        fence.check()


def timeout(default: float, *, write: bool = False, minimum: float = 0.05) -> float:
    """``default`` seconds, bounded by what is left of the current reconcile's deadline (``write``:
    and of its lease, so that a write is not waited for after the key may have moved on).

    Raises :class:`FenceError` when the reconcile must stop (checked first, so a request is never
    sent by a fenced reconcile); ``minimum`` is the shortest timeout handed out.
    """
    fence = _current.get()
    if fence is None:
        return default
    fence.check()
    return max(minimum, min(default, fence.remaining(write)))


__all__ = ["DeadlineExceeded", "Fence", "FenceError", "LeaseLost", "check", "current", "fenced", "timeout"]
