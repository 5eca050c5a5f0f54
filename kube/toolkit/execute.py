"""The one executor: carries out a plan's :class:`~kube.toolkit.outcome.Outcome` (thin I/O).

In controller-runtime's order, under the running reconcile's fence (every Kubernetes request checks it,
every provider client calls :func:`fencing.check` before a write):

1. the finalizer is added (``Outcome.add_finalizer``, under the read ``resourceVersion``);
2. the writes are made in order: Kubernetes :class:`~kube.toolkit.actions.Action` s through the
   reconciled object's client or the named one of ``clusters``, provider
   :class:`~kube.toolkit.actions.Call` s through the named one of ``clients``;
3. a refused write (any client's :class:`~kube.refusal.Refusal`, classified as one
   :class:`~kube.refusal.Failure`) stops the writes and its Outcome is ``Outcome.refused``'s answer
   (``None``: the refusal does not stop them; its :class:`~kube.refusal.Failure` is that write's answer);
   without one: a Kubernetes error propagates (``Conflict``: the reconcile runs again on fresh state;
   a create's ``AlreadyExists`` reaches ``Outcome.refused`` when there is one), a delete of something
   already gone is done, a provider call's transient failure comes back after
   its delay without a status change, any other refusal fails the reconcile with backoff;
4. once every write was made, ``Outcome.then`` (with their answers) says the Outcome they lead to,
   whose own writes are made the same way;
5. the status merge patch is written once (nothing when ``None``), then the Event, then the
   finalizer is removed last (with its legacy names).

Returns the object as last written and the engine's :class:`workers.controller.Result`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from kube.client import Kube
from kube.errors import Conflict, ResourceMissing
from kube.refusal import Failure, Refusal
from kube.resources import Resource
from kube.toolkit.actions import Action, Call, Write
from kube.toolkit.finalizers import add_finalizer, remove_finalizer
from kube.toolkit.outcome import Outcome
from kube.toolkit.status import write_status

__all__ = ["Executed", "WriteRefused", "execute"]

log = structlog.get_logger("reconcilery.kube.toolkit")

#: How many ``then`` / ``refused`` outcomes one execution follows (beyond it: a plan bug that would loop).
MAX_CHAIN = 8
#: Seconds before a transient provider failure is tried again when its client gave no delay.
DEFAULT_RETRY = 10.0


@dataclass(frozen=True)
class Executed:
    """What :func:`execute` did: the object as last written (``None`` once it is gone), the Outcome
    that was carried out last (after ``then`` / ``refused``), the engine's result, the refused
    write with its failure (``None``: every write was made), and the answers of the last writes made
    (a created object as the API server stored it)."""

    obj: dict[str, Any] | None
    outcome: Outcome
    result: Any
    refused: tuple[Write, Failure] | None = None
    answers: tuple[Any, ...] = ()


class WriteRefused(Exception):
    """A Kubernetes write refused where the plan said nothing about refusals, when the caller asked
    for refusals to be reported instead of raised (``raise_refused=False``)."""


def _same_seconds(seconds: float) -> float:
    return seconds


def execute(outcome: Outcome, kube: Kube | None = None, res: Resource | None = None,
            obj: dict[str, Any] | None = None, *,
            clusters: Mapping[str, Kube] | None = None, clients: Mapping[str, Any] | None = None,
            resources: Mapping[str, Resource] | None = None, scale: Callable[[float], float] = _same_seconds,
            legacy_finalizers: tuple[str, ...] = (), raise_missing: bool = False,
            written: Callable[[Write, Any], None] | None = None) -> Executed:
    """Carry out ``outcome`` for ``obj`` (of ``res`` in ``kube``'s cluster), see the module doc.
    Without an object (a reconcile whose key is not a Kubernetes object: an NGINX Plus upstream) only
    the writes are made; ``status``, ``event`` and the finalizers need one.

    Args:
        clusters: other clusters' clients by the name an :class:`Action` gives (``"kcp"``).
        clients: provider clients by the name a :class:`Call` gives (``""``: the default one).
        resources: ``Action.kind`` names -> resources, for actions that name their kind.
        scale: applied to the delays of transient failures (``settings.t``: tests run faster).
        legacy_finalizers: older names of ``remove_finalizer``, removed with it.
        raise_missing: an action whose kind is no longer served raises ``ResourceMissing`` (the reads
            said it was served: read again) instead of counting as refused.
        written: called with each write and its answer after it was made (metrics, logs).

    Raises ``kube.Conflict`` (the object changed since it was read), a Kubernetes ``ApiError`` of a write
    whose refusal the plan does not handle, ``fencing.FenceError``, and ``KeyError`` for a client or kind
    it was not given.
    """
    current: dict[str, Any] | None = obj
    if outcome.add_finalizer and kube is not None and res is not None and obj is not None:
        current = add_finalizer(kube, res, obj, outcome.add_finalizer)
    refused: tuple[Write, Failure] | None = None
    for _ in range(MAX_CHAIN):
        answers: list[Any] = []
        stop: Outcome | None = None
        for write in outcome.writes:
            try:
                answer, current = _make(write, kube, res, current, clusters or {}, clients or {}, resources or {})
            except Refusal as exc:
                if isinstance(exc, Conflict) and (outcome.refused is None or not (
                        isinstance(write, Action) and write.verb == "create")):
                    raise  # a stale resourceVersion: the reconcile runs again on fresh state
                if raise_missing and isinstance(exc, ResourceMissing):
                    raise
                failure, err = exc.failure, exc  # a create's AlreadyExists: the plan may say what it means
            else:
                answers.append(answer)
                if written is not None:
                    written(write, answer)
                continue
            if isinstance(write, Action) and write.verb in ("delete", "remove_finalizer") and failure.not_found:
                answers.append(None)  # already gone: done
                continue
            log.info("write refused", write=write.describe(), kind=failure.kind, status=failure.status,
                     code=failure.code, error=failure.message)
            refused = (write, failure)
            handled = outcome.refused(write, failure, tuple(answers)) if outcome.refused is not None else None
            if handled is None and outcome.refused is not None:
                answers.append(failure)  # the plan says this refusal does not stop the writes: its answer
                continue
            if handled is None:
                if isinstance(write, Action):
                    raise err
                handled = _default(failure, scale)
            stop = handled
            break
        if stop is None:
            if outcome.then is None:
                break
            stop = outcome.then(tuple(answers))
        outcome = replace(stop, add_finalizer=None)
        if stop.then is None and not stop.writes:
            break
    else:
        raise RuntimeError("an outcome's then/refused chain is longer than MAX_CHAIN")
    if kube is None or res is None or current is None:
        return Executed(current, outcome, outcome.as_result(), refused, tuple(answers))
    current = write_status(kube, res, current, outcome.status, outcome.event) or current
    if outcome.remove_finalizer:
        current = remove_finalizer(kube, res, current, outcome.remove_finalizer, legacy_finalizers)
    return Executed(current, outcome, outcome.as_result(), refused, tuple(answers))


def _default(failure: Failure, scale: Callable[[float], float]) -> Outcome:
    """A refused provider call the plan says nothing about: transient -> back after its delay (no status
    change); else the reconcile fails with backoff."""
    if failure.retryable:
        return Outcome(requeue_after=scale(failure.delay if failure.delay is not None else DEFAULT_RETRY))
    return Outcome(error=str(failure))


def _make(write: Write, kube: Kube | None, res: Resource | None, current: dict[str, Any] | None,
          clusters: Mapping[str, Kube],
          clients: Mapping[str, Any], resources: Mapping[str, Resource]) -> tuple[Any, dict[str, Any] | None]:
    """Make one write; ``(its answer, the reconciled object as now known)``."""
    if isinstance(write, Call):
        return getattr(clients[write.client], write.method)(*write.args, **dict(write.kwargs)), current
    target = clusters[write.cluster] if write.cluster else kube
    if target is None:
        raise KeyError(f"no Kubernetes client for {write.describe()}")
    kind = write.resource or resources[write.kind]
    own = (not write.cluster and kind == res and current is not None
           and write.name == str((current.get("metadata") or {}).get("name") or "")
           and write.namespace == str((current.get("metadata") or {}).get("namespace") or ""))
    answer: Any
    if write.verb == "create":
        answer = target.create(kind, write.object)
    elif write.verb == "update":
        answer = target.replace(kind, write.object)
    elif write.verb == "patch":
        body = dict(write.body or {})
        meta = body.get("metadata")
        if own and current is not None and isinstance(meta, Mapping) and "resourceVersion" in meta:
            # a precondition on the reconciled object: as this execution last wrote it (a finalizer added)
            body["metadata"] = {**meta, "resourceVersion": (current.get("metadata") or {}).get("resourceVersion")}
        answer = target.patch(kind, write.name, body, write.namespace or None)
    elif write.verb == "label":
        answer = target.patch(kind, write.name, {"metadata": {"labels": dict(write.body or {})}},
                              write.namespace or None)
    elif write.verb == "delete":
        target.delete(kind, write.name, write.namespace or None)  # a missing object is done
        answer = None
    else:
        body = dict(write.body or {})
        finalizer = str(body.get("finalizer") or "")
        base = current if own and current is not None else write.object
        answer = add_finalizer(target, kind, base, finalizer) if write.verb == "add_finalizer" \
            else remove_finalizer(target, kind, base, finalizer, tuple(body.get("legacy") or ()))
    if own and write.verb != "delete" and isinstance(answer, dict):
        return answer, answer  # later writes of the object carry its new resourceVersion
    return answer, current
