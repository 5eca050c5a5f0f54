"""The Garden samples of the provider Scope tests (``<provider>/garden_<provider>.yaml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def shoot_and_secret(provider: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Shoot and the credentials Secret of ``provider``'s Garden sample (first of each kind)."""
    sample = Path(__file__).parent / provider / f"garden_{provider}.yaml"
    docs = list(yaml.safe_load_all(sample.read_text()))
    shoot = next(d for d in docs if d["kind"] == "Shoot")
    secret = next(d for d in docs if d["kind"] == "Secret")
    return shoot, secret
