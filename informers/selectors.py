"""Label selectors in their query-string form (``a=b,c!=d,e in (x,y),!f``), parsed and matched (pure).

The informer stores answer ``list(labelSelector=...)`` from memory; this is the API server's
selector language (``k8s.io/apimachinery/pkg/labels``) minus the set-based ``gt``/``lt`` extensions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

_TERM = re.compile(r"\s*(?:(!)\s*([^\s,!=()]+)|([^\s,!=()]+)\s*(?:(==|=|!=)\s*([^\s,()]*)"
                   r"|\s+(in|notin)\s*\(([^)]*)\))?)\s*(?:,|$)")


@dataclass(frozen=True)
class Selector:
    """A parsed label selector: every term must hold.

    Attributes:
        equals: ``(key, value)`` terms (``k=v``, ``k==v``), the ones a label index can answer.
        not_equals: ``k!=v`` (also true when ``k`` is absent).
        in_: ``k in (a,b)``; ``not_in``: ``k notin (a,b)`` (true when absent).
        exists: ``k``; ``absent``: ``!k``.
    """

    equals: tuple[tuple[str, str], ...] = ()
    not_equals: tuple[tuple[str, str], ...] = ()
    in_: tuple[tuple[str, frozenset[str]], ...] = ()
    not_in: tuple[tuple[str, frozenset[str]], ...] = ()
    exists: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every term."""
        return (all(labels.get(k) == v for k, v in self.equals)
                and all(labels.get(k) != v for k, v in self.not_equals)
                and all(labels.get(k) in vs for k, vs in self.in_)
                and all(labels.get(k) not in vs for k, vs in self.not_in)
                and all(k in labels for k in self.exists)
                and all(k not in labels for k in self.absent))


EVERYTHING = Selector()


@lru_cache(maxsize=4096)
def parse_selector(text: str | None) -> Selector:
    """The :class:`Selector` of ``text`` (``None`` or empty: matches everything).
    Raises ``ValueError`` naming the part that does not parse."""
    if not text or not text.strip():
        return EVERYTHING
    equals: list[tuple[str, str]] = []
    not_equals: list[tuple[str, str]] = []
    in_: list[tuple[str, frozenset[str]]] = []
    not_in: list[tuple[str, frozenset[str]]] = []
    exists: list[str] = []
    absent: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"label selector {text!r}: cannot parse at {text[pos:]!r}")
        pos = m.end()
        bang, absent_key, key, op, value, set_op, values = m.groups()
        if bang:
            absent.append(absent_key)
        elif op in ("=", "=="):
            equals.append((key, value))
        elif op == "!=":
            not_equals.append((key, value))
        elif set_op:
            members = frozenset(v.strip() for v in values.split(",") if v.strip())
            (in_ if set_op == "in" else not_in).append((key, members))
        else:
            exists.append(key)
    return Selector(tuple(equals), tuple(not_equals), tuple(in_), tuple(not_in), tuple(exists), tuple(absent))


def selector_text(labels: Mapping[str, str]) -> str:
    """``k=v,k2=v2`` (sorted keys) of an equality selector."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


__all__ = ["EVERYTHING", "Selector", "parse_selector", "selector_text"]
