"""Reading user objects field by field: wrong JSON types become failures with attribute paths.

Every parser of the API Gateway domain (APIRule v2/v2alpha1 and v1beta1, RateLimit, APIGateway) reads
through a :class:`Reader`, so parsing never raises on a value of the wrong type: the reader returns a
harmless default (``None``, ``[]``, ``{}``) and records a :class:`Failure` naming the attribute, and
the planner turns the failures into an ``Error`` status. ``null`` counts as absent (the API server
prunes ``null`` from fields that are not nullable).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Failure:
    """One validation failure: ``attribute_path`` (``.spec.rules[0].path``) and the ``message``."""

    attribute_path: str
    message: str

    def __str__(self) -> str:
        return f"Attribute '{self.attribute_path}': {self.message}"


def json_type(value: Any) -> str:
    """The JSON Schema type name of ``value`` (``object``, ``array``, ``string``, ``integer``,
    ``number``, ``boolean``, ``null``), as the API server names it in its errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


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
