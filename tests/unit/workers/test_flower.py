"""What Flower's task list shows for reconciles and resyncs (workers/flower.py)."""

from __future__ import annotations

import pytest

from workers.controller import Key
from workers.flower import MAX_ARGS, key_repr, reconcile_name, resync_name


@pytest.mark.parametrize(("key", "shown"), [
    (Key("local", "shop", "httpbin"), "shop/httpbin"),
    (Key("local", "", "node-1"), "node-1"),  # cluster-scoped
    (Key("skr-3f6a", "kyma-system", "abc"), "skr-3f6a kyma-system/abc"),
    (Key("local", "ns", "a/b%c"), "ns/a/b%c"),  # readable, not percent-quoted
])
def test_the_key_is_shown_the_way_kubectl_users_name_it(key: Key, shown: str) -> None:
    assert key_repr(key) == shown


def test_a_long_key_is_cut() -> None:
    shown = key_repr(Key("local", "n" * 200, "x" * 200))
    assert len(shown) == MAX_ARGS and shown.endswith("…")


def test_names_carry_the_controller_only() -> None:
    assert (reconcile_name("apirule"), resync_name("cloud-skr-connect")) == (
        "reconcile[apirule]", "resync[cloud-skr-connect]")


def test_beat_sends_each_resync_under_its_controllers_shadow_name() -> None:
    """Celery's ``shadow`` option: the worker's task-received event (what Flower lists) carries it as
    the task's name, while the worker still runs ``reconcilery.resync``."""
    from workers.app import RESYNC_TASK, beat_schedule
    from workers.controller import Controller, Result, registry

    registry.register(Controller("flower-probe", "apigateway", lambda key: Result.done(), resync_interval=60.0,
                                   list_keys=lambda: []))
    try:
        entry = beat_schedule()["resync-flower-probe"]
    finally:
        registry.unregister("flower-probe")
    assert (entry["task"], entry["args"], entry["options"]) == (
        RESYNC_TASK, ["flower-probe"], {"queue": "apigateway", "shadow": "resync[flower-probe]"})
