"""Reading user objects field by field: wrong JSON types become failures with attribute paths.

Every parser of the API Gateway domain (APIRule v2/v2alpha1 and v1beta1, RateLimit, APIGateway) reads
through a :class:`Reader`, so parsing never raises on a value of the wrong type: the reader returns a
harmless default (``None``, ``[]``, ``{}``) and records a :class:`Failure` naming the attribute, and
the planner turns the failures into an ``Error`` status. ``null`` counts as absent (the API server
prunes ``null`` from fields that are not nullable).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kube.manifests import json_type

_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
                   "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration_ns(text: str) -> int:
    """Nanoseconds of a Go duration string (``time.ParseDuration``: ``60s``, ``1m30s``, ``50ms``,
    ``-1.5h``, ``0``), exact (no float rounding). Raises ``ValueError`` with Go's wording otherwise."""
    raw = text
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f'time: invalid duration "{raw}"')
    total, pos = Decimal(0), 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            if re.fullmatch(r"[0-9.]+", text[pos:]):
                raise ValueError(f'time: missing unit in duration "{raw}"')
            raise ValueError(f'time: invalid duration "{raw}"')
        total += Decimal(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * int(total)


def parse_duration(text: str) -> float:
    """Seconds of a Go duration string (see :func:`parse_duration_ns`). Raises ``ValueError``."""
    return parse_duration_ns(text) / 1e9


def format_seconds(seconds: float) -> str:
    """A protobuf JSON duration: ``60s``, ``0.050s`` (as Istio serialises ``maxAge`` and timeouts)."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds:.9f}".rstrip("0") + "s"


@dataclass(frozen=True)
class Failure:
    """One validation failure: ``attribute_path`` (``.spec.rules[0].path``) and the ``message``."""

    attribute_path: str
    message: str

    def __str__(self) -> str:
        return f"Attribute '{self.attribute_path}': {self.message}"


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (reading cluster objects defensively)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]``."""
    return value if isinstance(value, list) else []


def type_message(expected: str, value: Any) -> str:
    """``must be of type array, got integer``."""
    return f"must be of type {expected}, got {json_type(value)}"


@dataclass
class Reader:
    """Collects the failures of one parse. Each ``read`` method takes the raw value and its attribute
    path and returns the value when its type is right, otherwise a default (and records why)."""

    failures: list[Failure] = field(default_factory=list)

    def fail(self, path: str, message: str) -> None:
        self.failures.append(Failure(path, message))

    def _typed(self, value: Any, path: str, expected: str, ok: bool) -> bool:
        if value is None:
            return False
        if not ok:
            self.fail(path, type_message(expected, value))
        return ok

    def object(self, value: Any, path: str) -> dict[str, Any]:
        """A JSON object (``{}`` when absent or of another type)."""
        return value if self._typed(value, path, "object", isinstance(value, dict)) else {}

    def opt_object(self, value: Any, path: str) -> dict[str, Any] | None:
        """A JSON object, or ``None`` when absent or of another type."""
        return value if self._typed(value, path, "object", isinstance(value, dict)) else None

    def array(self, value: Any, path: str) -> list[Any]:
        """A JSON array (``[]`` when absent or of another type)."""
        return value if self._typed(value, path, "array", isinstance(value, list)) else []

    def opt_array(self, value: Any, path: str) -> list[Any] | None:
        """A JSON array, or ``None`` when absent or of another type (``[]`` stays ``[]``)."""
        return value if self._typed(value, path, "array", isinstance(value, list)) else None

    def string(self, value: Any, path: str) -> str | None:
        return value if self._typed(value, path, "string", isinstance(value, str)) else None

    def integer(self, value: Any, path: str) -> int | None:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if self._typed(value, path, "integer", ok) else None

    def boolean(self, value: Any, path: str) -> bool | None:
        return value if self._typed(value, path, "boolean", isinstance(value, bool)) else None

    def duration(self, value: Any, path: str) -> int | None:
        """A Go duration string (``60s``, ``50ms``) in nanoseconds; other values are failures."""
        text = self.string(value, path)
        if text is None:
            return None
        try:
            return parse_duration_ns(text)
        except ValueError as exc:
            self.fail(path, f"must be a duration such as 60s or 50ms: {exc}")
            return None

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        """An array of strings; entries of another type are failures and left out."""
        return tuple(s for i, item in enumerate(self.array(value, path))
                     if (s := self.string_item(item, f"{path}[{i}]")) is not None)

    def opt_strings(self, value: Any, path: str) -> tuple[str, ...] | None:
        """As :meth:`strings`, but ``None`` when absent (``[]`` stays ``()``)."""
        return None if self.opt_array(value, path) is None else self.strings(value, path)

    def string_item(self, value: Any, path: str) -> str | None:
        """An array entry that must be a string (``null`` entries are failures too)."""
        if value is None:
            self.fail(path, type_message("string", value))
            return None
        return self.string(value, path)

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        """An object of strings (labels, headers, cookies); other values are failures and left out."""
        return {str(k): s for k, item in self.object(value, path).items()
                if (s := self.string_item(item, f"{path}.{k}")) is not None}

    def objects(self, value: Any, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index, object)`` for every array entry that is an object; other entries are failures."""
        for i, item in enumerate(self.array(value, path)):
            if isinstance(item, dict):
                yield i, item
            else:
                self.fail(f"{path}[{i}]", type_message("object", item))


def failures_text(failures: list[Failure] | tuple[Failure, ...]) -> str:
    """``Attribute '<p>': <m>`` lines joined by ``; `` (for logs and plain error messages)."""
    return "; ".join(str(f) for f in failures)
