"""Path translation and the conflict check (a later path conflicts only when an earlier one covers it)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.apigateway import paths

SEGMENT_CHARS = "abcXYZ019-._~!$&'()+,;=:@"

#: The APIRule CRD's path pattern (what the API server admits): the oracle of the generated regexes.
PATH_PATTERN = r"^((\/([A-Za-z0-9-._~!$&'()+,;=:@]|%[0-9a-fA-F]{2})*)|(\/\{\*{1,2}\}))+$|^\/\*$"
_PATH_RE = re.compile(PATH_PATTERN)


def is_valid_path(path: str) -> bool:
    """Whether ``path`` matches the CRD's path pattern."""
    return _PATH_RE.fullmatch(path) is not None


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("/*", {"prefix": "/"}),
        ("/", {"regex": "^/$"}),
        ("/health", {"regex": "^/health$"}),
        ("/a.b", {"regex": "^/a.b$"}),  # not escaped, as the original
        ("/orders/{*}", {"regex": "^/orders/" + paths.SINGLE_ASTERISK_REGEX + "$"}),
        ("/orders/{**}", {"regex": "^/orders/" + paths.DOUBLE_ASTERISK_REGEX + "$"}),
        ("/{*}/x/{**}", {"regex": f"^/{paths.SINGLE_ASTERISK_REGEX}/x/{paths.DOUBLE_ASTERISK_REGEX}$"}),
    ],
)
def test_uri_match(path: str, match: dict[str, str]) -> None:
    assert paths.uri_match(path) == match


def test_method_match_keeps_order() -> None:
    assert paths.method_match(("POST", "GET", "DELETE")) == {"regex": "^(POST|GET|DELETE)$"}


@pytest.mark.parametrize(("path", "policy"), [("/*", "/{**}"), ("/{**}", "/{**}"), ("/a/{*}", "/a/{*}"), ("/", "/")])
def test_policy_path(path: str, policy: str) -> None:
    assert paths.policy_path(path) == policy


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/a/{**}", None),
        ("/{*}/{**}", None),
        ("/{**}/a", None),
        ("/a/{**}/{**}", "Only one {**} operator is allowed in the path."),
        ("/{**}/{*}", "The {**} operator must be the last operator in the path."),
        ("/{**}/b/{*}", "The {**} operator must be the last operator in the path."),
        ("/{*}/{*}", None),
    ],
)
def test_operator_failure(path: str, message: str | None) -> None:
    assert paths.operator_failure(path) == message


@pytest.mark.parametrize(
    ("path", "valid"),
    [
        ("/*", True),
        ("/", True),
        ("/a/b", True),
        ("/a/{*}/{**}", True),
        ("/%2F", True),
        ("/a*", False),
        ("a", False),
        ("/{***}", False),
        ("/a b", False),
        ("/.*", False),
    ],
)
def test_is_valid_path(path: str, valid: bool) -> None:
    assert is_valid_path(path) is valid


@pytest.mark.parametrize(
    ("rules", "conflict"),
    [
        ([("/a", ("GET",)), ("/a", ("GET",))], ("/a", "GET")),
        ([("/a", ("GET",)), ("/a", ("POST",))], None),
        ([("/*", ("GET",)), ("/a", ("GET",))], ("/a", "GET")),
        ([("/a", ("GET",)), ("/*", ("GET",))], None),  # /* gets notPaths [/a]
        ([("/a/{*}", ("GET",)), ("/a/b", ("GET",))], ("/a/b", "GET")),
        ([("/a/b", ("GET",)), ("/a/{*}", ("GET",))], None),  # the older trie rejected this
        ([("/a/{*}", ("GET",)), ("/a/b/c", ("GET",))], None),
        ([("/a/{**}", ("GET",)), ("/a/b/c", ("GET",))], ("/a/b/c", "GET")),
        ([("/{**}/c", ("GET",)), ("/a/b/c", ("GET",))], ("/a/b/c", "GET")),
        ([("/{**}/c", ("GET",)), ("/a/b/d", ("GET",))], None),
        ([("/a/b", ("GET",)), ("/a", ("GET",))], None),
        ([("/abc", ("GET",)), ("/abc/{**}", ("GET",))], None),  # the example: accepted
        ([("/abc/{**}", ("GET",)), ("/abc/def", ("GET",))], ("/abc/def", "GET")),
        ([("/a/{**}", ("GET",)), ("/a", ("GET",))], None),  # {**} spans at least one segment
        ([("/a/{**}", ("GET",)), ("/a/", ("GET",))], ("/a/", "GET")),
        ([("/", ("GET",)), ("/", ("GET",))], ("/", "GET")),  # the trie never matched EMPTY tokens
        ([("/a/b/c", ("GET",)), ("/a/b", ("GET",)), ("/a/b", ("GET",))], ("/a/b", "GET")),  # trie: end node quirk
        ([("/a/{*}", ("GET",)), ("/a/{**}", ("GET",))], None),  # trie: {*} matched P's {**}
        ([("/{*}", ("GET",)), ("/", ("GET",))], None),  # {*} is never empty
        ([("/abc/{**}/ghi", ("GET",)), ("/abc/{*}/ghi", ("GET",))], ("/abc/{*}/ghi", "GET")),
        ([("/abc/{**}/ghi", ("GET",)), ("/{*}/{*}/ghi", ("GET",))], None),
        ([("/abc/{**}/def", ("GET",)), ("/abc/def/{**}/def", ("GET",))], ("/abc/def/{**}/def", "GET")),
        ([("/a/{**}/abc", ("GET",)), ("/a/b/{**}/abc/abcd", ("GET",))], None),
        ([("/abc/{**}/def/ghi", ("GET",)), ("/abc/{**}/ghi", ("GET",)), ("/abc/{**}", ("GET",))], None),
        ([("/abc/{**}", ("GET",)), ("/abc/{**}/ghi", ("GET",))], ("/abc/{**}/ghi", "GET")),
        ([("/{**}", ("GET",)), ("/{**}/def/ghi", ("GET",))], ("/{**}/def/ghi", "GET")),
        ([("/x", ("GET", "POST")), ("/y", ("POST",)), ("/x", ("PUT", "POST"))], ("/x", "POST")),
        ([("/x", ()), ("/x", ())], ("/x", "NO_METHODS")),
    ],
)
def test_first_conflict(rules: list[tuple[str, tuple[str, ...]]], conflict: tuple[str, str] | None) -> None:
    assert paths.first_conflict(rules) == conflict


def test_the_originals_mixed_list_has_no_conflict() -> None:
    """The original's own table entry: exact, {*} and {**} paths around one prefix, then a catch-all."""
    rule_paths = ["/anything/one", "/anything/one/two", "/anything/{*}/one", "/anything/{*}/one/{**}/two",
                  "/anything/{*}/{*}/two", "/anything/{**}/two", "/anything/", "/anything/{**}", "/one/{**}/two",
                  "/{**}/one", "/*"]
    assert paths.first_conflict([(p, ("GET",)) for p in rule_paths]) is None


# --- properties --------------------------------------------------------------------------------

literal = st.text(alphabet=SEGMENT_CHARS, min_size=1, max_size=6)
operator = st.sampled_from(["{*}", "{**}"])
segment = st.one_of(literal, literal, operator)


@st.composite
def valid_paths(draw: st.DrawFn) -> str:
    segments = draw(st.lists(segment, min_size=1, max_size=5))
    if segments.count("{**}") > 1 or paths.operator_failure("/" + "/".join(segments)):
        segments = [s for s in segments if s != "{**}"] or ["x"]
    return "/" + "/".join(segments)


@st.composite
def concrete(draw: st.DrawFn, path: str) -> str:
    """A request path that ``path`` should match: operators replaced by real segments."""
    out = []
    for part in path.split("/")[1:]:
        if part == "{*}":
            out.append(draw(literal))
        elif part == "{**}":
            out.append("/".join(draw(st.lists(literal, max_size=3))))
        else:
            out.append(part)
    return "/" + "/".join(out)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), path=valid_paths())
def test_regex_matches_the_paths_it_should(data: st.DataObject, path: str) -> None:
    assert is_valid_path(path)
    assert paths.operator_failure(path) is None
    regex = re.compile(paths.uri_match(path)["regex"])
    request = data.draw(concrete(path))
    assert regex.fullmatch(request), (path, request)


@settings(max_examples=200, deadline=None)
@given(path=valid_paths(), other=literal)
def test_regex_of_single_operator_rejects_slash(path: str, other: str) -> None:
    if "{*}" in path and "{**}" not in path:
        regex = re.compile(paths.uri_match(path)["regex"])
        request = path.replace("{*}", f"{other}/{other}", 1).replace("{*}", other)
        assert not regex.fullmatch(request)


@settings(max_examples=200, deadline=None)
@given(a=valid_paths())
def test_a_path_conflicts_with_itself(a: str) -> None:
    assert paths.first_conflict([(a, ("GET",)), (a, ("GET",))]) == (a, "GET")


# --- shadowing, checked against the VirtualService regexes -------------------------------------

PLAIN = "abcz"  # literal segments without regex meaning, so the regexes and covers() agree exactly
plain_literal = st.text(alphabet=PLAIN, min_size=1, max_size=2)
plain_segment = st.one_of(plain_literal, plain_literal, st.just(""), st.sampled_from(["{*}", "{**}"]))


@st.composite
def plain_paths(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 12)) == 0:
        return "/*"
    segments = draw(st.lists(plain_segment, min_size=1, max_size=4))
    if segments.count("{**}") > 1 or paths.operator_failure("/" + "/".join(segments)):
        segments = [s for s in segments if s != "{**}"] or ["a"]
    return "/" + "/".join(segments)


def matches(path: str, request: str) -> bool:
    """Whether the VirtualService route of rule ``path`` takes ``request``."""
    match = paths.uri_match(path)
    if "prefix" in match:
        return request.startswith(match["prefix"])
    return re.fullmatch(match["regex"], request) is not None


def instances(path: str, fillers: list[str], max_double: int) -> list[str]:
    """Concrete requests of ``path``: each ``{*}`` one non-empty filler, each ``{**}`` 1..max_double
    fillers (possibly empty segments) joined by ``/``."""
    tokens = paths.tokenize(paths.policy_path(path))
    out = [""]
    for tok in tokens:
        if tok.type == paths.BRACED:
            choices = [f for f in fillers if f]
        elif tok.type == paths.BRACED_DOUBLE:
            choices = ["/".join(c) for n in range(1, max_double + 1) for c in itertools.product(fillers, repeat=n)]
        else:
            choices = [tok.literal]
        out = [f"{prefix}/{c}" for prefix in out for c in choices]
    return out


def shadowed_by_sampling(earlier: str, later: str) -> bool:
    """No request of ``later`` (fresh segments, empty segments, ``earlier``'s literals) escapes ``earlier``."""
    fillers = ["q", "", *sorted({t.literal for t in paths.tokenize(earlier) if t.type == paths.IDENT})][:4]
    depth = len(paths.tokenize(earlier)) + 1
    return all(matches(earlier, r) for r in instances(later, fillers, min(depth, 3)))


rule_sets = st.lists(st.tuples(plain_paths(), st.sampled_from([("GET",), ("POST",), ("GET", "POST")])),
                     min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(rules=rule_sets)
def test_no_accepted_rule_set_has_a_rule_an_earlier_rule_fully_shadows(rules: list[tuple[str, tuple[str, ...]]],
                                                                          ) -> None:
    """The issue's property: when the check accepts the rules, every later rule still gets some request
    of its own (a request the route regexes give it, not an earlier rule of the same method)."""
    if paths.first_conflict(rules) is not None:
        return
    for j, (later, later_methods) in enumerate(rules):
        for earlier, earlier_methods in rules[:j]:
            if set(later_methods) <= set(earlier_methods):
                assert not shadowed_by_sampling(earlier, later), (earlier, later)


@settings(max_examples=400, deadline=None)
@given(rules=rule_sets)
def test_a_reported_conflict_is_a_fully_shadowed_path(rules: list[tuple[str, tuple[str, ...]]]) -> None:
    """The other direction: the reported path really is unreachable behind an earlier path of that method."""
    conflict = paths.first_conflict(rules)
    if conflict is None:
        return
    path, method = conflict
    index = next(i for i, (p, ms) in enumerate(rules) if paths.policy_path(p) == path and method in ms
                 and any(paths.covers(e, p) for e, ems in rules[:i] if method in ems))
    earlier = [e for e, ems in rules[:index] if method in ems]
    assert any(shadowed_by_sampling(e, rules[index][0]) for e in earlier), (rules, conflict)


@settings(max_examples=300, deadline=None)
@given(a=plain_paths(), b=plain_paths())
def test_covers_agrees_with_the_regexes(a: str, b: str) -> None:
    assert paths.covers(a, b) == shadowed_by_sampling(a, b), (a, b)
