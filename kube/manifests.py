"""Reading manifest files: YAML/JSON documents as plain dicts, for ``render`` and ``up --apply``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """Input that cannot be read as Kubernetes manifests; the message names the file."""


def expand(files: Iterable[str | Path], recursive: bool = False) -> list[str]:
    """``files`` with each directory replaced by its ``*.yaml|*.yml|*.json`` files, sorted by path
    (``recursive``: in sub-folders too); ``-`` (stdin) is kept."""
    out: list[str] = []
    for f in files:
        p = Path(f)
        if str(f) != "-" and p.is_dir():
            found = p.rglob("*") if recursive else p.iterdir()
            out += sorted(str(c) for c in found if c.suffix in SUFFIXES and c.is_file())
        else:
            out.append(str(f))
    return out


def load_objects(files: Iterable[str | Path], recursive: bool = False,
                 required: tuple[str, ...] = ("kind",)) -> list[dict[str, Any]]:
    """Every object in ``files`` (``-`` = stdin, folders expanded), in order; ``List`` kinds are
    flattened and empty documents skipped.

    Raises :class:`ManifestError` naming the file for unreadable input, bad YAML/JSON and documents
    that are not objects or lack one of the ``required`` fields.
    """
    docs: list[dict[str, Any]] = []
    for f in expand(files, recursive):
        try:
            text = sys.stdin.read() if f == "-" else Path(f).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ManifestError(f"cannot read {f}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            loaded = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            raise ManifestError(f"{f} is not valid YAML or JSON: {exc}") from None
        for i, doc in enumerate(loaded):
            if not isinstance(doc, dict) or any(k not in doc for k in required):
                raise ManifestError(f"{f}: document {i + 1} is not a Kubernetes object "
                                    f"(needs {' and '.join(required)})")
            if str(doc["kind"]).endswith("List") and isinstance(doc.get("items"), list):
                docs.extend(item for item in doc["items"] if isinstance(item, dict))
            else:
                docs.append(doc)
    return docs


#: JSON Schema type names by Python type, in test order (``bool`` before ``int``: it is one).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
    (list, "array"), (dict, "object"),
)


def json_type(value: Any) -> str:
    """The JSON Schema type name of ``value`` (``object``, ``array``, ``string``, ``integer``,
    ``number``, ``boolean``, ``null``), as the API server names it in its errors."""
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)
