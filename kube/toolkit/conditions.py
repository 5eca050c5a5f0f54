"""Status conditions (``metav1.Condition``) as plain dicts: build, set, find (pure).

``now`` is an RFC 3339 string passed in by the caller, so the functions are deterministic. A
condition's ``lastTransitionTime`` is kept when a condition of the same type keeps its status, as
apimachinery's ``meta.SetStatusCondition`` does; "exclusive" conditions (cloud-manager's
``SetExclusiveConditions``) replace every other condition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kube.clock import now_rfc3339

Condition = dict[str, Any]

__all__ = ["Condition", "condition", "find", "is_true", "remove", "same", "set_condition", "set_exclusive"]


def condition(type_: str, status: bool | str, reason: str, message: str, now: str = "",
              observed_generation: int | None = None) -> Condition:
    """A condition dict, in ``metav1.Condition``'s field order: ``status`` is ``True``/``False`` or
    the API's ``"True"``/``"False"``/``"Unknown"``; ``now`` (RFC 3339) defaults to the current time."""
    text = ("True" if status else "False") if isinstance(status, bool) else status
    cond: Condition = {"type": type_, "status": text, "reason": reason, "message": message,
                       "lastTransitionTime": now or now_rfc3339()}
    if observed_generation is not None:
        cond["observedGeneration"] = observed_generation
    return cond


def find(conditions: Iterable[Condition] | None, type_: str) -> Condition | None:
    """The condition of ``type_``, or ``None``."""
    for cond in conditions or ():
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def is_true(conditions: Iterable[Condition] | None, type_: str) -> bool:
    """Whether the condition of ``type_`` exists with status ``True``."""
    cond = find(conditions, type_)
    return cond is not None and cond.get("status") == "True"


def _keep_time(new: Condition, old: Condition | None) -> Condition:
    if old is not None and old.get("status") == new.get("status") and old.get("lastTransitionTime"):
        return {**new, "lastTransitionTime": old["lastTransitionTime"]}
    return new


def set_condition(conditions: Sequence[Condition] | None, new: Condition) -> list[Condition]:
    """``meta.SetStatusCondition``: ``conditions`` with ``new`` replacing the one of its type in place
    (appended if absent), keeping its transition time when the status did not change."""
    out: list[Condition] = []
    replaced = False
    for cond in conditions or ():
        if cond.get("type") == new["type"]:
            out.append(_keep_time(new, cond))
            replaced = True
        else:
            out.append(cond)
    if not replaced:
        out.append(new)
    return out


def set_exclusive(conditions: Sequence[Condition] | None, *new: Condition) -> list[Condition]:
    """Exactly ``new`` (each keeping the transition time of an equal-status old one of its type)."""
    return [_keep_time(c, find(conditions, c["type"])) for c in new]


def remove(conditions: Sequence[Condition] | None, type_: str) -> list[Condition]:
    """``conditions`` without the one of ``type_``."""
    return [c for c in conditions or () if c.get("type") != type_]


def same(a: Sequence[Condition] | None, b: Sequence[Condition] | None) -> bool:
    """Whether two condition lists say the same (ignoring transition times and order; a condition's
    ``observedGeneration``, when it has one, is part of what it says)."""
    def key(conds: Sequence[Condition] | None) -> list[tuple[Any, ...]]:
        return sorted((c.get("type"), c.get("status"), c.get("reason"), c.get("message"),
                       c.get("observedGeneration")) for c in conds or ())
    return key(a) == key(b)
