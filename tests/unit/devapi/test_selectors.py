"""Label and field selector parsing and matching (kubedev.selectors), against apimachinery's semantics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubedev.selectors import (
    SelectorError,
    field_value,
    match_fields,
    match_labels,
    parse_field_selector,
    parse_label_selector,
)


def obj(**labels: str) -> dict:
    return {"metadata": {"name": "x", "labels": labels}}


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("", {}, True),
    ("app=a", {"app": "a"}, True),
    ("app=a", {"app": "b"}, False),
    ("app==a", {"app": "a"}, True),
    ("app!=a", {"app": "b"}, True),
    ("app!=a", {}, True),  # != matches when the key is absent
    ("app!=a", {"app": "a"}, False),
    ("app in (a,b)", {"app": "b"}, True),
    ("app in (a, b)", {"app": "c"}, False),
    ("app in (a,b)", {}, False),
    ("app notin (a,b)", {"app": "c"}, True),
    ("app notin (a,b)", {}, True),
    ("app notin (a,b)", {"app": "a"}, False),
    ("app", {"app": ""}, True),
    ("app", {}, False),
    ("!app", {}, True),
    ("!app", {"app": "x"}, False),
    ("app=a,tier in (web),!legacy", {"app": "a", "tier": "web"}, True),
    ("app=a,tier in (web),!legacy", {"app": "a", "tier": "web", "legacy": "1"}, False),
    ("example.com/team=core", {"example.com/team": "core"}, True),
    ("n>5", {"n": "7"}, True),
    ("n<5", {"n": "7"}, False),
    ("app=", {"app": ""}, True),
])
def test_label_selector_matches_like_apimachinery(selector: str, labels: dict, expected: bool) -> None:
    assert match_labels(parse_label_selector(selector), obj(**labels)) is expected


@pytest.mark.parametrize("selector", ["app in (a", "a b c=d", "=x", "app=a b", "-bad=1", "n>x"])
def test_malformed_label_selectors_raise(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(selector)


@pytest.mark.parametrize(("selector", "expected"), [
    ("metadata.name=x", True),
    ("metadata.name==x", True),
    ("metadata.name!=x", False),
    ("metadata.namespace=ns1,spec.nodeName=n1", True),
    ("spec.nodeName=n2", False),
    ("spec.nodeName!=n2", True),
    ("spec.hostNetwork=true", True),
    ("status.phase=", True),  # a missing field compares as ""
])
def test_field_selectors(selector: str, expected: bool) -> None:
    pod = {"metadata": {"name": "x", "namespace": "ns1"}, "spec": {"nodeName": "n1", "hostNetwork": True}}
    assert match_fields(parse_field_selector(selector), pod) is expected


def test_field_selector_without_operator_raises() -> None:
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.name")


def test_field_value_stringifies() -> None:
    assert field_value({"a": {"b": 3}}, "a.b") == "3"
    assert field_value({"a": None}, "a.b") == ""


_names = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
_values = st.from_regex(r"[a-z0-9]{0,8}", fullmatch=True)
_labels = st.dictionaries(_names, _values, max_size=5)


@given(_labels)
def test_a_label_map_matches_its_own_equality_selector(labels: dict[str, str]) -> None:
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    assert match_labels(parse_label_selector(selector), obj(**labels))


@given(_labels, _names, st.lists(_values, min_size=1, max_size=4))
def test_in_and_notin_are_complements(labels: dict[str, str], key: str, values: list[str]) -> None:
    values = [v or "x" for v in values]
    inside = match_labels(parse_label_selector(f"{key} in ({','.join(values)})"), obj(**labels))
    outside = match_labels(parse_label_selector(f"{key} notin ({','.join(values)})"), obj(**labels))
    assert inside != outside


@given(_labels, _names, _values)
def test_equality_and_inequality_are_complements(labels: dict[str, str], key: str, value: str) -> None:
    eq = match_labels(parse_label_selector(f"{key}={value}"), obj(**labels))
    ne = match_labels(parse_label_selector(f"{key}!={value}"), obj(**labels))
    assert eq != ne


@given(_labels, _names)
def test_exists_and_not_exists_are_complements(labels: dict[str, str], key: str) -> None:
    assert match_labels(parse_label_selector(key), obj(**labels)) != match_labels(
        parse_label_selector(f"!{key}"), obj(**labels))
