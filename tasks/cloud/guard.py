"""The error boundary of the GCP and Azure I/O layers: every failure of a client method becomes the
layer's own error type, so callers need no SDK import; fencing errors pass through unchanged (the
engine stops the reconcile on them)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import fencing

__all__ = ["guarded"]


def guarded(translate: Callable[[BaseException], Exception]) -> Callable[[Any], Any]:
    """A decorator: a call of the decorated function that raises anything but
    :class:`fencing.FenceError` raises ``translate(exc)`` instead (chained to ``exc``)."""

    def decorate(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except fencing.FenceError:
                raise
            except Exception as exc:
                raise translate(exc) from exc

        return wrapper

    return decorate
