"""The Garden samples of the provider Scope tests (``<provider>/garden_<provider>.yaml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def shoot_and_secret(sample: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Shoot and the credentials Secret of a Garden sample file (first of each kind)."""
    docs = list(yaml.safe_load_all(sample.read_text()))
    shoot = next(d for d in docs if d["kind"] == "Shoot")
    secret = next(d for d in docs if d["kind"] == "Secret")
    return shoot, secret
