"""The Snatch watch registration maps configuration events to the caBundle sync key."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.snatch.controller import CONTROLLER_NAME, WEBHOOK_CONFIG_NAME
from tasks.snatch.watches import map_webhook_config, registrations
from watchers.engine import WatchEvent
from workers.controller import Key


def cfg(bundle: str | None = None, label: str = "a") -> dict[str, Any]:
    cc: dict[str, Any] = {"service": {"name": "svc", "namespace": "kyma-system"}}
    if bundle:
        cc["caBundle"] = bundle
    return {"metadata": {"name": WEBHOOK_CONFIG_NAME, "labels": {"x": label}},
            "webhooks": [{"name": "mpod-v1.kb.io", "clientConfig": cc}]}


@pytest.mark.parametrize(("type_", "new", "old", "enqueued"), [
    ("ADDED", cfg(), None, True),
    ("MODIFIED", cfg(), cfg("Q0E="), True),       # caBundle wiped by a re-apply
    ("MODIFIED", cfg("Q0E=", "b"), cfg("Q0E="), False),  # only a label changed
    ("DELETED", cfg("Q0E="), cfg("Q0E="), False),
])
def test_map(type_: str, new: dict, old: dict | None, enqueued: bool) -> None:
    keys = list(map_webhook_config(WatchEvent(type_, new, old, "local"), None))  # type: ignore[arg-type]
    assert keys == ([(CONTROLLER_NAME, Key("local", "", WEBHOOK_CONFIG_NAME))] if enqueued else [])


def test_registration() -> None:
    (reg,) = registrations()
    assert reg.controllers == (CONTROLLER_NAME,)
    assert reg.field_selector == f"metadata.name={WEBHOOK_CONFIG_NAME}"
