"""The error boundary the ExternalGateway, RateLimit and APIGateway reconciles share.

A turn whose kind stopped being served (its CRD removed: :class:`kube.ResourceMissing`) is done; any
other API failure is logged with the controller's own logger and becomes an error result, so the
engine retries it with backoff instead of the worker seeing a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kube import ApiError, ResourceMissing
from workers.controller import Key, Result

Reconcile = Callable[[Key], Result]


def api_errors_as_results(name: str, log: Any) -> Callable[[Reconcile], Reconcile]:
    """Decorate the reconcile of controller ``name`` with the shared error boundary.

    The decorated reconcile returns what the wrapped one returns; :meth:`Result.done` on
    :class:`kube.ResourceMissing`; on :class:`kube.ApiError` a warning ``"<name> reconcile failed"``
    on ``log`` and ``Result.error("<status> <reason>: <message>")``.
    """
    def decorate(reconcile: Reconcile) -> Reconcile:
        @functools.wraps(reconcile)
        def run(key: Key) -> Result:
            try:
                return reconcile(key)
            except ResourceMissing:
                return Result.done()
            except ApiError as exc:
                log.warning(f"{name} reconcile failed", cluster=key.cluster, key=key.ref, status=exc.status,
                            reason=exc.reason, error=exc.message)
                return Result.error(f"{exc.status} {exc.reason}: {exc.message}")
        return run
    return decorate
