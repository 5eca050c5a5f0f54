"""The settings reference (docs/settings.md), generated from the settings classes (pure).

``python -m config.reference MODULE...`` imports the modules that declare settings classes and
prints the reference; ``tests/unit/config`` checks that docs/settings.md is its output.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from collections.abc import Iterable
from typing import Any

from config.loader import Settings, settings_classes

HEADER = """# Settings reference

Generated from the settings classes by `python -m config.reference` (see tests/unit/config); every
process reads them through one loader (`config/`, pydantic-settings) and validates those of the
domains it runs at start: a bad value stops `reconcilery worker|watch|beat|webhook|up` with one error
naming every bad variable and what it expected (exit code 2). A blank variable means its default.
Seconds are numbers >= 0 (a negative value is an error, never clamped); a flag accepts
`1/true/yes/on` and `0/false/no/off` in any case (and nothing else).
"""


def _text(rst: str) -> str:
    """Docstring markup as Markdown: ``x`` and :role:`x` become `x`; one line."""
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(rst.split()).replace("``", "`"))


def _default(info: Any) -> str:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if "doc_default" in extra:  # a default computed elsewhere, said in words
        return str(extra["doc_default"])
    value = info.default_factory() if info.default_factory is not None else info.default
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, dict | list):
        return f"`{json.dumps(value)}`"
    return f"`{value}`" if value not in ("", None) else "(empty)"


def markdown(classes: Iterable[type[Settings]]) -> str:
    """A Markdown section per class (its docstring, then a table Variable | Default | Meaning)."""
    parts = [HEADER]
    for cls in classes:
        doc = _text(inspect.getdoc(cls) or "")
        parts.append(f"\n## `{cls.__module__}.{cls.__name__}`\n\n{doc}\n")
        parts.append("| Variable | Default | Meaning |\n|---|---|---|")
        for field, info in cls.model_fields.items():
            names = " or ".join(f"`{name}`" for name in cls.env_choices(field))
            meaning = _text(info.description or "").replace("|", "\\|")
            parts.append(f"| {names} | {_default(info)} | {meaning} |")
    return "\n".join(parts) + "\n"


def classes_of(modules: Iterable[str]) -> list[type[Settings]]:
    """Import ``modules`` and return the settings classes with a cached accessor they declare, in the
    order of ``modules`` (then of declaration)."""
    order = list(modules)
    for module in order:
        importlib.import_module(module)
    found = [cls for cls in settings_classes() if cls.__module__ in order]
    return sorted(found, key=lambda cls: order.index(cls.__module__))


def main(modules: list[str]) -> None:
    """Print the reference of every settings class ``modules`` declare."""
    sys.stdout.write(markdown(classes_of(modules)))


if __name__ == "__main__":
    main(sys.argv[1:])
