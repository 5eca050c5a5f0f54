"""Reading a plan's :class:`~kube.toolkit.Outcome` in the Cloud plans' tests: what a refused write or the
writes' answers lead to, as the executor would ask (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kube.refusal import Failure, FailureKind
from kube.resources import Resource
from kube.toolkit import Action, Call, Outcome, Write
from tasks.cloud import names

__all__ = ["SkrWrites", "answered", "calls", "done", "failed", "refuse"]


def calls(outcome: Outcome) -> tuple[Call, ...]:
    """The outcome's provider calls, in order (asserting it writes nothing else)."""
    assert all(isinstance(w, Call) for w in outcome.writes), outcome.writes
    return outcome.writes  # type: ignore[return-value]


def done(outcome: Outcome, answers: Sequence[Any] | None = ()) -> Outcome:
    """The Outcome once every write was made with ``answers`` (as the executor asks ``then``; none:
    the outcome itself)."""
    return outcome.then(tuple(answers or ())) if outcome.then is not None else outcome


def failed(outcome: Outcome, call: Call, failure: Failure) -> Outcome | None:
    """The Outcome of the refused ``call`` (``None``: the next write follows), as the executor asks
    ``refused``."""
    assert outcome.refused is not None and call in outcome.writes
    return outcome.refused(call, failure, ())


def refuse(outcome: Outcome, write: Write, message: str = "", kind: FailureKind = "refused", status: int = 400,
           code: str = "", delay: float | None = None, answers: Sequence[Any] = ()) -> Outcome | None:
    """The Outcome the plan answers when ``write`` of ``outcome`` is refused with ``message``."""
    assert outcome.refused is not None, "the plan says nothing about refusals"
    return outcome.refused(write, Failure(kind, status, code, message, message, delay), tuple(answers))


def answered(outcome: Outcome, *answers: Any) -> Outcome:
    """The Outcome the plan answers once its writes were made with ``answers``."""
    assert outcome.then is not None, "the plan makes nothing of the answers"
    return outcome.then(tuple(answers))


class SkrWrites:
    """An SKR plan's Outcome read the way its tests name the writes: ``step`` (the Outcome), ``label_id``
    (the id label), the KCP mirror of ``kcp`` (``create`` its body, ``patch`` its merge patch, ``delete`` its
    name; with several KCP kinds, ``creates`` / ``deletes`` as ``(resource, body or name)``), and the SKR
    objects of ``skr`` kinds by kind (``created``, ``updated``, ``patched``, ``deleted``, ``added`` and
    ``released`` finalizers)."""

    def __init__(self, outcome: Outcome, kcp: Resource | None = None) -> None:
        self.step = outcome
        self.label_id: str | None = None
        self.creates: list[tuple[Resource, dict[str, Any]]] = []
        self.deletes: list[tuple[Resource, str]] = []
        self.create = self.patch = None
        self.delete: str | None = None
        self.created: dict[str, list[dict[str, Any]]] = {}
        self.updated: dict[str, list[dict[str, Any]]] = {}
        self.patched: dict[str, list[tuple[str, Any]]] = {}
        self.deleted: dict[str, list[str]] = {}
        self.added: dict[str, list[str]] = {}
        self.released: dict[str, list[str]] = {}
        for write in outcome.writes:
            assert isinstance(write, Action), write
            res = write.resource
            assert res is not None
            if write.verb == "label" and not write.cluster:
                self.label_id = dict(write.body or {}).get(names.LABEL_SKR_ID)
            elif write.cluster == "kcp":
                if write.verb == "create":
                    self.creates.append((res, write.object))
                elif write.verb == "delete":
                    self.deletes.append((res, write.name))
                if kcp is not None and res == kcp:
                    if write.verb == "create":
                        self.create = write.object  # type: ignore[assignment]
                    elif write.verb == "patch":
                        self.patch = dict(write.body or {})  # type: ignore[assignment]
                    elif write.verb == "delete":
                        self.delete = write.name
            elif write.verb == "create":
                self.created.setdefault(res.kind, []).append(write.object)
            elif write.verb == "update":
                self.updated.setdefault(res.kind, []).append(write.object)
            elif write.verb == "patch":
                self.patched.setdefault(res.kind, []).append((write.name, dict(write.body or {})))
            elif write.verb == "delete":
                self.deleted.setdefault(res.kind, []).append(write.name)
            elif write.verb == "add_finalizer":
                self.added.setdefault(res.kind, []).append(write.name)
            elif write.verb == "remove_finalizer":
                self.released.setdefault(res.kind, []).append(write.name)

    def one(self, found: dict[str, list[Any]], kind: str) -> Any:
        """The one write of ``kind`` in ``found`` (``None``: none)."""
        items = found.get(kind) or []
        assert len(items) <= 1, items
        return items[0] if items else None
