"""``x-kubernetes-validations`` rules of CRD schemas, evaluated with ``cel-python`` (pure).

As the API server's CEL validator (``k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel``): a
rule sees the value of its schema node as ``self`` (and, for transition rules, the value before the
update as ``oldSelf``); it must evaluate to ``true``. A rule that is ``false`` reports its ``message``,
else the string its ``messageExpression`` evaluates to, else ``failed rule: <rule>``; a rule that
cannot be evaluated reports the evaluation error. Besides CEL's standard functions and macros, the
Kubernetes string and list extensions that CRDs commonly use are provided (``lowerAscii``,
``upperAscii``, ``trim``, ``split``, ``join``, ``indexOf``, ``lastIndexOf``, ``replace``,
``substring``, ``find``, ``findAll``, ``isSorted``, ``sum``, ``min``, ``max``).

:func:`evaluate_expression` evaluates any expression over given variables with the same functions
(the tests evaluate deploy/'s ValidatingAdmissionPolicies with it; the dev server does not enforce them).

Differences from a real API server: no cost budget, no type checking at CRD creation (a rule that
does not compile is reported when an object is validated), ``optionalOldSelf`` is not supported (such
rules are skipped without an old value, as transition rules are).
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes

from kubedev.celfast import Fallback, compile_fast

__all__ = ["CelError", "CompiledRule", "RuleOutcome", "compile_rule", "evaluate", "evaluate_expression", "to_cel"]

_OLD_SELF = re.compile(r"\boldSelf\b")
_MAX_ERROR = 300  # cel-python's errors embed the whole activation: keep only the head


class CelError(Exception):
    """A rule that does not compile, or whose evaluation failed (``str()`` is the short reason)."""


def _short(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    if "undeclared reference to" in text:
        text = text.split(" (in activation")[0]
    return text[:_MAX_ERROR]


# ---- Kubernetes CEL extension functions (k8s.io/apiserver/pkg/cel/library) ------------------------


def _lower_ascii(s: Any) -> celtypes.StringType:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in str(s)))


def _upper_ascii(s: Any) -> celtypes.StringType:
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in str(s)))


def _split(s: Any, sep: Any, limit: Any = None) -> celtypes.ListType:
    text, separator = str(s), str(sep)
    parts = text.split(separator) if limit is None or int(limit) < 0 else text.split(separator, max(0, int(limit) - 1))
    if limit is not None and int(limit) == 0:
        parts = []
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _join(items: Any, sep: Any = "") -> celtypes.StringType:
    return celtypes.StringType(str(sep).join(str(i) for i in items))


def _index_of(s: Any, sub: Any, start: Any = 0) -> celtypes.IntType:
    if isinstance(s, list):
        return celtypes.IntType(next((i for i, v in enumerate(s) if v == sub), -1))
    return celtypes.IntType(str(s).find(str(sub), int(start)))


def _last_index_of(s: Any, sub: Any) -> celtypes.IntType:
    if isinstance(s, list):
        return celtypes.IntType(max((i for i, v in enumerate(s) if v == sub), default=-1))
    return celtypes.IntType(str(s).rfind(str(sub)))


def _replace(s: Any, old: Any, new: Any, count: Any = -1) -> celtypes.StringType:
    return celtypes.StringType(str(s).replace(str(old), str(new), int(count)))


def _substring(s: Any, start: Any, end: Any = None) -> celtypes.StringType:
    text = str(s)
    lo, hi = int(start), len(text) if end is None else int(end)
    if lo < 0 or hi > len(text) or lo > hi:
        raise ValueError(f"substring({lo}, {hi}) out of range")
    return celtypes.StringType(text[lo:hi])


def _find(s: Any, pattern: Any) -> celtypes.StringType:
    m = re.search(str(pattern), str(s))
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> celtypes.ListType:
    found = [m.group(0) for m in re.finditer(str(pattern), str(s))]
    if int(limit) >= 0:
        found = found[: int(limit)]
    return celtypes.ListType([celtypes.StringType(f) for f in found])


def _is_sorted(items: Any) -> celtypes.BoolType:
    values = list(items)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def _sum(items: Any) -> Any:
    values = list(items)
    total: Any = celtypes.IntType(0)
    for v in values:
        total = total + v
    return total


def _min(items: Any) -> Any:
    values = list(items)
    if not values:
        raise ValueError("min called on an empty list")
    return min(values)


def _max(items: Any) -> Any:
    values = list(items)
    if not values:
        raise ValueError("max called on an empty list")
    return max(values)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lowerAscii": _lower_ascii, "upperAscii": _upper_ascii,
    "trim": lambda s: celtypes.StringType(str(s).strip()),
    "split": _split, "join": _join, "indexOf": _index_of, "lastIndexOf": _last_index_of,
    "replace": _replace, "substring": _substring, "find": _find, "findAll": _find_all,
    "isSorted": _is_sorted, "sum": _sum, "min": _min, "max": _max,
}


# ---- compile and evaluate ------------------------------------------------------------------------


@dataclass(frozen=True)
class CompiledRule:
    """One ``x-kubernetes-validations`` entry, compiled.

    ``transition`` is true when the rule reads ``oldSelf`` (it is then only evaluated on an update
    whose old object has a value at the same place). ``reason`` is the ``FieldValue*`` cause reason
    (default ``FieldValueInvalid``); ``field_path`` the rule's ``fieldPath`` (relative, ``.a.b``).
    """

    rule: str
    message: str
    program: Any
    message_program: Any
    transition: bool
    reason: str
    field_path: str
    #: The members of ``self`` (and ``oldSelf``) the rule reads, when it reads nothing else of them
    #: (only ``self.<name>`` without a call): its result then depends on those members alone.
    members: frozenset[str] | None = None
    #: The rule compiled to Python (:mod:`kubedev.celfast`) when it stays in that subset.
    fast: Callable[[Any, Any, bool], Any] | None = None


_ENV_LOCK = threading.Lock()
_ENV = celpy.Environment()


def compile_rule(entry: Mapping[str, Any]) -> CompiledRule:
    """Compile one ``{rule, message, messageExpression, reason, fieldPath}`` entry (compiled programs
    are cached by their text: CRDs are re-created often in tests and ``up``).

    Raises :class:`CelError` when the rule (or its message expression) does not compile.
    """
    rule = str(entry.get("rule") or "")
    if not rule.strip():
        raise CelError("rule is empty")
    program = _program(rule, "")
    message_program = _program(str(entry["messageExpression"]), "messageExpression ") \
        if entry.get("messageExpression") else None
    message_text = str(entry.get("messageExpression") or "")
    return CompiledRule(rule=rule, message=str(entry.get("message") or ""), program=program,
                        message_program=message_program, transition=bool(_OLD_SELF.search(rule)),
                        reason=str(entry.get("reason") or "FieldValueInvalid"),
                        field_path=str(entry.get("fieldPath") or ""),
                        members=_members(rule + " " + message_text), fast=compile_fast(rule))


_SELF_USE = re.compile(r"\b(?:self|oldSelf)\b(?:\.([A-Za-z_][A-Za-z0-9_]*))?(\s*\()?")


def _members(text: str) -> frozenset[str] | None:
    """``{x, y}`` when ``self``/``oldSelf`` occur only as ``self.x`` / ``self.y`` (member reads, not
    method calls); ``None`` otherwise."""
    found: set[str] = set()
    for m in _SELF_USE.finditer(text):
        if not m.group(1) or m.group(2):
            return None
        found.add(m.group(1))
    return frozenset(found)


@functools.lru_cache(maxsize=1024)
def _program(expression: str, what: str) -> Any:
    with _ENV_LOCK:  # lark's parser is not re-entrant
        try:
            return _ENV.program(_ENV.compile(expression), functions=_FUNCTIONS)
        except Exception as exc:
            raise CelError(f"{what}compilation failed: {_short(exc)}") from None


def to_cel(value: Any) -> Any:
    """A JSON value as a CEL value (objects become maps, integers ``int``, floats ``double``)."""
    return celpy.json_to_cel(value)


def evaluate_expression(expression: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate one CEL ``expression`` over JSON ``variables`` (name -> value), e.g. a
    ValidatingAdmissionPolicy's ``object``, ``oldObject`` and ``request``, with the same functions as
    CRD rules. Returns the CEL value (``celtypes.BoolType`` compares equal to ``True``/``False``).

    Raises :class:`CelError` when the expression does not compile or its evaluation fails (an admission
    policy with ``failurePolicy: Fail`` then denies).
    """
    program = _program(expression, "")
    try:
        result = program.evaluate({name: to_cel(value) for name, value in variables.items()})
    except Exception as exc:
        raise CelError(_short(exc)) from None
    if isinstance(result, Exception):  # cel-python returns some errors as values
        raise CelError(_short(result))
    return result


@dataclass(frozen=True)
class RuleOutcome:
    """Result of one rule: ``ok``, or the ``message`` to report (``error`` when evaluation failed)."""

    ok: bool
    message: str = ""
    error: bool = False


_CACHE_SIZE = 8192
_cache: collections.OrderedDict[tuple[str, str, bool, str], RuleOutcome] = collections.OrderedDict()
_cache_lock = threading.Lock()


def _projection(rule: CompiledRule, value: Any) -> Any:
    if rule.members is not None and isinstance(value, dict):
        return {k: value[k] for k in rule.members if k in value}
    return value


def evaluate(rule: CompiledRule, value: Any, old: Any = None, has_old: bool = False) -> RuleOutcome:
    """Evaluate ``rule`` with ``self = value`` (and ``oldSelf = old`` when ``has_old``). Never raises.

    CEL is pure, and cel-python interprets a rule in about a millisecond: outcomes are memoized by the
    rule and the part of the values it reads (objects of one CRD share most of their rule inputs).
    """
    try:
        key = (f"{rule.rule}\x00{rule.message}\x00{id(rule.message_program)}",
               json.dumps(_projection(rule, value), sort_keys=True, default=str), has_old,
               json.dumps(_projection(rule, old), sort_keys=True, default=str) if has_old else "")
    except (TypeError, ValueError):
        return _evaluate(rule, value, old, has_old)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    outcome = _evaluate(rule, value, old, has_old)
    with _cache_lock:
        _cache[key] = outcome
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return outcome


def _evaluate(rule: CompiledRule, value: Any, old: Any, has_old: bool) -> RuleOutcome:
    if rule.fast is not None:
        try:
            result = rule.fast(value, old, has_old)
        except Fallback:
            result = None
        if result is True:
            return RuleOutcome(True)
        if result is False and rule.message_program is None:
            return RuleOutcome(False, rule.message or f"failed rule: {rule.rule}")
    try:
        activation: dict[str, Any] = {"self": to_cel(value)}
        if has_old:
            activation["oldSelf"] = to_cel(old)
        result = rule.program.evaluate(activation)
    except Exception as exc:
        return RuleOutcome(False, _short(exc), error=True)
    if isinstance(result, Exception):  # cel-python returns some errors as values
        return RuleOutcome(False, _short(result), error=True)
    if result is True or (isinstance(result, celtypes.BoolType) and bool(result)):
        return RuleOutcome(True)
    if not isinstance(result, (bool, celtypes.BoolType)):
        return RuleOutcome(False, f"rule did not evaluate to a bool: {result!r}"[:_MAX_ERROR], error=True)
    return RuleOutcome(False, _failure_message(rule, activation))


def _failure_message(rule: CompiledRule, activation: dict[str, Any]) -> str:
    if rule.message_program is not None:
        try:
            text = rule.message_program.evaluate(activation)
            if isinstance(text, str) and text.strip() and "\n" not in text:
                return str(text)
        except Exception:  # the API server then falls back to message / the default
            pass
    return rule.message or f"failed rule: {rule.rule}"
