"""Label and field selectors: parsing and matching, as the Kubernetes API server does them.

Pure functions over plain dicts. Label selector grammar (``k8s.io/apimachinery/pkg/labels``):
comma-separated requirements ``key``, ``!key``, ``key=v``, ``key==v``, ``key!=v``,
``key in (a,b)``, ``key notin (a,b)``, ``key>5``, ``key<5``. Field selectors
(``k8s.io/apimachinery/pkg/fields``): ``path=v``, ``path==v``, ``path!=v`` joined by commas.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FieldRequirement",
    "LabelRequirement",
    "SelectorError",
    "field_value",
    "match_fields",
    "match_labels",
    "parse_field_selector",
    "parse_label_selector",
]

# Label keys: optional DNS prefix, then a name; values: up to 63 alnum/-_. characters.
_KEY_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


class SelectorError(ValueError):
    """A selector string that does not parse; the server answers 400 BadRequest with this message."""


@dataclass(frozen=True)
class LabelRequirement:
    """One label requirement: ``op`` is one of ``= != in notin exists !exists gt lt``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` (a label map, possibly empty) satisfies this requirement."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.op == "gt" else have < want


@dataclass(frozen=True)
class FieldRequirement:
    """One field requirement: ``path`` is dotted (``spec.nodeName``), ``op`` is ``=`` or ``!=``."""

    path: str
    op: str
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` satisfies this requirement (a missing field compares as ``""``)."""
        equal = field_value(obj, self.path) == self.value
        return equal if self.op == "=" else not equal


def _check_key(key: str, selector: str) -> str:
    if not _KEY_RE.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r} in {selector!r}")
    return key


def _check_value(value: str, selector: str) -> str:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value {value!r} in {selector!r}")
    return value


def _split_top_level(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced parentheses in {selector!r}")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise SelectorError(f"unbalanced parentheses in {selector!r}")
    parts.append("".join(current))
    return parts


_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_OP_RE = re.compile(r"^\s*([^=!<>\s]+)\s*(==|!=|=|<|>)\s*(.*?)\s*$")


def parse_label_selector(selector: str | None) -> tuple[LabelRequirement, ...]:
    """Parse a label selector string; ``None``/empty means "everything" (no requirements).

    Raises :class:`SelectorError` on syntax errors or invalid keys/values.
    """
    if not selector or not selector.strip():
        return ()
    reqs: list[LabelRequirement] = []
    for raw in _split_top_level(selector):
        part = raw.strip()
        if not part:
            raise SelectorError(f"unable to parse requirement: empty requirement in {selector!r}")
        m = _SET_RE.match(part)
        if m:
            key, op, inner = m.group(1), m.group(2), m.group(3)
            values = tuple(sorted({_check_value(v.strip(), selector) for v in inner.split(",")}))
            if op == "in" and values == ("",) and inner.strip() == "":
                raise SelectorError(f"for 'in', 'notin' operators, values set can't be empty: {selector!r}")
            reqs.append(LabelRequirement(_check_key(key, selector), op, values))
            continue
        m = _OP_RE.match(part)
        if m:
            key, op, value = m.group(1), m.group(2), m.group(3)
            if op in ("<", ">"):
                if not re.fullmatch(r"-?\d+", value):
                    raise SelectorError(f"for 'Gt', 'Lt' operators, the value must be an integer: {selector!r}")
                reqs.append(LabelRequirement(_check_key(key, selector), "gt" if op == ">" else "lt", (value,)))
            else:
                norm = "!=" if op == "!=" else "="
                reqs.append(LabelRequirement(_check_key(key, selector), norm, (_check_value(value, selector),)))
            continue
        if part.startswith("!"):
            reqs.append(LabelRequirement(_check_key(part[1:].strip(), selector), "!exists"))
            continue
        reqs.append(LabelRequirement(_check_key(part, selector), "exists"))
    return tuple(reqs)


def match_labels(reqs: tuple[LabelRequirement, ...], obj: Mapping[str, Any]) -> bool:
    """Whether the object's ``metadata.labels`` satisfy every requirement."""
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field of ``obj``, as field selectors compare it.

    Missing fields and ``None`` give ``""``; booleans give ``"true"``/``"false"``.
    """
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(selector: str | None) -> tuple[FieldRequirement, ...]:
    """Parse a field selector; raises :class:`SelectorError` on a term without an operator."""
    if not selector or not selector.strip():
        return ()
    reqs: list[FieldRequirement] = []
    for raw in selector.split(","):
        part = raw.strip()
        for op in ("!=", "==", "="):
            if op in part:
                path, value = part.split(op, 1)
                reqs.append(FieldRequirement(path.strip(), "!=" if op == "!=" else "=", value.strip()))
                break
        else:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{part}'")
    return tuple(reqs)


def match_fields(reqs: tuple[FieldRequirement, ...], obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` satisfies every field requirement."""
    return all(r.matches(obj) for r in reqs)
