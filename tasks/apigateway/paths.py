"""APIRule v2 paths: validity, the `{*}` / `{**}` operators, Istio match translation, and conflicts.

A path is literal segments, ``{*}`` (exactly one segment) and ``{**}`` (any number of segments, at most
once and last) or exactly ``/*`` (everything). Translation is api-gateway's VirtualService and
AuthorizationPolicy processors'; the conflict check is a port of its ``internal/path/segment_trie``,
quirks included (see :class:`SegmentTrie`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: The CRD pattern of ``spec.rules[].path``.
PATH_PATTERN = r"^((\/([A-Za-z0-9-._~!$&'()+,;=:@]|%[0-9a-fA-F]{2})*)|(\/\{\*{1,2}\}))+$|^\/\*$"
_PATH_RE = re.compile(PATH_PATTERN)

#: Regex replacing ``{**}``: any characters of a path, ``/`` included, possibly none.
DOUBLE_ASTERISK_REGEX = "([A-Za-z0-9-._~!$&'()*+,;=:@/]|%[0-9a-fA-F]{2})*"
#: Regex replacing ``{*}``: one or more characters of a single segment.
SINGLE_ASTERISK_REGEX = "([A-Za-z0-9-._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})+"

CATCH_ALL = "/*"
_REGEX_OPERATORS = re.compile(r"[$()+*?\[\]{}|^\\]")
DOUBLE_ASTERISK = "{**}"
SINGLE_ASTERISK = "{*}"


def is_valid_path(path: str) -> bool:
    """Whether ``path`` matches the CRD's path pattern (what the API server admits)."""
    return _PATH_RE.fullmatch(path) is not None


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


# --- segment trie ------------------------------------------------------------------------------

IDENT, EMPTY, BRACED, BRACED_DOUBLE, ASTERISK = "IDENT", "EMPTY", "{*}", "{**}", "*"


@dataclass(frozen=True)
class Token:
    type: str
    literal: str


def tokenize(path: str) -> list[Token]:
    """Tokens of ``path`` after stripping leading ``/``: ``""`` → EMPTY, ``{*}``, ``{**}``, ``*``, else IDENT."""
    tokens = []
    for part in path.lstrip("/").split("/"):
        if part == "":
            tokens.append(Token(EMPTY, ""))
        elif part in (BRACED, BRACED_DOUBLE, ASTERISK):
            tokens.append(Token(part, part))
        else:
            tokens.append(Token(IDENT, part))
    return tokens


def _render(tokens: list[Token]) -> str:
    return "".join("/" + t.literal for t in tokens)


@dataclass
class _Node:
    end: bool
    children: dict[str, _Node] = field(default_factory=dict)
    suffixes: list[str] = field(default_factory=list)


class SegmentTrie:
    """Paths inserted one by one; :meth:`insert` reports whether an earlier path already matches the new one.

    Port of api-gateway's segment trie with its quirks kept so that conflicts are the original's:
    a node is an end node only when the path that *created* it ended there; ``{**}`` nodes keep the
    path suffixes after the operator instead of children; EMPTY and ``*`` tokens never match in the
    lookup (so ``/`` twice is not a conflict).
    """

    def __init__(self) -> None:
        self.root = _Node(end=False)

    def insert(self, path: str) -> bool:
        """Insert ``path``; ``True`` when it collides with an earlier one (it is then not inserted)."""
        tokens = tokenize(path)
        if self.root.children and _find(self.root, tokens, 0):
            return True
        node = self.root
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1
            if tok.type == BRACED_DOUBLE:
                child = node.children.get(BRACED_DOUBLE)
                if child is None:
                    node.children[BRACED_DOUBLE] = _Node(end=last, suffixes=[_render(tokens[i + 1 :])])
                else:
                    child.suffixes.append(_render(tokens[i:]))
            elif tok.literal not in node.children:
                node.children[tok.literal] = _Node(end=last)
            node = node.children[tok.literal]
        return False


def _suffix_exists(node: _Node, suffix: list[Token], cur: int) -> bool:
    if cur >= len(suffix):
        return True
    double = node.children.get(BRACED_DOUBLE)
    if double is not None:
        rendered = _render(suffix)
        if any(rendered.endswith(s) or s.endswith(rendered) for s in double.suffixes):
            return True
    child = node.children.get(suffix[cur].literal)
    if child is not None and _suffix_exists(child, suffix, cur + 1):
        return True
    return any(k != BRACED_DOUBLE and _suffix_exists(v, suffix, cur) for k, v in node.children.items())


def _find(node: _Node, tokens: list[Token], cur: int) -> bool:
    if cur >= len(tokens):
        return node.end
    if node.suffixes:
        rendered = _render(tokens)
        return any(rendered.endswith(s) for s in node.suffixes)
    tok = tokens[cur]
    if tok.type == IDENT:
        return any(
            child is not None and _find(child, tokens, cur + 1)
            for child in (
                node.children.get(tok.literal),
                node.children.get(BRACED),
                node.children.get(BRACED_DOUBLE),
            )
        )
    if tok.type == BRACED:
        return any(_find(child, tokens, cur + 1) for child in node.children.values())
    if tok.type == BRACED_DOUBLE:
        return _suffix_exists(node, tokens[cur + 1 :], 0)
    return False


def first_conflict(rules: list[tuple[str, tuple[str, ...]]]) -> tuple[str, str] | None:
    """The first ``(path, method)`` that an earlier rule's path already matches, per method, or ``None``.

    ``rules`` are ``(path, methods)`` in rule order; ``/*`` is checked as ``/{**}`` (and reported so,
    as in the original). Methods are visited in first-appearance order so the report is deterministic.
    """
    by_method: dict[str, list[str]] = {}
    for path, methods in rules:
        for method in methods or ("NO_METHODS",):
            by_method.setdefault(method, []).append(path)
    for method, paths in by_method.items():
        trie = SegmentTrie()
        for path in paths:
            checked = policy_path(path)
            if trie.insert(checked):
                return checked, method
    return None
