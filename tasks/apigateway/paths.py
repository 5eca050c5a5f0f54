"""APIRule v2 paths: the `{*}` / `{**}` operators, Istio match translation, and conflicts.

A path is literal segments, ``{*}`` (exactly one segment) and ``{**}`` (any number of segments, at most
once and last) or exactly ``/*`` (everything). Translation is api-gateway's VirtualService and
AuthorizationPolicy processors'. The conflict check follows the current original (after its change
"Support multiple paths with asterisks"): a later path conflicts only when an earlier one covers it,
computed exactly (:func:`covers`) instead of with the original's segment trie and its quirks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Regex replacing ``{**}``: any characters of a path, ``/`` included, possibly none.
DOUBLE_ASTERISK_REGEX = "([A-Za-z0-9-._~!$&'()*+,;=:@/]|%[0-9a-fA-F]{2})*"
#: Regex replacing ``{*}``: one or more characters of a single segment.
SINGLE_ASTERISK_REGEX = "([A-Za-z0-9-._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})+"

CATCH_ALL = "/*"
_REGEX_OPERATORS = re.compile(r"[$()+*?\[\]{}|^\\]")
DOUBLE_ASTERISK = "{**}"
SINGLE_ASTERISK = "{*}"


def uri_match(path: str) -> dict[str, str]:
    """The VirtualService ``match[].uri`` of a rule path.

    ``/*`` → ``{"prefix": "/"}``; otherwise ``{"regex": "^<path>$"}`` with the operators replaced. A ``.``
    stays a regex wildcard, as in the original. Unlike the original, the other regex operators a path may
    contain (``$ ( ) +``) are escaped: raw, they give wrong matches or an invalid regex that Istio rejects.
    """
    if path == CATCH_ALL:
        return {"prefix": "/"}
    parts = []
    for segment in path.split("/"):
        if segment == DOUBLE_ASTERISK:
            parts.append(DOUBLE_ASTERISK_REGEX)
        elif segment == SINGLE_ASTERISK:
            parts.append(SINGLE_ASTERISK_REGEX)
        else:
            parts.append(_REGEX_OPERATORS.sub(lambda m: "\\" + m.group(0), segment))
    return {"regex": "^" + "/".join(parts) + "$"}


def method_match(methods: tuple[str, ...] | list[str]) -> dict[str, str]:
    """The VirtualService ``match[].method``: ``{"regex": "^(GET|POST)$"}`` in the given order."""
    return {"regex": "^(" + "|".join(methods) + ")$"}


def policy_path(path: str) -> str:
    """The AuthorizationPolicy ``operation.paths`` entry: ``/*`` becomes ``/{**}``, others stay raw."""
    return "/" + DOUBLE_ASTERISK if path == CATCH_ALL else path


def operator_failure(path: str) -> str | None:
    """The message for a misuse of ``{**}`` in ``path`` or ``None`` (api-gateway's envoy template check)."""
    count = path.count(DOUBLE_ASTERISK)
    if count == 0:
        return None
    if count > 1:
        return "Only one {**} operator is allowed in the path."
    after_double = False
    for segment in path.lstrip("/").split("/"):
        if segment in (SINGLE_ASTERISK, DOUBLE_ASTERISK):
            if after_double:
                return "The {**} operator must be the last operator in the path."
            after_double = segment == DOUBLE_ASTERISK
    return None


# --- conflicts: does an earlier path cover a later one? ------------------------------------------

IDENT, EMPTY, BRACED, BRACED_DOUBLE, ASTERISK = "IDENT", "EMPTY", "{*}", "{**}", "*"


@dataclass(frozen=True)
class Token:
    type: str
    literal: str


def tokenize(path: str) -> list[Token]:
    """Tokens of ``path`` after its leading ``/``: ``""`` → EMPTY, ``{*}``, ``{**}``, ``*``, else IDENT.

    Only one leading ``/`` is dropped (the original trims all of them, so ``//a`` read as ``/a``)."""
    tokens = []
    for part in path.removeprefix("/").split("/"):
        if part == "":
            tokens.append(Token(EMPTY, ""))
        elif part in (BRACED, BRACED_DOUBLE, ASTERISK):
            tokens.append(Token(part, part))
        else:
            tokens.append(Token(IDENT, part))
    return tokens


#: A segment no literal can equal (segments never contain ``/``): "any other non-empty segment".
_FRESH = "/"


def _step(tokens: list[Token], states: frozenset[int], symbol: str) -> frozenset[int]:
    """The NFA of ``tokens`` after reading one segment ``symbol`` from ``states``.

    State ``i`` = the first ``i`` tokens matched. A literal (IDENT, EMPTY, ``*``) matches the equal
    segment, ``{*}`` one non-empty segment, ``{**}`` one or more segments of any content (its regex
    ``.*`` after a ``/`` spans at least one segment, possibly empty); the state after a ``{**}`` loops.
    """
    out: set[int] = set()
    for state in states:
        if state > 0 and tokens[state - 1].type == BRACED_DOUBLE:
            out.add(state)
        if state < len(tokens):
            tok = tokens[state]
            if tok.type == BRACED_DOUBLE:
                matched = True
            elif tok.type == BRACED:
                matched = symbol != ""
            else:
                matched = symbol == tok.literal
            if matched:
                out.add(state + 1)
    return frozenset(out)


def _symbols(tok: Token) -> tuple[str, ...]:
    """The segments worth trying for one token of the covered path: a literal is itself; ``{*}`` a fresh
    non-empty segment; ``{**}`` a fresh or an empty one. A fresh segment is matched by fewer tokens of
    the covering path than any literal, so these are the hardest cases (no other choice can escape)."""
    if tok.type == BRACED:
        return (_FRESH,)
    if tok.type == BRACED_DOUBLE:
        return (_FRESH, "")
    return (tok.literal,)


def covers(earlier: str, later: str) -> bool:
    """Whether every request path ``later`` matches is also matched by ``earlier`` (``later`` would be
    unreachable behind ``earlier``). Both are rule paths; ``/*`` is read as ``/{**}``.

    Exact language inclusion of the two segment patterns (a product search over ``later``'s pattern
    and the subset automaton of ``earlier``'s), so neither quirk of the original's segment trie
    remains: ``/a/b/c`` then ``/a/b`` twice is a conflict, ``/a/{*}`` then ``/a/{**}`` is not.
    """
    q = tokenize(policy_path(earlier))
    p = tokenize(policy_path(later))
    accept_q, accept_p = len(q), len(p)
    start = (0, frozenset({0}))
    seen = {start}
    todo = [start]
    while todo:
        p_state, q_states = todo.pop()
        moves: list[tuple[int, str]] = []
        if p_state < accept_p:
            moves += [(p_state + 1, sym) for sym in _symbols(p[p_state])]
        if p_state > 0 and p[p_state - 1].type == BRACED_DOUBLE:
            moves += [(p_state, sym) for sym in (_FRESH, "")]
        for next_p, sym in moves:
            nxt = (next_p, _step(q, q_states, sym))
            if next_p == accept_p and accept_q not in nxt[1]:
                return False  # a request ``later`` matches and ``earlier`` does not
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return True


def first_conflict(rules: list[tuple[str, tuple[str, ...]]]) -> tuple[str, str] | None:
    """The first ``(path, method)`` whose path an earlier rule path of the same method already covers
    (:func:`covers`), or ``None``.

    As api-gateway since "Support multiple paths with asterisks": rules are ordered, the first match
    wins, so a later path is only a conflict when it is fully shadowed; partial overlaps are ordered
    by the AuthorizationPolicies' ``notPaths``. ``rules`` are ``(path, methods)`` in rule order (a
    rule without methods counts as method ``NO_METHODS``); ``/*`` is reported as ``/{**}``, as in the
    original. Methods are visited in first-appearance order so the report is deterministic.
    """
    by_method: dict[str, list[str]] = {}
    for path, methods in rules:
        for method in methods or ("NO_METHODS",):
            by_method.setdefault(method, []).append(path)
    for method, method_paths in by_method.items():
        for j, path in enumerate(method_paths):
            if any(covers(earlier, path) for earlier in method_paths[:j]):
                return policy_path(path), method
    return None
