"""How reconciles and resyncs read in Flower's task list (pure): ``reconcile[apirule] shop/httpbin``.

Reconciles are reported as Celery task events by the dispatcher (:mod:`workers.dispatch`); resyncs
are Celery tasks beat sends. Flower shows an event's ``name`` and ``args`` as they come, so both carry
the controller in the name and the key as the arguments' text (Celery's ``shadow`` name and
``argsrepr``): no extra Redis round trip, only other strings in messages sent anyway. The controller
is a bounded set, so Flower's per-task-name state (and its ``flower_events_total{task}``) stays bounded;
the key, unbounded, is only ever in the arguments.
"""

from __future__ import annotations

from workers.controller import LOCAL_CLUSTER, Key

#: Longest arguments text of one event (a key's parts are Kubernetes names: far shorter in practice).
MAX_ARGS = 300


def reconcile_name(controller: str) -> str:
    """The task name Flower shows for a reconcile of ``controller``: ``reconcile[<controller>]``."""
    return f"reconcile[{controller}]"


def resync_name(controller: str) -> str:
    """The shadow name of the resync task of ``controller``: ``resync[<controller>]``."""
    return f"resync[{controller}]"


def key_repr(key: Key) -> str:
    """The key as Flower's arguments text: ``namespace/name`` (``name`` when cluster-scoped) on the
    local cluster, ``<cluster> namespace/name`` on another; at most :data:`MAX_ARGS` characters."""
    text = key.ref if key.cluster == LOCAL_CLUSTER else f"{key.cluster} {key.ref}"
    return text if len(text) <= MAX_ARGS else text[:MAX_ARGS - 1] + "…"


__all__ = ["MAX_ARGS", "key_repr", "reconcile_name", "resync_name"]
