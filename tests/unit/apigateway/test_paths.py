"""Path translation and the segment-trie conflict check (api-gateway's internal/path semantics)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.apigateway import paths

SEGMENT_CHARS = "abcXYZ019-._~!$&'()+,;=:@"


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
    assert paths.is_valid_path(path) is valid


@pytest.mark.parametrize(
    ("rules", "conflict"),
    [
        ([("/a", ("GET",)), ("/a", ("GET",))], ("/a", "GET")),
        ([("/a", ("GET",)), ("/a", ("POST",))], None),
        ([("/*", ("GET",)), ("/a", ("GET",))], ("/a", "GET")),
        ([("/a", ("GET",)), ("/*", ("GET",))], ("/{**}", "GET")),  # reported as the trie sees it
        ([("/a/{*}", ("GET",)), ("/a/b", ("GET",))], ("/a/b", "GET")),
        ([("/a/b", ("GET",)), ("/a/{*}", ("GET",))], ("/a/{*}", "GET")),
        ([("/a/{*}", ("GET",)), ("/a/b/c", ("GET",))], None),
        ([("/a/{**}", ("GET",)), ("/a/b/c", ("GET",))], ("/a/b/c", "GET")),
        ([("/{**}/c", ("GET",)), ("/a/b/c", ("GET",))], ("/a/b/c", "GET")),
        ([("/{**}/c", ("GET",)), ("/a/b/d", ("GET",))], None),
        ([("/a/b", ("GET",)), ("/a", ("GET",))], None),  # end node only where created
        ([("/a", ("GET",)), ("/a/{**}", ("GET",))], ("/a/{**}", "GET")),  # asymmetric, as the original
        ([("/a/{**}", ("GET",)), ("/a", ("GET",))], None),
        ([("/", ("GET",)), ("/", ("GET",))], None),  # EMPTY tokens never match (original quirk)
        ([("/x", ("GET", "POST")), ("/y", ("POST",)), ("/x", ("PUT", "POST"))], ("/x", "POST")),
    ],
)
def test_first_conflict(rules: list[tuple[str, tuple[str, ...]]], conflict: tuple[str, str] | None) -> None:
    assert paths.first_conflict(rules) == conflict


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
    assert paths.is_valid_path(path)
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


@settings(max_examples=300, deadline=None)
@given(a=valid_paths(), b=valid_paths())
def test_conflict_detection_is_symmetric_without_double_asterisk(a: str, b: str) -> None:
    """Literal and ``{*}`` paths conflict in either order. With ``{**}`` the original's trie is not
    symmetric (``/a`` then ``/a/{**}`` conflicts, the reverse does not); the table above pins that."""
    if "{**}" in a + b:
        return
    forward = paths.first_conflict([(a, ("GET",)), (b, ("GET",))]) is not None
    backward = paths.first_conflict([(b, ("GET",)), (a, ("GET",))]) is not None
    assert forward == backward, (a, b)


@settings(max_examples=200, deadline=None)
@given(a=valid_paths())
def test_a_path_conflicts_with_itself(a: str) -> None:
    assert paths.first_conflict([(a, ("GET",)), (a, ("GET",))]) == (a, "GET")
