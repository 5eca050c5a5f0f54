"""Reading manifest files for the ``render`` dry runs: YAML/JSON documents as plain dicts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

SUFFIXES = (".yaml", ".yml", ".json")


def expand(files: list[str]) -> list[str]:
    """``files`` with each directory replaced by its ``*.yaml|*.yml|*.json`` files (sorted); ``-`` kept."""
    out: list[str] = []
    for f in files:
        p = Path(f)
        if f != "-" and p.is_dir():
            out += sorted(str(c) for c in p.iterdir() if c.suffix in SUFFIXES)
        else:
            out.append(f)
    return out


def load_objects(files: list[str]) -> list[dict[str, Any]]:
    """Every YAML/JSON document of ``files`` (``-`` = stdin; a directory = its *.yaml/*.yml/*.json).

    Raises ``ValueError`` naming the file for unreadable input or a document that is not an object.
    """
    docs: list[dict[str, Any]] = []
    for f in expand(files):
        try:
            text = sys.stdin.read() if f == "-" else Path(f).read_text()
            loaded = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {f}: {exc}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"{f} is not valid YAML: {exc}") from None
        for i, d in enumerate(loaded):
            if not isinstance(d, dict):
                raise ValueError(f"{f}: document {i + 1} is not a Kubernetes object")
        docs += loaded
    return docs
