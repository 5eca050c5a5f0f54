"""A fast path for the CEL rules CRDs usually hold: a small compiler to Python closures (pure).

cel-python interprets its parse tree on every evaluation (about a millisecond for
``self.matches('...') || self.matches('...')``), which a dev API server pays on every create. The
rules of real CRDs mostly use a small subset: literals, ``self``/``oldSelf`` member access, ``has()``,
``! && || ?:``, comparisons, integer ``+ - * / %``, ``in``, and the calls ``size``, ``matches``,
``startsWith``, ``endsWith``, ``contains``, ``lowerAscii``, ``upperAscii``. :func:`compile_fast`
compiles such a rule to a closure; anything else (macros, other functions, unusual escapes) is not
compiled and :mod:`kubedev.cel` uses cel-python.

A compiled closure raises :class:`Fallback` for any case it does not decide exactly as CEL would (a
missing key, mixed types, overflow, an error under ``||``): the caller then evaluates with cel-python,
so errors and their messages stay cel-python's and a fast result is always CEL's result.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

try:
    import re2 as _re
except ImportError:  # pragma: no cover
    _re = re

__all__ = ["Fallback", "compile_fast"]

Env = dict[str, Any]
Fn = Callable[[Env], Any]
_INT64 = 2**63


class Fallback(Exception):
    """This evaluation must be done by cel-python."""


class _Unsupported(Exception):
    pass


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0x[0-9a-fA-F]+|\d+)(?P<unsigned>[uU])?
  | (?P<str>[rR]?'(?:[^'\\\n]|\\.)*'|[rR]?"(?:[^"\\\n]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%!<>?:().,\[\]])
""", re.VERBOSE)
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "/": "/", "?": "?", "`": "`"}


def _tokens(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Unsupported(text[pos:])
        pos = m.end()
        if m.group("ws"):
            continue
        if m.group("num"):
            if m.group("unsigned"):
                raise _Unsupported("uint")
            raw = m.group("num")
            out.append(("lit", float(raw) if ("." in raw or "e" in raw.lower()) and not raw.startswith("0x")
                        else int(raw, 16) if raw.startswith("0x") else int(raw)))
        elif m.group("str"):
            out.append(("lit", _string(m.group("str"))))
        elif m.group("ident"):
            word = m.group("ident")
            if word in ("true", "false"):
                out.append(("lit", word == "true"))
            elif word == "null":
                out.append(("lit", None))
            elif word == "in":
                out.append(("op", "in"))
            else:
                out.append(("ident", word))
        else:
            out.append(("op", m.group("op")))
    out.append(("end", None))
    return out


def _string(token: str) -> str:
    raw = token[0] in "rR"
    body = token[2:-1] if raw else token[1:-1]
    if raw:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt not in _ESCAPES:
            raise _Unsupported(f"escape \\{nxt}")
        out.append(_ESCAPES[nxt])
        i += 2
    return "".join(out)


# ---- helpers with CEL's semantics (or Fallback) ----------------------------------------------------


def _bool(value: Any) -> bool:
    if value is True or value is False:
        return bool(value)
    raise Fallback


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64:
        return value
    raise Fallback


#: CEL type names by Python type, in test order (``bool`` before ``int``: it is one).
_CEL_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"), (bool, "bool"), (int, "int"), (float, "double"), (str, "string"), (list, "list"),
    (Mapping, "map"),
)


def _same_kind(a: Any, b: Any) -> None:
    def kind(v: Any) -> str:
        return next((name for t, name in _CEL_KINDS if isinstance(v, t)), "other")

    if kind(a) != kind(b) or kind(a) == "other":
        raise Fallback


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    try:
        return _re.compile(pattern)
    except Exception:
        raise Fallback from None


def _call(name: str, target: Any, args: list[Any]) -> Any:
    if name == "size" and not args:
        if isinstance(target, (str, list, Mapping)):
            return len(target)
        raise Fallback
    if not isinstance(target, str):
        raise Fallback
    if name in ("lowerAscii", "upperAscii") and not args:
        conv = str.lower if name == "lowerAscii" else str.upper
        return "".join(conv(c) if c.isascii() else c for c in target)
    if len(args) != 1 or not isinstance(args[0], str):
        raise Fallback
    arg = args[0]
    if name == "matches":
        return _regex(arg).search(target) is not None
    if name == "startsWith":
        return target.startswith(arg)
    if name == "endsWith":
        return target.endswith(arg)
    if name == "contains":
        return arg in target
    raise Fallback


_METHODS = {"size", "matches", "startsWith", "endsWith", "contains", "lowerAscii", "upperAscii"}


# ---- parser (CEL precedence) → closures -----------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]]) -> None:
        self.t = tokens
        self.i = 0

    def peek(self) -> tuple[str, Any]:
        return self.t[self.i]

    def take(self, kind: str, value: Any = None) -> Any:
        tok = self.t[self.i]
        if tok[0] != kind or (value is not None and tok[1] != value):
            raise _Unsupported(f"expected {value or kind}, got {tok}")
        self.i += 1
        return tok[1]

    def at(self, value: str) -> bool:
        tok = self.t[self.i]
        return tok[0] == "op" and tok[1] == value

    def expr(self) -> Fn:
        cond = self.or_()
        if self.at("?"):
            self.take("op", "?")
            yes = self.or_()
            self.take("op", ":")
            no = self.expr()
            return lambda env: yes(env) if _bool(cond(env)) else no(env)
        return cond

    def binary(self, ops: tuple[str, ...], operand: Callable[[], Fn], combine: Callable[[str, Fn, Fn], Fn]) -> Fn:
        """A left-associative chain of ``operand``s joined by any of the operators ``ops``."""
        left = operand()
        while any(self.at(op) for op in ops):
            op = self.take("op")
            left = combine(op, left, operand())
        return left

    def or_(self) -> Fn:
        return self.binary(("||",), self.and_, lambda _, left, right: _or(left, right))

    def and_(self) -> Fn:
        return self.binary(("&&",), self.rel, lambda _, left, right: _and(left, right))

    def rel(self) -> Fn:
        return self.binary(("==", "!=", "<", "<=", ">", ">=", "in"), self.add, _relation)

    def add(self) -> Fn:
        return self.binary(("+", "-"), self.mul, _arith)

    def mul(self) -> Fn:
        return self.binary(("*", "/", "%"), self.unary, _arith)

    def unary(self) -> Fn:
        if self.at("!"):
            self.take("op", "!")
            inner = self.unary()
            return lambda env: not _bool(inner(env))
        if self.at("-"):
            self.take("op", "-")
            inner = self.unary()
            return lambda env: -_int(inner(env))
        return self.member()

    def member(self) -> Fn:
        node = self.primary()
        while True:
            if self.at("."):
                self.take("op", ".")
                name = self.take("ident")
                if self.at("("):
                    if name not in _METHODS:
                        raise _Unsupported(name)
                    args = self.args()
                    node = _method(name, node, args)
                else:
                    node = _select(node, name)
            elif self.at("["):
                self.take("op", "[")
                index = self.expr()
                self.take("op", "]")
                node = _index(node, index)
            else:
                return node

    def args(self) -> list[Fn]:
        return self.items("(", ")")

    def items(self, open_: str, close: str) -> list[Fn]:
        """Comma-separated expressions between the operators ``open_`` and ``close`` (a call's arguments,
        a list literal's items)."""
        self.take("op", open_)
        out: list[Fn] = []
        if not self.at(close):
            out.append(self.expr())
            while self.at(","):
                self.take("op", ",")
                out.append(self.expr())
        self.take("op", close)
        return out

    def primary(self) -> Fn:
        kind, value = self.peek()
        if kind == "lit":
            self.i += 1
            return lambda env: value
        if kind == "op" and value == "[":
            items = self.items("[", "]")
            return lambda env: [item(env) for item in items]
        if kind == "op" and value == "(":
            self.take("op", "(")
            inner = self.expr()
            self.take("op", ")")
            return inner
        if kind == "ident":
            self.i += 1
            if value == "has":
                self.take("op", "(")
                target = self.member_chain()
                self.take("op", ")")
                return target
            if self.at("("):
                if value != "size":
                    raise _Unsupported(value)
                (arg,) = self.args()
                return lambda env: _call("size", arg(env), [])
            if value not in ("self", "oldSelf"):
                raise _Unsupported(value)
            return lambda env: env[value]
        raise _Unsupported(str(value))

    def member_chain(self) -> Fn:
        """The argument of ``has()``: ``x.y...z`` → whether the last field is present."""
        base = self.primary()
        names: list[str] = []
        while self.at("."):
            self.take("op", ".")
            names.append(self.take("ident"))
        if not names:
            raise _Unsupported("has() without a field")
        parent = base
        for name in names[:-1]:
            parent = _select(parent, name)
        last = names[-1]

        def has(env: Env) -> bool:
            obj = parent(env)
            if not isinstance(obj, Mapping):
                raise Fallback
            return last in obj

        return has


def _or(left: Fn, right: Fn) -> Fn:
    def run(env: Env) -> bool:
        if _bool(left(env)):
            return True
        return _bool(right(env))
    return run


def _and(left: Fn, right: Fn) -> Fn:
    def run(env: Env) -> bool:
        if not _bool(left(env)):
            return False
        return _bool(right(env))
    return run


def _relation(op: str, left: Fn, right: Fn) -> Fn:
    def run(env: Env) -> bool:
        a, b = left(env), right(env)
        if op == "in":
            if isinstance(b, list):
                if any(type(a) is not type(x) for x in b):
                    raise Fallback
                return a in b
            if isinstance(b, Mapping) and isinstance(a, str):
                return a in b
            raise Fallback
        if op in ("==", "!="):
            equal = _deep_eq(a, b)
            return equal if op == "==" else not equal
        _same_kind(a, b)
        if isinstance(a, (list, Mapping)) or a is None or isinstance(a, bool):
            raise Fallback
        return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])
    return run


def _deep_eq(a: Any, b: Any) -> bool:
    """CEL equality of JSON values of the same kinds (``Fallback`` where kinds differ anywhere)."""
    _same_kind(a, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_deep_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_deep_eq(a[k], b[k]) for k in a)
    return bool(a == b)


def _arith(op: str, left: Fn, right: Fn) -> Fn:
    def run(env: Env) -> Any:
        a, b = left(env), right(env)
        if op == "+" and isinstance(a, str) and isinstance(b, str):
            return a + b
        a, b = _int(a), _int(b)
        if op in ("/", "%") and b == 0:
            raise Fallback
        if op == "/":
            result = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # truncation, as Go
        elif op == "%":
            result = a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1))
        else:
            result = {"+": a + b, "-": a - b, "*": a * b}[op]
        return _int(result)
    return run


def _select(node: Fn, name: str) -> Fn:
    def run(env: Env) -> Any:
        obj = node(env)
        if not isinstance(obj, Mapping) or name not in obj:
            raise Fallback
        return obj[name]
    return run


def _index(node: Fn, index: Fn) -> Fn:
    def run(env: Env) -> Any:
        obj, key = node(env), index(env)
        if isinstance(obj, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(obj):
            return obj[key]
        if isinstance(obj, Mapping) and isinstance(key, str) and key in obj:
            return obj[key]
        raise Fallback
    return run


def _method(name: str, target: Fn, args: list[Fn]) -> Fn:
    return lambda env: _call(name, target(env), [a(env) for a in args])


def compile_fast(rule: str) -> Callable[[Any, Any, bool], Any] | None:
    """A closure ``(self, oldSelf, has_old) -> value`` for ``rule``, or ``None`` when the rule uses
    more than the subset. The closure raises :class:`Fallback` when cel-python must decide."""
    try:
        parser = _Parser(_tokens(rule))
        fn = parser.expr()
        parser.take("end")
    except (_Unsupported, IndexError, ValueError):
        return None

    def run(value: Any, old: Any, has_old: bool) -> Any:
        env: Env = {"self": value}
        if has_old:
            env["oldSelf"] = old
        try:
            return fn(env)
        except Fallback:
            raise
        except KeyError:  # oldSelf without an old value
            raise Fallback from None
        except Exception:
            raise Fallback from None

    return run
