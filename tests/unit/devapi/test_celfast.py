"""The CEL fast path (kubedev.celfast) decides exactly as cel-python does, or hands over to it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubedev import cel
from kubedev.celfast import Fallback, compile_fast
from tasks.apigateway.install import load_crds


def crd_rules() -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.extend(r["rule"] for r in node.get("x-kubernetes-validations") or [])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(load_crds(istio=False)[0])
    return sorted(set(found))


RULES = [*crd_rules(), "self.size() < 4", "self == oldSelf", "self >= oldSelf", "self.a + 1 == 2",
         "self.a / 2 == -1", "self.a % 3 == 1", "'x' in self", "self.a in [1, 2]", "size(self) == 0",
         "self.startsWith('a') && !self.endsWith('z')", "self.lowerAscii() == self", "self['a'] == 1",
         "has(self.a) ? self.a > 0 : true", "self.contains(\"b\")", "self.b.c == 'd'", "-self.a < 0",
         "self.matches(r'^\\d+$')"]


def test_the_subset_compiles() -> None:
    assert all(compile_fast(r) is not None for r in RULES)
    for rule in ("self.all(x, x > 0)", "self.map(x, x)", "int(self) > 0", "self.split(',')", "1u == 1u",
                 "timestamp(self) > timestamp('2020-01-01T00:00:00Z')"):
        assert compile_fast(rule) is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False)
    | st.sampled_from(["", "a", "B", "ab", "x.y", "*.a.b", "Host", "kyma-system/kyma-gateway", "12", "b"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b", "c", "gateway", "externalGateway", "jwt", "noAuth", "extAuth"]), inner,
        max_size=4),
    max_leaves=10)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RULES), _json, _json, st.booleans())
def test_fast_results_are_cel_pythons(rule: str, value: Any, old: Any, has_old: bool) -> None:
    fast = compile_fast(rule)
    assert fast is not None
    try:
        got = fast(value, old, has_old)
    except Fallback:
        return
    compiled = cel.compile_rule({"rule": rule})
    slow = cel.CompiledRule(**{**compiled.__dict__, "fast": None})
    expected = cel._evaluate(slow, value, old, has_old)  # cel-python alone
    assert not expected.error, (rule, value, expected)
    assert got is expected.ok, (rule, value, old)


@pytest.mark.parametrize(("rule", "value", "ok"), [
    ("self.matches('^[a-z]+$') || self.matches('^x$')", "abc", True),
    ("self.matches('^[a-z]+$') || self.matches('^x$')", "ABC", False),
    ("((has(self.extAuth) ? 1 : 0) + (has(self.jwt) ? 1 : 0) + ((has(self.noAuth) && self.noAuth) ? 1 : 0)) == 1",
     {"noAuth": True}, True),
])
def test_outcomes_through_the_fast_path(rule: str, value: Any, ok: bool) -> None:
    assert cel.evaluate(cel.compile_rule({"rule": rule}), value).ok is ok
