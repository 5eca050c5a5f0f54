"""The error boundary of the GCP and Azure I/O layers: every failure of a client method becomes the
layer's own error type, so callers need no SDK import; fencing errors pass through unchanged (the
engine stops the reconcile on them)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import fencing

__all__ = ["guarded"]

F = TypeVar("F", bound=Callable[..., Any])


def guarded(translate: Callable[[BaseException], Exception],
            errors: tuple[type[Exception], ...] = (Exception,)) -> Callable[[F], F]:
    """A decorator: a call of the decorated function that raises one of ``errors`` (default: anything)
    but :class:`fencing.FenceError` raises ``translate(exc)`` instead (chained to ``exc``); other
    exceptions propagate unchanged."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except fencing.FenceError:
                raise
            except errors as exc:
                raise translate(exc) from exc

        return cast(F, wrapper)

    return decorate
