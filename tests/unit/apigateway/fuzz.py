"""Fuzzing helpers: every field of a valid object replaced by an arbitrary JSON value.

Used by the hypothesis tests (``test_fuzz.py``) and by the ``render`` test that feeds 300 malformed
APIRules through the command line.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from kube.manifests import json_type

Path = tuple[str | int, ...]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False),
                    st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=8)


def field_paths(value: Any, prefix: Path = ("spec",)) -> Iterator[Path]:
    """Every path at or below ``prefix`` in ``value`` (objects by key, arrays by index)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from field_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from field_paths(item, (*prefix, index))


def paths_of(obj: dict[str, Any]) -> list[Path]:
    return list(field_paths(obj["spec"]))


def get_at(obj: Any, path: Path) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def set_at(obj: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``value`` at ``path``."""
    out = copy.deepcopy(obj)
    parent = get_at(out, path[:-1])
    parent[path[-1]] = value
    return out


def attribute(path: Path) -> str:
    """``(spec, rules, 0, timeout)`` → ``.spec.rules[0].timeout`` (the status' attribute path)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def wrong_type(base: Any, value: Any) -> bool:
    """Whether ``value`` has another JSON type than ``base`` (``null`` reads as absent: never wrong)."""
    return value is not None and json_type(value) != json_type(base)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 2 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 7, 3.5, 2**40, 1e300])
    if kind == 3:
        return rng.choice(["", "x", "/a/{**}", "GET", "*.local.kyma.dev", "kyma-system/kyma-gateway", "ünïcode"])
    if kind == 4:
        return rng.randrange(-5, 5)
    if kind == 5:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["a", "path", "name", ""]): random_json(rng, depth + 1) for _ in range(rng.randrange(3))}


def mutate(rng: random.Random, obj: dict[str, Any], changes: int = 1) -> dict[str, Any]:
    """``obj`` with ``changes`` random fields of its spec replaced by random JSON values."""
    for _ in range(changes):
        path = rng.choice(paths_of(obj))
        obj = set_at(obj, path, random_json(rng))
        if not isinstance(obj.get("spec"), dict):
            break
    return obj
